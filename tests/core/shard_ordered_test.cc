// Shard's ordered id index (ShardOptions::ordered_index): VisitInOrder agrees with a std::set of live ids
// through random starts, deletes, replaces and expirations.
#include <cstdint>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "core/shard.h"
#include "gtest/gtest.h"
#include "tests/core/shard_test_util.h"

namespace lawn {
namespace {

using ::lawn::test::kMs;
using ::lawn::test::kSec;
using ::lawn::test::Replacing;
using ::lawn::test::TtlSpec;

std::vector<std::string> Visit(const Shard& shard, std::string_view after, bool inclusive, size_t limit) {
  std::vector<std::string> out;
  shard.VisitInOrder(after, inclusive, [&](const TimerView& t) {
    if (out.size() >= limit) return false;
    out.emplace_back(t.id);
    return true;
  });
  return out;
}

std::vector<std::string> Expected(const std::set<std::string>& live, const std::string& after, bool inclusive,
                                  size_t limit) {
  std::vector<std::string> out;
  for (auto it = inclusive ? live.lower_bound(after) : live.upper_bound(after); it != live.end(); ++it) {
    if (out.size() >= limit) break;
    out.push_back(*it);
  }
  return out;
}

TEST(ShardOrderedTest, VisitsARangeInIdOrder) {
  ShardOptions options;
  options.ordered_index = true;
  Shard shard(options);
  for (std::string_view id : {std::string_view("a"), std::string_view("c"), std::string_view("b\0x", 3),
                              std::string_view("b\0a", 3), std::string_view("b")}) {
    ASSERT_TRUE(shard.Start(TtlSpec(id, kSec), 0).ok()) << id;
  }
  EXPECT_EQ(Visit(shard, std::string_view("b\0", 2), true, 10),
            (std::vector<std::string>{std::string("b\0a", 3), std::string("b\0x", 3), "c"}));
  EXPECT_EQ(Visit(shard, "", true, 2), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(Visit(shard, std::string_view("b\0a", 3), false, 1), (std::vector<std::string>{std::string("b\0x", 3)}));
  shard.CheckInvariants();
}

TEST(ShardOrderedTest, RandomOperationsMatchASetOracle) {
  ShardOptions options;
  options.ordered_index = true;
  Shard shard(options);
  std::set<std::string> live;
  std::mt19937_64 rng(7);
  uint64_t now = kSec;
  for (int step = 0; step < 20000; ++step) {
    const std::string id = "n" + std::to_string(rng() % 3) + std::string(1, '\0') + std::to_string(rng() % 500);
    switch (rng() % 5) {
      case 0:
      case 1:
        if (shard.Start(Replacing(TtlSpec(id, 1 + rng() % (20 * kMs))), now).ok()) live.insert(id);
        break;
      case 2:
        if (shard.Delete(id).ok()) live.erase(id);
        break;
      case 3:
        now += rng() % (2 * kMs);
        shard.Advance(now, [&](const Fired& f) { live.erase(std::string(f.timer.id)); });
        break;
      default: {
        const std::string after = "n" + std::to_string(rng() % 3) + std::string(1, '\0') + std::to_string(rng() % 500);
        const bool inclusive = rng() % 2 == 0;
        const size_t limit = rng() % 50;
        ASSERT_EQ(Visit(shard, after, inclusive, limit), Expected(live, after, inclusive, limit));
      }
    }
    if (step % 2000 == 0) shard.CheckInvariants();
  }
  ASSERT_EQ(Visit(shard, "", true, SIZE_MAX), Expected(live, "", true, SIZE_MAX));
  shard.CheckInvariants();
}

}  // namespace
}  // namespace lawn
