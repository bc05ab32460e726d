// Workloads for lawn_bench: TTL distributions, random ids, and the steady-state population a benchmark starts
// from.
//
// Time is fake and counted in whole ticks of kTickNs (1 ms); every TTL is a whole number of ticks, so the
// engine (which quantizes to its tick) and the baselines (which compare raw nanoseconds) fire the same timers
// at the same Advance.
//
// Steady state: a service that starts timers at a constant rate and lets each run out holds, at any moment,
// the timers whose age is below their TTL. So a pending timer's TTL is drawn with probability proportional to
// the TTL (long TTLs stay pending longer) and its age is uniform in [0, ttl). MakePlan draws `pending` such
// timers and sorts them by start time, so replaying the starts in order (the clock only moving forward)
// reproduces that population without any timer falling due during the replay: every deadline is after
// end_tick.
//
// Thread-safety: none needed; plans are built and read by the benchmark thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <random>
#include <string_view>
#include <vector>

namespace lawn {

inline constexpr uint64_t kTickNs = 1'000'000;  // The fake clock's step, and the engine's tick: 1 ms.
inline constexpr size_t kIdBytes = 16;          // Every id is 16 random bytes.

enum class Workload : uint8_t {
  kFixedTtls,   // 8 distinct TTLs, 100 ms .. 30 s, equally likely at start.
  kRandomTtls,  // TTL uniform in [1 ms, 60 s] at 1 ms resolution.
};

// "FixedTtls" / "RandomTtls": the workload part of a benchmark name.
std::string_view WorkloadName(Workload workload);

// Draws TTLs, in ticks, for one workload.
class TtlSampler {
 public:
  explicit TtlSampler(Workload workload) : workload_(workload) {}

  // The TTL of a newly started timer.
  uint32_t Arrival(std::mt19937_64& rng) const;
  // The TTL of a timer found pending in the steady state: Arrival's law weighted by the TTL.
  uint32_t Pending(std::mt19937_64& rng) const;
  // Mean of Arrival, in ticks: the steady state expires pending / MeanArrivalTicks() timers per tick.
  double MeanArrivalTicks() const;
  // Largest TTL Arrival can return.
  uint32_t MaxTicks() const;

 private:
  Workload workload_;
};

// `count` random ids of kIdBytes each, stored back to back (no per-id allocation).
class IdBlock {
 public:
  IdBlock() = default;
  explicit IdBlock(size_t count) : bytes_(std::make_unique<char[]>(count * kIdBytes)), count_(count) {}

  // Overwrites every id with fresh random bytes.
  void Fill(std::mt19937_64& rng);
  // Overwrites id `i` with `id`. REQUIRES: id.size() == kIdBytes.
  void Set(size_t i, std::string_view id);

  std::string_view operator[](size_t i) const { return {bytes_.get() + i * kIdBytes, kIdBytes}; }
  size_t size() const { return count_; }

 private:
  std::unique_ptr<char[]> bytes_;
  size_t count_ = 0;
};

// The steady-state population of `pending` timers, in start order. Timer i has id ids[i], TTL ttl_ticks[i]
// and was started at start_tick[i] (non-decreasing in i). Every deadline start_tick[i] + ttl_ticks[i] >
// end_tick.
struct Plan {
  Workload workload = Workload::kFixedTtls;
  size_t pending = 0;
  IdBlock ids;
  std::vector<uint16_t> ttl_ticks;  // Every TTL of both workloads fits: at most 60'000 ticks.
  std::vector<uint32_t> start_tick;
  uint64_t end_tick = 0;  // The clock after the replay.
};

// Draws a plan. Deterministic for a given (workload, pending, seed), so every structure gets the same timers.
std::unique_ptr<Plan> MakePlan(Workload workload, size_t pending, uint64_t seed);

}  // namespace lawn
