// Unit tests of Shard's timing: never early, at most one tick late, tick changes, past deadlines,
// NextDeadlineNs, and which timers Lawn takes.
#include <algorithm>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "core/shard.h"
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
using ::lawn::test::kUs;
using ::lawn::test::Replacing;
using ::lawn::test::Rng;
using ::lawn::test::TtlSpec;

ShardOptions WithTick(uint64_t tick_ns) {
  ShardOptions options;
  options.tick_ns = tick_ns;
  return options;
}

// The first instant at which a timer with this deadline is due: ceil(deadline / tick) * tick.
uint64_t DueAt(uint64_t deadline_ns, uint64_t tick_ns) {
  return (deadline_ns / tick_ns + (deadline_ns % tick_ns != 0)) * tick_ns;
}

// Starts timers at random deadlines (TTL and absolute, regular and irregular), then advances in random steps
// below one tick: each timer must fire at the first Advance at or after DueAt, i.e. never early and at most
// one tick (plus the step) late.
void ExpectNeverEarlyAtMostOneTickLate(uint64_t tick_ns, uint64_t seed) {
  Shard shard(WithTick(tick_ns));
  Rng rng(seed);
  std::map<std::string, uint64_t> deadline_of;
  std::set<std::pair<uint64_t, std::string>> by_due;  // (DueAt, id)
  const uint64_t fixed_ttls[] = {7 * kMs, 50 * kMs, 250 * kMs, kSec, 3 * kSec};
  for (int i = 0; i < 3000; ++i) {
    const std::string id = "t" + std::to_string(i);
    const uint64_t r = rng.Uniform(0, 2);
    StartSpec spec = r == 0   ? TtlSpec(id, fixed_ttls[rng.Uniform(0, 4)])
                     : r == 1 ? TtlSpec(id, rng.Uniform(1, 4 * kSec))
                              : AtSpec(id, kT0 + rng.Uniform(0, 4 * kSec));
    ASSERT_TRUE(shard.Start(spec, kT0).ok());
    const uint64_t d = shard.Get(id)->deadline_ns;
    deadline_of[id] = d;
    by_due.emplace(DueAt(d, tick_ns), id);
  }
  uint64_t now = kT0;
  while (!deadline_of.empty()) {
    const uint64_t step = rng.Uniform(1, tick_ns);
    now += step;
    for (const FiredCopy& f : AdvanceAll(shard, now)) {
      ASSERT_TRUE(deadline_of.count(f.id)) << f.id;
      const uint64_t d = deadline_of[f.id];
      ASSERT_EQ(f.deadline_ns, d);
      ASSERT_LE(d, now) << f.id << " fired early";
      ASSERT_LE(DueAt(d, tick_ns), now) << f.id << " fired before its tick";
      ASSERT_LT(now - d, tick_ns + step) << f.id << " fired more than one tick late";
      by_due.erase({DueAt(d, tick_ns), f.id});
      deadline_of.erase(f.id);
    }
    if (!by_due.empty()) {
      ASSERT_GT(by_due.begin()->first, now) << by_due.begin()->second << " is due but did not fire";
    }
    ASSERT_LT(now, kT0 + 10 * kSec) << "timers never fired";
  }
  shard.CheckInvariants();
  EXPECT_EQ(shard.pending(), 0u);
}

TEST(ShardTimingTest, NeverEarlyAtMostOneTickLateWithOneMsTick) { ExpectNeverEarlyAtMostOneTickLate(kMs, 1); }

TEST(ShardTimingTest, NeverEarlyAtMostOneTickLateWithTenMsTick) {
  ExpectNeverEarlyAtMostOneTickLate(10 * kMs, 2);
}

