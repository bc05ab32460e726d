// Randomized differential test of TimingWheel against a std::set of (due tick, ref), fixed seeds.
//
// The oracle: a timer inserted when the wheel's elapsed is e, with deadline tick d, is due at tick
// max(d, e); the TakeDue/AdvanceTo protocol must hand out exactly the due timers, each reported at its due
// tick, slots in tick order.
#include <algorithm>
#include <cstdint>
#include <map>
#include <set>
#include <utility>
#include <vector>

#include "core/timer_pool.h"
#include "core/timing_wheel.h"
#include "gtest/gtest.h"
#include "tests/core/shard_test_util.h"

namespace lawn {
namespace {

using ::lawn::test::Rng;

constexpr uint64_t kTimeLimit = uint64_t{1} << 62;  // Keep far from wrap-around; the edge has unit tests.

uint64_t RandomDeadlineTick(Rng& rng, uint64_t elapsed) {
  const uint64_t r = rng.Uniform(0, 99);
  if (r < 45) return elapsed + rng.Uniform(0, uint64_t{TimingWheel::kSlots} * TimingWheel::kSlots);
  if (r < 65) return elapsed + rng.Uniform(0, uint64_t{1} << 24);
  if (r < 80) {  // Near a slot or level boundary above elapsed.
    const int level = static_cast<int>(rng.Uniform(1, TimingWheel::kLevels - 1));
    const uint64_t unit = uint64_t{1} << (TimingWheel::kSlotBits * level);
    const uint64_t boundary = (elapsed / unit + rng.Uniform(1, 3)) * unit;
    return boundary + rng.Uniform(0, 4) - 2;
  }
  if (r < 90) return rng.Uniform(0, elapsed);  // In the past.
  return elapsed + rng.Uniform(0, uint64_t{1} << 56);
}

uint64_t RandomStep(Rng& rng) {
  const uint64_t r = rng.Uniform(0, 99);
  if (r < 60) return rng.Uniform(0, 70);
  if (r < 85) return rng.Uniform(0, 64 * 64 * 2);
  if (r < 97) return rng.Uniform(0, uint64_t{1} << 25);
  return rng.Uniform(0, uint64_t{1} << 40);
}

void RunWheelDifferential(uint64_t seed, uint64_t tick_ns, int ops) {
  TimerPool pool;
  TimingWheel wheel(pool, tick_ns);
  std::set<std::pair<uint64_t, TimerRef>> oracle;  // (due tick, ref)
  std::map<TimerRef, uint64_t> due_of;
  std::vector<TimerRef> filed;     // For picking a random victim ...
  std::vector<size_t> filed_pos;   // ... indexed by ref: its position in `filed`.
  auto file = [&](TimerRef ref) {
    if (filed_pos.size() <= ref) filed_pos.resize(ref + 1);
    filed_pos[ref] = filed.size();
    filed.push_back(ref);
  };
  auto unfile = [&](TimerRef ref) {
    const size_t i = filed_pos[ref];
    filed[i] = filed.back();
    filed_pos[filed[i]] = i;
    filed.pop_back();
  };
  const uint64_t limit = kTimeLimit / tick_ns;
  Rng rng(seed);
  uint64_t fired_total = 0;
  for (int op = 0; op < ops; ++op) {
    const uint64_t r = rng.Uniform(0, 99);
    const uint64_t elapsed = wheel.elapsed();
    if (r < 40) {
      const uint64_t d_tick = std::min(RandomDeadlineTick(rng, elapsed), limit);
      // A deadline_ns whose ceil(deadline / tick) is d_tick.
      const uint64_t deadline_ns = d_tick == 0 ? 0 : (d_tick - 1) * tick_ns + rng.Uniform(1, tick_ns);
      ASSERT_EQ(wheel.DeadlineTick(deadline_ns), d_tick);
      TimerRef ref = pool.Allocate("w", "", 0);
      pool[ref].deadline_ns = deadline_ns;
      wheel.Insert(ref);
      const uint64_t due = std::max(d_tick, elapsed);
      oracle.insert({due, ref});
      due_of[ref] = due;
      file(ref);
    } else if (r < 55) {
      if (filed.empty()) continue;
      const TimerRef victim = filed[rng.Uniform(0, filed.size() - 1)];
      unfile(victim);
      wheel.Remove(victim);
      oracle.erase({due_of[victim], victim});
      due_of.erase(victim);
      pool.Free(victim);
    } else {
      uint64_t now_tick = elapsed - 1 + RandomStep(rng);
      if (elapsed == 0) now_tick = RandomStep(rng);
      if (!oracle.empty() && rng.Percent(10)) now_tick = oracle.begin()->first - rng.Uniform(0, 1);
      now_tick = std::min(std::max(now_tick, elapsed == 0 ? 0 : elapsed - 1), limit);
      if (auto next = wheel.NextTick()) {
        ASSERT_FALSE(oracle.empty());
        ASSERT_LE(*next, oracle.begin()->first) << "op " << op << ": NextTick skips the earliest timer";
        ASSERT_GE(*next, elapsed) << "op " << op;
      } else {
        ASSERT_TRUE(oracle.empty()) << "op " << op << ": NextTick is empty with timers filed";
      }
      std::vector<std::pair<uint64_t, TimerRef>> got;
      std::vector<TimerRef> out;
      for (int guard = 0;; ++guard) {
        ASSERT_LT(guard, 10000) << "op " << op << ": TakeDue does not terminate";
        const size_t before = out.size();
        uint64_t tick = 0;
        if (!wheel.TakeDue(now_tick, out, &tick)) break;
        for (size_t i = before; i < out.size(); ++i) got.push_back({tick, out[i]});
      }
      wheel.AdvanceTo(now_tick);
      std::vector<std::pair<uint64_t, TimerRef>> want;
      while (!oracle.empty() && oracle.begin()->first <= now_tick) {
        want.push_back(*oracle.begin());
        oracle.erase(oracle.begin());
      }
      ASSERT_TRUE(std::is_sorted(got.begin(), got.end(),
                                 [](const auto& a, const auto& b) { return a.first < b.first; }))
          << "op " << op << ": slots taken out of tick order";
      std::sort(got.begin(), got.end());
      ASSERT_EQ(got, want) << "op " << op << " now_tick " << now_tick << " elapsed " << elapsed;
      for (const auto& [tick, ref] : got) {
        ASSERT_EQ(pool[ref].home, Home::kNone);
        unfile(ref);
        due_of.erase(ref);
        pool.Free(ref);
      }
      fired_total += got.size();
    }
    ASSERT_EQ(wheel.size(), oracle.size()) << "op " << op;
    if (op % 1000 == 0) wheel.CheckInvariants();
  }
  wheel.CheckInvariants();
  EXPECT_GT(fired_total, static_cast<uint64_t>(ops) / 10);
}

TEST(TimingWheelDifferentialTest, MatchesOrderedSetWithUnitTick) { RunWheelDifferential(21, 1, 1000000); }

TEST(TimingWheelDifferentialTest, MatchesOrderedSetWithOddTick) { RunWheelDifferential(22, 7, 1000000); }

}  // namespace
}  // namespace lawn
