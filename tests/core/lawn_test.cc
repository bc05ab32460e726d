// Unit tests of Lawn: FIFO TTL buckets with a min-heap over the bucket heads.
#include "core/lawn.h"

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "core/timer_pool.h"
#include "gtest/gtest.h"

namespace lawn {
namespace {

class LawnTest : public ::testing::Test {
 protected:
  // A fresh record with its deadline and TTL set, not yet filed.
  TimerRef Make(uint64_t ttl_ns, uint64_t deadline_ns) {
    TimerRef ref = pool_.Allocate("t" + std::to_string(next_id_++), "", 0);
    pool_[ref].ttl_ns = ttl_ns;
    pool_[ref].deadline_ns = deadline_ns;
    return ref;
  }
  // Makes and pushes a record, asserting the push is accepted.
  TimerRef Push(uint64_t ttl_ns, uint64_t deadline_ns) {
    TimerRef ref = Make(ttl_ns, deadline_ns);
    EXPECT_TRUE(lawn_.TryPush(ref)) << "ttl " << ttl_ns << " deadline " << deadline_ns;
    EXPECT_EQ(pool_[ref].home, Home::kLawn);
    lawn_.CheckInvariants();
    return ref;
  }
  // Pops every timer, checking invariants after each pop.
  std::vector<TimerRef> Drain() {
    std::vector<TimerRef> out;
    while (!lawn_.empty()) {
      TimerRef front = lawn_.Front();
      TimerRef popped = lawn_.PopFront();
      EXPECT_EQ(popped, front);
      EXPECT_EQ(pool_[popped].home, Home::kNone);
      lawn_.CheckInvariants();
      out.push_back(popped);
    }
    EXPECT_EQ(lawn_.Front(), kNoTimer);
    EXPECT_EQ(lawn_.bucket_count(), 0u);
    return out;
  }