// Under whatever tick is current, a timer fires at the first Advance with floor(now / tick) >=
// ceil(deadline / tick): never early, and a tick change does not delay it either.
TEST(ShardTimingTest, TickChangedMidFlightNeverFiresEarlyOrLate) {
  Shard shard;
  Rng rng(3);
  std::map<std::string, uint64_t> deadline_of;
  std::set<std::pair<uint64_t, std::string>> by_deadline;
  for (int i = 0; i < 3000; ++i) {
    const std::string id = "t" + std::to_string(i);
    StartSpec spec = i % 2 ? TtlSpec(id, rng.Uniform(1, 6 * kSec)) : TtlSpec(id, (i % 7 + 1) * 100 * kMs);
    ASSERT_TRUE(shard.Start(spec, kT0).ok());
    deadline_of[id] = shard.Get(id)->deadline_ns;
    by_deadline.emplace(deadline_of[id], id);
  }
  uint64_t now = kT0;
  const uint64_t ticks[] = {10 * kMs, kUs, kMs, 10 * kMs, 7 * kMs + 3, kUs};
  size_t next_tick = 0;
  for (int round = 0; !deadline_of.empty(); ++round) {
    ASSERT_LT(round, 1000000) << "timers never fired";
    if (round % 500 == 250) {
      shard.SetTick(ticks[next_tick++ % std::size(ticks)], now);
      shard.CheckInvariants();
      ASSERT_EQ(shard.pending(), deadline_of.size()) << "SetTick lost or duplicated timers";
    }
    now += rng.Uniform(0, 3 * kMs);
    const uint64_t tick = shard.tick_ns();
    for (const FiredCopy& f : AdvanceAll(shard, now)) {
      ASSERT_TRUE(deadline_of.count(f.id)) << f.id << " fired twice";
      ASSERT_LE(deadline_of[f.id], now) << f.id << " fired early";
      ASSERT_LE(DueAt(deadline_of[f.id], tick), now) << f.id << " fired before its tick";
      by_deadline.erase({deadline_of[f.id], f.id});
      deadline_of.erase(f.id);
    }
    if (!by_deadline.empty()) {
      ASSERT_GT(DueAt(by_deadline.begin()->first, tick), now)
          << by_deadline.begin()->second << " is due under tick " << tick << " but did not fire";
    }
  }
  shard.CheckInvariants();
}

TEST(ShardTimingTest, PastDeadlineFiresAtNextAdvance) {
  Shard shard;
  ASSERT_TRUE(shard.Start(AtSpec("long-ago", kT0 - 500 * kSec), kT0).ok());
  ASSERT_TRUE(shard.Start(AtSpec("zero", 0), kT0).ok());
  ASSERT_TRUE(shard.Start(AtSpec("just-now", kT0 - kMs), kT0).ok());
  EXPECT_EQ(Ids(AdvanceAll(shard, kT0)), (std::vector<std::string>{"zero", "long-ago", "just-now"}));
}

TEST(ShardTimingTest, PastDeadlineFiresAtNextAdvanceWithinTheSameTick) {
  Shard shard;
  // Advance has processed tick 1000000 (now = kT0 + 0.5 ms); a timer whose deadline tick is long past is
  // started, and the next Advance falls in the same tick: floor(now / tick) >= ceil(deadline / tick).
  EXPECT_TRUE(AdvanceAll(shard, kT0 + 500 * kUs).empty());
  ASSERT_TRUE(shard.Start(AtSpec("past", kT0 - 3 * kMs), kT0 + 600 * kUs).ok());
  std::optional<uint64_t> next = shard.NextDeadlineNs();
  ASSERT_TRUE(next.has_value());
  EXPECT_LE(*next, kT0 + 700 * kUs) << "NextDeadlineNs must not be later than the due time";
  EXPECT_EQ(Ids(AdvanceAll(shard, kT0 + 700 * kUs)), (std::vector<std::string>{"past"}));
}

