#include "storage/store_migration.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "base/status_macros.h"
#include "storage/dir_lock.h"
#include "storage/log_timer_store.h"
#include "storage/posix_file.h"
#include "storage/rocksdb_timer_store.h"
#include "storage/store_batch.h"
#include "storage/timer_store.h"

namespace lawn {
namespace {

namespace fs = std::filesystem;

constexpr char kSwitchFile[] = "SWITCH";

enum class Engine { kRocksDb, kLog };

// One way of converting a data dir: which engine's store becomes which, and the names of its files.
struct Direction {
  Engine from;
  Engine to;
  const char* building;  // The new store's dir while it is built.
  const char* backup;    // The old store's dir after the switch.
  const char* header;    // SWITCH's first line.
  const char* what;      // For messages.
};

constexpr Direction kToLog{Engine::kRocksDb,
                           Engine::kLog,
                           kMigratingDir,
                           kFormat2BackupDir,
                           "lawn storage migration 2 -> 3",
                           "migration to storage format 3"};
constexpr Direction kToRocksDb{Engine::kLog,
                               Engine::kRocksDb,
                               kMigratingBackDir,
                               kFormat3BackupDir,
                               "lawn storage migration 3 -> 2",
                               "migration to storage format 2"};
constexpr const Direction* kDirections[] = {&kToLog, &kToRocksDb};

// Entries of a data dir that belong to no store (or to a migration): the switch moves none of them.
bool KeptInPlace(const std::string& name) {
  for (const Direction* d : kDirections) {
    if (name == d->building || name == d->backup) return true;
  }
  return name == "CURRENT" || name == TimerStore::kCheckpointsDir || name == kDirLockFile ||
         name == "lost+found";
}
// Each write of the new store is one record of its log; a MiB keeps the records few and the batch's buffer
// small.
constexpr size_t kBatchBytes = size_t{1} << 20;

// What a store holds, counted and hashed (order-independent: a sum), to check the new store against the old.
struct Tally {
  uint64_t timers = 0;
  uint64_t expirations = 0;
  uint64_t staged = 0;
  uint64_t hash = 0;