  TimerPool pool_;
  Lawn lawn_{pool_, 4};
  int next_id_ = 0;
};

TEST_F(LawnTest, EmptyLawnHasNoFront) {
  EXPECT_TRUE(lawn_.empty());
  EXPECT_EQ(lawn_.size(), 0u);
  EXPECT_EQ(lawn_.bucket_count(), 0u);
  EXPECT_EQ(lawn_.Front(), kNoTimer);
  lawn_.CheckInvariants();
}

TEST_F(LawnTest, PopsInFifoOrderWithinABucket) {
  TimerRef a = Push(100, 10);
  TimerRef b = Push(100, 20);
  TimerRef c = Push(100, 20);  // Equal deadlines: either may leave first (they are in different lanes).
  TimerRef d = Push(100, 30);
  EXPECT_EQ(lawn_.size(), 4u);
  EXPECT_EQ(lawn_.bucket_count(), 1u);
  std::vector<TimerRef> order = Drain();
  ASSERT_EQ(order.size(), 4u);
  EXPECT_EQ(order[0], a);
  EXPECT_EQ(std::min(order[1], order[2]), std::min(b, c));
  EXPECT_EQ(std::max(order[1], order[2]), std::max(b, c));
  EXPECT_EQ(order[3], d);
}

TEST_F(LawnTest, FrontIsEarliestAcrossBuckets) {
  TimerRef a50 = Push(1000, 50);
  TimerRef b10 = Push(2000, 10);
  TimerRef c30 = Push(3000, 30);
  TimerRef a60 = Push(1000, 60);
  TimerRef b70 = Push(2000, 70);
  TimerRef d5 = Push(4000, 5);
  EXPECT_EQ(lawn_.bucket_count(), 4u);
  EXPECT_EQ(lawn_.Front(), d5);
  EXPECT_EQ(Drain(), (std::vector<TimerRef>{d5, b10, c30, a50, a60, b70}));
}

TEST_F(LawnTest, RemovingTheHeadExposesTheNextTimer) {
  TimerRef a = Push(100, 10);
  TimerRef b = Push(100, 20);
  TimerRef c = Push(100, 30);
  TimerRef other = Push(200, 15);
  lawn_.Remove(a);
  lawn_.CheckInvariants();
  EXPECT_EQ(pool_[a].home, Home::kNone);
  EXPECT_EQ(lawn_.size(), 3u);
  EXPECT_EQ(lawn_.Front(), other);
  EXPECT_EQ(Drain(), (std::vector<TimerRef>{other, b, c}));
}

TEST_F(LawnTest, RemovingTheTailKeepsTheRestInOrder) {
  TimerRef a = Push(100, 10);
  TimerRef b = Push(100, 20);
  TimerRef c = Push(100, 30);
  lawn_.Remove(c);
  lawn_.CheckInvariants();
  EXPECT_EQ(lawn_.size(), 2u);
  // The new tail is b: a push behind it must still be ordered against b, not the removed c.
  TimerRef d = Push(100, 25);
  EXPECT_EQ(Drain(), (std::vector<TimerRef>{a, b, d}));
}

TEST_F(LawnTest, RemovingFromTheMiddleKeepsTheRestInOrder) {
  TimerRef a = Push(100, 10);
  TimerRef b = Push(100, 20);
  TimerRef c = Push(100, 30);
  lawn_.Remove(b);
  lawn_.CheckInvariants();
  EXPECT_EQ(lawn_.size(), 2u);
  EXPECT_EQ(lawn_.bucket_count(), 1u);
  EXPECT_EQ(Drain(), (std::vector<TimerRef>{a, c}));
}

TEST_F(LawnTest, RemovingTheOnlyTimerRemovesItsBucket) {
  Push(100, 10);
  TimerRef only = Push(200, 20);
  EXPECT_EQ(lawn_.bucket_count(), 2u);
  lawn_.Remove(only);
  lawn_.CheckInvariants();
  EXPECT_EQ(lawn_.bucket_count(), 1u);
  EXPECT_FALSE(lawn_.HasBucket(200));
  EXPECT_TRUE(lawn_.HasBucket(100));
}

TEST_F(LawnTest, PoppingTheLastTimerOfABucketRemovesIt) {
  TimerRef first = Push(100, 10);
  Push(200, 20);
  Push(200, 30);
  EXPECT_EQ(lawn_.bucket_count(), 2u);
  EXPECT_EQ(lawn_.PopFront(), first);
  lawn_.CheckInvariants();
  EXPECT_EQ(lawn_.bucket_count(), 1u);
  EXPECT_FALSE(lawn_.HasBucket(100));
  EXPECT_TRUE(lawn_.HasBucket(200));
}

TEST_F(LawnTest, TryPushRefusesDeadlineEarlierThanTail) {
  TimerRef a = Push(100, 50);
  TimerRef late = Make(100, 49);
  EXPECT_FALSE(lawn_.TryPush(late));
  lawn_.CheckInvariants();
  EXPECT_EQ(pool_[late].home, Home::kNone);
  EXPECT_EQ(lawn_.size(), 1u);
  EXPECT_EQ(lawn_.Front(), a);
  // An equal deadline keeps the FIFO ordered and is accepted.
  TimerRef equal = Push(100, 50);
  EXPECT_EQ(Drain(), (std::vector<TimerRef>{a, equal}));
}

TEST_F(LawnTest, TryPushRefusesNewBucketAtMaxBuckets) {
  Push(1, 10);
  Push(2, 20);
  Push(3, 30);
  TimerRef four = Push(4, 40);
  TimerRef fifth = Make(5, 50);
  EXPECT_FALSE(lawn_.TryPush(fifth));
  lawn_.CheckInvariants();
  EXPECT_EQ(pool_[fifth].home, Home::kNone);
  EXPECT_EQ(lawn_.bucket_count(), 4u);
  EXPECT_FALSE(lawn_.HasBucket(5));
  // Existing buckets still take timers.
  Push(1, 60);
  EXPECT_EQ(lawn_.bucket_count(), 4u);
  // Once a bucket empties there is room again.
  lawn_.Remove(four);
  EXPECT_TRUE(lawn_.TryPush(fifth));
  lawn_.CheckInvariants();
  EXPECT_TRUE(lawn_.HasBucket(5));
  EXPECT_EQ(lawn_.bucket_count(), 4u);
}

TEST_F(LawnTest, BucketIsRecreatedAfterItEmptied) {
  TimerRef a = Push(100, 10);
  lawn_.Remove(a);
  EXPECT_FALSE(lawn_.HasBucket(100));
  // A fresh bucket has no tail to be ordered against, so an earlier deadline is fine.
  TimerRef b = Push(100, 5);
  EXPECT_TRUE(lawn_.HasBucket(100));
  EXPECT_EQ(Drain(), (std::vector<TimerRef>{b}));
}

TEST_F(LawnTest, RemovingAHeadReordersTheHeap) {
  // Bucket 100's head is the global front; removing it must let bucket 200 take over.
  TimerRef a1 = Push(100, 10);
  TimerRef a2 = Push(100, 90);
  TimerRef b1 = Push(200, 20);
  TimerRef c1 = Push(300, 30);
  lawn_.Remove(a1);
  lawn_.CheckInvariants();
  EXPECT_EQ(lawn_.Front(), b1);
  EXPECT_EQ(Drain(), (std::vector<TimerRef>{b1, c1, a2}));
}

TEST_F(LawnTest, SizeIsTheSumOfBucketLengths) {
  for (int i = 0; i < 10; ++i) Push(100 * (i % 3 + 1), 1000 + i);
  EXPECT_EQ(lawn_.size(), 10u);
  EXPECT_EQ(lawn_.bucket_count(), 3u);
  EXPECT_GT(lawn_.MemoryBytes(), 0u);
  EXPECT_EQ(Drain().size(), 10u);
  EXPECT_EQ(lawn_.size(), 0u);
}

TEST_F(LawnTest, TakeDueTakesEveryDueTimerOfEveryLaneAndBucket) {
  // 40 timers in one bucket spread over all lanes, 3 in another; take those due by 25.
  std::vector<TimerRef> due;
  std::vector<TimerRef> later;
  for (uint64_t d = 1; d <= 40; ++d) (d <= 25 ? due : later).push_back(Push(100, d));
  due.push_back(Push(200, 7));
  due.push_back(Push(200, 25));
  later.push_back(Push(200, 26));
  std::vector<TimerRef> got;
  lawn_.TakeDue(25, got);
  lawn_.CheckInvariants();
  std::sort(got.begin(), got.end());
  std::sort(due.begin(), due.end());
  EXPECT_EQ(got, due);
  for (TimerRef ref : got) EXPECT_EQ(pool_[ref].home, Home::kNone);
  EXPECT_EQ(lawn_.size(), later.size());
  EXPECT_EQ(lawn_.FrontDeadline(), 26u);
  // Nothing more is due by 25; an emptied bucket is dropped.
  got.clear();
  lawn_.TakeDue(25, got);
  EXPECT_TRUE(got.empty());
  lawn_.TakeDue(39, got);
  lawn_.CheckInvariants();
  EXPECT_EQ(got.size(), later.size() - 1);
  EXPECT_EQ(lawn_.bucket_count(), 1u);
  EXPECT_FALSE(lawn_.HasBucket(200));
  EXPECT_EQ(Drain().size(), 1u);
}

}  // namespace
}  // namespace lawn
