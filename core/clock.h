// Clock: where time comes from, injected so tests run on a FakeClock.
//
// The engine itself never reads a clock (every core method takes `now_ns`); the server's workers read one of
// these and pass the value down. Readings are monotonic nanoseconds since an arbitrary origin.
//
// Thread-safety: implementations must allow concurrent Now() calls; FakeClock's Advance/Set are for the one
// thread driving a test.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>

namespace lawn {

class Clock {
 public:
  Clock() = default;
  Clock(const Clock&) = delete;
  Clock& operator=(const Clock&) = delete;
  virtual ~Clock() = default;

  // Monotonic nanoseconds; never decreases.
  virtual uint64_t NowNs() const = 0;
};

// std::chrono::steady_clock, for production.
class SteadyClock final : public Clock {
 public:
  uint64_t NowNs() const override {
    return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                     std::chrono::steady_clock::now().time_since_epoch())
                                     .count());
  }
};

// A clock that moves only when told to.
class FakeClock final : public Clock {
 public:
  explicit FakeClock(uint64_t start_ns = 0) : now_ns_(start_ns) {}
  uint64_t NowNs() const override { return now_ns_.load(std::memory_order_relaxed); }
  void Advance(uint64_t delta_ns) { now_ns_.fetch_add(delta_ns, std::memory_order_relaxed); }
  void Set(uint64_t now_ns) { now_ns_.store(now_ns, std::memory_order_relaxed); }

 private:
  std::atomic<uint64_t> now_ns_;
};

}  // namespace lawn
