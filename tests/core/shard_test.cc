// Unit tests of Shard's API: start / replace / delete / get / reschedule, recurring timers and fire order.
#include "core/shard.h"

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "gtest/gtest.h"
#include "tests/core/shard_test_util.h"

namespace lawn {
namespace {

using ::lawn::test::AdvanceAll;
using ::lawn::test::AtSpec;
using ::lawn::test::FiredCopy;
using ::lawn::test::Ids;
using ::lawn::test::kMs;
using ::lawn::test::kSec;
using ::lawn::test::kT0;
using ::lawn::test::Replacing;
using ::lawn::test::TtlSpec;

TEST(ShardTest, StartStoresTimerVisibleThroughGet) {
  Shard shard;
  ASSERT_TRUE(shard.Start(TtlSpec("a", 5 * kSec, "pay"), kT0).ok());
  std::optional<TimerView> v = shard.Get("a");
  ASSERT_TRUE(v.has_value());
  EXPECT_EQ(v->id, "a");
  EXPECT_EQ(v->payload, "pay");
  EXPECT_EQ(v->deadline_ns, kT0 + 5 * kSec);
  EXPECT_EQ(v->ttl_ns, 5 * kSec);
  EXPECT_EQ(v->interval_ns, 0u);
  EXPECT_EQ(shard.pending(), 1u);
  shard.CheckInvariants();
}

TEST(ShardTest, StartWithAbsoluteDeadlineStoresThatDeadline) {
  Shard shard;
  ASSERT_TRUE(shard.Start(AtSpec("a", kT0 + 1234567, "", 10 * kMs), kT0).ok());
  std::optional<TimerView> v = shard.Get("a");
  ASSERT_TRUE(v.has_value());
  EXPECT_EQ(v->deadline_ns, kT0 + 1234567);
  EXPECT_EQ(v->interval_ns, 10 * kMs);
  shard.CheckInvariants();
}

TEST(ShardTest, OnStartedSeesTheStoredTimer) {
  Shard shard;
  bool called = false;
  ASSERT_TRUE(shard
                  .Start(TtlSpec("a", 2 * kSec, "p"), kT0,
                         [&](const TimerView& v) {
                           called = true;
                           EXPECT_EQ(v.id, "a");
                           EXPECT_EQ(v.payload, "p");
                           EXPECT_EQ(v.deadline_ns, kT0 + 2 * kSec);
                         })
                  .ok());
  EXPECT_TRUE(called);
}

TEST(ShardTest, StartWithDuplicateIdIsAlreadyExistsAndKeepsOriginal) {
  Shard shard;
  ASSERT_TRUE(shard.Start(TtlSpec("a", 5 * kSec, "first"), kT0).ok());
  absl::Status s = shard.Start(TtlSpec("a", 9 * kSec, "second"), kT0 + 1);
  EXPECT_EQ(s.code(), absl::StatusCode::kAlreadyExists) << s;
  ASSERT_TRUE(shard.Get("a").has_value());
  EXPECT_EQ(shard.Get("a")->payload, "first");
  EXPECT_EQ(shard.Get("a")->deadline_ns, kT0 + 5 * kSec);
  EXPECT_EQ(shard.pending(), 1u);
  shard.CheckInvariants();
}

TEST(ShardTest, StartWithReplaceReplacesTheExistingTimer) {
  Shard shard;
  ASSERT_TRUE(shard.Start(TtlSpec("a", 5 * kSec, "first"), kT0).ok());
  ASSERT_TRUE(shard.Start(Replacing(TtlSpec("a", 9 * kSec, "second", kSec)), kT0 + 1).ok());
  shard.CheckInvariants();
  EXPECT_EQ(shard.pending(), 1u);
  std::optional<TimerView> v = shard.Get("a");
  ASSERT_TRUE(v.has_value());
  EXPECT_EQ(v->payload, "second");
  EXPECT_EQ(v->deadline_ns, kT0 + 1 + 9 * kSec);
  EXPECT_EQ(v->interval_ns, kSec);
  // The old deadline no longer fires.
  EXPECT_TRUE(AdvanceAll(shard, kT0 + 6 * kSec).empty());
  std::vector<FiredCopy> fired = AdvanceAll(shard, kT0 + 10 * kSec);
  ASSERT_EQ(fired.size(), 1u);
  EXPECT_EQ(fired[0].payload, "second");
  EXPECT_EQ(fired[0].deadline_ns, kT0 + 1 + 9 * kSec);
}

TEST(ShardTest, StartWithReplaceOnMissingIdJustStarts) {
  Shard shard;
  ASSERT_TRUE(shard.Start(Replacing(TtlSpec("a", kSec)), kT0).ok());
  EXPECT_TRUE(shard.Get("a").has_value());
}

TEST(ShardTest, StartRejectsEmptyId) {
  Shard shard;
  EXPECT_EQ(shard.Start(TtlSpec("", kSec), kT0).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(shard.pending(), 0u);
}

TEST(ShardTest, StartRejectsZeroTtl) {
  Shard shard;
  EXPECT_EQ(shard.Start(TtlSpec("a", 0), kT0).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(shard.pending(), 0u);
  EXPECT_FALSE(shard.Get("a").has_value());
  shard.CheckInvariants();
}

TEST(ShardTest, GetOfMissingIdIsEmpty) {
  Shard shard;
  EXPECT_FALSE(shard.Get("nope").has_value());
  ASSERT_TRUE(shard.Start(TtlSpec("a", kSec), kT0).ok());
  EXPECT_FALSE(shard.Get("nope").has_value());
  EXPECT_FALSE(shard.Get("").has_value());
}

TEST(ShardTest, DeleteRemovesThePendingTimer) {
  Shard shard;
  ASSERT_TRUE(shard.Start(TtlSpec("a", kSec, "p"), kT0).ok());
  ASSERT_TRUE(shard.Start(TtlSpec("b", kSec), kT0).ok());
  std::string seen;
  ASSERT_TRUE(shard.Delete("a", [&](const TimerView& v) { seen = std::string(v.payload); }).ok());
  EXPECT_EQ(seen, "p");
  shard.CheckInvariants();
  EXPECT_FALSE(shard.Get("a").has_value());
  EXPECT_EQ(shard.pending(), 1u);
  EXPECT_EQ(Ids(AdvanceAll(shard, kT0 + 2 * kSec)), (std::vector<std::string>{"b"}));
}

TEST(ShardTest, DeleteOfMissingIdIsNotFound) {
  Shard shard;
  EXPECT_EQ(shard.Delete("a").code(), absl::StatusCode::kNotFound);
  ASSERT_TRUE(shard.Start(TtlSpec("a", kSec), kT0).ok());
  ASSERT_TRUE(shard.Delete("a").ok());
  EXPECT_EQ(shard.Delete("a").code(), absl::StatusCode::kNotFound);
  shard.CheckInvariants();
}

TEST(ShardTest, FiredOneShotTimerIsGone) {
  Shard shard;
  ASSERT_TRUE(shard.Start(TtlSpec("a", kSec), kT0).ok());
  ASSERT_EQ(AdvanceAll(shard, kT0 + kSec).size(), 1u);
  EXPECT_FALSE(shard.Get("a").has_value());
  EXPECT_EQ(shard.Delete("a").code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(shard.pending(), 0u);
  EXPECT_FALSE(shard.NextDeadlineNs().has_value());
  // The id is free again.
  EXPECT_TRUE(shard.Start(TtlSpec("a", kSec), kT0 + kSec).ok());
}

TEST(ShardTest, RescheduleEarlierFiresAtTheNewTimeOnly) {
  Shard shard;
  ASSERT_TRUE(shard.Start(TtlSpec("a", 10 * kSec, "p"), kT0).ok());
  ASSERT_TRUE(shard.Reschedule("a", When::At(kT0 + 2 * kSec), kT0 + 1).ok());
  shard.CheckInvariants();
  EXPECT_EQ(shard.Get("a")->deadline_ns, kT0 + 2 * kSec);
  EXPECT_TRUE(AdvanceAll(shard, kT0 + 2 * kSec - 1).empty());
  std::vector<FiredCopy> fired = AdvanceAll(shard, kT0 + 2 * kSec);
  ASSERT_EQ(fired.size(), 1u);
  EXPECT_EQ(fired[0].deadline_ns, kT0 + 2 * kSec);
  EXPECT_EQ(fired[0].payload, "p");
  EXPECT_TRUE(AdvanceAll(shard, kT0 + 20 * kSec).empty());
}

TEST(ShardTest, RescheduleLaterFiresAtTheNewTimeOnly) {
  Shard shard;
  ASSERT_TRUE(shard.Start(TtlSpec("a", 2 * kSec), kT0).ok());
  ASSERT_TRUE(shard.Reschedule("a", When::After(8 * kSec), kT0 + kSec).ok());
  shard.CheckInvariants();
  EXPECT_EQ(shard.Get("a")->deadline_ns, kT0 + 9 * kSec);
  EXPECT_TRUE(AdvanceAll(shard, kT0 + 3 * kSec).empty());
  EXPECT_TRUE(AdvanceAll(shard, kT0 + 9 * kSec - 1).empty());
  std::vector<FiredCopy> fired = AdvanceAll(shard, kT0 + 9 * kSec);
  ASSERT_EQ(fired.size(), 1u);
  EXPECT_EQ(fired[0].deadline_ns, kT0 + 9 * kSec);
  EXPECT_TRUE(AdvanceAll(shard, kT0 + 100 * kSec).empty());
}

TEST(ShardTest, RescheduleKeepsPayloadAndInterval) {
  Shard shard;
  ASSERT_TRUE(shard.Start(TtlSpec("a", kSec, "keep", 500 * kMs), kT0).ok());
  bool called = false;
  ASSERT_TRUE(shard
                  .Reschedule("a", When::At(kT0 + 3 * kSec), kT0,
                              [&](const TimerView& v, uint64_t previous_deadline_ns) {
                                called = true;
                                EXPECT_EQ(v.deadline_ns, kT0 + 3 * kSec);
                                EXPECT_EQ(previous_deadline_ns, kT0 + kSec);
                              })
                  .ok());
  EXPECT_TRUE(called);
  std::optional<TimerView> v = shard.Get("a");
  ASSERT_TRUE(v.has_value());
  EXPECT_EQ(v->payload, "keep");
  EXPECT_EQ(v->interval_ns, 500 * kMs);
  std::vector<FiredCopy> fired = AdvanceAll(shard, kT0 + 3 * kSec);
  ASSERT_EQ(fired.size(), 1u);
  EXPECT_EQ(fired[0].next_deadline_ns, kT0 + 3 * kSec + 500 * kMs);
}

TEST(ShardTest, RescheduleOfMissingIdIsNotFound) {
  Shard shard;
  EXPECT_EQ(shard.Reschedule("a", When::After(kSec), kT0).code(), absl::StatusCode::kNotFound);
}

TEST(ShardTest, RescheduleWithZeroTtlIsInvalidArgumentAndKeepsTimer) {
  Shard shard;
  ASSERT_TRUE(shard.Start(TtlSpec("a", kSec), kT0).ok());
  EXPECT_EQ(shard.Reschedule("a", When::After(0), kT0).code(), absl::StatusCode::kInvalidArgument);
  ASSERT_TRUE(shard.Get("a").has_value());
  EXPECT_EQ(shard.Get("a")->deadline_ns, kT0 + kSec);
  shard.CheckInvariants();
}

TEST(ShardTest, RecurringTimerReArmsDriftFreeWhenAdvanceIsLate) {
  Shard shard;
  const uint64_t first = kT0 + 100 * kMs;
  ASSERT_TRUE(shard.Start(TtlSpec("r", 100 * kMs, "", 100 * kMs), kT0).ok());
  // Advance is late by a varying amount, always less than one interval.
  const uint64_t lateness_ms[] = {0, 37, 99, 1, 50, 98, 0, 73, 12, 99};
  for (uint64_t k = 0; k < std::size(lateness_ms); ++k) {
    const uint64_t deadline = first + k * 100 * kMs;
    std::vector<FiredCopy> fired = AdvanceAll(shard, deadline + lateness_ms[k] * kMs);
    ASSERT_EQ(fired.size(), 1u) << "period " << k;
    EXPECT_EQ(fired[0].deadline_ns, deadline) << "period " << k;
    EXPECT_EQ(fired[0].next_deadline_ns, deadline + 100 * kMs) << "period " << k;
    EXPECT_EQ(fired[0].interval_ns, 100 * kMs);
    EXPECT_EQ(shard.Get("r")->deadline_ns, deadline + 100 * kMs);
    shard.CheckInvariants();
  }
}

TEST(ShardTest, RecurringTimerCoalescesMissedPeriods) {
  Shard shard;
  const uint64_t first = kT0 + 100 * kMs;
  ASSERT_TRUE(shard.Start(TtlSpec("r", 100 * kMs, "", 100 * kMs), kT0).ok());
  // Periods at 100, 200, 300, 400 ms are all past at 450 ms: one firing, re-armed at 500 ms.
  std::vector<FiredCopy> fired = AdvanceAll(shard, first + 350 * kMs);
  ASSERT_EQ(fired.size(), 1u);
  EXPECT_EQ(fired[0].deadline_ns, first);
  EXPECT_EQ(fired[0].next_deadline_ns, first + 400 * kMs);
  EXPECT_EQ(shard.Get("r")->deadline_ns, first + 400 * kMs);
  fired = AdvanceAll(shard, first + 400 * kMs);
  ASSERT_EQ(fired.size(), 1u);
  EXPECT_EQ(fired[0].deadline_ns, first + 400 * kMs);
  EXPECT_EQ(fired[0].next_deadline_ns, first + 500 * kMs);
  shard.CheckInvariants();
}

TEST(ShardTest, RecurringCoalescingSkipsAGridPointEqualToNow) {
  Shard shard;
  ASSERT_TRUE(shard.Start(AtSpec("r", kT0 + 100 * kMs, "", 100 * kMs), kT0).ok());
  // At exactly 400 ms the grid point 400 ms is not after now: next is 500 ms.
  std::vector<FiredCopy> fired = AdvanceAll(shard, kT0 + 400 * kMs);
  ASSERT_EQ(fired.size(), 1u);
  EXPECT_EQ(fired[0].deadline_ns, kT0 + 100 * kMs);
  EXPECT_EQ(fired[0].next_deadline_ns, kT0 + 500 * kMs);
}

TEST(ShardTest, RecurringNextDeadlineEqualToNowIsCoalesced) {
  Shard shard;
  ASSERT_TRUE(shard.Start(AtSpec("r", kT0 + 100 * kMs, "", 100 * kMs), kT0).ok());
  // Advance exactly one interval late: next = 200 ms is not after now, so it is skipped; one firing only.
  std::vector<FiredCopy> fired = AdvanceAll(shard, kT0 + 200 * kMs);
  ASSERT_EQ(fired.size(), 1u);
  EXPECT_EQ(fired[0].deadline_ns, kT0 + 100 * kMs);
  EXPECT_EQ(fired[0].next_deadline_ns, kT0 + 300 * kMs);
  EXPECT_TRUE(AdvanceAll(shard, kT0 + 200 * kMs).empty());
  EXPECT_EQ(shard.Get("r")->deadline_ns, kT0 + 300 * kMs);
}

TEST(ShardTest, RecurringTimerWithPastStartKeepsItsGrid) {
  Shard shard;
  // Started 3.7 intervals in the past with a 30 ms grid that is not tick aligned.
  const uint64_t deadline = kT0 - 111 * kMs - 7;
  ASSERT_TRUE(shard.Start(AtSpec("r", deadline, "", 30 * kMs), kT0).ok());
  std::vector<FiredCopy> fired = AdvanceAll(shard, kT0);
  ASSERT_EQ(fired.size(), 1u);
  EXPECT_EQ(fired[0].deadline_ns, deadline);
  EXPECT_EQ(fired[0].next_deadline_ns, deadline + 4 * 30 * kMs);
}

TEST(ShardTest, AdvanceReportsInDeadlineThenIdHashOrder) {
  Shard shard;
  // A mix of Lawn (regular TTL) and wheel timers, ties on deadline broken by the id hash, several per tick.
  ASSERT_TRUE(shard.Start(TtlSpec("warm-1", 5 * kMs), kT0).ok());
  ASSERT_TRUE(shard.Start(TtlSpec("warm-2", 5 * kMs), kT0).ok());
  ASSERT_TRUE(shard.Start(TtlSpec("m", 5 * kMs), kT0).ok());
  ASSERT_TRUE(shard.Start(AtSpec("c", kT0 + 5 * kMs), kT0).ok());
  ASSERT_TRUE(shard.Start(AtSpec("z", kT0 + 5 * kMs), kT0).ok());
  ASSERT_TRUE(shard.Start(AtSpec("a", kT0 + 5 * kMs), kT0).ok());
  ASSERT_TRUE(shard.Start(AtSpec("y", kT0 + 4 * kMs + 1), kT0).ok());  // Same tick, earlier.
  ASSERT_TRUE(shard.Start(AtSpec("x", kT0 + 2 * kMs), kT0).ok());
  ASSERT_TRUE(shard.Start(AtSpec("past", kT0 - kSec), kT0).ok());
  ASSERT_TRUE(shard.Start(TtlSpec("b", 3 * kMs), kT0).ok());
  ASSERT_TRUE(shard.Start(TtlSpec("b2", 3 * kMs), kT0).ok());
  EXPECT_GT(shard.lawn_pending(), 0u);
  std::vector<FiredCopy> fired = AdvanceAll(shard, kT0 + 10 * kMs);
  // Deadline groups: past < x < {b, b2} < y < {a, c, m, warm-1, warm-2, z}; within a group, hash then id.
  auto by_hash = [](std::vector<std::string> ids) {
    std::sort(ids.begin(), ids.end(), [](const std::string& l, const std::string& r) {
      return TimerIdHash(l) != TimerIdHash(r) ? TimerIdHash(l) < TimerIdHash(r) : l < r;
    });
    return ids;
  };
  std::vector<std::string> expected = {"past", "x"};
  for (auto& id : by_hash({"b", "b2"})) expected.push_back(id);
  expected.push_back("y");
  for (auto& id : by_hash({"a", "c", "m", "warm-1", "warm-2", "z"})) expected.push_back(id);
  EXPECT_EQ(Ids(fired), expected);
  for (size_t i = 1; i < fired.size(); ++i) EXPECT_LE(fired[i - 1].deadline_ns, fired[i].deadline_ns);
}

TEST(ShardTest, AdvanceOrdersLawnTimerAfterEarlierWheelTimerOfTheSameCascadedTick) {
  ShardOptions options;
  options.lawn_promote_after = 1;  // Every TTL timer goes to Lawn.
  Shard shard(options);
  // 1'000'128 ms is a multiple of 64 ticks: with time at 1'000'000 ms, a timer due in that tick is filed at
  // wheel level 1 in a slot that starts exactly at its own tick, so it must cascade in the same Advance in
  // which a Lawn timer of that tick is due.
  const uint64_t now = 1'000'000 * kMs;
  EXPECT_TRUE(AdvanceAll(shard, now).empty());
  ASSERT_TRUE(shard.Start(TtlSpec("lawn", 128 * kMs), now).ok());                // deadline 1'000'128 ms
  ASSERT_TRUE(shard.Start(AtSpec("wheel", now + 128 * kMs - kMs / 2), now).ok());  // 1'000'127.5 ms
  ASSERT_EQ(shard.lawn_pending(), 1u);
  ASSERT_EQ(shard.wheel_pending(), 1u);
  EXPECT_EQ(Ids(AdvanceAll(shard, now + 200 * kMs)), (std::vector<std::string>{"wheel", "lawn"}));
}

TEST(ShardTest, ForEachVisitsEveryPendingTimer) {
  Shard shard;
  std::vector<std::string> ids = {"a", "b", "c", "d"};
  ASSERT_TRUE(shard.Start(TtlSpec("a", kSec), kT0).ok());
  ASSERT_TRUE(shard.Start(TtlSpec("b", kSec), kT0).ok());
  ASSERT_TRUE(shard.Start(TtlSpec("c", 77 * kSec), kT0).ok());
  ASSERT_TRUE(shard.Start(AtSpec("d", kT0 + 5), kT0).ok());
  std::vector<std::string> seen;
  shard.ForEach([&](const TimerView& v) { seen.emplace_back(v.id); });
  std::sort(seen.begin(), seen.end());
  EXPECT_EQ(seen, ids);
}

TEST(ShardTest, AdvanceCollectReturnsOwningCopies) {
  Shard shard;
  ASSERT_TRUE(shard.Start(TtlSpec("a", kSec, "pa"), kT0).ok());
  ASSERT_TRUE(shard.Start(TtlSpec("b", 2 * kSec, "pb"), kT0).ok());
  std::vector<Timer> fired = shard.AdvanceCollect(kT0 + 5 * kSec);
  ASSERT_EQ(fired.size(), 2u);
  EXPECT_EQ(fired[0].id, "a");
  EXPECT_EQ(fired[0].payload, "pa");
  EXPECT_EQ(fired[1].id, "b");
  EXPECT_EQ(fired[1].deadline_ns, kT0 + 2 * kSec);
  ASSERT_TRUE(shard.Start(TtlSpec("c", kSec, "pc"), kT0 + 5 * kSec).ok());  // Mutation keeps copies valid.
  EXPECT_EQ(fired[1].payload, "pb");
}

TEST(ShardTest, PendingCountsAreConsistent) {
  Shard shard;
  for (int i = 0; i < 50; ++i) {
    ASSERT_TRUE(shard.Start(TtlSpec("t" + std::to_string(i), (i % 5 + 1) * kSec), kT0 + i).ok());
  }
  EXPECT_EQ(shard.pending(), 50u);
  EXPECT_EQ(shard.lawn_pending() + shard.wheel_pending(), 50u);
  EXPECT_GT(shard.MemoryBytes(), 0u);
  shard.CheckInvariants();
}

}  // namespace
}  // namespace lawn
