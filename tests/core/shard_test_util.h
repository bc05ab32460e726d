// Helpers shared by the Shard tests: spec builders and an owning record of Advance's output.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "core/shard.h"

namespace lawn::test {

inline constexpr uint64_t kUs = 1'000;
inline constexpr uint64_t kMs = 1'000'000;
inline constexpr uint64_t kSec = 1'000'000'000;
inline constexpr uint64_t kT0 = 1000 * kSec;  // An arbitrary non-zero origin of the tests' clocks.

inline StartSpec TtlSpec(std::string_view id, uint64_t ttl_ns, std::string_view payload = "",
                         uint64_t interval_ns = 0) {
  StartSpec spec;
  spec.id = id;
  spec.payload = payload;
  spec.when = When::After(ttl_ns);
  spec.interval_ns = interval_ns;
  return spec;
}

inline StartSpec AtSpec(std::string_view id, uint64_t deadline_ns, std::string_view payload = "",
                        uint64_t interval_ns = 0) {
  StartSpec spec = TtlSpec(id, 0, payload, interval_ns);
  spec.when = When::At(deadline_ns);
  return spec;
}

inline StartSpec Replacing(StartSpec spec) {
  spec.replace = true;
  return spec;
}

// One expiration, copied out of the sink.
struct FiredCopy {
  std::string id;
  std::string payload;
  uint64_t deadline_ns = 0;
  uint64_t interval_ns = 0;
  uint64_t next_deadline_ns = 0;

  friend bool operator==(const FiredCopy&, const FiredCopy&) = default;
  friend std::ostream& operator<<(std::ostream& os, const FiredCopy& f) {
    return os << "{id=" << f.id << " payload=" << f.payload.size() << "B deadline=" << f.deadline_ns
              << " interval=" << f.interval_ns << " next=" << f.next_deadline_ns << "}";
  }
};

inline std::vector<FiredCopy> AdvanceAll(Shard& shard, uint64_t now_ns) {
  std::vector<FiredCopy> out;
  size_t n = shard.Advance(now_ns, [&](const Fired& f) {
    out.push_back({f.timer.Key(), std::string(f.timer.payload), f.timer.deadline_ns,
                   f.timer.interval_ns, f.next_deadline_ns});
  });
  if (n != out.size()) out.push_back({"<Advance returned a count different from the sink calls>", "", 0, 0, 0});
  return out;
}

inline std::vector<std::string> Ids(const std::vector<FiredCopy>& fired) {
  std::vector<std::string> ids;
  for (const FiredCopy& f : fired) ids.push_back(f.id);
  return ids;
}

// A tiny deterministic generator (splitmix64), identical on every platform.
class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(seed) {}
  uint64_t Next() {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  // Uniform in [lo, hi] (hi - lo < 2^64 - 1); the modulo bias is irrelevant here.
  uint64_t Uniform(uint64_t lo, uint64_t hi) { return lo + Next() % (hi - lo + 1); }
  bool Percent(uint64_t p) { return Next() % 100 < p; }

 private:
  uint64_t state_;
};

}  // namespace lawn::test
