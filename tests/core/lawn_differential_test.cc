// Randomized differential test of Lawn against per-TTL std::deque buckets, fixed seeds.
#include <algorithm>
#include <cstdint>
#include <deque>
#include <map>
#include <string>
#include <vector>

#include "core/lawn.h"
#include "core/timer_pool.h"
#include "gtest/gtest.h"
#include "tests/core/shard_test_util.h"

namespace lawn {
namespace {

using ::lawn::test::Rng;

void RunLawnDifferential(uint64_t seed, uint32_t max_buckets, int ops) {
  TimerPool pool;
  Lawn lawn(pool, max_buckets);
  std::map<uint64_t, std::deque<TimerRef>> oracle;  // ttl -> FIFO of refs.
  std::vector<TimerRef> filed;                      // For picking a random victim.
  size_t size = 0;
  Rng rng(seed);
  uint64_t now = 1'000'000;
  auto erase_filed = [&](TimerRef ref) {
    auto it = std::find(filed.begin(), filed.end(), ref);
    ASSERT_NE(it, filed.end());
    *it = filed.back();
    filed.pop_back();
  };
  for (int op = 0; op < ops; ++op) {
    now += rng.Uniform(0, 10);
    const uint64_t r = rng.Uniform(0, 99);
    if (r < 50) {
      const uint64_t ttl = 100 * rng.Uniform(1, max_buckets + 4);
      uint64_t deadline = now + ttl;
      auto bucket = oracle.find(ttl);
      const bool exists = bucket != oracle.end();
      if (exists && rng.Percent(10)) {
        const uint64_t tail = pool[bucket->second.back()].deadline_ns;
        deadline = rng.Percent(50) ? tail : tail - rng.Uniform(1, 50);  // Equal: accepted; earlier: refused.
      }
      TimerRef ref = pool.Allocate("x", "", 0);
      pool[ref].ttl_ns = ttl;
      pool[ref].deadline_ns = deadline;
      const bool want = exists ? deadline >= pool[bucket->second.back()].deadline_ns
                               : oracle.size() < max_buckets;
      ASSERT_EQ(lawn.TryPush(ref), want) << "op " << op << " ttl " << ttl << " deadline " << deadline;
      if (want) {
        oracle[ttl].push_back(ref);
        filed.push_back(ref);
        ++size;
      } else {
        ASSERT_EQ(pool[ref].home, Home::kNone);
        pool.Free(ref);
      }
    } else if (r < 70) {
      if (filed.empty()) continue;
      TimerRef victim = filed[rng.Uniform(0, filed.size() - 1)];
      const uint64_t ttl = pool[victim].ttl_ns;
      lawn.Remove(victim);
      std::deque<TimerRef>& q = oracle[ttl];
      q.erase(std::find(q.begin(), q.end(), victim));
      if (q.empty()) oracle.erase(ttl);
      erase_filed(victim);
      pool.Free(victim);
      --size;
    } else {
      if (oracle.empty()) {
        ASSERT_EQ(lawn.Front(), kNoTimer);
        continue;
      }
      uint64_t earliest = UINT64_MAX;
      for (const auto& [ttl, q] : oracle) earliest = std::min(earliest, pool[q.front()].deadline_ns);
      const TimerRef front = lawn.Front();
      ASSERT_NE(front, kNoTimer);
      ASSERT_EQ(pool[front].deadline_ns, earliest) << "op " << op;
      const TimerRef popped = lawn.PopFront();
      ASSERT_EQ(popped, front);
      auto bucket = oracle.find(pool[popped].ttl_ns);
      ASSERT_NE(bucket, oracle.end());
      ASSERT_EQ(bucket->second.front(), popped) << "op " << op << ": popped a timer that is not a head";
      bucket->second.pop_front();
      if (bucket->second.empty()) oracle.erase(bucket);
      erase_filed(popped);
      pool.Free(popped);
      --size;
    }
    ASSERT_EQ(lawn.size(), size) << "op " << op;
    ASSERT_EQ(lawn.bucket_count(), oracle.size()) << "op " << op;
    if (op % 500 == 0) {
      lawn.CheckInvariants();
      for (uint64_t ttl = 100; ttl <= 100 * (max_buckets + 4); ttl += 100) {
        ASSERT_EQ(lawn.HasBucket(ttl), oracle.count(ttl) > 0) << "op " << op << " ttl " << ttl;
      }
    }
  }
  lawn.CheckInvariants();
}

TEST(LawnDifferentialTest, MatchesDequeBucketsWithFewBuckets) { RunLawnDifferential(11, 4, 300000); }

TEST(LawnDifferentialTest, MatchesDequeBucketsWithManyBuckets) { RunLawnDifferential(12, 64, 300000); }

}  // namespace
}  // namespace lawn
