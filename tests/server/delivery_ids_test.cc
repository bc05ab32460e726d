// DeliveryIds: unique and increasing within a worker, across the counter's wrap and across "restarts".
#include "server/delivery_ids.h"

#include <set>

#include "gtest/gtest.h"

namespace lawn {
namespace {

constexpr int64_t kNowMs = 1'795'000'000'000;  // 2026.

TEST(DeliveryIdsTest, IdsIncreaseAcrossManySlotsWithAFrozenClock) {
  DeliveryIds ids(3);
  uint64_t last = 0;
  // Three slots' worth with the clock standing still: the worker moves to later slots itself.
  for (uint64_t i = 0; i < 3 * (uint64_t{1} << DeliveryIds::kCounterBits); ++i) {
    const uint64_t id = ids.Next(kNowMs);
    ASSERT_GT(id, last);
    last = id;
  }
  EXPECT_EQ(DeliveryIds::SlotOf(last), static_cast<uint64_t>(kNowMs - DeliveryIds::kSlotEpochUnixMs) + 2);
}

TEST(DeliveryIdsTest, ShardsNeverCollideInOneSlot) {
  std::set<uint64_t> seen;
  for (uint32_t shard = 0; shard < 4; ++shard) {
    DeliveryIds ids(shard);
    for (int i = 0; i < 1000; ++i) ASSERT_TRUE(seen.insert(ids.Next(kNowMs)).second);
  }
}

TEST(DeliveryIdsTest, ALaterProcessStartsAboveTheRecoveredFloorEvenIfTheClockStepsBack) {
  DeliveryIds first(0);
  uint64_t last = 0;
  for (int i = 0; i < 100; ++i) last = first.Next(kNowMs);
  DeliveryIds second(0);
  second.RaiseFloor(last);
  EXPECT_GT(second.Next(kNowMs - 60'000), last);  // Clock a minute behind.
  DeliveryIds third(0);
  EXPECT_GT(third.Next(kNowMs + 1), last);  // No floor: the wall clock alone moves it on.
}

}  // namespace
}  // namespace lawn
