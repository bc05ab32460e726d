#include "bench/workload.h"

#include <algorithm>
#include <array>
#include <cassert>
#include <cstring>

namespace lawn {
namespace {

constexpr std::array<uint32_t, 8> kFixedTtlTicks = {100, 250, 500, 1'000, 2'000, 5'000, 10'000, 30'000};
constexpr uint32_t kRandomMaxTicks = 60'000;

constexpr uint32_t FixedTtlSum() {
  uint32_t sum = 0;
  for (uint32_t t : kFixedTtlTicks) sum += t;
  return sum;
}

}  // namespace

std::string_view WorkloadName(Workload workload) {
  switch (workload) {
    case Workload::kFixedTtls:
      return "FixedTtls";
    case Workload::kRandomTtls:
      return "RandomTtls";
  }
  return "?";
}

uint32_t TtlSampler::Arrival(std::mt19937_64& rng) const {
  if (workload_ == Workload::kFixedTtls) return kFixedTtlTicks[rng() % kFixedTtlTicks.size()];
  return 1 + static_cast<uint32_t>(rng() % kRandomMaxTicks);
}

uint32_t TtlSampler::Pending(std::mt19937_64& rng) const {
  if (workload_ == Workload::kFixedTtls) {
    // P(ttl) = ttl / sum: pick a point in [0, sum) and find the TTL whose span holds it.
    uint32_t point = static_cast<uint32_t>(rng() % FixedTtlSum());
    for (uint32_t t : kFixedTtlTicks) {
      if (point < t) return t;
      point -= t;
    }
    return kFixedTtlTicks.back();
  }
  // P(ttl) proportional to ttl on [1, max]: rejection sampling, accepting ttl with probability ttl / max (the
  // mean acceptance is about 1/2).
  for (;;) {
    uint32_t ttl = 1 + static_cast<uint32_t>(rng() % kRandomMaxTicks);
    if (rng() % kRandomMaxTicks < ttl) return ttl;
  }
}

double TtlSampler::MeanArrivalTicks() const {
  if (workload_ == Workload::kFixedTtls) return static_cast<double>(FixedTtlSum()) / kFixedTtlTicks.size();
  return (1.0 + kRandomMaxTicks) / 2;
}

uint32_t TtlSampler::MaxTicks() const {
  return workload_ == Workload::kFixedTtls ? kFixedTtlTicks.back() : kRandomMaxTicks;
}

void IdBlock::Fill(std::mt19937_64& rng) {
  static_assert(kIdBytes == 2 * sizeof(uint64_t));
  for (size_t i = 0; i < count_; ++i) {
    const uint64_t words[2] = {rng(), rng()};
    std::memcpy(bytes_.get() + i * kIdBytes, words, kIdBytes);
  }
}

void IdBlock::Set(size_t i, std::string_view id) {
  assert(id.size() == kIdBytes);
  std::memcpy(bytes_.get() + i * kIdBytes, id.data(), kIdBytes);
}

std::unique_ptr<Plan> MakePlan(Workload workload, size_t pending, uint64_t seed) {
  std::mt19937_64 rng(seed);
  const TtlSampler sampler(workload);
  auto plan = std::make_unique<Plan>();
  plan->workload = workload;
  plan->pending = pending;
  // One second of slack before the oldest possible start keeps every start tick positive.
  plan->end_tick = sampler.MaxTicks() + 1'000;

  // Sort key: start tick in the high bits, TTL in the low 16; sorting orders the replay by start time.
  std::vector<uint64_t> keys(pending);
  for (uint64_t& key : keys) {
    const uint32_t ttl = sampler.Pending(rng);
    const uint32_t age = static_cast<uint32_t>(rng() % ttl);  // In [0, ttl): the deadline is after end_tick.
    key = ((plan->end_tick - age) << 16) | ttl;
  }
  std::sort(keys.begin(), keys.end());

  plan->ttl_ticks.resize(pending);
  plan->start_tick.resize(pending);
  for (size_t i = 0; i < pending; ++i) {
    plan->ttl_ticks[i] = static_cast<uint16_t>(keys[i] & 0xffff);
    plan->start_tick[i] = static_cast<uint32_t>(keys[i] >> 16);
  }
  keys = {};

  // Ids are independent of the schedule; 128 random bits make a collision negligible (p < 1e-24 at 1e7).
  plan->ids = IdBlock(pending);
  plan->ids.Fill(rng);
  return plan;
}

}  // namespace lawn
