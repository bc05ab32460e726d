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
  TimeBase() : offset_ns_(WallNowNs() - static_cast<int64_t>(MonoNowNs())) {}

  static uint64_t MonoNowNs() {
    return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                     std::chrono::steady_clock::now().time_since_epoch())
                                     .count());
  }
  static int64_t WallNowNs() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
  }
  static std::chrono::steady_clock::time_point MonoToTimePoint(uint64_t mono_ns) {
    return std::chrono::steady_clock::time_point(std::chrono::nanoseconds(
        mono_ns > static_cast<uint64_t>(INT64_MAX) ? INT64_MAX : static_cast<int64_t>(mono_ns)));
  }

  // Wall-clock ns of a monotonic instant, saturating at INT64_MAX.
  int64_t ToWall(uint64_t mono_ns) const {
    const __int128 wall = static_cast<__int128>(mono_ns) + offset_ns_;
    return wall > INT64_MAX ? INT64_MAX : wall < INT64_MIN ? INT64_MIN : static_cast<int64_t>(wall);
  }
  // Monotonic ns of a wall-clock instant; instants before the monotonic origin map to 0 (long past).
  uint64_t ToMono(int64_t wall_ns) const {
    const __int128 mono = static_cast<__int128>(wall_ns) - offset_ns_;
    return mono < 0 ? 0 : mono > static_cast<__int128>(UINT64_MAX) ? UINT64_MAX : static_cast<uint64_t>(mono);
  }

 private:
  int64_t offset_ns_;  // wall - mono
};

}  // namespace lawn