  void Timer(const StoredTimer& t) {
    ++timers;
    hash += HashTimer(t) * 3;
  }
  void Expiration(const StoredExpiration& e, bool is_staged) {
    ++(is_staged ? staged : expirations);
    hash += (HashTimer(e.timer) ^ std::hash<uint64_t>()(e.delivery_id) ^
             std::hash<int64_t>()(e.fired_at_unix_ns) ^ std::hash<uint64_t>()(e.attempt)) *
            (is_staged ? 7 : 5);
  }
  static uint64_t HashTimer(const StoredTimer& t) {
    const std::hash<uint64_t> h;
    return std::hash<std::string_view>()(t.key) ^ (h(static_cast<uint64_t>(t.deadline_unix_ns)) * 31) ^
           (h(t.ttl_ns) * 37) ^ (h(t.interval_ns) * 41) ^ (std::hash<std::string_view>()(t.payload) * 43);
  }
  bool operator==(const Tally&) const = default;
};

absl::Status RenameError(const Direction& d, const fs::path& from, const fs::path& to,
                         const std::error_code& ec) {
  return absl::UnavailableError(
      absl::StrCat(d.what, ": rename ", from.string(), " to ", to.string(), ": ", ec.message()));
}

// Copies everything `from` recovers into `to`, tallying it.
absl::Status CopyStore(TimerStore& from, TimerStore& to, Tally* tally) {
  StoreBatch batch;
  absl::Status written;
  auto flush = [&](bool last) {
    if (!written.ok() || batch.empty() || (!last && batch.ByteSize() < kBatchBytes)) return;
    written = to.Write(batch, SyncMode::kNoSync);
    batch.Clear();
  };
  LAWN_RETURN_IF_ERROR(from.Recover(
      [&](const StoredTimer& t) {
        tally->Timer(t);
        batch.PutTimer(t.key, t.deadline_unix_ns, t.ttl_ns, t.interval_ns, t.payload);
        flush(false);
      },
      [&](const StoredExpiration& e) {
        tally->Expiration(e, false);
        const StoredTimer& t = e.timer;
        batch.PutExpiration(e.delivery_id, t.key, t.deadline_unix_ns, t.ttl_ns, t.interval_ns, t.payload,
                            e.fired_at_unix_ns, e.attempt);
        flush(false);
      }));
  LAWN_RETURN_IF_ERROR(from.ForEachIncoming([&](const StoredExpiration& e) {
    tally->Expiration(e, true);
    const StoredTimer& t = e.timer;
    batch.PutIncoming(e.delivery_id, t.key, t.deadline_unix_ns, t.ttl_ns, t.interval_ns, t.payload,
                      e.fired_at_unix_ns, e.attempt);
    flush(false);
  }));
  flush(true);
  LAWN_RETURN_IF_ERROR(written);
  return to.Sync();
}

absl::StatusOr<Tally> TallyStore(TimerStore& store) {
  Tally tally;
  LAWN_RETURN_IF_ERROR(store.Recover([&](const StoredTimer& t) { tally.Timer(t); },
                                     [&](const StoredExpiration& e) { tally.Expiration(e, false); }));
  LAWN_RETURN_IF_ERROR(store.ForEachIncoming([&](const StoredExpiration& e) { tally.Expiration(e, true); }));
  return tally;
}

absl::StatusOr<std::unique_ptr<TimerStore>> OpenStore(Engine engine, const std::string& path,
                                                      const StoreMigrationOptions& options) {
  if (engine == Engine::kRocksDb) {
    RocksDbStoreOptions rocksdb;
    rocksdb.path = path;
    rocksdb.staging = options.staging;
    rocksdb.min_free_disk_bytes = options.min_free_disk_bytes;
    rocksdb.write_buffer_bytes = options.write_buffer_bytes;
    LAWN_ASSIGN_OR_RETURN(std::unique_ptr<RocksDbTimerStore> store, RocksDbTimerStore::Open(rocksdb));
    return std::unique_ptr<TimerStore>(std::move(store));
  }
  LogStoreOptions log;
  log.path = path;
  log.min_free_disk_bytes = options.min_free_disk_bytes;
  LAWN_ASSIGN_OR_RETURN(std::unique_ptr<LogTimerStore> store, LogTimerStore::Open(log));
  return std::unique_ptr<TimerStore>(std::move(store));
}

// Builds the new store in `building` from the old store in the data dir and checks it; returns what it
// holds. The old store is closed on return.
absl::StatusOr<StoreMigrationResult> Build(const Direction& d, const StoreMigrationOptions& options,
                                           const std::string& building) {
  LAWN_ASSIGN_OR_RETURN(std::unique_ptr<TimerStore> old_store, OpenStore(d.from, options.path, options));
  StoreMigrationResult result;
  // Delivery ids are made unique across restarts by the boot epoch: the new store goes on from here.
  LAWN_ASSIGN_OR_RETURN(result.boot_epoch, old_store->NextBootEpoch());

  Tally copied;
  {
    LAWN_ASSIGN_OR_RETURN(std::unique_ptr<TimerStore> new_store, OpenStore(d.to, building, options));
    LAWN_RETURN_IF_ERROR(CopyStore(*old_store, *new_store, &copied));
    if (d.to == Engine::kRocksDb) {
      LAWN_RETURN_IF_ERROR(static_cast<RocksDbTimerStore&>(*new_store).SetBootEpoch(result.boot_epoch));
    }
  }  // Closed: a log store's snapshot thread joined, its log synced.
  if (d.to == Engine::kLog) {
    LAWN_RETURN_IF_ERROR(ReplaceFile(building, "boot_epoch", absl::StrCat(result.boot_epoch, "\n")));
  }
  {
    LAWN_ASSIGN_OR_RETURN(std::unique_ptr<TimerStore> check, OpenStore(d.to, building, options));
    LAWN_ASSIGN_OR_RETURN(Tally read_back, TallyStore(*check));
    if (!(read_back == copied)) {
      return absl::DataLossError(
          absl::StrCat(d.what, ": the new store in ", building, " read back ", read_back.timers, " timers, ",
                       read_back.expirations, " outbox entries and ", read_back.staged,
                       " staged entries, for ", copied.timers, ", ", copied.expirations, " and ",
                       copied.staged, " written (or different contents)"));
    }
  }
  result.timers = copied.timers;
  result.expirations = copied.expirations;
  result.staged = copied.staged;
  return result;
}

// The switch, as SWITCH in `dir`/`d.building` describes it; every step may already have been done (a resumed
// switch).
absl::Status Switch(const Direction& d, const std::string& dir, const std::function<bool(int)>& continue_at) {
  const fs::path root(dir);
  const fs::path building = root / d.building;
  const fs::path backup = root / d.backup;
  LAWN_ASSIGN_OR_RETURN(std::optional<std::string> text, ReadWholeFile((building / kSwitchFile).string()));
  if (!text)
    return absl::FailedPreconditionError(absl::StrCat("no ", kSwitchFile, " in ", building.string()));
  std::vector<absl::string_view> lines = absl::StrSplit(*text, '\n', absl::SkipEmpty());
  if (lines.size() < 2 || lines[0] != d.header || !absl::StartsWith(lines[1], "current ")) {
    return absl::DataLossError(
        absl::StrCat((building / kSwitchFile).string(), " is not a migration's switch"));
  }
  const std::string old_current = absl::StrCat(lines[1].substr(8), "\n");
  int step = 0;
  auto go_on = [&]() { return !continue_at || continue_at(step++); };
  const absl::Status stopped = absl::AbortedError(absl::StrCat(d.what, ": stopped (a test)"));
  std::error_code ec;

  fs::create_directories(backup, ec);
  if (ec) return absl::UnavailableError(absl::StrCat("create ", backup.string(), ": ", ec.message()));
  LAWN_ASSIGN_OR_RETURN(std::optional<std::string> backup_current,
                        ReadWholeFile((backup / "CURRENT").string()));
  if (!backup_current) LAWN_RETURN_IF_ERROR(ReplaceFile(backup.string(), "CURRENT", old_current));
  LAWN_RETURN_IF_ERROR(SyncDir(dir));
  // The old store's files into the backup (a moved file is no longer in `dir`).
  for (size_t i = 2; i < lines.size(); ++i) {
    if (!absl::StartsWith(lines[i], "move ")) continue;
    const std::string name(lines[i].substr(5));
    if (!go_on()) return stopped;
    if (!fs::exists(fs::symlink_status(root / name, ec))) continue;
    fs::rename(root / name, backup / name, ec);
    if (ec) return RenameError(d, root / name, backup / name, ec);
  }
  LAWN_RETURN_IF_ERROR(SyncDir(backup.string()));
  LAWN_RETURN_IF_ERROR(SyncDir(dir));
  // The new store's files, all but CURRENT, into `dir` (the old store's are all in the backup now).
  std::vector<std::string> entries;
  for (fs::directory_iterator it(building, ec); !ec && it != fs::directory_iterator(); it.increment(ec)) {
    const std::string name = it->path().filename().string();
    // The new store's lawn.lock stays: the data dir's own is held, and replacing it would free the dir.
    if (name != "CURRENT" && name != kSwitchFile && name != kDirLockFile) entries.push_back(name);
  }
  if (ec) return absl::UnavailableError(absl::StrCat("list ", building.string(), ": ", ec.message()));
  std::sort(entries.begin(), entries.end());
  for (const std::string& name : entries) {
    if (!go_on()) return stopped;
    fs::rename(building / name, root / name, ec);
    if (ec) return RenameError(d, building / name, root / name, ec);
  }
  LAWN_RETURN_IF_ERROR(SyncDir(dir));
  // The switch itself: CURRENT now names the new format.
  if (!go_on()) return stopped;
  if (fs::exists(building / "CURRENT", ec)) {
    fs::rename(building / "CURRENT", root / "CURRENT", ec);
    if (ec) return RenameError(d, building / "CURRENT", root / "CURRENT", ec);
    LAWN_RETURN_IF_ERROR(SyncDir(dir));
  }
  if (!go_on()) return stopped;
  fs::remove_all(building, ec);
  if (ec) return absl::UnavailableError(absl::StrCat("remove ", building.string(), ": ", ec.message()));
  return SyncDir(dir);
}

absl::StatusOr<StoreMigrationResult> Migrate(const Direction& d, const StoreMigrationOptions& options) {
  const fs::path root(options.path);
  const fs::path building = root / d.building;
  std::error_code ec;
  if (const char* under_way = MigrationUnderWay(options.path)) {
    return absl::FailedPreconditionError(
        absl::StrCat(d.what, ": ", (root / under_way).string(), " exists (resume it first)"));
  }
  if (fs::exists(root / d.backup, ec)) {
    return absl::FailedPreconditionError(absl::StrCat(
        d.what, ": ", (root / d.backup).string(),
        " exists (the old store of an earlier migration?): move it out of the data dir, then start again"));
  }
  // Before SWITCH is written nothing of the old store has changed: a failure removes the half-built store,
  // and the next attempt starts over.
  auto abandon = [&building](absl::Status status) {
    std::error_code remove_ec;
    fs::remove_all(building, remove_ec);
    return status;
  };
  // The old store holds the dir while it is open; Build closes it (its files are moved next).
  absl::StatusOr<StoreMigrationResult> built = Build(d, options, building.string());
  if (!built.ok()) return abandon(built.status());
  absl::StatusOr<std::optional<std::string>> old_current = ReadWholeFile(options.path + "/CURRENT");
  if (!old_current.ok()) return abandon(old_current.status());
  if (!*old_current) return abandon(absl::FailedPreconditionError(options.path + "/CURRENT is gone"));
  // From here to the last rename. Another lawnd that took the dir in between owns it (and discards this
  // half-built store, which has no SWITCH yet).
  LAWN_ASSIGN_OR_RETURN(std::unique_ptr<DirLock> lock, DirLock::Acquire(options.path));
  // What the switch moves: every entry of the old store, which is everything in the data dir but CURRENT
  // (replaced by the switch; the backup gets a copy) and the entries lawnd keeps beside a store.
  std::string plan = absl::StrCat(d.header, "\ncurrent ", absl::StripSuffix(**old_current, "\n"), "\n");
  for (fs::directory_iterator it(root, ec); !ec && it != fs::directory_iterator(); it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (KeptInPlace(name)) continue;
    if (name.find('\n') != std::string::npos) continue;  // No store's; left where it is.
    absl::StrAppend(&plan, "move ", name, "\n");
  }
  if (ec) return abandon(absl::UnavailableError(absl::StrCat("list ", options.path, ": ", ec.message())));
  if (absl::Status s = ReplaceFile(building.string(), kSwitchFile, plan); !s.ok()) return abandon(s);
  LAWN_RETURN_IF_ERROR(Switch(d, options.path, options.continue_at));
  return built;
}

}  // namespace

absl::StatusOr<StoreMigrationResult> MigrateToLogStore(const StoreMigrationOptions& options) {
  return Migrate(kToLog, options);
}

absl::StatusOr<StoreMigrationResult> MigrateToRocksDbStore(const StoreMigrationOptions& options) {
  return Migrate(kToRocksDb, options);
}

const char* MigrationUnderWay(const std::string& path) {
  for (const Direction* d : kDirections) {
    std::error_code ec;
    if (fs::exists(fs::path(path) / d->building, ec)) return d->building;
  }
  return nullptr;
}

absl::StatusOr<bool> ResumeStoreMigration(const std::string& path) {
  // At most one migration is under way (Migrate refuses to start beside another).
  for (const Direction* d : kDirections) {
    const fs::path building = fs::path(path) / d->building;
    std::error_code ec;
    if (!fs::exists(building, ec)) {
      if (ec) return absl::UnavailableError(absl::StrCat("stat ", building.string(), ": ", ec.message()));
      continue;
    }
    // Another lawnd migrating this dir right now is not a crash's leftover.
    LAWN_ASSIGN_OR_RETURN(std::unique_ptr<DirLock> lock, DirLock::Acquire(path));
    if (!fs::exists(building / kSwitchFile, ec)) {
      // Building had not finished: the old store is in force and untouched.
      fs::remove_all(building, ec);
      if (ec) return absl::UnavailableError(absl::StrCat("remove ", building.string(), ": ", ec.message()));
      LAWN_RETURN_IF_ERROR(SyncDir(path));
      return false;
    }
    LAWN_RETURN_IF_ERROR(Switch(*d, path, nullptr));
    return true;
  }
  return false;
}

}  // namespace lawn
