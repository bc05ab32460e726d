// Shard's admission and holding: due timers the caller refuses stay pending in their hold group with their
// deadline, are released in order, can be deleted, rescheduled and replaced while held, and recurring timers
// can skip a firing and stay on their grid. A randomized test checks the invariants and that every one-shot
// timer fires exactly once, never early, however holds and releases interleave.
#include <cstdint>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "core/shard.h"
#include "gtest/gtest.h"
#include "tests/core/shard_test_util.h"

namespace lawn {
namespace {

using ::lawn::test::AtSpec;
using ::lawn::test::kMs;
using ::lawn::test::kSec;
using ::lawn::test::kT0;
using ::lawn::test::Replacing;
using ::lawn::test::TtlSpec;

// Admits timers whose id starts with a letter in `open`, holds the others in group = first letter.
struct Gate {
  std::set<char> open;
  AdmitDecision operator()(const TimerView& t) const {
    const char g = t.id.empty() ? 0 : t.id[0];
    if (open.count(g)) return {Admission::kFire, 0};
    return {Admission::kHold, static_cast<uint16_t>(g)};
  }
};

std::vector<std::string> AdvanceGated(Shard& shard, uint64_t now, const Gate& gate, std::vector<Fired>* fired = nullptr) {
  std::vector<std::string> ids;
  shard.Advance(now, [&](const TimerView& t) { return gate(t); },
                [&](const Fired& f) {
                  ids.emplace_back(f.timer.Key());
                  if (fired != nullptr) fired->push_back(f);
                });
  return ids;
}

std::vector<std::string> Release(Shard& shard, uint16_t group, uint64_t now, const Gate& gate) {
  std::vector<std::string> ids;
  shard.ReleaseHeld(group, now, [&](const TimerView& t) { return gate(t); },
                    [&](const Fired& f) { ids.emplace_back(f.timer.Key()); });
  return ids;
}

TEST(ShardHoldTest, HeldTimerStaysPendingWithItsDeadlineUntilReleased) {
  Shard shard;
  ASSERT_TRUE(shard.Start(TtlSpec("a1", 5 * kMs, "pay"), kT0).ok());
  ASSERT_TRUE(shard.Start(TtlSpec("b1", 6 * kMs), kT0).ok());
  Gate gate{{'b'}};
  EXPECT_EQ(AdvanceGated(shard, kT0 + 10 * kMs, gate), std::vector<std::string>{"b1"});
  EXPECT_EQ(shard.held(), 1u);
  EXPECT_EQ(shard.held('a'), 1u);
  EXPECT_EQ(shard.pending(), 1u);
  std::optional<TimerView> a = shard.Get("a1");
  ASSERT_TRUE(a.has_value());
  EXPECT_EQ(a->deadline_ns, kT0 + 5 * kMs);
  EXPECT_EQ(a->payload, "pay");
  // Held timers are not offered again by Advance, and do not wake the worker.
  EXPECT_TRUE(AdvanceGated(shard, kT0 + 20 * kMs, gate).empty());
  EXPECT_FALSE(shard.NextDeadlineNs().has_value());
  shard.CheckInvariants();
  gate.open.insert('a');
  EXPECT_EQ(Release(shard, 'a', kT0 + 30 * kMs, gate), std::vector<std::string>{"a1"});
  EXPECT_EQ(shard.held(), 0u);
  EXPECT_EQ(shard.pending(), 0u);
  shard.CheckInvariants();
}

TEST(ShardHoldTest, ReleaseFiresOldestFirstAndStopsAtTheFirstRefusal) {
  Shard shard;
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(shard.Start(TtlSpec("a" + std::to_string(i), (i + 1) * kMs), kT0).ok());
  Gate closed{};
  EXPECT_TRUE(AdvanceGated(shard, kT0 + 10 * kMs, closed).empty());
  EXPECT_EQ(shard.held('a'), 5u);
  int budget = 2;
  std::vector<std::string> ids;
  shard.ReleaseHeld(
      'a', kT0 + 11 * kMs,
      [&](const TimerView&) {
        return budget-- > 0 ? AdmitDecision{Admission::kFire, 0} : AdmitDecision{Admission::kHold, 'a'};
      },
      [&](const Fired& f) { ids.emplace_back(f.timer.Key()); });
  EXPECT_EQ(ids, (std::vector<std::string>{"a0", "a1"}));
  EXPECT_EQ(shard.held('a'), 3u);
  shard.CheckInvariants();
  Gate open{{'a'}};
  EXPECT_EQ(Release(shard, 'a', kT0 + 12 * kMs, open), (std::vector<std::string>{"a2", "a3", "a4"}));
  shard.CheckInvariants();
}

TEST(ShardHoldTest, HeldTimerCanBeDeletedRescheduledOrReplaced) {
  Shard shard;
  for (const char* id : {"a-del", "a-res", "a-rep", "a-keep"}) ASSERT_TRUE(shard.Start(TtlSpec(id, kMs), kT0).ok());
  Gate closed{};
  EXPECT_TRUE(AdvanceGated(shard, kT0 + 5 * kMs, closed).empty());
  ASSERT_EQ(shard.held('a'), 4u);
  EXPECT_TRUE(shard.Delete("a-del").ok());
  EXPECT_TRUE(shard.Reschedule("a-res", When::After(kSec), kT0 + 5 * kMs).ok());
  EXPECT_TRUE(shard.Start(Replacing(TtlSpec("a-rep", 2 * kSec, "new")), kT0 + 5 * kMs).ok());
  EXPECT_EQ(shard.held('a'), 1u);
  EXPECT_EQ(shard.pending(), 3u);
  shard.CheckInvariants();
  Gate open{{'a'}};
  EXPECT_EQ(Release(shard, 'a', kT0 + 6 * kMs, open), std::vector<std::string>{"a-keep"});
  // The rescheduled and replaced ones are ordinary timers again.
  EXPECT_EQ(AdvanceGated(shard, kT0 + 5 * kMs + kSec, open), std::vector<std::string>{"a-res"});
  EXPECT_EQ(AdvanceGated(shard, kT0 + 5 * kMs + 2 * kSec, open), std::vector<std::string>{"a-rep"});
  EXPECT_EQ(shard.pending(), 0u);
  shard.CheckInvariants();
}

TEST(ShardHoldTest, SkippedRecurringFiringIsReportedAndStaysOnItsGrid) {
  Shard shard;
  ASSERT_TRUE(shard.Start(AtSpec("r", kT0 + 100 * kMs, "", 100 * kMs), kT0).ok());
  std::vector<Fired> fired;
  shard.Advance(
      kT0 + 250 * kMs, [](const TimerView&) { return AdmitDecision{Admission::kSkip, 7}; },
      [&](const Fired& f) { fired.push_back(f); });
  ASSERT_EQ(fired.size(), 1u);
  EXPECT_TRUE(fired[0].skipped);
  EXPECT_EQ(fired[0].next_deadline_ns, kT0 + 300 * kMs);  // Coalesced, on the grid.
  EXPECT_EQ(shard.held(), 0u);
  EXPECT_EQ(shard.Get("r")->deadline_ns, kT0 + 300 * kMs);
  // kSkip for a one-shot timer holds it instead.
  ASSERT_TRUE(shard.Start(TtlSpec("o", kMs), kT0 + 250 * kMs).ok());
  size_t reported = shard.Advance(
      kT0 + 260 * kMs, [](const TimerView&) { return AdmitDecision{Admission::kSkip, 7}; },
      [](const Fired&) {});
  EXPECT_EQ(reported, 0u);
  EXPECT_EQ(shard.held(7), 1u);
  shard.CheckInvariants();
}

TEST(ShardHoldTest, RandomHoldsAndReleasesFireEveryTimerOnceAndNeverEarly) {
  std::mt19937_64 rng(20261123);
  Shard shard;
  std::map<std::string, uint64_t> live;  // id -> deadline (one-shot timers only)
  std::set<std::string> fired_ids;
  Gate gate;
  uint64_t now = kT0;
  int next_id = 0;
  auto sink = [&](const Fired& f) {
    const std::string id = f.timer.Key();
    auto it = live.find(id);
    ASSERT_NE(it, live.end()) << id << " fired but is not live";
    ASSERT_GE(now, it->second) << id << " fired early";
    ASSERT_EQ(f.timer.deadline_ns, it->second);
    live.erase(it);
    ASSERT_TRUE(fired_ids.insert(id).second);
  };
  auto admit = [&](const TimerView& t) { return gate(t); };
  for (int step = 0; step < 20000; ++step) {
    const int op = static_cast<int>(rng() % 10);
    if (op < 5) {
      const std::string id = std::string(1, static_cast<char>('a' + rng() % 4)) + std::to_string(next_id++);
      const uint64_t ttl = 1 + rng() % (50 * kMs);
      ASSERT_TRUE(shard.Start(TtlSpec(id, ttl), now).ok());
      live[id] = now + ttl;
    } else if (op == 5 && !live.empty()) {
      auto it = live.begin();
      std::advance(it, static_cast<long>(rng() % live.size()));
      ASSERT_TRUE(shard.Delete(it->first).ok());
      live.erase(it);
    } else if (op == 6) {
      const char g = static_cast<char>('a' + rng() % 4);
      if (gate.open.count(g)) {
        gate.open.erase(g);
      } else {
        gate.open.insert(g);
        shard.ReleaseHeld(g, now, admit, sink);
      }
    } else {
      now += rng() % (5 * kMs);
      shard.Advance(now, admit, sink);
    }
    if (step % 1000 == 0) shard.CheckInvariants();
  }
  gate.open = {'a', 'b', 'c', 'd'};
  for (char g : {'a', 'b', 'c', 'd'}) shard.ReleaseHeld(g, now, admit, sink);
  now += kSec;
  shard.Advance(now, admit, sink);
  shard.CheckInvariants();
  EXPECT_TRUE(live.empty()) << live.size() << " timers never fired";
  EXPECT_EQ(shard.pending(), 0u);
}

}  // namespace
}  // namespace lawn