TEST(ShardTimingTest, PastDeadlineFiresAtNextAdvanceAfterTickChange) {
  Shard shard;
  EXPECT_TRUE(AdvanceAll(shard, kT0 + 5 * kMs).empty());
  ASSERT_TRUE(shard.Start(AtSpec("past", kT0 - 3 * kMs), kT0 + 5 * kMs).ok());
  shard.SetTick(10 * kMs, kT0 + 5 * kMs);
  shard.CheckInvariants();
  // floor((kT0 + 6 ms) / 10 ms) = kT0 / 10 ms >= ceil((kT0 - 3 ms) / 10 ms): due.
  EXPECT_EQ(Ids(AdvanceAll(shard, kT0 + 6 * kMs)), (std::vector<std::string>{"past"}));
}

TEST(ShardTimingTest, PastDeadlineRescheduleFiresAtNextAdvance) {
  Shard shard;
  ASSERT_TRUE(shard.Start(TtlSpec("a", 10 * kSec), kT0).ok());
  EXPECT_TRUE(AdvanceAll(shard, kT0 + 5 * kSec).empty());
  ASSERT_TRUE(shard.Reschedule("a", When::At(kT0 + kSec), kT0 + 5 * kSec).ok());
  std::vector<FiredCopy> fired = AdvanceAll(shard, kT0 + 5 * kSec + kMs);
  ASSERT_EQ(fired.size(), 1u);
  EXPECT_EQ(fired[0].deadline_ns, kT0 + kSec);
}

TEST(ShardTimingTest, DeadlineInsideCurrentTickWaitsForTheTickBoundary) {
  Shard shard;
  // deadline = now - 0.2 ms but in the same 1 ms tick as now: due only once floor(now/tick) reaches
  // ceil(deadline/tick), i.e. at kT0 + 1 ms.
  ASSERT_TRUE(shard.Start(AtSpec("a", kT0 + 300 * kUs), kT0 + 500 * kUs).ok());
  EXPECT_TRUE(AdvanceAll(shard, kT0 + 999 * kUs).empty());
  EXPECT_EQ(AdvanceAll(shard, kT0 + kMs).size(), 1u);
}

TEST(ShardTimingTest, NextDeadlineNsIsALowerBound) {
  Shard shard;
  EXPECT_FALSE(shard.NextDeadlineNs().has_value());
  Rng rng(4);
  std::map<std::string, uint64_t> deadline_of;
  for (int i = 0; i < 500; ++i) {
    const std::string id = "t" + std::to_string(i);
    const uint64_t ttl = i % 3 == 0 ? rng.Uniform(1, 300 * kSec) : (i % 4 + 1) * kSec;
    ASSERT_TRUE(shard.Start(TtlSpec(id, ttl), kT0).ok());
    deadline_of[id] = kT0 + ttl;
  }
  uint64_t now = kT0;
  for (int wake = 0; !deadline_of.empty(); ++wake) {
    ASSERT_LT(wake, 100000) << "NextDeadlineNs makes no progress";
    std::optional<uint64_t> next = shard.NextDeadlineNs();
    ASSERT_TRUE(next.has_value());
    uint64_t earliest_due = UINT64_MAX;
    for (const auto& [id, d] : deadline_of) earliest_due = std::min(earliest_due, DueAt(d, kMs));
    ASSERT_LE(*next, std::max(now, earliest_due)) << "NextDeadlineNs is later than the earliest due time";
    // Just before the bound nothing may fire.
    if (*next > now + 1) {
      EXPECT_TRUE(AdvanceAll(shard, *next - 1).empty());
    }
    now = std::max(now, *next);
    const std::vector<FiredCopy> fired = AdvanceAll(shard, now);
    for (const FiredCopy& f : fired) deadline_of.erase(f.id);
    // The contract: waking at NextDeadlineNs and advancing either fires timers or cascades the wheel, so an
    // Advance that fired nothing must have moved the bound later.
    if (fired.empty() && !deadline_of.empty()) {
      ASSERT_GT(*shard.NextDeadlineNs(), *next) << "an Advance at NextDeadlineNs did no work";
    }
  }
  EXPECT_FALSE(shard.NextDeadlineNs().has_value());
}

