// RocksDbTimerStore: the durable TimerStore, one RocksDB database per data dir. The on-disk layout (column
// families, encodings, format version, compaction settings, free-space guard) is described in
// storage/FORMAT.md; keep the two in step.
//
// No RocksDB header is included here, so users of lawn::storage need none: the database lives behind a
// private Rep defined in rocksdb_timer_store.cc, and the one RocksDB type named, rocksdb::Env (for the Open
// overload that takes one), is only declared.
//
// Thread-safety: every method is thread-safe. Concurrent Write(kSync) calls are group-committed by RocksDB
// (one WAL fsync serves every writer waiting in the group).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "storage/store_batch.h"
#include "storage/timer_store.h"

namespace rocksdb {
class Env;  // <rocksdb/env.h>, which only a caller that passes an Env includes.
}  // namespace rocksdb

namespace lawn {

struct RocksDbStoreOptions {
  // The data dir. Created (with its parents) if missing. One lawnd per data dir: RocksDB's LOCK file makes a
  // second Open of the same dir fail with UNAVAILABLE.
  std::string path;

  // Free-space guard, in bytes (config key min_free_disk_bytes). Write refuses with RESOURCE_EXHAUSTED when
  // the file system holding `path` would have fewer than this many bytes plus write_buffer_bytes (room to
  // flush every memtable) available to unprivileged users after the write. 0 disables the guard. Default
  // 256 MiB: room for compactions to finish.
  uint64_t min_free_disk_bytes = uint64_t{256} << 20;

  // Size of the block cache shared by the column families, in bytes. Default 64 MiB. Recovery bypasses it.
  uint64_t block_cache_bytes = uint64_t{64} << 20;

  // Memtable memory of all column families together (config key write_buffer_bytes), in bytes; also the WAL
  // size that forces a flush. `pending` and `outbox` each flush at half of it. Default 256 MiB: the puts of a
  // burst of a million timers started, fired and acked within it are dropped at the flush with the deletes
  // that cancel them, so only tombstones reach a file (FORMAT.md, "Space reclamation").
  uint64_t write_buffer_bytes = uint64_t{256} << 20;
  static constexpr uint64_t kMinWriteBufferBytes = uint64_t{2} << 20;

  // A cluster member's store: creates the `incoming` column family (the staging area of partition
  // hand-overs, FORMAT.md) if it is missing. A store that has one opens with or without this.
  bool staging = false;

  // Opens the store to read it without changing anything in the dir (lawn_dump): RocksDB's read-only mode
  // (the WAL is read, not replayed into new files; no info LOG written), a shared hold of the dir's lock file
  // instead of the exclusive one (UNAVAILABLE while a lawnd has the dir open), nothing created: NOT_FOUND
  // for a dir without a store, FAILED_PRECONDITION for format version 1 (a lawnd start migrates it). Every
  // write fails.
  bool read_only = false;
};

class RocksDbTimerStore final : public TimerStore {
 public:
  // Opens (creating if missing) the store in `options.path`.
  // Errors: INVALID_ARGUMENT for an empty path; FAILED_PRECONDITION if the dir holds a format version other
  // than the one this build supports (message names both) or is not a lawn store; UNAVAILABLE if RocksDB
  // cannot open it (I/O error, dir locked by another process); DATA_LOSS if RocksDB reports corruption.
  static absl::StatusOr<std::unique_ptr<RocksDbTimerStore>> Open(const RocksDbStoreOptions& options);

  // The same, with RocksDB doing all its file I/O, locking and background threads through `env` instead of
  // rocksdb::Env::Default() (e.g. an in-memory, encrypted or fault-injecting Env). `env` is not owned and
  // must outlive the store. The data dir itself is still created, measured (DataBytes) and checked for free
  // space on the real file system.
  static absl::StatusOr<std::unique_ptr<RocksDbTimerStore>> Open(const RocksDbStoreOptions& options,
                                                                 rocksdb::Env& env);

  // The storage format version this build reads and writes (meta key "format_version"). Open migrates a
  // store of version 1 (timers keyed by name) to it once, in place (storage/FORMAT.md).
  static constexpr int kFormatVersion = 2;

  // Closes the database after syncing the WAL, so that kNoSync writes acknowledged before a clean shutdown
  // survive a later power cut. Waits for running background compactions to stop.
  ~RocksDbTimerStore() override;

  // TimerStore
  //
  // Write: RESOURCE_EXHAUSTED (nothing written) when the free-space guard refuses; UNAVAILABLE when RocksDB
  // fails the write (nothing may be assumed written or not written). A RocksDB write or WAL sync failure
  // stops the store: from then on Write, Sync, NextBootEpoch, CompactAll and Checkpoint return that first
  // error without touching RocksDB (syncing a WAL after a failed append aborts the process in Debian's
  // RocksDB 7.8), and the destructor skips its final WAL sync. The owner should restart; Open recovers
  // every synced write from the WAL.
  absl::Status Write(const StoreBatch& batch, SyncMode mode) override;
  absl::Status Sync() override;
  absl::Status CheckSpace(uint64_t bytes) override;
  using TimerStore::Recover;
  absl::Status Recover(absl::FunctionRef<void(const StoredTimer&)> on_timer,
                       absl::FunctionRef<void(const StoredExpiration&)> on_expiration,
                       absl::FunctionRef<bool(const absl::Status&)> on_corrupt) override;
  absl::StatusOr<uint64_t> NextBootEpoch() override;
  // Makes `last` the last boot epoch handed out (NextBootEpoch returns `last` + 1 next), synced: for a store
  // built from another one (storage/store_migration.h), whose delivery ids must stay unique.
  absl::Status SetBootEpoch(uint64_t last);
  absl::Status ForEachIncoming(absl::FunctionRef<void(const StoredExpiration&)> on_staged) override;

  // Total size in bytes of the regular files in the data dir (SST, WAL, MANIFEST, info LOG, ...), apparent
  // sizes (preallocated but unwritten WAL space is not counted). For metrics and the space-reclamation test.
  absl::StatusOr<uint64_t> DataBytes() const override;

  // If Open migrated a store of format version 1: how many timers it re-keyed (for lawnd's log).
  std::optional<uint64_t> migrated_from_v1() const;

  // How many times the free-space guard has read the file system's free space (statvfs) since Open: every
  // 100 ms and every 16 MiB written, at every check or write within 256 MiB of a refusal, and after a
  // checkpoint or CompactAll. For tests of the guard's cost.
  uint64_t free_space_probes() const;

  // Flushes every memtable and compacts every column family down to the last level, dropping tombstones.
  // Blocks until done. For tests and operators; the daemon relies on automatic compaction.
  absl::Status CompactAll();

  // Writes a consistent, openable copy of the store to `dir` (which must not exist), hard-linking SST files
  // where the file system allows it. For backups. Errors: FAILED_PRECONDITION if `dir` exists; UNAVAILABLE on
  // I/O errors.
  absl::Status Checkpoint(const std::string& dir) override;

 private:
  struct Rep;
  explicit RocksDbTimerStore(std::unique_ptr<Rep> rep);

  std::unique_ptr<Rep> rep_;
};

}  // namespace lawn
