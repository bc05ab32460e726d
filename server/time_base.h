// TimeBase: the two clocks of lawnd and the conversion between them.
//
// The engine schedules on monotonic nanoseconds (std::chrono::steady_clock), immune to wall-clock steps.
// Deadlines cross the API and the disk as wall-clock nanoseconds since the Unix epoch. The offset between the
// two is captured once at start, so a deadline given as a wall-clock time maps to one fixed monotonic time
// for the life of the process (an NTP step does not move pending timers; a restart re-reads wall time).
//
// Thread-safety: immutable after construction; safe from any thread.
#pragma once

#include <chrono>
#include <cstdint>

namespace lawn {

class TimeBase {
 public:
  TimeBase() : offset_ns_(static_cast<__int128>(WallNowNs()) - MonoNowNs()) {}

  // The engine's monotonic clock: steady_clock plus a constant chosen once per process so that "now" reads
  // about wall-clock time + 2^63 ns. Every int64 wall-clock deadline (1678..2262) then maps to a uint64
  // monotonic one without clamping, even those before the host booted (timers due during a reboot, data
  // moved to a fresh node): they keep their real deadline and a recurring timer stays on its own grid.
  // 2^64 - (now + 2^63) leaves over two centuries of uptime before saturation.
  static uint64_t MonoNowNs() { return SteadyNs() + Bias(); }
  static int64_t WallNowNs() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
  }
  static std::chrono::steady_clock::time_point MonoToTimePoint(uint64_t mono_ns) {
    const uint64_t steady = mono_ns < Bias() ? 0 : mono_ns - Bias();
    return std::chrono::steady_clock::time_point(
        std::chrono::nanoseconds(steady > static_cast<uint64_t>(INT64_MAX) ? INT64_MAX : static_cast<int64_t>(steady)));
  }

  // Wall-clock ns of a monotonic instant, saturating at the int64 range.
  int64_t ToWall(uint64_t mono_ns) const {
    const __int128 wall = static_cast<__int128>(mono_ns) + offset_ns_;
    return wall > INT64_MAX ? INT64_MAX : wall < INT64_MIN ? INT64_MIN : static_cast<int64_t>(wall);
  }
  // Monotonic ns of a wall-clock instant (saturating; with the bias above no valid deadline saturates).
  uint64_t ToMono(int64_t wall_ns) const {
    const __int128 mono = static_cast<__int128>(wall_ns) - offset_ns_;
    return mono < 0 ? 0 : mono > static_cast<__int128>(UINT64_MAX) ? UINT64_MAX : static_cast<uint64_t>(mono);
  }

 private:
  static uint64_t SteadyNs() {
    return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                     std::chrono::steady_clock::now().time_since_epoch())
                                     .count());
  }
  static uint64_t Bias() {
    // 2^40 ns (~18 min) below the exact centre: the TimeBase's offset is read a moment after the bias, and
    // the margin absorbs the two clocks drifting apart in between, so neither int64 end saturates.
    static const uint64_t bias = [] {
      const int64_t wall = WallNowNs();
      return (wall > 0 ? static_cast<uint64_t>(wall) : 0) + (uint64_t{1} << 63) - (uint64_t{1} << 40) - SteadyNs();
    }();
    return bias;
  }

  __int128 offset_ns_;  // wall - mono
};

}  // namespace lawn
