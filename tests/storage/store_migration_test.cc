// Storage formats 2 -> 3 and 3 -> 2 in place (storage/store_migration.h), with real RocksDB and log stores in
// temp dirs: every record and the boot epoch carried over, the old store kept as an openable backup, a crash
// at every step of the switch finished by ResumeStoreMigration, an interrupted build discarded, refusals that
// leave the old store as it was, and a round trip.
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

// Which way a test converts: the engine of the store it starts with, the other one's after.
enum class From { kRocksDb, kLog };

std::unique_ptr<TimerStore> OpenStore(From engine, const std::string& path) {
  if (engine == From::kLog) return OpenLog(path);
  return OpenRocksDb(path);
}

From Other(From engine) { return engine == From::kLog ? From::kRocksDb : From::kLog; }
const char* WayName(From from) { return from == From::kRocksDb ? "format 2 -> 3" : "format 3 -> 2"; }

const char* BuildingDir(From from) { return from == From::kRocksDb ? kMigratingDir : kMigratingBackDir; }
const char* BackupDir(From from) { return from == From::kRocksDb ? kFormat2BackupDir : kFormat3BackupDir; }
DataDirStore Holds(From engine) { return engine == From::kLog ? DataDirStore::kLog : DataDirStore::kRocksDb; }

absl::StatusOr<StoreMigrationResult> MigrateFrom(From from, const StoreMigrationOptions& options) {
  return from == From::kRocksDb ? MigrateToLogStore(options) : MigrateToRocksDbStore(options);
}

// A store of a cluster member in `path` with `timers` timers (every third repeating, every fifth with a
// payload too long to be inline anywhere), outbox and staged entries, a checkpoint beside it, and its boot
// epoch at 3. Returns what it holds.
Held MakeStore(From engine, const std::string& path, int timers) {
  auto store = OpenStore(engine, path);
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

// Whether `name`, an entry of a data dir, is a file of `engine`'s store.
bool IsStoreFile(From engine, const std::string& name) {
  if (engine == From::kRocksDb) {
    return name.find(".sst") != std::string::npos || name.rfind("MANIFEST-", 0) == 0 || name == "LOCK" ||
           name == "IDENTITY" || name.rfind("OPTIONS-", 0) == 0;
  }
  return name == "LAWN_FORMAT" || name == "MANIFEST" || name == "log" || name.rfind("snapshot-", 0) == 0;
}

// The data dir holds the other engine's store with exactly `want` and the next boot epoch `next_epoch`, the
// old store is an openable backup of the same, and nothing of the migration is left.
void ExpectMigrated(From from, const std::string& path, const Held& want, uint64_t next_epoch = 5) {
  const From to = Other(from);
  EXPECT_EQ(InspectDataDir(path).value(), Holds(to));
  EXPECT_FALSE(fs::exists(path + "/" + BuildingDir(from)));
  for (const fs::directory_entry& e : fs::directory_iterator(path)) {
    const std::string name = e.path().filename().string();
    EXPECT_FALSE(IsStoreFile(from, name)) << "a file of the old store left in the data dir: " << name;
  }
  EXPECT_TRUE(fs::exists(path + "/checkpoints/before/CURRENT")) << "the checkpoints stay where they were";
  {
    auto migrated = OpenStore(to, path);
    ASSERT_NE(migrated, nullptr);
    EXPECT_EQ(Contents(*migrated), want.contents);
    EXPECT_EQ(Incoming(*migrated), want.staged);
    EXPECT_EQ(migrated->NextBootEpoch().value(), next_epoch)
        << "delivery ids stay unique: the epoch before went to the migration";
  }
  auto backup = OpenStore(from, path + "/" + BackupDir(from));
  ASSERT_NE(backup, nullptr);
  EXPECT_EQ(Contents(*backup), want.contents);
  EXPECT_EQ(Incoming(*backup), want.staged);
}

TEST(StoreMigrationTest, CarriesEveryRecordAndTheBootEpochAndKeepsTheOldStoreAsABackup) {
  for (From from : {From::kRocksDb, From::kLog}) {
    SCOPED_TRACE(WayName(from));
    TempDir dir;
    const std::string path = dir.Sub("data");
    // 6000 timers, a fifth of them with 700-byte payloads: about 1 MiB per write of the new store, so it
    // takes several.
    const Held held = MakeStore(from, path, 6000);
    ASSERT_EQ(held.contents.timers.size(), 6000u);
    absl::StatusOr<StoreMigrationResult> migrated = MigrateFrom(from, MigrationOptionsFor(path));
    ASSERT_TRUE(migrated.ok()) << migrated.status();
    EXPECT_EQ(migrated->timers, 6000u);
    EXPECT_EQ(migrated->expirations, 20u);
    EXPECT_EQ(migrated->staged, 7u);
    EXPECT_EQ(migrated->boot_epoch, 4u);  // The old store's NextBootEpoch, taken by the migration.
    ExpectMigrated(from, path, held);
    // Nothing left to resume, and the migrated store is a working one.
    EXPECT_FALSE(ResumeStoreMigration(path).value());
    auto migrated_store = OpenStore(Other(from), path);
    StoreBatch more;
    more.PutTimer(Key("one", "after"), 1, 0, 0, "");
    EXPECT_TRUE(migrated_store->Write(more, SyncMode::kSync).ok());
  }
}

TEST(StoreMigrationTest, ARoundTripKeepsEveryRecordAndBothBackups) {
  TempDir dir;
  const std::string path = dir.Sub("data");
  const Held held = MakeStore(From::kRocksDb, path, 300);
  ASSERT_TRUE(MigrateToLogStore(MigrationOptionsFor(path)).ok());
  absl::StatusOr<StoreMigrationResult> back = MigrateToRocksDbStore(MigrationOptionsFor(path));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->boot_epoch, 5u);  // 4 went to the first migration.
  ExpectMigrated(From::kLog, path, held, /*next_epoch=*/6);
  // The first migration's backup stayed where it was, beside the second's (not moved into it).
  auto first_backup = OpenRocksDb(path + "/" + kFormat2BackupDir);
  ASSERT_NE(first_backup, nullptr);
  EXPECT_EQ(Contents(*first_backup), held.contents);
  EXPECT_FALSE(fs::exists(path + "/" + kFormat3BackupDir + "/" + kFormat2BackupDir));
  // A third migration would need format2-backup's name: refused until it is moved away.
  EXPECT_EQ(MigrateToLogStore(MigrationOptionsFor(path)).status().code(),
            absl::StatusCode::kFailedPrecondition);
}

