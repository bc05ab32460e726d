// The staging area of a cluster member's store (the `incoming` column family, storage/FORMAT.md): expirations
// another member handed over, kept apart from the outbox (recovery does not deliver them) until the partition
// is this member's; and the refusal to turn a single lawnd's store into a member's.
#include <memory>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "storage/rocksdb_timer_store.h"
#include "storage/store_batch.h"
#include "tests/storage/storage_test_util.h"

namespace lawn {
namespace {

using storage_test::TempDir;

absl::StatusOr<std::unique_ptr<RocksDbTimerStore>> Open(const std::string& path, bool staging) {
  RocksDbStoreOptions options;
  options.path = path;
  options.min_free_disk_bytes = 0;
  options.staging = staging;
  return RocksDbTimerStore::Open(options);
}

struct Staged {
  uint64_t id;
  std::string key;
  int64_t fired_at;
  uint32_t attempt;
  bool operator==(const Staged& o) const {
    return id == o.id && key == o.key && fired_at == o.fired_at && attempt == o.attempt;
  }
};

std::vector<Staged> StagedIn(TimerStore& store) {
  std::vector<Staged> out;
  EXPECT_TRUE(store.ForEachIncoming([&](const StoredExpiration& e) {
    out.push_back({e.delivery_id, std::string(e.timer.key), e.fired_at_unix_ns, e.attempt});
  }).ok());
  return out;
}

TEST(StagingAreaTest, StagedExpirationsSurviveARestartApartFromTheOutboxUntilDeleted) {
  TempDir dir;
  const std::string path = dir.Sub("data");
  {
    auto store = Open(path, true);
    ASSERT_TRUE(store.ok()) << store.status();
    StoreBatch batch;
    batch.PutIncoming(7, std::string("ns\0a", 4), 100, 5, 0, "pa", 150, 2);
    batch.PutIncoming(3, std::string("ns\0b", 4), 200, 5, 0, "", 250, 0);
    batch.PutTimer(std::string("ns\0c", 4), 300, 5, 0, "pc");
    ASSERT_TRUE((*store)->Write(batch, SyncMode::kSync).ok());
  }
  // Reopened (also as a single lawnd would: a store that has a staging area opens either way).
  auto store = Open(path, false);
  ASSERT_TRUE(store.ok()) << store.status();
  EXPECT_EQ(StagedIn(**store), (std::vector<Staged>{{3, std::string("ns\0b", 4), 250, 0},
                                                    {7, std::string("ns\0a", 4), 150, 2}}));
  int outbox = 0, timers = 0;
  ASSERT_TRUE((*store)->Recover([&](const StoredTimer&) { ++timers; }, [&](const StoredExpiration&) { ++outbox; }).ok());
  EXPECT_EQ(timers, 1);
  EXPECT_EQ(outbox, 0) << "staged expirations are not the outbox's";
  StoreBatch adopt;
  adopt.DeleteIncoming(3);
  adopt.PutExpiration(99, std::string("ns\0b", 4), 200, 5, 0, "", 250, 0);
  EXPECT_TRUE(adopt.needs_sync());
  ASSERT_TRUE((*store)->Write(adopt, SyncMode::kSync).ok());
  EXPECT_EQ(StagedIn(**store), (std::vector<Staged>{{7, std::string("ns\0a", 4), 150, 2}}));
}

TEST(StagingAreaTest, AStoreWithoutOneRefusesStagedWritesAndHasNone) {
  TempDir dir;
  auto store = Open(dir.Sub("data"), false);
  ASSERT_TRUE(store.ok()) << store.status();
  EXPECT_TRUE(StagedIn(**store).empty());
  StoreBatch batch;
  batch.PutIncoming(1, std::string("ns\0a", 4), 100, 5, 0, "", 150, 0);
  const absl::Status s = (*store)->Write(batch, SyncMode::kSync);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("no staging area"), std::string::npos) << s;
}

TEST(StagingAreaTest, ASingleLawndsStoreWithTimersIsRefusedAsAMembersUntouched) {
  TempDir dir;
  const std::string path = dir.Sub("data");
  {
    auto store = Open(path, false);
    ASSERT_TRUE(store.ok()) << store.status();
    StoreBatch batch;
    batch.PutTimer(std::string("ns\0a", 4), 100, 5, 0, "");
    ASSERT_TRUE((*store)->Write(batch, SyncMode::kSync).ok());
  }
  for (int attempt = 0; attempt < 2; ++attempt) {  // Refused every time, not only the first.
    auto member = Open(path, true);
    ASSERT_EQ(member.status().code(), absl::StatusCode::kFailedPrecondition) << member.status();
    EXPECT_NE(member.status().message().find("ran alone"), std::string::npos) << member.status();
  }
  auto alone = Open(path, false);
  ASSERT_TRUE(alone.ok()) << alone.status();
  int timers = 0;
  ASSERT_TRUE((*alone)->Recover([&](const StoredTimer&) { ++timers; }, [](const StoredExpiration&) {}).ok());
  EXPECT_EQ(timers, 1);
  // An empty store becomes a member's.
  TempDir empty_dir;
  ASSERT_TRUE(Open(empty_dir.Sub("data"), false).ok());
  EXPECT_TRUE(Open(empty_dir.Sub("data"), true).ok());
}

}  // namespace
}  // namespace lawn