// Lawn buckets need no cascade, so while every pending timer is in Lawn the bound is exact: the due time
// ceil(deadline / tick) * tick of the earliest deadline, with a tick that divides no deadline.
TEST(ShardTimingTest, NextDeadlineNsIsExactlyTheEarliestDueTimeWhileEveryTimerIsInLawn) {
  ShardOptions options = WithTick(kMs + 7);
  options.lawn_promote_after = 1;  // Every TTL timer goes to a Lawn bucket at once.
  Shard shard(options);
  Rng rng(11);
  std::multiset<uint64_t> deadlines;
  std::map<std::string, uint64_t> deadline_of;
  uint64_t now = kT0;
  for (int i = 0; i < 300; ++i) {
    const std::string id = "t" + std::to_string(i);
    // Starts spread over at most 300 ms, TTLs above that: every deadline is after the last start.
    const uint64_t ttl = 300 * kMs + rng.Uniform(1, 200) * 10 * kMs + rng.Uniform(0, kMs);
    ASSERT_TRUE(shard.Start(TtlSpec(id, ttl), now).ok());
    deadline_of[id] = now + ttl;
    deadlines.insert(now + ttl);
    now += rng.Uniform(0, kMs);
  }
  ASSERT_EQ(shard.lawn_pending(), shard.pending()) << "precondition: every timer is in Lawn";
  while (!deadlines.empty()) {
    const std::optional<uint64_t> next = shard.NextDeadlineNs();
    ASSERT_TRUE(next.has_value());
    const uint64_t due = DueAt(*deadlines.begin(), options.tick_ns);
    ASSERT_EQ(*next, due) << "NextDeadlineNs must be the earliest due time exactly";
    if (due > now) {
      ASSERT_TRUE(AdvanceAll(shard, due - 1).empty()) << "a timer fired before NextDeadlineNs";
    }
    now = std::max(now, due);
    const std::vector<FiredCopy> fired = AdvanceAll(shard, now);
    ASSERT_FALSE(fired.empty()) << "nothing fired at NextDeadlineNs";
    for (const FiredCopy& f : fired) {
      ASSERT_EQ(DueAt(f.deadline_ns, options.tick_ns), due) << f.id << " is not among the earliest";
      deadlines.erase(deadlines.find(f.deadline_ns));
      deadline_of.erase(f.id);
    }
  }
  EXPECT_TRUE(deadline_of.empty());
  EXPECT_FALSE(shard.NextDeadlineNs().has_value());
}

// A wheel timer due within the current 64-tick window sits at level 0, where nothing cascades: the bound is
// its due time exactly (deadlines in the window, in random order, with sub-tick parts).
TEST(ShardTimingTest, NextDeadlineNsIsExactlyTheDueTimeOfALevelZeroWheelTimer) {
  Shard shard;
  // Processes every tick up to kT0, a multiple of 64 ms: the next 63 ticks share all upper bits with it.
  static_assert(kT0 / kMs % 64 == 0);
  EXPECT_TRUE(AdvanceAll(shard, kT0).empty());
  Rng rng(12);
  std::vector<int> offsets;
  for (int k = 1; k < 64; ++k) offsets.push_back(k);
  for (size_t i = offsets.size() - 1; i > 0; --i) std::swap(offsets[i], offsets[rng.Uniform(0, i)]);
  std::set<uint64_t> deadlines;
  for (int k : offsets) {
    const uint64_t deadline = kT0 + (k - 1) * kMs + rng.Uniform(1, kMs);  // Due at kT0 + k ms.
    ASSERT_TRUE(shard.Start(AtSpec("w" + std::to_string(k), deadline), kT0).ok());
    deadlines.insert(deadline);
  }
  ASSERT_EQ(shard.wheel_pending(), 63u);
  uint64_t now = kT0;
  for (uint64_t deadline : deadlines) {
    const std::optional<uint64_t> next = shard.NextDeadlineNs();
    ASSERT_TRUE(next.has_value());
    ASSERT_EQ(*next, DueAt(deadline, kMs));
    ASSERT_TRUE(AdvanceAll(shard, *next - 1).empty());
    now = *next;
    const std::vector<FiredCopy> fired = AdvanceAll(shard, now);
    ASSERT_EQ(fired.size(), 1u);
    EXPECT_EQ(fired[0].deadline_ns, deadline);
  }
  EXPECT_FALSE(shard.NextDeadlineNs().has_value());
}

