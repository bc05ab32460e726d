// The partition function is part of the cluster's contract (clients route with it): pinned test vectors,
// computed independently from the definition in cluster/partition.h.
#include "cluster/partition.h"

#include <map>
#include <string>

#include "gtest/gtest.h"

namespace lawn {
namespace {

TEST(PartitionTest, HashMatchesPinnedVectors) {
  EXPECT_EQ(PartitionHash("billing", "invoice-42"), 0x76aafef16b3e201cULL);
  EXPECT_EQ(PartitionOf("billing", "invoice-42", 1024), 28u);
  EXPECT_EQ(PartitionHash("ab", "c"), 0xfd61c083ef200867ULL);
  EXPECT_EQ(PartitionHash("a", "bc"), 0xab40f6820d40b523ULL);
}

TEST(PartitionTest, EmptyNamespaceIsDefault) {
  EXPECT_EQ(PartitionHash("", "x"), PartitionHash("default", "x"));
  EXPECT_EQ(PartitionOf("", "x", 1024), 518u);
}

TEST(PartitionTest, IdsSpreadEvenlyOverPartitions) {
  constexpr uint32_t kPartitions = 64;
  constexpr int kIds = 64'000;
  std::map<uint32_t, int> counts;
  for (int i = 0; i < kIds; ++i) ++counts[PartitionOf("orders", "order-" + std::to_string(i), kPartitions)];
  ASSERT_EQ(counts.size(), kPartitions);
  for (const auto& [partition, n] : counts) {
    EXPECT_GT(n, kIds / kPartitions * 8 / 10) << "partition " << partition;
    EXPECT_LT(n, kIds / kPartitions * 12 / 10) << "partition " << partition;
  }
}

TEST(PartitionTest, KeysFollowTheDocumentedLayout) {
  EXPECT_EQ(MemberKey("lawn", "lawn-0"), "/lawn/members/lawn-0");
  EXPECT_EQ(MembersPrefix("lawn"), "/lawn/members/");
  EXPECT_EQ(OwnerKey("lawn", 17), "/lawn/owners/17");
  EXPECT_EQ(OwnersPrefix("lawn"), "/lawn/owners/");
}

}  // namespace
}  // namespace lawn
