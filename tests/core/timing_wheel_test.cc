// Unit tests of TimingWheel: filing, cascading across every level, the top of the 64-bit range,
// removal and re-filing under a new tick.
#include "core/timing_wheel.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "core/timer_pool.h"
#include "gtest/gtest.h"

namespace lawn {
namespace {

struct FiredAt {
  TimerRef ref;
  uint64_t tick;
};

// Drives a wheel through the documented protocol: TakeDue until it returns false, then AdvanceTo.
class WheelHarness {
 public:
  explicit WheelHarness(uint64_t tick_ns) : wheel_(pool_, tick_ns) {}

  TimerRef Add(uint64_t deadline_ns) {
    TimerRef ref = pool_.Allocate("w" + std::to_string(next_id_++), "", 0);
    pool_[ref].deadline_ns = deadline_ns;
    wheel_.Insert(ref);
    EXPECT_EQ(pool_[ref].home, Home::kWheel);
    wheel_.CheckInvariants();
    return ref;
  }

  void Remove(TimerRef ref) {
    wheel_.Remove(ref);
    EXPECT_EQ(pool_[ref].home, Home::kNone);
    wheel_.CheckInvariants();
    pool_.Free(ref);
  }

  // Processes every tick <= now_tick; returns what fired (and frees it). Checks the reported ticks are
  // non-decreasing and never beyond now_tick.
  std::vector<FiredAt> RunTo(uint64_t now_tick) {
    std::vector<FiredAt> fired;
    std::vector<TimerRef> out;
    uint64_t last_tick = 0;
    for (int guard = 0;; ++guard) {
      if (guard > 100000) {
        ADD_FAILURE() << "TakeDue(" << now_tick << ") does not terminate";
        break;
      }
      size_t before = out.size();
      uint64_t tick = 0;
      if (!wheel_.TakeDue(now_tick, out, &tick)) break;
      wheel_.CheckInvariants();
      if (out.size() == before) continue;  // A cascade.
      EXPECT_LE(tick, now_tick);
      EXPECT_GE(tick, last_tick) << "slots must be taken in tick order";
      last_tick = tick;
      for (size_t i = before; i < out.size(); ++i) {
        EXPECT_EQ(pool_[out[i]].home, Home::kNone);
        fired.push_back({out[i], tick});
      }
    }
    if (auto next = wheel_.NextTick()) {
      EXPECT_GT(*next, now_tick);
    }
    wheel_.AdvanceTo(now_tick);
    wheel_.CheckInvariants();
    for (const FiredAt& f : fired) pool_.Free(f.ref);
    return fired;
  }

  TimerPool& pool() { return pool_; }
  TimingWheel& wheel() { return wheel_; }