TEST(ShardTimingTest, RegularTtlsLandInLawnAfterTheirFirstSighting) {
  Shard shard;
  const uint64_t ttls[] = {kSec, 2 * kSec, 5 * kSec, 10 * kSec, 30 * kSec, 60 * kSec, 300 * kSec, 3600 * kSec};
  int n = 0;
  for (int round = 0; round < 50; ++round) {
    for (uint64_t ttl : ttls) {
      ASSERT_TRUE(shard.Start(TtlSpec("t" + std::to_string(n++), ttl), kT0 + round * kMs).ok());
    }
  }
  EXPECT_EQ(shard.pending(), 400u);
  EXPECT_EQ(shard.lawn_pending(), 400u - 8);
  EXPECT_EQ(shard.wheel_pending(), 8u);
  EXPECT_EQ(shard.lawn_buckets(), 8u);
  shard.CheckInvariants();
}

TEST(ShardTimingTest, PromoteAfterOnePutsEveryTtlTimerInLawn) {
  ShardOptions options;
  options.lawn_promote_after = 1;
  Shard shard(options);
  const uint64_t ttls[] = {kSec, 2 * kSec, 5 * kSec, 10 * kSec, 30 * kSec, 60 * kSec, 300 * kSec, 3600 * kSec};
  int n = 0;
  for (int round = 0; round < 50; ++round) {
    for (uint64_t ttl : ttls) {
      ASSERT_TRUE(shard.Start(TtlSpec("t" + std::to_string(n++), ttl), kT0 + round * kMs).ok());
    }
  }
  EXPECT_EQ(shard.lawn_pending(), 400u);
  EXPECT_EQ(shard.wheel_pending(), 0u);
  shard.CheckInvariants();
}

