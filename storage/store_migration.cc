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
constexpr char kSwitchHeader[] = "lawn storage migration 2 -> 3";
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

absl::Status RenameError(const fs::path& from, const fs::path& to, const std::error_code& ec) {
  return absl::UnavailableError(absl::StrCat("migration to storage format 3: rename ", from.string(), " to ",
                                             to.string(), ": ", ec.message()));
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

// Builds the new store in `building` from the RocksDB store in `dir` and checks it; returns what it holds.
// The RocksDB store is closed on return.
absl::StatusOr<StoreMigrationResult> Build(const StoreMigrationOptions& options,
                                           const std::string& building) {
  RocksDbStoreOptions old_options;
  old_options.path = options.path;
  old_options.staging = options.staging;
  old_options.min_free_disk_bytes = options.min_free_disk_bytes;
  old_options.write_buffer_bytes = options.write_buffer_bytes;
  LAWN_ASSIGN_OR_RETURN(std::unique_ptr<RocksDbTimerStore> old_store, RocksDbTimerStore::Open(old_options));
  StoreMigrationResult result;
  // Delivery ids are made unique across restarts by the boot epoch: the new store goes on from here.
  LAWN_ASSIGN_OR_RETURN(result.boot_epoch, old_store->NextBootEpoch());

  LogStoreOptions new_options;
  new_options.path = building;
  new_options.min_free_disk_bytes = options.min_free_disk_bytes;
  Tally copied;
  {
    LAWN_ASSIGN_OR_RETURN(std::unique_ptr<LogTimerStore> new_store, LogTimerStore::Open(new_options));
    LAWN_RETURN_IF_ERROR(CopyStore(*old_store, *new_store, &copied));
  }  // Closed: its snapshot thread joined, its log synced.
  LAWN_RETURN_IF_ERROR(ReplaceFile(building, "boot_epoch", absl::StrCat(result.boot_epoch, "\n")));
  {
    LAWN_ASSIGN_OR_RETURN(std::unique_ptr<LogTimerStore> check, LogTimerStore::Open(new_options));
    LAWN_ASSIGN_OR_RETURN(Tally read_back, TallyStore(*check));
    if (!(read_back == copied)) {
      return absl::DataLossError(
          absl::StrCat("migration to storage format 3: the new store in ", building, " read back ",
                       read_back.timers, " timers, ", read_back.expirations, " outbox entries and ",
                       read_back.staged, " staged entries, for ", copied.timers, ", ", copied.expirations,
                       " and ", copied.staged, " written (or different contents)"));
    }
  }
  result.timers = copied.timers;
  result.expirations = copied.expirations;
  result.staged = copied.staged;
  return result;
}

// The switch, as SWITCH in `dir`/format3.migrating describes it; every step may already have been done (a
// resumed switch).
absl::Status Switch(const std::string& dir, const std::function<bool(int)>& continue_at) {
  const fs::path root(dir);
  const fs::path building = root / kMigratingDir;
  const fs::path backup = root / kFormat2BackupDir;
  LAWN_ASSIGN_OR_RETURN(std::optional<std::string> text, ReadWholeFile((building / kSwitchFile).string()));
  if (!text)
    return absl::FailedPreconditionError(absl::StrCat("no ", kSwitchFile, " in ", building.string()));
  std::vector<absl::string_view> lines = absl::StrSplit(*text, '\n', absl::SkipEmpty());
  if (lines.size() < 2 || lines[0] != kSwitchHeader || !absl::StartsWith(lines[1], "current ")) {
    return absl::DataLossError(
        absl::StrCat((building / kSwitchFile).string(), " is not a migration's switch"));
  }
  const std::string rocksdb_current = absl::StrCat(lines[1].substr(8), "\n");
  int step = 0;
  auto go_on = [&]() { return !continue_at || continue_at(step++); };
  const absl::Status stopped = absl::AbortedError("migration to storage format 3: stopped (a test)");
  std::error_code ec;

  fs::create_directories(backup, ec);
  if (ec) return absl::UnavailableError(absl::StrCat("create ", backup.string(), ": ", ec.message()));
  LAWN_ASSIGN_OR_RETURN(std::optional<std::string> backup_current,
                        ReadWholeFile((backup / "CURRENT").string()));
  if (!backup_current) LAWN_RETURN_IF_ERROR(ReplaceFile(backup.string(), "CURRENT", rocksdb_current));
  LAWN_RETURN_IF_ERROR(SyncDir(dir));
  // The old store's files into the backup (a moved file is no longer in `dir`).
  for (size_t i = 2; i < lines.size(); ++i) {
    if (!absl::StartsWith(lines[i], "move ")) continue;
    const std::string name(lines[i].substr(5));
    if (!go_on()) return stopped;
    if (!fs::exists(fs::symlink_status(root / name, ec))) continue;
    fs::rename(root / name, backup / name, ec);
    if (ec) return RenameError(root / name, backup / name, ec);
  }
  LAWN_RETURN_IF_ERROR(SyncDir(backup.string()));
  LAWN_RETURN_IF_ERROR(SyncDir(dir));
  // The new store's files, all but CURRENT, into `dir` (none has a RocksDB file's name).
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
    if (ec) return RenameError(building / name, root / name, ec);
  }
  LAWN_RETURN_IF_ERROR(SyncDir(dir));
  // The switch itself: CURRENT now names format 3.
  if (!go_on()) return stopped;
  if (fs::exists(building / "CURRENT", ec)) {
    fs::rename(building / "CURRENT", root / "CURRENT", ec);
    if (ec) return RenameError(building / "CURRENT", root / "CURRENT", ec);
    LAWN_RETURN_IF_ERROR(SyncDir(dir));
  }
  if (!go_on()) return stopped;
  fs::remove_all(building, ec);
  if (ec) return absl::UnavailableError(absl::StrCat("remove ", building.string(), ": ", ec.message()));
  return SyncDir(dir);
}

}  // namespace

