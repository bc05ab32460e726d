// Shard's ordered id index (ShardOptions::ordered_index): VisitGroupInOrder agrees with a std::set of the
// live ids of the group through random starts, deletes, replaces and expirations, also when the index was
// built in small steps while those went on; an index exists only once asked for.
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

// As lawnd configures its shards: ids grouped by namespace, ordered indexes on request.
ShardOptions Grouped() {
  ShardOptions options;
  options.ordered_index = true;
  options.id_groups = true;
  return options;
}

// A group's name as ids carry it: `name` and its 0x00.
std::string Ns(const std::string& name) { return name + std::string(1, '\0'); }

// One RequestOrder with a budget of its own.
bool Request(Shard& shard, std::string_view id, uint64_t now_ns, size_t budget) {
  return shard.RequestOrder(id, now_ns, &budget);
}

std::vector<std::string> Visit(Shard& shard, std::string_view after, bool inclusive, size_t limit) {
  std::vector<std::string> out;
  size_t budget = SIZE_MAX;  // Unbounded: the build completes at once.
  EXPECT_TRUE(shard.RequestOrder(after, 0, &budget));
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

size_t DropAll(Shard& shard) { return shard.DropOrdersUnusedSince(UINT64_MAX); }

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

// Random starts (replacing), deletes and expirations of the ids n<g>\0<i> (g < groups, i < ids), mirrored in
// `live`.
struct RandomChanges {
  Shard& shard;
  std::set<std::string>& live;
  uint64_t now = kSec;

  void Apply(std::mt19937_64& rng, uint64_t groups, uint64_t ids, uint64_t max_ttl_ns, uint64_t max_step_ns) {
    const std::string id = Ns("n" + std::to_string(rng() % groups)) + std::to_string(rng() % ids);
    switch (rng() % 4) {
      case 0:
      case 1:
        if (shard.Start(Replacing(TtlSpec(id, 1 + rng() % max_ttl_ns)), now).ok()) live.insert(id);
        break;
      case 2:
        if (shard.Delete(id).ok()) live.erase(id);
        break;
      default:
        now += rng() % max_step_ns;
        shard.Advance(now, [&](const Fired& f) { live.erase(f.timer.Key()); });
    }
  }
};

TEST(ShardOrderedTest, VisitsARangeInIdOrder) {
  Shard shard(Grouped());
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
  Shard shard(Grouped());
  std::set<std::string> live;
  RandomChanges changes{shard, live};
  std::mt19937_64 rng(7);
  for (int step = 0; step < 20000; ++step) {
    if (rng() % 5 == 0) {
      const std::string after = Ns("n" + std::to_string(rng() % 3)) + std::to_string(rng() % 500);
      const bool inclusive = rng() % 2 == 0;
      const size_t limit = rng() % 50;
      ASSERT_EQ(Visit(shard, after, inclusive, limit), Expected(live, after, inclusive, limit));
    } else {
      changes.Apply(rng, 3, 500, 20 * kMs, 2 * kMs);
    }
    if (step % 2000 == 0) shard.CheckInvariants();
  }
  for (const std::string g : {"n0", "n1", "n2"}) {
    const std::string first = Ns(g);
    ASSERT_EQ(Visit(shard, first, true, SIZE_MAX), Expected(live, first, true, SIZE_MAX));
  }
  shard.CheckInvariants();
}

// Ids whose first bytes after the group are equal (decided by the record, not the entry's prefix word) and
// ids shorter than the prefix word keep byte order.
TEST(ShardOrderedTest, SharedPrefixesAndShortIdsKeepByteOrder) {
  Shard shard(Grouped());
  std::set<std::string> live;
  const std::vector<std::string> rests = {"a",    "ab", "abc", "abcd", "abcde", "abcdX", "abcc", "b",
                                         std::string("a\0", 2), std::string("ab\0\1", 4), "order-000002",
                                         "order-000010", "order-000001"};
  for (const std::string& rest : rests) {
    const std::string id = Ns("ns") + rest;
    ASSERT_TRUE(shard.Start(TtlSpec(id, kSec), 0).ok());
    live.insert(id);
  }
  const std::string first = Ns("ns");
  EXPECT_EQ(Visit(shard, first, true, SIZE_MAX), Expected(live, first, true, SIZE_MAX));
  shard.CheckInvariants();
}

// Until a group's order is asked for, starts and deletes keep no index for it; once asked, a budget too small
// for the group spreads the build over several requests.
TEST(ShardOrderedTest, AGroupIsIndexedOnlyOnceAskedAndInSteps) {
  Shard shard(Grouped());
  const std::string a = Ns("a");
  const std::string b = Ns("b");
  for (int i = 0; i < 1000; ++i) {
    ASSERT_TRUE(shard.Start(TtlSpec(a + std::to_string(i), kSec), 0).ok());
    ASSERT_TRUE(shard.Start(TtlSpec(b + std::to_string(i), kSec), 0).ok());
  }
  EXPECT_EQ(shard.ordered_entries(), 0u);
  // 2000 records to scan, 1000 of them inserted: about 66,000 units, so a budget of 5,000 takes many steps.
  int steps = 1;
  while (!Request(shard, a, 0, 5000)) ++steps;
  EXPECT_GT(steps, 5);
  EXPECT_EQ(shard.ordered_entries(), 1000u);  // Group b still has none.
  ASSERT_TRUE(shard.Start(TtlSpec(b + "new", kSec), 0).ok());
  EXPECT_EQ(shard.ordered_entries(), 1000u);
  ASSERT_TRUE(shard.Start(TtlSpec(a + "new", kSec), 0).ok());
  EXPECT_EQ(shard.ordered_entries(), 1001u);
  EXPECT_EQ(Visit(shard, a + "999", false, 10), (std::vector<std::string>{a + "new"}));
  shard.CheckInvariants();
  // Unused since before 5: dropped; used at 10: kept.
  ASSERT_TRUE(Request(shard, b, 10, SIZE_MAX));
  EXPECT_EQ(shard.DropOrdersUnusedSince(5), 1u);
  EXPECT_EQ(shard.ordered_entries(), 1001u);  // b's 1001 entries; a's are gone.
  EXPECT_FALSE(Request(shard, a, 20, 10));
  shard.CheckInvariants();
}

// Starts (new records and reused ones), deletes, replaces and expirations between the steps of a build:
// once complete, the index holds exactly the group's live timers in order.
TEST(ShardOrderedTest, ABuildInStepsSeesEveryChangeMadeMeanwhile) {
  std::mt19937_64 rng(11);
  for (int round = 0; round < 20; ++round) {
    Shard shard(Grouped());
    std::set<std::string> live;
    RandomChanges changes{shard, live};
    auto mutate = [&](int count) {
      for (int k = 0; k < count; ++k) changes.Apply(rng, 2, 800, 50 * kMs, kMs);
    };
    mutate(3000);
    const std::string first = Ns("n0");
    const uint64_t since = round;
    while (!Request(shard, first, since, 1 + rng() % 3000)) {
      mutate(static_cast<int>(rng() % 40));
      shard.CheckInvariants();
    }
    ASSERT_EQ(Visit(shard, first, true, SIZE_MAX), Expected(live, first, true, SIZE_MAX)) << round;
    mutate(500);  // Kept complete from now on.
    ASSERT_EQ(Visit(shard, first, true, SIZE_MAX), Expected(live, first, true, SIZE_MAX)) << round;
    shard.CheckInvariants();
  }
}

// A build's scan ends where the pool's records ended when it began: a group started into faster than its
// build's budget scans still completes, and one budget shared by two requests is spent once.
TEST(ShardOrderedTest, ABuildCompletesWhileItsGroupKeepsGrowing) {
  Shard shard(Grouped());
  const std::string g = Ns("g");
  int next = 0;
  for (; next < 2000; ++next) ASSERT_TRUE(shard.Start(TtlSpec(g + std::to_string(next), kSec), 0).ok());
  int steps = 0;
  while (!Request(shard, g, 0, 6500)) {  // About 100 records a step, while 500 more start.
    ASSERT_LT(++steps, 100) << "the build never completes";
    for (int k = 0; k < 500; ++k, ++next) {
      ASSERT_TRUE(shard.Start(TtlSpec(g + std::to_string(next), kSec), 0).ok());
    }
  }
  EXPECT_EQ(shard.ordered_entries(), static_cast<size_t>(next));
  shard.CheckInvariants();
  ASSERT_EQ(DropAll(shard), 1u);
  size_t budget = 3000;
  EXPECT_FALSE(shard.RequestOrder(g, 0, &budget));
  EXPECT_EQ(budget, 0u);
  EXPECT_FALSE(shard.RequestOrder(g, 0, &budget));  // Nothing left to spend: no progress, no overspending.
  EXPECT_EQ(budget, 0u);
}

// Group codes are reused: a group whose last timer goes mid-build loses its partial index, and the group that
// takes its code next starts unindexed. Without id_groups every id is in one group, built in steps too.
TEST(ShardOrderedTest, AReusedGroupCodeAndTheSingleGroupBuildCorrectly) {
  Shard shard(Grouped());
  const std::string a = Ns("a");
  const std::string b = Ns("b");
  for (int i = 0; i < 300; ++i) ASSERT_TRUE(shard.Start(TtlSpec(a + std::to_string(i), kSec), 0).ok());
  EXPECT_FALSE(Request(shard, a, 0, 1000));  // Partly built.
  EXPECT_GT(shard.ordered_entries(), 0u);
  for (int i = 0; i < 300; ++i) ASSERT_TRUE(shard.Delete(a + std::to_string(i)).ok());
  EXPECT_EQ(shard.ordered_entries(), 0u);
  for (int i = 0; i < 300; ++i) ASSERT_TRUE(shard.Start(TtlSpec(b + std::to_string(i), kSec), 0).ok());
  EXPECT_EQ(shard.ordered_entries(), 0u);  // b took a's code and is not indexed until asked.
  shard.CheckInvariants();
  std::set<std::string> live_b;
  for (int i = 0; i < 300; ++i) live_b.insert(b + std::to_string(i));
  EXPECT_EQ(Visit(shard, b, true, SIZE_MAX), Expected(live_b, b, true, SIZE_MAX));

  Shard plain(ShardOptions{.ordered_index = true});
  std::set<std::string> live;
  for (int i = 0; i < 500; ++i) {
    const std::string id = "p" + std::to_string(i);
    ASSERT_TRUE(plain.Start(TtlSpec(id, kSec), 0).ok());
    live.insert(id);
  }
  int steps = 0;
  while (!Request(plain, "", 0, 2000)) {
    ++steps;
    ASSERT_TRUE(plain.Delete("p" + std::to_string(steps)).ok());
    live.erase("p" + std::to_string(steps));
    plain.CheckInvariants();
  }
  EXPECT_GT(steps, 3);
  EXPECT_EQ(Visit(plain, "", true, SIZE_MAX), Expected(live, "", true, SIZE_MAX));
  plain.CheckInvariants();
}

}  // namespace
}  // namespace lawn
