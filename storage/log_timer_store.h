// LogTimerStore: storage.engine `log`, the durable TimerStore of storage format 3 (docs/durable-log.md,
// storage/FORMAT.md): every Write is one record of a round log (storage/round_log.h) holding the batch's
// operations as StoreBatch encodes them, and a background thread folds the log into snapshot files
// (storage/log_state.h) so that the log stays short.
//
// It keeps exactly what RocksDbTimerStore keeps (the same records, recovered in the same order), so lawnd's
// recovery, repairs and cluster hand-overs work unchanged on either; the conformance tests run against both.
//
// The data dir:
//   CURRENT                      text naming this format: a RocksDB build (format 2) refuses the dir
//   LAWN_FORMAT                  "3"
//   MANIFEST                     "snapshot <file> <first log sequence it does not cover>"; replaced by rename
//   snapshot-<sequence>.lawnsnap the snapshot MANIFEST names (others are left-overs, deleted at Open)
//   log/<segment>.lawnlog        the round log
//   boot_epoch                   NextBootEpoch's counter, replaced by rename
//   lawn.lock                    held (flock) while the store is open: one process per dir
//   (storage/dir_lock.h)
//
// Snapshots. When the writer leaves a segment and the log since the current snapshot has reached
// `snapshot_log_bytes` and `snapshot_log_percent` of the snapshot's size, the background thread reads the
// snapshot and the log's segments before the new one (all synced: leaving a segment syncs it), merges them
// (the last operation on each record wins) into a new snapshot, syncs it, switches MANIFEST to it (write,
// sync, rename, sync the dir) and only then retires the segments it covers. A crash at any point leaves
// either the old MANIFEST, whose snapshot and log are intact, or the new one. The fold reads only files
// nobody writes any more and never touches the shards: nothing on the write path waits for it. Its memory is
// the log it folds, mapped (about the larger of snapshot_log_bytes and the snapshot's share, plus a segment),
// and an entry per operation in it (storage/log_state.h). A failed snapshot is retried at the next segment;
// the log meanwhile grows.
//
// Thread-safety: every method is thread-safe. Writes are serialized by one mutex (an append to the page
// cache); concurrent synced writes share one fdatasync (a group commit, outside the mutex).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "storage/store_batch.h"
#include "storage/timer_store.h"

namespace lawn {

struct LogStoreOptions {
  std::string path;  // The data dir, created with its parents if missing.
  // Free-space guard (config key min_free_disk_bytes): CheckSpace refuses with RESOURCE_EXHAUSTED when the
  // file system would have fewer than this many bytes, plus a segment and the last snapshot's size (room
  // for the next rotation and the next snapshot), available; Write when it would have fewer than this plus
  // a segment (all a write can take); a snapshot starts only with this plus a segment plus a bound on its
  // own size free. 0 disables it.
  uint64_t min_free_disk_bytes = uint64_t{256} << 20;
  uint64_t segment_bytes = uint64_t{64} << 20;        // Size of each log segment (preallocated).
  // The next snapshot starts when the log since the last one has reached both snapshot_log_bytes and
  // snapshot_log_percent % of the last snapshot's size. Each snapshot rewrites the whole state, so after a
  // fixed length of log a fold costs more per logged operation the larger the state (0.27 us at 2.4M timers,
  // 0.80 at 19M; BENCHMARKS.md section 47) and writes more snapshot per byte logged; waiting for a share of
  // the snapshot bounds the snapshot bytes written per byte logged at 1 + 1 / share (3 at 50%; Redis rewrites
  // its AOF at 100% by default), for a fold that maps and a restart that replays up to that share in log.
  uint64_t snapshot_log_bytes = uint64_t{128} << 20;
  uint32_t snapshot_log_percent = 50;
};

// What a data dir holds, for storage.engine `auto`, which keeps the engine a data dir was written with (lawnd
// never converts one) and takes `log` for a new one.
enum class DataDirStore { kNone, kLog, kRocksDb };
// kLog if `path`'s CURRENT names storage format 3; kRocksDb if it has another CURRENT (RocksDB's, formats 1
// and 2); kNone if it has none (a missing or new data dir). UNAVAILABLE if CURRENT exists and cannot be read.
absl::StatusOr<DataDirStore> InspectDataDir(const std::string& path);

class LogTimerStore final : public TimerStore {
 public:
  static constexpr int kFormatVersion = 3;

