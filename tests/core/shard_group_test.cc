// Shard's id groups (see "Groups" in core/shard.h): a group's bytes are kept once per shard and each record
// holds a 16-bit code, so a long group costs a short id nothing; codes are freed with a group's last timer
// and reused; the table is bounded.
#include <string>
#include <vector>

#include "core/shard.h"
#include "gtest/gtest.h"
#include "tests/core/shard_test_util.h"

namespace lawn {
namespace {

using test::kSec;
using test::TtlSpec;

ShardOptions Grouping() {
  ShardOptions options;
  options.id_groups = true;
  options.ordered_index = true;  // As lawnd runs it.
  return options;
}

std::string Grouped(std::string_view group, std::string_view id) {
  std::string key(group);
  key.push_back('\0');
  key.append(id);
  return key;
}

// 16 bytes, as lawn_load's ids.
std::string Id16(int i) {
  std::string id = "id-" + std::to_string(i);
  id.resize(16, '.');
  return id;
}

TEST(ShardGroupTest, ViewsSplitTheIdAtItsGroup) {
  Shard shard(Grouping());
  const std::string key = Grouped("orders", "o-1");
  ASSERT_TRUE(shard.Start(TtlSpec(key, kSec, "pay"), 0).ok());
  ASSERT_TRUE(shard.Start(TtlSpec("plain", kSec), 0).ok());
  const std::optional<TimerView> v = shard.Get(key);
  ASSERT_TRUE(v.has_value());
  EXPECT_EQ(v->group, std::string_view("orders\0", 7));
  EXPECT_EQ(v->id, "o-1");
  EXPECT_EQ(v->payload, "pay");
  EXPECT_EQ(v->Key(), key);
  EXPECT_EQ(v->key_size(), key.size());
  const std::optional<TimerView> p = shard.Get("plain");
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->group, "");
  EXPECT_EQ(p->id, "plain");
  // The same id in another group, and the bare id, are other timers.
  EXPECT_FALSE(shard.Get(Grouped("other", "o-1")).has_value());
  EXPECT_FALSE(shard.Get("o-1").has_value());
  EXPECT_EQ(shard.Delete(Grouped("other", "o-1")).code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(shard.groups(), 2u);  // "orders", and the ids without a group.
  const std::vector<Timer> fired = shard.AdvanceCollect(2 * kSec);
  ASSERT_EQ(fired.size(), 2u);
  EXPECT_TRUE(fired[0].id == key || fired[1].id == key);  // Timer copies hold the whole id.
  EXPECT_EQ(shard.groups(), 0u);
  shard.CheckInvariants();
}

TEST(ShardGroupTest, ALongGroupCostsAShortIdNothing) {
  // The same 16-byte ids with and without a 40-byte group: the records hold them inline either way, so the
  // shards differ only by the one group's table entry.
  Shard plain(Grouping());
  Shard grouped(Grouping());
  const std::string group(40, 'n');
  for (int i = 0; i < 10'000; ++i) {
    ASSERT_TRUE(plain.Start(TtlSpec(Id16(i), kSec), 0).ok());
    ASSERT_TRUE(grouped.Start(TtlSpec(Grouped(group, Id16(i)), kSec), 0).ok());
  }
  EXPECT_LT(grouped.MemoryBytes() - plain.MemoryBytes(), 1'000u);
  grouped.CheckInvariants();
}

TEST(ShardGroupTest, ALastTimerFreesItsGroupsCodeForAnotherGroup) {
  Shard shard(Grouping());
  for (const char* g : {"a", "b", "c"}) {
    for (int i = 0; i < 3; ++i) ASSERT_TRUE(shard.Start(TtlSpec(Grouped(g, Id16(i)), kSec), 0).ok());
  }
  EXPECT_EQ(shard.groups(), 3u);
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(shard.Delete(Grouped("b", Id16(i))).ok());
  EXPECT_EQ(shard.groups(), 2u);
  shard.CheckInvariants();
  ASSERT_TRUE(shard.Start(TtlSpec(Grouped("d", Id16(0)), kSec), 0).ok());
  EXPECT_EQ(shard.groups(), 3u);
  // b's ids are gone, d has only its own, a and c are untouched.
  EXPECT_FALSE(shard.Get(Grouped("b", Id16(0))).has_value());
  EXPECT_FALSE(shard.Get(Grouped("d", Id16(1))).has_value());
  ASSERT_TRUE(shard.Get(Grouped("d", Id16(0))).has_value());
  EXPECT_EQ(shard.Get(Grouped("d", Id16(0)))->group, std::string_view("d\0", 2));
  EXPECT_EQ(shard.Get(Grouped("a", Id16(2)))->group, std::string_view("a\0", 2));
  EXPECT_EQ(shard.Get(Grouped("c", Id16(1)))->group, std::string_view("c\0", 2));
  shard.CheckInvariants();
}

TEST(ShardGroupTest, TheGroupTableIsBoundedAndRefusesClearly) {
  // 65,536 groups: as many as lawnd's max_namespaces allows, all in one shard.
  Shard shard(Grouping());
  for (int g = 0; g < 65'536; ++g) {
    ASSERT_TRUE(shard.Start(TtlSpec(Grouped("g" + std::to_string(g), "x"), kSec), 0).ok()) << g;
  }
  EXPECT_EQ(shard.groups(), 65'536u);
  const absl::Status full = shard.Start(TtlSpec(Grouped("one-more", "x"), kSec), 0);
  EXPECT_EQ(full.code(), absl::StatusCode::kResourceExhausted) << full;
  EXPECT_NE(full.message().find("65536"), std::string_view::npos) << full;
  // Ids without a group are a group as well.
  EXPECT_EQ(shard.Start(TtlSpec("no-group", kSec), 0).code(), absl::StatusCode::kResourceExhausted);
  // Groups that exist still take timers, and freeing one makes room.
  EXPECT_TRUE(shard.Start(TtlSpec(Grouped("g7", "y"), kSec), 0).ok());
  ASSERT_TRUE(shard.Delete(Grouped("g9", "x")).ok());
  EXPECT_TRUE(shard.Start(TtlSpec("no-group", kSec), 0).ok());
  ASSERT_TRUE(shard.Delete(Grouped("g10", "x")).ok());
  EXPECT_TRUE(shard.Start(TtlSpec(Grouped("one-more", "x"), kSec), 0).ok());
  EXPECT_EQ(shard.pending(), 65'537u);
  shard.CheckInvariants();
}

TEST(ShardGroupTest, IdBytesAfterTheGroupAreBoundedNotTheGroup) {
  Shard shard(Grouping());
  const std::string too_long = Grouped("g", std::string(65'536, 'i'));
  const absl::Status status = shard.Start(TtlSpec(too_long, kSec), 0);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << status;
  EXPECT_EQ(shard.groups(), 0u);  // A refused start leaves no group behind.
  EXPECT_TRUE(shard.Start(TtlSpec(Grouped(std::string(100'000, 'g'), std::string(65'535, 'i')), kSec), 0).ok());
  EXPECT_TRUE(shard.Start(TtlSpec(std::string(65'535, 'j'), kSec), 0).ok());
  EXPECT_EQ(shard.Start(TtlSpec(std::string(65'536, 'j'), kSec), 0).code(), absl::StatusCode::kInvalidArgument);
  shard.CheckInvariants();
}

TEST(ShardGroupTest, WithoutIdGroupsAZeroByteIsJustAByte) {
  Shard shard;  // id_groups off.
  for (int i = 0; i < 70'000; ++i) {  // More distinct "groups" than the table could hold.
    ASSERT_TRUE(shard.Start(TtlSpec(Grouped("g" + std::to_string(i), "x"), kSec), 0).ok()) << i;
  }
  const std::optional<TimerView> v = shard.Get(Grouped("g5", "x"));
  ASSERT_TRUE(v.has_value());
  EXPECT_EQ(v->group, "");
  EXPECT_EQ(v->id, Grouped("g5", "x"));
  EXPECT_EQ(shard.groups(), 1u);
  EXPECT_EQ(shard.Start(TtlSpec(std::string(65'536, 'j'), kSec), 0).code(), absl::StatusCode::kInvalidArgument);
  shard.CheckInvariants();
}

TEST(ShardGroupTest, AnEmptyIdAfterItsGroupAndAGroupOfOnlyTheZeroByte) {
  Shard shard(Grouping());
  const std::string only_group = Grouped("ns", "");
  const std::string zero_first = std::string(1, '\0') + "x";
  ASSERT_TRUE(shard.Start(TtlSpec(only_group, kSec), 0).ok());
  ASSERT_TRUE(shard.Start(TtlSpec(zero_first, kSec), 0).ok());
  EXPECT_EQ(shard.Get(only_group)->id, "");
  EXPECT_EQ(shard.Get(zero_first)->group, std::string_view("\0", 1));
  EXPECT_EQ(shard.groups(), 2u);
  shard.CheckInvariants();
}

}  // namespace
}  // namespace lawn
