// Storage format 2 -> 3 in place (storage/store_migration.h), with real RocksDB and log stores in temp dirs:
// every record and the boot epoch carried over, the old store kept as an openable backup, a crash at every
// step of the switch finished by ResumeStoreMigration, an interrupted build discarded, and refusals that
// leave the old store as it was.
#include "storage/store_migration.h"

#include <filesystem>
#include <fstream>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "storage/log_timer_store.h"
#include "storage/rocksdb_timer_store.h"
#include "storage/store_batch.h"
#include "tests/storage/storage_test_util.h"

namespace lawn {
namespace {

namespace fs = std::filesystem;
using storage_test::Contents;
using storage_test::ExpirationCopy;
using storage_test::Incoming;
using storage_test::Key;
using storage_test::StoreContents;
using storage_test::TempDir;

// What the old store held, to compare the new one (and the backup) with.
struct Held {
  StoreContents contents;
  std::vector<ExpirationCopy> staged;
};

std::unique_ptr<RocksDbTimerStore> OpenRocksDb(const std::string& path) {
  RocksDbStoreOptions options;
  options.path = path;
  options.staging = true;
  options.min_free_disk_bytes = 0;
  absl::StatusOr<std::unique_ptr<RocksDbTimerStore>> store = RocksDbTimerStore::Open(options);
  EXPECT_TRUE(store.ok()) << store.status();
  return store.ok() ? std::move(*store) : nullptr;
}

std::unique_ptr<LogTimerStore> OpenLog(const std::string& path) {
  LogStoreOptions options;
  options.path = path;
  options.min_free_disk_bytes = 0;
  absl::StatusOr<std::unique_ptr<LogTimerStore>> store = LogTimerStore::Open(options);
  EXPECT_TRUE(store.ok()) << store.status();
  return store.ok() ? std::move(*store) : nullptr;
}

// A RocksDB store of a cluster member in `path` with `timers` timers (every third repeating, every fifth with
// a payload too long to be inline anywhere), outbox and staged entries, a checkpoint beside it, and its boot
// epoch at 3. Returns what it holds.
Held MakeRocksDbStore(const std::string& path, int timers) {
  auto store = OpenRocksDb(path);
  StoreBatch batch;
  for (int i = 0; i < timers; ++i) {
    const std::string payload = i % 5 == 0 ? std::string(700, static_cast<char>('a' + i % 26)) : "p";
    batch.PutTimer(Key(i % 2 ? "one" : "two", "timer-" + std::to_string(i)),
                   1'800'000'000'000'000'000 + i * 1000, 60'000'000'000, i % 3 == 0 ? 60'000'000'000 : 0,
                   payload);
    if (batch.count() == 500) {
      EXPECT_TRUE(store->Write(batch, SyncMode::kNoSync).ok());
      batch.Clear();
    }
  }
  for (uint64_t id = 1; id <= 20; ++id) {
    batch.PutExpiration(id << 32, Key("one", "fired-" + std::to_string(id)), 1'700'000'000'000'000'000, 5, 0,
                        "fired payload", 1'700'000'000'100'000'000, static_cast<uint32_t>(id % 3));
  }
  for (uint64_t id = 1; id <= 7; ++id) {
    batch.PutIncoming(id, Key("two", "staged-" + std::to_string(id)), 1'700'000'000'000'000'000, 0, 0, "s",
                      1'700'000'000'200'000'000, 1);
  }
  EXPECT_TRUE(store->Write(batch, SyncMode::kSync).ok());
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(store->NextBootEpoch().ok());
  fs::create_directories(path + "/checkpoints");
  const absl::Status checkpoint = store->Checkpoint(path + "/checkpoints/before");
  EXPECT_TRUE(checkpoint.ok()) << checkpoint;
  return {Contents(*store), Incoming(*store)};
}

StoreMigrationOptions MigrationOptionsFor(const std::string& path) {
  StoreMigrationOptions options;
  options.path = path;
  options.staging = true;
  options.min_free_disk_bytes = 0;
  return options;
}

// The data dir holds the log store with exactly `want` and the next boot epoch 5, the old store is an
// openable RocksDB backup of the same, and nothing of the migration is left.
void ExpectMigrated(const std::string& path, const Held& want) {
  EXPECT_EQ(InspectDataDir(path).value(), DataDirStore::kLog);
  EXPECT_FALSE(fs::exists(path + "/" + kMigratingDir));
  for (const fs::directory_entry& e : fs::directory_iterator(path)) {
    const std::string name = e.path().filename().string();
    EXPECT_TRUE(name.find(".sst") == std::string::npos && name.rfind("MANIFEST-", 0) != 0 && name != "LOCK" &&
                name != "IDENTITY")
        << "a RocksDB file left in the data dir: " << name;
  }
  EXPECT_TRUE(fs::exists(path + "/checkpoints/before/CURRENT")) << "the checkpoints stay where they were";
  {
    auto log = OpenLog(path);
    ASSERT_NE(log, nullptr);
    EXPECT_EQ(Contents(*log), want.contents);
    EXPECT_EQ(Incoming(*log), want.staged);
    EXPECT_EQ(log->NextBootEpoch().value(), 5u) << "delivery ids stay unique: epoch 4 went to the migration";
  }
  auto backup = OpenRocksDb(path + "/" + kFormat2BackupDir);
  ASSERT_NE(backup, nullptr);
  EXPECT_EQ(Contents(*backup), want.contents);
  EXPECT_EQ(Incoming(*backup), want.staged);
}

TEST(StoreMigrationTest, CarriesEveryRecordAndTheBootEpochAndKeepsTheOldStoreAsABackup) {
  TempDir dir;
  const std::string path = dir.Sub("data");
  // 6000 timers, a fifth of them with 700-byte payloads: about 1 MiB per write of the new store, so it takes
  // several.
  const Held held = MakeRocksDbStore(path, 6000);
  ASSERT_EQ(held.contents.timers.size(), 6000u);
  absl::StatusOr<StoreMigrationResult> migrated = MigrateToLogStore(MigrationOptionsFor(path));
  ASSERT_TRUE(migrated.ok()) << migrated.status();
  EXPECT_EQ(migrated->timers, 6000u);
  EXPECT_EQ(migrated->expirations, 20u);
  EXPECT_EQ(migrated->staged, 7u);
  EXPECT_EQ(migrated->boot_epoch, 4u);  // The old store's NextBootEpoch, taken by the migration.
  ExpectMigrated(path, held);
  // Nothing left to resume, and the migrated store is a working one.
  EXPECT_FALSE(ResumeStoreMigration(path).value());
  auto log = OpenLog(path);
  StoreBatch more;
  more.PutTimer(Key("one", "after"), 1, 0, 0, "");
  EXPECT_TRUE(log->Write(more, SyncMode::kSync).ok());
}

TEST(StoreMigrationTest, ACrashAtAnyStepOfTheSwitchIsFinishedByResume) {
  int steps = 0;
  for (int stop_at = 0;; ++stop_at) {
    SCOPED_TRACE("stopped before step " + std::to_string(stop_at));
    TempDir dir;
    const std::string path = dir.Sub("data");
    const Held held = MakeRocksDbStore(path, 50);
    StoreMigrationOptions options = MigrationOptionsFor(path);
    options.continue_at = [&](int step) { return step < stop_at; };
    absl::StatusOr<StoreMigrationResult> migrated = MigrateToLogStore(options);
    if (migrated.ok()) {  // Past the last step.
      steps = stop_at;
      EXPECT_FALSE(ResumeStoreMigration(path).value());
      ExpectMigrated(path, held);
      break;
    }
    ASSERT_EQ(migrated.status().code(), absl::StatusCode::kAborted) << migrated.status();
    ASSERT_TRUE(fs::exists(path + "/" + kMigratingDir));
    // A second migration is refused until the first is resumed.
    EXPECT_EQ(MigrateToLogStore(MigrationOptionsFor(path)).status().code(),
              absl::StatusCode::kFailedPrecondition);
    absl::StatusOr<bool> resumed = ResumeStoreMigration(path);
    ASSERT_TRUE(resumed.ok()) << resumed.status();
    EXPECT_TRUE(*resumed);
    ExpectMigrated(path, held);
    ASSERT_LT(stop_at, 1000);
  }
  // Every RocksDB file and every file of the new store is a step of its own, then CURRENT and the clean-up.
  EXPECT_GT(steps, 8);
}

TEST(StoreMigrationTest, AnInterruptedBuildIsDiscardedAndTheOldStoreKept) {
  TempDir dir;
  const std::string path = dir.Sub("data");
  const Held held = MakeRocksDbStore(path, 100);
  // What a crash while building leaves: a partial new store, no SWITCH.
  {
    auto partial = OpenLog(path + "/" + kMigratingDir);
    StoreBatch b;
    b.PutTimer(Key("one", "half"), 1, 0, 0, "");
    ASSERT_TRUE(partial->Write(b, SyncMode::kSync).ok());
  }
  absl::StatusOr<bool> resumed = ResumeStoreMigration(path);
  ASSERT_TRUE(resumed.ok()) << resumed.status();
  EXPECT_FALSE(*resumed);
  EXPECT_FALSE(fs::exists(path + "/" + kMigratingDir));
  EXPECT_EQ(InspectDataDir(path).value(), DataDirStore::kRocksDb);
  {
    auto old_store = OpenRocksDb(path);
    ASSERT_NE(old_store, nullptr);
    EXPECT_EQ(Contents(*old_store), held.contents);
    // The dir's boot epoch went on from 3 while it was open here; the migration carries whatever it is.
  }
  absl::StatusOr<StoreMigrationResult> migrated = MigrateToLogStore(MigrationOptionsFor(path));
  ASSERT_TRUE(migrated.ok()) << migrated.status();
  EXPECT_EQ(migrated->timers, 100u);
  auto log = OpenLog(path);
  EXPECT_EQ(Contents(*log), held.contents);
}

TEST(StoreMigrationTest, RefusalsAndFailuresLeaveTheOldStoreAsItWas) {
  TempDir dir;
  const std::string path = dir.Sub("data");
  const Held held = MakeRocksDbStore(path, 100);

  // A backup of an earlier migration is never overwritten.
  fs::create_directories(path + "/" + kFormat2BackupDir);
  absl::StatusOr<StoreMigrationResult> refused = MigrateToLogStore(MigrationOptionsFor(path));
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kFailedPrecondition) << refused.status();
  EXPECT_NE(refused.status().message().find(kFormat2BackupDir), std::string::npos) << refused.status();
  fs::remove(path + "/" + kFormat2BackupDir);

  // No room for the new store (the free-space guard asks for more than any disk has): RESOURCE_EXHAUSTED, and
  // the half-built store removed.
  StoreMigrationOptions full = MigrationOptionsFor(path);
  full.min_free_disk_bytes = uint64_t{1} << 60;
  absl::StatusOr<StoreMigrationResult> no_room = MigrateToLogStore(full);
  EXPECT_EQ(no_room.status().code(), absl::StatusCode::kResourceExhausted) << no_room.status();
  EXPECT_FALSE(fs::exists(path + "/" + kMigratingDir));

  EXPECT_EQ(InspectDataDir(path).value(), DataDirStore::kRocksDb);
  auto old_store = OpenRocksDb(path);
  ASSERT_NE(old_store, nullptr);
  EXPECT_EQ(Contents(*old_store), held.contents);
  EXPECT_EQ(Incoming(*old_store), held.staged);
}

}  // namespace
}  // namespace lawn
