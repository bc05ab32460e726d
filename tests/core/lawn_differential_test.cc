// Randomized differential test of Lawn against per-TTL std::deque buckets, fixed seeds. Lawn's lanes let
// timers of one bucket with equal deadlines leave in any order, so a pop is checked against the deque's run
// of equal deadlines at its front, and TakeDue against the set of due timers.
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
    } else if (r < 80) {
      // TakeDue up to a limit around the earliest deadline: often a few timers, sometimes none or many.
      std::vector<TimerRef> want;
      uint64_t earliest = UINT64_MAX;
      for (const auto& [ttl, q] : oracle) earliest = std::min(earliest, pool[q.front()].deadline_ns);
      const uint64_t limit = oracle.empty() ? now : earliest - 20 + rng.Uniform(0, 400);
      for (auto it = oracle.begin(); it != oracle.end();) {
        std::deque<TimerRef>& q = it->second;
        while (!q.empty() && pool[q.front()].deadline_ns <= limit) {
          want.push_back(q.front());
          q.pop_front();
        }
        it = q.empty() ? oracle.erase(it) : std::next(it);
      }
      std::vector<TimerRef> got;
      lawn.TakeDue(limit, got);
      std::sort(want.begin(), want.end());
      std::sort(got.begin(), got.end());
      ASSERT_EQ(got, want) << "op " << op << " limit " << limit;
      for (TimerRef ref : got) {
        ASSERT_EQ(pool[ref].home, Home::kNone);
        erase_filed(ref);
        pool.Free(ref);
        --size;
      }
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
      // Any of the timers at the front of the bucket's FIFO that share its deadline may leave first.
      std::deque<TimerRef>& q = bucket->second;
      auto at = std::find(q.begin(), q.end(), popped);
      ASSERT_NE(at, q.end());
      ASSERT_EQ(pool[q.front()].deadline_ns, pool[popped].deadline_ns)
          << "op " << op << ": popped a timer that is not due first in its bucket";
      q.erase(at);
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