// A format 3 store with a cluster member's staged entries goes back to format 2 only as a member's store
// (StoreMigrationOptions::staging, lawnd's cluster mode): a single lawnd's RocksDB store gets no staging
// area, so the migration stops before the switch, naming why, and the old store stays in force.
TEST(StoreMigrationTest, StagedEntriesGoBackToFormat2OnlyAsAClusterMembersStore) {
  TempDir dir;
  const std::string path = dir.Sub("data");
  const Held held = MakeStore(From::kLog, path, 20);
  StoreMigrationOptions single = MigrationOptionsFor(path);
  single.staging = false;
  const absl::Status refused = MigrateToRocksDbStore(single).status();
  EXPECT_FALSE(refused.ok());
  EXPECT_NE(refused.message().find("no staging area"), std::string::npos) << refused;
  EXPECT_FALSE(fs::exists(path + "/" + kMigratingBackDir));
  EXPECT_EQ(InspectDataDir(path).value(), DataDirStore::kLog);
  {
    auto old_store = OpenLog(path);
    ASSERT_NE(old_store, nullptr);
    EXPECT_EQ(Contents(*old_store), held.contents);
    EXPECT_EQ(Incoming(*old_store), held.staged);
  }
  ASSERT_TRUE(MigrateToRocksDbStore(MigrationOptionsFor(path)).ok());
  auto migrated = OpenRocksDb(path);
  EXPECT_EQ(Incoming(*migrated), held.staged);
}

