// Shard's ordered id index (ShardOptions::ordered_index): VisitGroupInOrder agrees with a std::set of the
// live ids of the group through random starts, deletes, replaces and expirations.
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
  shard.VisitGroupInOrder(after, inclusive, [&](const TimerView& t) {
    if (out.size() >= limit) return false;
    out.emplace_back(t.Key());
    return true;
  });
  return out;
}

// The group of an id: up to and including its first 0x00 byte ("" when none).
std::string GroupOf(const std::string& id) {
  const size_t nul = id.find('\0');
  return nul == std::string::npos ? std::string() : id.substr(0, nul + 1);
}

std::vector<std::string> Expected(const std::set<std::string>& live, const std::string& after, bool inclusive,
                                  size_t limit) {
  std::vector<std::string> out;
  for (auto it = inclusive ? live.lower_bound(after) : live.upper_bound(after); it != live.end(); ++it) {
    if (out.size() >= limit) break;
    if (GroupOf(*it) != GroupOf(after)) continue;
    out.push_back(*it);
  }
  return out;
}

TEST(ShardOrderedTest, VisitsARangeInIdOrder) {
  ShardOptions options;
  options.ordered_index = true;
  options.id_groups = true;
  Shard shard(options);
  for (std::string_view id : {std::string_view("a"), std::string_view("c"), std::string_view("b\0x", 3),
                              std::string_view("b\0a", 3), std::string_view("b")}) {
    ASSERT_TRUE(shard.Start(TtlSpec(id, kSec), 0).ok()) << id;
  }
  // The group "b\0" only: "c" is in the group "" (no 0x00).
  EXPECT_EQ(Visit(shard, std::string_view("b\0", 2), true, 10),
            (std::vector<std::string>{std::string("b\0a", 3), std::string("b\0x", 3)}));
  EXPECT_EQ(Visit(shard, "", true, 2), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(Visit(shard, "", true, 10), (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_EQ(Visit(shard, std::string_view("b\0a", 3), false, 1), (std::vector<std::string>{std::string("b\0x", 3)}));
  shard.CheckInvariants();
}

TEST(ShardOrderedTest, RandomOperationsMatchASetOracle) {
  ShardOptions options;
  options.ordered_index = true;
  options.id_groups = true;
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
        shard.Advance(now, [&](const Fired& f) { live.erase(f.timer.Key()); });
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
  for (const std::string g : {"n0", "n1", "n2"}) {
    const std::string first = g + std::string(1, '\0');
    ASSERT_EQ(Visit(shard, first, true, SIZE_MAX), Expected(live, first, true, SIZE_MAX));
  }
  shard.CheckInvariants();
}

// Ids whose first bytes after the group are equal (decided by the record, not the entry's prefix word) and
// ids shorter than the prefix word keep byte order.
TEST(ShardOrderedTest, SharedPrefixesAndShortIdsKeepByteOrder) {
  ShardOptions options;
  options.ordered_index = true;
  options.id_groups = true;
  Shard shard(options);
  std::set<std::string> live;
  const std::vector<std::string> rests = {"a",    "ab", "abc", "abcd", "abcde", "abcdX", "abcc", "b",
                                         std::string("a\0", 2), std::string("ab\0\1", 4), "order-000002",
                                         "order-000010", "order-000001"};
  for (const std::string& rest : rests) {
    const std::string id = std::string("ns", 2) + std::string(1, '\0') + rest;
    ASSERT_TRUE(shard.Start(TtlSpec(id, kSec), 0).ok());
    live.insert(id);
  }
  const std::string first = std::string("ns", 2) + std::string(1, '\0');
  EXPECT_EQ(Visit(shard, first, true, SIZE_MAX), Expected(live, first, true, SIZE_MAX));
  shard.CheckInvariants();
}

}  // namespace
}  // namespace lawn