// Random TTLs in [1 ms, 60 s] (ms granularity, so repeats make many TTLs regular), with time passing.
void ExpectLawnBucketsBounded(ShardOptions options, uint64_t seed, bool ns_granularity) {
  Shard shard(options);
  Rng rng(seed);
  uint64_t now = kT0;
  size_t most_buckets = 0;
  for (int i = 0; i < 60000; ++i) {
    const uint64_t ttl = ns_granularity ? rng.Uniform(kMs, 60 * kSec) : rng.Uniform(1, 60'000) * kMs;
    ASSERT_TRUE(shard.Start(TtlSpec("t" + std::to_string(i), ttl), now).ok());
    ASSERT_LE(shard.lawn_buckets(), options.max_lawn_buckets);
    most_buckets = std::max(most_buckets, shard.lawn_buckets());
    if (i % 64 == 0) {
      now += rng.Uniform(0, 20 * kMs);
      AdvanceAll(shard, now);
      ASSERT_LE(shard.lawn_buckets(), options.max_lawn_buckets);
    }
    if (i % 10000 == 0) shard.CheckInvariants();
  }
  // The workload has more regular TTLs than buckets, so the bound was actually tested.
  EXPECT_EQ(most_buckets, options.max_lawn_buckets);
  EXPECT_GT(shard.lawn_pending(), 0u);
  shard.CheckInvariants();
}

TEST(ShardTimingTest, RandomTtlsNeverExceedMaxLawnBuckets) {
  ExpectLawnBucketsBounded(ShardOptions{}, 5, /*ns_granularity=*/false);
}

TEST(ShardTimingTest, RandomTtlsNeverExceedASmallMaxLawnBuckets) {
  ShardOptions options;
  options.max_lawn_buckets = 16;
  options.lawn_promote_after = 1;
  ExpectLawnBucketsBounded(options, 6, /*ns_granularity=*/true);
}

// Random starts (plain and replacing, one-shot and recurring), deletes, reschedules and advances over 500 ids:
// every call returns what a plain map of the pending ids predicts, every fired timer was pending (and stays
// pending exactly when it recurs), and the invariants hold throughout.
TEST(ShardTimingTest, InvariantsHoldAfterMixedOperations) {
  Shard shard;
  Rng rng(7);
  uint64_t now = kT0;
  std::map<std::string, uint64_t> interval_of;  // The pending ids, with their interval (0: one-shot).
  int ok = 0, refused = 0;  // Calls of cases 0, 2 and 3 that succeeded / were refused.
  for (int i = 0; i < 20000; ++i) {
    const std::string id = "t" + std::to_string(rng.Uniform(0, 499));
    const bool pending = interval_of.count(id) != 0;
    switch (rng.Uniform(0, 5)) {
      case 0: {
        const absl::Status s = shard.Start(TtlSpec(id, (rng.Uniform(0, 3) + 1) * kSec), now);
        ASSERT_EQ(s.code(), pending ? absl::StatusCode::kAlreadyExists : absl::StatusCode::kOk) << i << " " << id;
        if (!pending) interval_of[id] = 0;
        (s.ok() ? ok : refused)++;
        break;
      }
      case 1: {
        const uint64_t interval = rng.Uniform(0, 1) * 300 * kMs;
        const absl::Status s =
            shard.Start(Replacing(AtSpec(id, now + rng.Uniform(0, 5 * kSec) - kSec, "", interval)), now);
        ASSERT_TRUE(s.ok()) << i << " " << id << ": " << s;  // Replacing never conflicts.
        interval_of[id] = interval;
        break;
      }
      case 2: {
        const absl::Status s = shard.Delete(id);
        ASSERT_EQ(s.code(), pending ? absl::StatusCode::kOk : absl::StatusCode::kNotFound) << i << " " << id;
        interval_of.erase(id);
        (s.ok() ? ok : refused)++;
        break;
      }
      case 3: {
        const absl::Status s = shard.Reschedule(id, When::After(rng.Uniform(1, 2 * kSec)), now);
        ASSERT_EQ(s.code(), pending ? absl::StatusCode::kOk : absl::StatusCode::kNotFound) << i << " " << id;
        if (pending) {
          ASSERT_EQ(shard.Get(id)->interval_ns, interval_of[id]) << "reschedule must keep the interval";
        }
        (s.ok() ? ok : refused)++;
        break;
      }
      default:
        now += rng.Uniform(0, 50 * kMs);
        for (const FiredCopy& f : AdvanceAll(shard, now)) {
          auto it = interval_of.find(f.id);
          ASSERT_NE(it, interval_of.end()) << i << ": " << f.id << " fired but was not pending";
          ASSERT_LE(f.deadline_ns, now) << i << ": " << f.id << " fired early";
          ASSERT_EQ(f.interval_ns, it->second) << i << " " << f.id;
          ASSERT_EQ(f.next_deadline_ns != 0, it->second != 0) << i << ": only recurring timers are re-armed";
          if (it->second == 0) interval_of.erase(it);
        }
    }
    ASSERT_EQ(shard.pending(), interval_of.size()) << i;
    if (i % 1000 == 0) shard.CheckInvariants();
  }
  shard.CheckInvariants();
  for (const auto& [id, interval] : interval_of) {
    ASSERT_TRUE(shard.Get(id).has_value()) << id;
    EXPECT_EQ(shard.Get(id)->interval_ns, interval) << id;
  }
  // Both outcomes were exercised, not just one.
  EXPECT_GT(ok, 1000);
  EXPECT_GT(refused, 1000);
}

}  // namespace
}  // namespace lawn