  // Opens (creating if missing) the store in `options.path`, reading the log through to check it.
  // Errors: INVALID_ARGUMENT for an empty path or segment size below 4 KiB; FAILED_PRECONDITION if the dir
  // holds a RocksDB store (format 1 or 2: MigrateToLogStore converts one) or another format; DATA_LOSS if the
  // log or the snapshot lost records that were durable (storage/round_log.h); UNAVAILABLE for I/O errors.
  static absl::StatusOr<std::unique_ptr<LogTimerStore>> Open(const LogStoreOptions& options);

  // Reads every record of the store in `path`, as Open then Recover and ForEachIncoming would return them
  // (timers by deadline and key, then outbox entries, then staged entries, by id), without changing anything
  // there: no lock file created, no segment started or synced, no left-over removed. For lawn_dump on a
  // stopped lawnd's data dir, a checkpoint, or a copy on read-only media. It holds a shared lock on the dir's
  // lock file meanwhile, so UNAVAILABLE while a store has the dir open (and a lawnd started meanwhile is
  // refused). NOT_FOUND if `path` holds no store; FAILED_PRECONDITION if another format; Open's DATA_LOSS.
  static absl::Status ReadWithoutOpening(const std::string& path,
                                         absl::FunctionRef<void(const StoredTimer&)> on_timer,
                                         absl::FunctionRef<void(const StoredExpiration&)> on_expiration,
                                         absl::FunctionRef<void(const StoredExpiration&)> on_staged);

  // Stops the snapshot thread (after the snapshot in progress, if any) and syncs the log.
  ~LogTimerStore() override;

  absl::Status Write(const StoreBatch& batch, SyncMode mode) override;
  absl::Status CheckSpace(uint64_t bytes) override;
  absl::StatusOr<uint64_t> DataBytes() const override;
  absl::Status Sync() override;
  absl::Status Recover(absl::FunctionRef<void(const StoredTimer&)> on_timer,
                       absl::FunctionRef<void(const StoredExpiration&)> on_expiration,
                       absl::FunctionRef<bool(const absl::Status&)> on_corrupt) override;
  absl::Status ForEachIncoming(absl::FunctionRef<void(const StoredExpiration&)> on_staged) override;
  absl::StatusOr<uint64_t> NextBootEpoch() override;
  BackgroundStats Background() const override;
  // The snapshot (hard-linked where the file system allows, else copied) and a copy of the log after it up
  // to the last write before the call, with MANIFEST, the format files and the boot epoch; written under
  // `dir`.tmp and renamed to `dir` once synced. No snapshot starts meanwhile; writes go on.
  absl::Status Checkpoint(const std::string& dir) override;

  // For tests and metrics.
  struct Stats {
    uint64_t snapshots = 0;          // Written since Open.
    uint64_t snapshot_failures = 0;  // Attempts that failed (retried later).
    uint64_t snapshot_sequence = 0;  // First log sequence the current snapshot does not cover (1: none).
    uint64_t log_segment = 0;        // Segment being written.
    std::string last_error;          // Of the last failed snapshot.
  };
  Stats stats() const;
  // Blocks until no snapshot is in progress (tests).
  void WaitForSnapshot();

 private:
  struct Rep;
  explicit LogTimerStore(std::unique_ptr<Rep> rep);
  std::unique_ptr<Rep> rep_;
};

}  // namespace lawn