absl::StatusOr<StoreMigrationResult> MigrateToLogStore(const StoreMigrationOptions& options) {
  const fs::path root(options.path);
  const fs::path building = root / kMigratingDir;
  std::error_code ec;
  if (fs::exists(building, ec)) {
    return absl::FailedPreconditionError(
        absl::StrCat("migration to storage format 3: ", building.string(), " exists (resume it first)"));
  }
  if (fs::exists(root / kFormat2BackupDir, ec)) {
    return absl::FailedPreconditionError(absl::StrCat(
        "migration to storage format 3: ", (root / kFormat2BackupDir).string(),
        " exists (the old store of an earlier migration?): move it out of the data dir, then start again"));
  }
  // Before SWITCH is written nothing of the old store has changed: a failure removes the half-built store,
  // and the next attempt starts over.
  auto abandon = [&building](absl::Status status) {
    std::error_code remove_ec;
    fs::remove_all(building, remove_ec);
    return status;
  };
  // The RocksDB store holds the dir while it is open; Build closes it (its files are moved next).
  absl::StatusOr<StoreMigrationResult> built = Build(options, building.string());
  if (!built.ok()) return abandon(built.status());
  absl::StatusOr<std::optional<std::string>> rocksdb_current = ReadWholeFile(options.path + "/CURRENT");
  if (!rocksdb_current.ok()) return abandon(rocksdb_current.status());
  if (!*rocksdb_current) return abandon(absl::FailedPreconditionError(options.path + "/CURRENT is gone"));
  // From here to the last rename. Another lawnd that took the dir in between owns it (and discards this
  // half-built store, which has no SWITCH yet).
  LAWN_ASSIGN_OR_RETURN(std::unique_ptr<DirLock> lock, DirLock::Acquire(options.path));
  // What the switch moves: every entry of the old store, which is everything in the data dir but CURRENT
  // (replaced by the switch; the backup gets a copy) and the entries lawnd keeps beside a store.
  std::string plan =
      absl::StrCat(kSwitchHeader, "\ncurrent ", absl::StripSuffix(**rocksdb_current, "\n"), "\n");
  for (fs::directory_iterator it(root, ec); !ec && it != fs::directory_iterator(); it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name == "CURRENT" || name == kMigratingDir || name == TimerStore::kCheckpointsDir ||
        name == kDirLockFile || name == "lost+found") {
      continue;
    }
    if (name.find('\n') != std::string::npos) continue;  // Not RocksDB's; left where it is.
    absl::StrAppend(&plan, "move ", name, "\n");
  }
  if (ec) return abandon(absl::UnavailableError(absl::StrCat("list ", options.path, ": ", ec.message())));
  if (absl::Status s = ReplaceFile(building.string(), kSwitchFile, plan); !s.ok()) return abandon(s);
  LAWN_RETURN_IF_ERROR(Switch(options.path, options.continue_at));
  return built;
}

absl::StatusOr<bool> ResumeStoreMigration(const std::string& path) {
  const fs::path building = fs::path(path) / kMigratingDir;
  std::error_code ec;
  if (!fs::exists(building, ec)) {
    if (ec) return absl::UnavailableError(absl::StrCat("stat ", building.string(), ": ", ec.message()));
    return false;
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
  LAWN_RETURN_IF_ERROR(Switch(path, nullptr));
  return true;
}

}  // namespace lawn
