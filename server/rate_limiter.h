// RateLimiter: the rate_limits config section. Each namespace that matches an entry (the first whose pattern
// matches) gets its own token bucket; a start takes one token or is refused RESOURCE_EXHAUSTED naming the
// limit. Namespaces no entry matches are not limited and cost nothing.
//
// Memory: one bucket per limited namespace; a bucket that has refilled completely is equivalent to none, so
// such buckets are dropped when a stripe has doubled since its last sweep (amortized O(1) per start); a
// stripe never holds more than kMaxPerStripe: past it, arbitrary buckets are dropped (a caller spraying new
// namespace names gets a fresh bucket per name anyway; max_namespaces bounds what it can start).
//
// Thread-safety: TryTake is called from gRPC threads; buckets are spread over kStripes mutexes.
#pragma once

#include <array>
#include <chrono>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/string_view.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "config/options.h"

namespace lawn {

class Metrics;

class RateLimiter {
 public:
  RateLimiter(std::vector<RateLimit> rules, Metrics* metrics);

  bool enabled() const { return !rules_.empty(); }

  // Takes one start's token for `ns` (validated; "" = "default") at `now`. RESOURCE_EXHAUSTED if its bucket
  // is empty (counted in lawn_rate_limited_total).
  absl::Status TryTake(std::string_view ns, std::chrono::steady_clock::time_point now);

  size_t buckets_for_testing();

 private:
  static constexpr size_t kStripes = 16;
  static constexpr size_t kSweepAbove = 4096;
  static constexpr size_t kMaxPerStripe = 16384;

  struct Bucket {
    double tokens;
    std::chrono::steady_clock::time_point refilled;
    const RateLimit* rule;
  };
  struct Stripe {
    absl::Mutex mu;
    absl::flat_hash_map<std::string, Bucket> buckets ABSL_GUARDED_BY(mu);
    size_t sweep_at ABSL_GUARDED_BY(mu) = kSweepAbove;
  };

  const RateLimit* RuleFor(std::string_view ns) const;
  void Sweep(Stripe& stripe, std::chrono::steady_clock::time_point now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(stripe.mu);

  const std::vector<RateLimit> rules_;
  Metrics* const metrics_;
  std::array<Stripe, kStripes> stripes_;
};

}  // namespace lawn
