// RateLimiter on a fake clock: bursts, refill, one bucket per namespace, first matching entry, no bucket for
// unlimited namespaces, and full buckets dropped when a stripe grows.
#include "server/rate_limiter.h"

#include <chrono>
#include <string>

#include "gtest/gtest.h"

namespace lawn {
namespace {

using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;

RateLimit Rule(std::vector<std::string> namespaces, double rate, uint64_t burst) {
  RateLimit r;
  r.namespaces = std::move(namespaces);
  r.starts_per_second = rate;
  r.burst = burst;
  return r;
}

TEST(RateLimiterTest, BurstThenRefillAtTheRate) {
  RateLimiter limiter({Rule({"billing"}, 10, 3)}, nullptr);
  const Clock::time_point t0 = Clock::now();
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(limiter.TryTake("billing", t0).ok()) << i;
  const absl::Status refused = limiter.TryTake("billing", t0);
  EXPECT_EQ(refused.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(refused.message().find("10 starts/s, burst 3"), std::string::npos) << refused.message();
  EXPECT_FALSE(limiter.TryTake("billing", t0 + milliseconds(50)).ok());  // Half a token.
  EXPECT_TRUE(limiter.TryTake("billing", t0 + milliseconds(100)).ok());
  EXPECT_FALSE(limiter.TryTake("billing", t0 + milliseconds(100)).ok());
  // An older `now` from another thread adds nothing and takes nothing away.
  EXPECT_FALSE(limiter.TryTake("billing", t0).ok());
  // Never more than the burst, however long the pause.
  const Clock::time_point later = t0 + std::chrono::hours(1);
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(limiter.TryTake("billing", later).ok()) << i;
  EXPECT_FALSE(limiter.TryTake("billing", later).ok());
}

TEST(RateLimiterTest, EachNamespaceHasItsOwnBucketAndTheFirstMatchingRuleApplies) {
  RateLimiter limiter({Rule({"billing-*"}, 1, 1), Rule({"*"}, 1, 2)}, nullptr);
  const Clock::time_point t0 = Clock::now();
  EXPECT_TRUE(limiter.TryTake("billing-eu", t0).ok());
  EXPECT_FALSE(limiter.TryTake("billing-eu", t0).ok());
  EXPECT_TRUE(limiter.TryTake("billing-us", t0).ok());
  EXPECT_TRUE(limiter.TryTake("orders", t0).ok());
  EXPECT_TRUE(limiter.TryTake("orders", t0).ok());  // The "*" rule: burst 2.
  EXPECT_FALSE(limiter.TryTake("orders", t0).ok());
  EXPECT_TRUE(limiter.TryTake("", t0).ok());  // "" is "default".
  EXPECT_TRUE(limiter.TryTake("default", t0).ok());
  EXPECT_FALSE(limiter.TryTake("default", t0).ok());
}

TEST(RateLimiterTest, UnlimitedNamespacesCostNothing) {
  RateLimiter limiter({Rule({"billing"}, 1, 1)}, nullptr);
  for (int i = 0; i < 1000; ++i) EXPECT_TRUE(limiter.TryTake("other-" + std::to_string(i), Clock::now()).ok());
  EXPECT_EQ(limiter.buckets_for_testing(), 0u);
  RateLimiter off({}, nullptr);
  EXPECT_FALSE(off.enabled());
  EXPECT_TRUE(off.TryTake("billing", Clock::now()).ok());
}

TEST(RateLimiterTest, FullBucketsAreDroppedSoNamesCannotGrowMemory) {
  RateLimiter limiter({Rule({"*"}, 1000, 1)}, nullptr);
  Clock::time_point now = Clock::now();
  for (int i = 0; i < 200'000; ++i) {
    ASSERT_TRUE(limiter.TryTake("ns-" + std::to_string(i), now).ok());
    now += std::chrono::microseconds(10);  // Buckets refill (1 token per ms) long before the sweep.
  }
  EXPECT_LE(limiter.buckets_for_testing(), 16u * 16384u);
}

TEST(RateLimiterTest, SlowRulesCannotGrowMemoryEither) {
  // At 0.001/s a bucket takes 1000 s to be full again, so sweeps free nothing: the hard cap holds.
  RateLimiter limiter({Rule({"tenant-*"}, 0.001, 1)}, nullptr);
  const Clock::time_point now = Clock::now();
  for (int i = 0; i < 400'000; ++i) ASSERT_TRUE(limiter.TryTake("tenant-" + std::to_string(i), now).ok());
  EXPECT_LE(limiter.buckets_for_testing(), 16u * 16384u);
}

}  // namespace
}  // namespace lawn
