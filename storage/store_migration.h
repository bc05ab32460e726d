// Storage formats 2 <-> 3: converts a data dir's store in place from one engine to the other, for lawnd
// started with an explicit storage.engine other than the one the dir holds: `log` on a RocksDB store (formats
// 1 and 2) migrates it to format 3 (MigrateToLogStore), `rocksdb` on a format 3 store migrates it back to
// format 2 (MigrateToRocksDbStore: a downgrade, or leaving the log engine, without losing what was written
// since the first migration). storage/FORMAT.md ("Migration between formats 2 and 3") has the on-disk steps.
//
// The new store is built beside the old one, in `<dir>/format3.migrating` (or `format2.migrating`), from what
// the old one recovers (every pending timer, outbox entry and staged entry, and the boot epoch, so delivery
// ids stay unique), read back and counted, and only then switched in: the old store's files are moved into
// `<dir>/format2-backup` (or `format3-backup`: a data dir of the old format, which its engine opens), the new
// store's files into `<dir>`, and the rename of the new CURRENT over the old one is the switch. What the
// switch must do is written (`SWITCH`, synced) before the first move, so a crash at any point leaves either
// the old store in force with the new one half built (discarded, the migration runs again) or a switch that
// ResumeStoreMigration, called before any store is opened, finishes. Until the switch nothing of the old
// store is changed.
//
// Thread-safety: none; call before the store is opened, from one thread.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace lawn {

// Format 2 -> 3: where the new store is built, and where the old one is kept.
inline constexpr char kMigratingDir[] = "format3.migrating";
inline constexpr char kFormat2BackupDir[] = "format2-backup";
// Format 3 -> 2.
inline constexpr char kMigratingBackDir[] = "format2.migrating";
inline constexpr char kFormat3BackupDir[] = "format3-backup";

struct StoreMigrationOptions {
  std::string path;      // The data dir, holding the store to convert.
  bool staging = false;  // A cluster member's store (RocksDbStoreOptions::staging).
  uint64_t min_free_disk_bytes = uint64_t{256} << 20;  // For both stores' free-space guards.
  uint64_t write_buffer_bytes = uint64_t{256} << 20;   // RocksDbStoreOptions::write_buffer_bytes.
  // Tests: called before each step of the switch (0, 1, ...: every rename, then the clean-up); returning
  // false stops the migration there, as a crash would, and the call returns ABORTED.
  std::function<bool(int step)> continue_at;
};

struct StoreMigrationResult {
  uint64_t timers = 0;
  uint64_t expirations = 0;  // Outbox entries: fired, not yet acked.
  uint64_t staged = 0;       // Staged entries of a cluster member.
  uint64_t boot_epoch = 0;   // The last one the old store handed out; the new store's next is above it.
};

// Converts the RocksDB store in `options.path` (format 1 is first migrated to 2 by RocksDbTimerStore::Open).
// Errors: FAILED_PRECONDITION if `<dir>/format2-backup` exists (a backup of an earlier migration: move it
// away) or a migration is under way (call ResumeStoreMigration first); RESOURCE_EXHAUSTED if the disk has
// no room for the new store beside the old one; DATA_LOSS if the new store does not read back what was put
// in it; RocksDbTimerStore::Open's and LogTimerStore::Open's errors. On any error before the switch the old
// store is left as it was and the half-built one removed.
absl::StatusOr<StoreMigrationResult> MigrateToLogStore(const StoreMigrationOptions& options);

// Converts the format 3 store in `options.path` into a RocksDB store (format 2), keeping the old one in
// `<dir>/format3-backup`. Errors as MigrateToLogStore's, with `format3-backup` for `format2-backup`.
absl::StatusOr<StoreMigrationResult> MigrateToRocksDbStore(const StoreMigrationOptions& options);

// The building dir (kMigratingDir or kMigratingBackDir) of a migration under way in `path`, or nullptr when
// there is none: ResumeStoreMigration's to finish, and nobody else's to read.
const char* MigrationUnderWay(const std::string& path);

// Finishes a migration whose switch had begun (true), or removes a new store whose building a crash
// interrupted, leaving the old one in force (false; also when there is nothing to do). UNAVAILABLE on I/O
// errors: then the data dir must not be opened.
absl::StatusOr<bool> ResumeStoreMigration(const std::string& path);

}  // namespace lawn