TEST(StoreMigrationTest, ACrashAtAnyStepOfTheSwitchIsFinishedByResume) {
  for (From from : {From::kRocksDb, From::kLog}) {
    SCOPED_TRACE(WayName(from));
    int steps = 0;
    for (int stop_at = 0;; ++stop_at) {
      SCOPED_TRACE("stopped before step " + std::to_string(stop_at));
      TempDir dir;
      const std::string path = dir.Sub("data");
      const Held held = MakeStore(from, path, 50);
      StoreMigrationOptions options = MigrationOptionsFor(path);
      options.continue_at = [&](int step) { return step < stop_at; };
      absl::StatusOr<StoreMigrationResult> migrated = MigrateFrom(from, options);
      if (migrated.ok()) {  // Past the last step.
        steps = stop_at;
        EXPECT_FALSE(ResumeStoreMigration(path).value());
        ExpectMigrated(from, path, held);
        break;
      }
      ASSERT_EQ(migrated.status().code(), absl::StatusCode::kAborted) << migrated.status();
      ASSERT_TRUE(fs::exists(path + "/" + BuildingDir(from)));
      // A second migration, either way, is refused until the first is resumed.
      EXPECT_EQ(MigrateToLogStore(MigrationOptionsFor(path)).status().code(),
                absl::StatusCode::kFailedPrecondition);
      EXPECT_EQ(MigrateToRocksDbStore(MigrationOptionsFor(path)).status().code(),
                absl::StatusCode::kFailedPrecondition);
      absl::StatusOr<bool> resumed = ResumeStoreMigration(path);
      ASSERT_TRUE(resumed.ok()) << resumed.status();
      EXPECT_TRUE(*resumed);
      ExpectMigrated(from, path, held);
      ASSERT_LT(stop_at, 1000);
    }
    // Every file of the old store and every file of the new store is a step of its own, then CURRENT and the
    // clean-up.
    EXPECT_GT(steps, 5);
  }
}

TEST(StoreMigrationTest, AnInterruptedBuildIsDiscardedAndTheOldStoreKept) {
  for (From from : {From::kRocksDb, From::kLog}) {
    SCOPED_TRACE(WayName(from));
    TempDir dir;
    const std::string path = dir.Sub("data");
    const Held held = MakeStore(from, path, 100);
    // What a crash while building leaves: a partial new store, no SWITCH.
    {
      auto partial = OpenStore(Other(from), path + "/" + BuildingDir(from));
      StoreBatch b;
      b.PutTimer(Key("one", "half"), 1, 0, 0, "");
      ASSERT_TRUE(partial->Write(b, SyncMode::kSync).ok());
    }
    absl::StatusOr<bool> resumed = ResumeStoreMigration(path);
    ASSERT_TRUE(resumed.ok()) << resumed.status();
    EXPECT_FALSE(*resumed);
    EXPECT_FALSE(fs::exists(path + "/" + BuildingDir(from)));
    EXPECT_EQ(InspectDataDir(path).value(), Holds(from));
    {
      auto old_store = OpenStore(from, path);
      ASSERT_NE(old_store, nullptr);
      EXPECT_EQ(Contents(*old_store), held.contents);
      // The dir's boot epoch went on from 3 while it was open here; the migration carries whatever it is.
    }
    absl::StatusOr<StoreMigrationResult> migrated = MigrateFrom(from, MigrationOptionsFor(path));
    ASSERT_TRUE(migrated.ok()) << migrated.status();
    EXPECT_EQ(migrated->timers, 100u);
    auto migrated_store = OpenStore(Other(from), path);
    EXPECT_EQ(Contents(*migrated_store), held.contents);
  }
}

TEST(StoreMigrationTest, RefusalsAndFailuresLeaveTheOldStoreAsItWas) {
  for (From from : {From::kRocksDb, From::kLog}) {
    SCOPED_TRACE(WayName(from));
    TempDir dir;
    const std::string path = dir.Sub("data");
    const Held held = MakeStore(from, path, 100);

    // A backup of an earlier migration is never overwritten.
    fs::create_directories(path + "/" + BackupDir(from));
    absl::StatusOr<StoreMigrationResult> refused = MigrateFrom(from, MigrationOptionsFor(path));
    EXPECT_EQ(refused.status().code(), absl::StatusCode::kFailedPrecondition) << refused.status();
    EXPECT_NE(refused.status().message().find(BackupDir(from)), std::string::npos) << refused.status();
    fs::remove(path + "/" + BackupDir(from));

    // No room for the new store (the free-space guard asks for more than any disk has): RESOURCE_EXHAUSTED,
    // and the half-built store removed.
    StoreMigrationOptions full = MigrationOptionsFor(path);
    full.min_free_disk_bytes = uint64_t{1} << 60;
    absl::StatusOr<StoreMigrationResult> no_room = MigrateFrom(from, full);
    EXPECT_EQ(no_room.status().code(), absl::StatusCode::kResourceExhausted) << no_room.status();
    EXPECT_FALSE(fs::exists(path + "/" + BuildingDir(from)));

    EXPECT_EQ(InspectDataDir(path).value(), Holds(from));
    auto old_store = OpenStore(from, path);
    ASSERT_NE(old_store, nullptr);
    EXPECT_EQ(Contents(*old_store), held.contents);
    EXPECT_EQ(Incoming(*old_store), held.staged);
  }
}

}  // namespace
}  // namespace lawn