 private:
  TimerPool pool_;
  TimingWheel wheel_;
  int next_id_ = 0;
};

std::set<TimerRef> Refs(const std::vector<FiredAt>& fired) {
  std::set<TimerRef> refs;
  for (const FiredAt& f : fired) refs.insert(f.ref);
  return refs;
}

// kSlots^level: the first tick filed at `level` from elapsed 0.
uint64_t PowSlots(int level) { return uint64_t{1} << (TimingWheel::kSlotBits * level); }
constexpr uint64_t kSlots = TimingWheel::kSlots;

// Inserts timers at `deadlines` (ticks; tick_ns = 1) and steps to each distinct deadline d, first to d - 1
// (nothing may fire) and then to d (exactly the timers at d fire, reported at tick d).
void ExpectEachFiresExactlyOnTime(WheelHarness& h, const std::vector<uint64_t>& deadlines) {
  std::multimap<uint64_t, TimerRef> by_deadline;
  for (uint64_t d : deadlines) by_deadline.emplace(d, h.Add(d));
  ASSERT_EQ(h.wheel().size(), deadlines.size());
  uint64_t now = h.wheel().elapsed();
  while (!by_deadline.empty()) {
    const uint64_t d = by_deadline.begin()->first;
    std::set<TimerRef> expected;
    for (auto it = by_deadline.begin(); it != by_deadline.end() && it->first == d;) {
      expected.insert(it->second);
      it = by_deadline.erase(it);
    }
    ASSERT_TRUE(h.wheel().NextTick().has_value());
    EXPECT_LE(*h.wheel().NextTick(), d) << "NextTick must not skip a deadline";
    if (d > 0 && d - 1 >= now) {
      std::vector<FiredAt> early = h.RunTo(d - 1);
      EXPECT_TRUE(early.empty()) << early.size() << " timers fired at tick " << d - 1 << " before deadline "
                                 << d;
    }
    std::vector<FiredAt> fired = h.RunTo(d);
    EXPECT_EQ(Refs(fired), expected) << "at deadline tick " << d;
    for (const FiredAt& f : fired) EXPECT_EQ(f.tick, d);
    now = d;
  }
  EXPECT_EQ(h.wheel().size(), 0u);
  EXPECT_FALSE(h.wheel().NextTick().has_value());
}

TEST(TimingWheelTest, DeadlineTickIsCeilingOfDeadlineOverTick) {
  TimerPool pool;
  TimingWheel wheel(pool, 1000);
  EXPECT_EQ(wheel.DeadlineTick(0), 0u);
  EXPECT_EQ(wheel.DeadlineTick(1), 1u);
  EXPECT_EQ(wheel.DeadlineTick(999), 1u);
  EXPECT_EQ(wheel.DeadlineTick(1000), 1u);
  EXPECT_EQ(wheel.DeadlineTick(1001), 2u);
  EXPECT_EQ(wheel.DeadlineTick(UINT64_MAX), UINT64_MAX / 1000 + 1);
}

TEST(TimingWheelTest, EmptyWheelHasNoNextTick) {
  WheelHarness h(1);
  EXPECT_FALSE(h.wheel().NextTick().has_value());
  EXPECT_TRUE(h.RunTo(1000).empty());
  EXPECT_EQ(h.wheel().size(), 0u);
}

TEST(TimingWheelTest, FiresOnTheDeadlineTickNotBefore) {
  WheelHarness h(1'000'000);
  TimerRef a = h.Add(5'000'000);  // Exactly tick 5.
  TimerRef b = h.Add(5'000'001);  // Tick 6.
  EXPECT_TRUE(h.RunTo(4).empty());
  std::vector<FiredAt> at5 = h.RunTo(5);
  ASSERT_EQ(at5.size(), 1u);
  EXPECT_EQ(at5[0].ref, a);
  EXPECT_EQ(at5[0].tick, 5u);
  std::vector<FiredAt> at6 = h.RunTo(6);
  ASSERT_EQ(at6.size(), 1u);
  EXPECT_EQ(at6[0].ref, b);
}

TEST(TimingWheelTest, CascadesThroughEveryLevelAtPowersOfTheSlotCount) {
  WheelHarness h(1);
  std::vector<uint64_t> deadlines;
  for (int level = 0; level < TimingWheel::kLevels; ++level) deadlines.push_back(PowSlots(level));
  ExpectEachFiresExactlyOnTime(h, deadlines);
}

TEST(TimingWheelTest, CascadesJustBelowAndAboveLevelBoundaries) {
  WheelHarness h(1);
  std::vector<uint64_t> deadlines;
  for (int level = 0; level < TimingWheel::kLevels; ++level) {
    const uint64_t p = PowSlots(level);
    for (uint64_t d : {p - 1, p, p + 1, 2 * p - 1, 2 * p, (kSlots - 1) * p, kSlots * p - 1}) deadlines.push_back(d);
  }
  deadlines.push_back(UINT64_MAX);
  ExpectEachFiresExactlyOnTime(h, deadlines);
}

TEST(TimingWheelTest, FindsOccupiedSlotsAcrossTheBitmapsWords) {
  // A level's occupancy bitmap is four 64-bit words: the next occupied slot may sit in a later word than
  // elapsed's digit, at level 0 and, scaled, at level 1.
  for (uint64_t unit : {uint64_t{1}, PowSlots(1)}) {
    SCOPED_TRACE("unit " + std::to_string(unit));
    WheelHarness h(1);
    std::vector<uint64_t> deadlines;
    for (uint64_t slot : {63, 64, 65, 127, 128, 191, 192, 255}) deadlines.push_back(slot * unit);
    ExpectEachFiresExactlyOnTime(h, deadlines);
  }
}

TEST(TimingWheelTest, CascadesWhenBoundaryIsOneTickAway) {
  // With time just below kSlots^L, deadline kSlots^L differs from it in digit L: the timer is filed at level L
  // although it is due one or two ticks later, and must cascade down in time.
  for (int level = 1; level < TimingWheel::kLevels; ++level) {
    SCOPED_TRACE("level " + std::to_string(level));
    WheelHarness h(1);
    const uint64_t p = PowSlots(level);
    h.wheel().AdvanceTo(p - 2);
    ExpectEachFiresExactlyOnTime(h, {p - 1, p, p + 1, p + kSlots - 1, p + kSlots});
  }
}

TEST(TimingWheelTest, LargeJumpFiresEverythingInTickOrder) {
  WheelHarness h(1);
  std::vector<uint64_t> deadlines;
  for (int level = 0; level < TimingWheel::kLevels; ++level) {
    deadlines.push_back(PowSlots(level) + 3);
    deadlines.push_back(5 * PowSlots(level) - 1);
  }
  deadlines.push_back(UINT64_MAX - 1);
  std::map<TimerRef, uint64_t> expected_tick;
  for (uint64_t d : deadlines) expected_tick[h.Add(d)] = d;
  std::vector<FiredAt> fired = h.RunTo(UINT64_MAX - 1);
  ASSERT_EQ(fired.size(), deadlines.size());
  for (const FiredAt& f : fired) EXPECT_EQ(f.tick, expected_tick[f.ref]);
  EXPECT_EQ(h.wheel().size(), 0u);
}

TEST(TimingWheelTest, DeadlinesNearTopOfRangeFireOnTimeFromZero) {
  WheelHarness h(1);
  std::vector<uint64_t> deadlines;
  for (uint64_t k : {uint64_t{0}, uint64_t{1}, uint64_t{2}, uint64_t{63}, uint64_t{64}, uint64_t{65},
                     uint64_t{255}, uint64_t{256}, uint64_t{4095}, uint64_t{4096}, uint64_t{65535},
                     uint64_t{65536}, uint64_t{1} << 30, uint64_t{1} << 60}) {
    deadlines.push_back(UINT64_MAX - k);
  }
  ExpectEachFiresExactlyOnTime(h, deadlines);
}

TEST(TimingWheelTest, StepsTickByTickUpToMaxTick) {
  WheelHarness h(1);
  const uint64_t start = UINT64_MAX - 300;
  h.wheel().AdvanceTo(start - 1);
  std::map<uint64_t, TimerRef> by_tick;
  for (uint64_t k : {uint64_t{0}, uint64_t{1}, uint64_t{2}, uint64_t{64}, uint64_t{65}, uint64_t{200},
                     uint64_t{299}}) {
    by_tick[UINT64_MAX - k] = h.Add(UINT64_MAX - k);
  }
  for (uint64_t now = start;; ++now) {
    std::vector<FiredAt> fired = h.RunTo(now);
    auto it = by_tick.find(now);
    if (it == by_tick.end()) {
      EXPECT_TRUE(fired.empty()) << "fired at tick " << now;
    } else {
      ASSERT_EQ(fired.size(), 1u) << "at tick " << now;
      EXPECT_EQ(fired[0].ref, it->second);
      EXPECT_EQ(fired[0].tick, now);
    }
    if (now == UINT64_MAX) break;
  }
  EXPECT_EQ(h.wheel().size(), 0u);
  EXPECT_FALSE(h.wheel().NextTick().has_value());
}

TEST(TimingWheelTest, PastDeadlineIsFiledAtElapsed) {
  WheelHarness h(1);
  EXPECT_TRUE(h.RunTo(1000).empty());
  const uint64_t elapsed = h.wheel().elapsed();
  TimerRef past = h.Add(10);
  TimerRef zero = h.Add(0);
  ASSERT_TRUE(h.wheel().NextTick().has_value());
  EXPECT_EQ(*h.wheel().NextTick(), elapsed);
  std::vector<FiredAt> fired = h.RunTo(elapsed);
  EXPECT_EQ(Refs(fired), (std::set<TimerRef>{past, zero}));
  for (const FiredAt& f : fired) EXPECT_EQ(f.tick, elapsed);
}

TEST(TimingWheelTest, RemovedTimerNeverFires) {
  // Three timers share a level-0 slot; remove each position of the slot's list in turn.
  for (int victim = 0; victim < 3; ++victim) {
    WheelHarness h(1);
    std::vector<TimerRef> refs = {h.Add(7), h.Add(7), h.Add(7)};
    h.Remove(refs[victim]);
    EXPECT_EQ(h.wheel().size(), 2u);
    std::set<TimerRef> expected(refs.begin(), refs.end());
    expected.erase(refs[victim]);
    EXPECT_EQ(Refs(h.RunTo(7)), expected) << "victim " << victim;
  }
}

TEST(TimingWheelTest, RemovingLastTimerOfUpperLevelSlotClearsIt) {
  WheelHarness h(1);
  TimerRef far = h.Add(5 * PowSlots(3));
  TimerRef near = h.Add(40);
  h.Remove(far);
  ASSERT_TRUE(h.wheel().NextTick().has_value());
  EXPECT_LE(*h.wheel().NextTick(), 40u);
  h.Remove(near);
  EXPECT_FALSE(h.wheel().NextTick().has_value());
  EXPECT_EQ(h.wheel().size(), 0u);
  EXPECT_TRUE(h.RunTo(UINT64_MAX - 1).empty());
}

TEST(TimingWheelTest, RemoveAfterPartialCascade) {
  WheelHarness h(1);
  TimerRef a = h.Add(5000);
  TimerRef b = h.Add(5001);
  TimerRef c = h.Add(5010);
  // Move time into a's upper-level slot range so it has (probably) been cascaded lower.
  EXPECT_TRUE(h.RunTo(4990).empty());
  h.Remove(b);
  std::vector<FiredAt> fired = h.RunTo(6000);
  ASSERT_EQ(fired.size(), 2u);
  EXPECT_EQ(fired[0].ref, a);
  EXPECT_EQ(fired[0].tick, 5000u);
  EXPECT_EQ(fired[1].ref, c);
  EXPECT_EQ(fired[1].tick, 5010u);
}

TEST(TimingWheelTest, NextTickNeverLaterThanEarliestDeadline) {
  WheelHarness h(1);
  std::vector<uint64_t> deadlines = {100000, 64, 4097, 262144, 9, 256, 65537};
  uint64_t earliest = UINT64_MAX;
  for (uint64_t d : deadlines) {
    h.Add(d);
    earliest = std::min(earliest, d);
    ASSERT_TRUE(h.wheel().NextTick().has_value());
    EXPECT_LE(*h.wheel().NextTick(), earliest);
  }
}

TEST(TimingWheelTest, SetTickRefilesEverythingAndFiresNothingEarly) {
  constexpr uint64_t kMs = 1'000'000;
  WheelHarness h(kMs);
  std::map<TimerRef, uint64_t> deadline_of;
  uint64_t x = 12345;
  for (int i = 0; i < 2000; ++i) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    uint64_t d = (x >> 20) % (20'000 * kMs);  // Up to 20 s, ns granularity.
    if (i % 50 == 0) d = (x >> 20) % (100'000'000 * kMs);  // Some far out (~28 h).
    deadline_of[h.Add(d)] = d;
  }
  uint64_t tick_ns = kMs;
  uint64_t now_ns = 0;
  auto run = [&](uint64_t until_ns, uint64_t step_ns) {
    for (; now_ns < until_ns; now_ns += step_ns) {
      const uint64_t now_tick = now_ns / tick_ns;
      if (now_tick < h.wheel().elapsed() && now_tick + 1 != h.wheel().elapsed()) continue;
      for (const FiredAt& f : h.RunTo(now_tick)) {
        ASSERT_TRUE(deadline_of.count(f.ref));
        const uint64_t d = deadline_of[f.ref];
        EXPECT_LE(d, now_ns) << "fired early";
        EXPECT_GE(f.tick * tick_ns, d) << "reported tick precedes the deadline";
        deadline_of.erase(f.ref);
      }
    }
  };
  run(3'000 * kMs + 1, 3 * kMs + 17);
  const size_t pending = h.wheel().size();
  ASSERT_EQ(pending, deadline_of.size());
  ASSERT_GT(pending, 0u);
  tick_ns = 10 * kMs;
  h.wheel().SetTick(tick_ns);
  h.wheel().CheckInvariants();
  EXPECT_EQ(h.wheel().size(), pending);
  run(8'000 * kMs, 7 * kMs + 3);
  tick_ns = 1000;
  h.wheel().SetTick(tick_ns);
  h.wheel().CheckInvariants();
  EXPECT_EQ(h.wheel().size(), deadline_of.size());
  run(12'000 * kMs, kMs / 3);
  tick_ns = kMs;
  h.wheel().SetTick(tick_ns);
  h.wheel().CheckInvariants();
  EXPECT_EQ(h.wheel().size(), deadline_of.size());
  run(200'000'000 * kMs, 1000 * kMs * 60);
  EXPECT_TRUE(deadline_of.empty()) << deadline_of.size() << " timers never fired";
  EXPECT_EQ(h.wheel().size(), 0u);
}

}  // namespace
}  // namespace lawn
