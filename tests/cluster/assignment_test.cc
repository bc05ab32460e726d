// Assign: balanced, minimal movement, absent members keep their partitions, draining members end empty;
// fixed cases and a randomized check of the invariants.
#include "cluster/assignment.h"

#include <map>
#include <cstdint>
#include <random>

#include "gtest/gtest.h"

namespace lawn {
namespace {

std::map<std::string, int> Count(const std::vector<std::string>& owners) {
  std::map<std::string, int> counts;
  for (const std::string& o : owners) ++counts[o];
  return counts;
}

std::vector<std::string> Fresh(uint32_t partitions, std::set<std::string> members) {
  return Assign({std::vector<std::string>(partitions), members, {}}).owners;
}

TEST(AssignmentTest, AFreshClusterSplitsEveryPartitionEvenly) {
  const std::vector<std::string> owners = Fresh(1024, {"a", "b", "c"});
  const auto counts = Count(owners);
  EXPECT_EQ(counts.size(), 3u);
  EXPECT_EQ(counts.at("a") + counts.at("b") + counts.at("c"), 1024);
  for (const auto& [m, n] : counts) EXPECT_TRUE(n == 341 || n == 342) << m << " " << n;
}

TEST(AssignmentTest, AJoiningMemberTakesItsShareAndNothingElseMoves) {
  const std::vector<std::string> before = Fresh(1024, {"a", "b", "c"});
  const Assignment after = Assign({before, {"a", "b", "c", "d"}, {}});
  EXPECT_EQ(after.moves.size(), 256u);  // d's quota, the least that can move.
  for (const Move& m : after.moves) EXPECT_EQ(m.to, "d");
  for (const auto& [m, n] : Count(after.owners)) EXPECT_EQ(n, 256) << m;
}

TEST(AssignmentTest, ADrainingMemberHandsOverEverythingAndOnlyThatMoves) {
  const std::vector<std::string> before = Fresh(1024, {"a", "b", "c", "d"});
  const Assignment after = Assign({before, {"a", "b", "c", "d"}, {"b"}});
  EXPECT_EQ(after.moves.size(), 256u);
  for (const Move& m : after.moves) {
    EXPECT_EQ(m.from, "b");
    EXPECT_NE(m.to, "b");
  }
  const auto counts = Count(after.owners);
  EXPECT_FALSE(counts.contains("b"));
  for (const auto& [m, n] : counts) EXPECT_TRUE(n == 341 || n == 342) << m << " " << n;
}

TEST(AssignmentTest, AVanishedMemberKeepsItsPartitionsUntilItComesBack) {
  const std::vector<std::string> before = Fresh(12, {"a", "b", "c"});
  const Assignment after = Assign({before, {"a", "c"}, {}});  // b's lease expired.
  EXPECT_TRUE(after.moves.empty());
  EXPECT_EQ(after.owners, before);
}

TEST(AssignmentTest, NoEligibleMemberChangesNothing) {
  const std::vector<std::string> before = Fresh(8, {"a"});
  EXPECT_TRUE(Assign({before, {}, {}}).moves.empty());
  EXPECT_TRUE(Assign({before, {"a"}, {"a"}}).moves.empty());
}

TEST(AssignmentTest, RandomizedInvariantsHold) {
  std::mt19937 rng(20261125);
  const std::vector<std::string> names = {"m0", "m1", "m2", "m3", "m4", "m5"};
  for (int round = 0; round < 2000; ++round) {
    const uint32_t partitions = 1 + rng() % 64;
    AssignmentInput in;
    for (uint32_t p = 0; p < partitions; ++p) {
      const uint32_t pick = rng() % (names.size() + 1);
      in.owners.push_back(pick == names.size() ? "" : names[pick]);
    }
    for (const std::string& n : names) {
      if (rng() % 3 != 0) in.live.insert(n);
      if (in.live.contains(n) && rng() % 5 == 0) in.draining.insert(n);
    }
    const Assignment out = Assign(in);
    ASSERT_EQ(out.owners.size(), in.owners.size());
    std::set<std::string> eligible;
    for (const std::string& m : in.live) {
      if (!in.draining.contains(m)) eligible.insert(m);
    }
    if (eligible.empty()) {
      EXPECT_EQ(out.owners, in.owners);
      continue;
    }
    // Absent owners keep theirs; nothing stays unowned or on a draining member; all else goes to eligible.
    for (uint32_t p = 0; p < partitions; ++p) {
      const std::string& was = in.owners[p];
      if (!was.empty() && !in.live.contains(was)) {
        EXPECT_EQ(out.owners[p], was);
      } else {
        EXPECT_TRUE(eligible.contains(out.owners[p])) << "partition " << p << " -> '" << out.owners[p] << "'";
      }
    }
    // Balanced among eligible members.
    std::map<std::string, int> after;
    for (const std::string& m : eligible) after[m] = 0;
    std::map<std::string, int> before = after;
    for (uint32_t p = 0; p < partitions; ++p) {
      if (after.contains(out.owners[p])) ++after[out.owners[p]];
      if (before.contains(in.owners[p])) ++before[in.owners[p]];
    }
    int lo = partitions, hi = 0;
    for (const auto& [m, n] : after) lo = std::min(lo, n), hi = std::max(hi, n);
    EXPECT_LE(hi - lo, 1);
    // Minimal, by an independent oracle: over every choice of which eligible members get the larger
    // quota, the fewest moves any balanced result needs: the forced ones (unowned, draining) plus what each
    // member holds above its quota.
    size_t forced = 0;
    uint32_t absent = 0;
    for (uint32_t p = 0; p < partitions; ++p) {
      const std::string& o = in.owners[p];
      if (o.empty() || in.draining.contains(o)) ++forced;
      else if (!in.live.contains(o)) ++absent;
    }
    const std::vector<std::string> members(eligible.begin(), eligible.end());
    const uint32_t share = partitions - absent;
    const int base = share / members.size();
    const uint32_t extra = share % members.size();
    size_t fewest = SIZE_MAX;
    for (uint32_t mask = 0; mask < (1u << members.size()); ++mask) {
      if (static_cast<uint32_t>(__builtin_popcount(mask)) != extra) continue;
      size_t moves = forced;
      for (size_t i = 0; i < members.size(); ++i) {
        moves += std::max(0, before[members[i]] - (base + ((mask >> i) & 1 ? 1 : 0)));
      }
      fewest = std::min(fewest, moves);
    }
    EXPECT_EQ(out.moves.size(), fewest);
    for (const Move& mv : out.moves) {
      EXPECT_FALSE(after.contains(mv.from) && after[mv.from] > before[mv.from]) << mv.from << " gave and received";
    }
  }
}

}  // namespace
}  // namespace lawn
