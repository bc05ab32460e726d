// TimerStore: where lawnd keeps what it must not lose. Pending timers and the outbox of fired-but-unacked
// expirations; every write is one atomic batch.
//
// Times on disk are wall-clock nanoseconds since the Unix epoch (int64), so a restart, even on another
// machine, knows when each timer is due. A timer is named by its key: namespace, one 0x00 byte, id
// (namespaces never contain 0x00). Its record is found by that key and the deadline it was stored with
// (StoreBatch::DeleteTimer).
//
// Thread-safety: implementations are thread-safe; Write may be called concurrently from every shard worker
// (concurrent synced writes share one fsync where the implementation can group them).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "storage/store_batch.h"

namespace lawn {

// Views into a record, valid only during the callback that receives it.
struct StoredTimer {
  std::string_view key;  // namespace \0 id
  int64_t deadline_unix_ns = 0;
  uint64_t ttl_ns = 0;
  uint64_t interval_ns = 0;
  std::string_view payload;
};

struct StoredExpiration {
  uint64_t delivery_id = 0;
  StoredTimer timer;  // As it fired: deadline_unix_ns is the deadline that fired.
  int64_t fired_at_unix_ns = 0;
  uint32_t attempt = 0;  // Deliveries made before it was persisted (0 when it first fires).
};

enum class SyncMode { kSync, kNoSync };

class TimerStore {
 public:
  // Where lawnd's admin API writes checkpoints, under the data dir; every store leaves it out of DataBytes.
  static constexpr char kCheckpointsDir[] = "checkpoints";

  TimerStore() = default;
  TimerStore(const TimerStore&) = delete;
  TimerStore& operator=(const TimerStore&) = delete;
  virtual ~TimerStore() = default;

  // Applies every operation of `batch` atomically. With kSync the data is on stable storage when OK is
  // returned. Errors: RESOURCE_EXHAUSTED when the disk is too full to write safely (nothing written);
  // UNAVAILABLE/INTERNAL/DATA_LOSS for I/O failures (nothing may be assumed written).
  virtual absl::Status Write(const StoreBatch& batch, SyncMode mode) = 0;

  // Whether a write of about `bytes` may proceed without risking a full disk. RESOURCE_EXHAUSTED when the
  // free-space guard would refuse it. Callers check before changing in-memory state, so that a refused write
  // leaves nothing to undo.
  virtual absl::Status CheckSpace(uint64_t bytes) {
    (void)bytes;
    return absl::OkStatus();
  }

  // Bytes the store occupies on disk (0 for stores without a disk). For metrics.
  virtual absl::StatusOr<uint64_t> DataBytes() const { return uint64_t{0}; }

  // The store's own background work (storage.engine log's snapshots), for metrics and the log: counts since
  // Open and the last failure's message (empty if none). Stores without such work report zeros.
  struct BackgroundStats {
    uint64_t snapshots = 0;
    uint64_t snapshot_failures = 0;
    std::string last_failure;
    uint64_t log_bytes = 0;       // Log since the last snapshot (what a restart replays; segments before the
                                  // current one counted whole).
    uint64_t snapshot_bytes = 0;  // Size of the last snapshot.
  };
  virtual BackgroundStats Background() const { return {}; }

  // Forces everything written so far to stable storage.
  virtual absl::Status Sync() = 0;

  // Calls `on_timer` for every stored timer (by deadline, then key) and `on_expiration` for every outbox
  // entry (by delivery id).
  // The views are valid during the call only. A record that cannot be decoded is handed to `on_corrupt` as a
  // DATA_LOSS status naming its column family, key and why: it returns true to skip the record and go on,
  // false to stop; Recover then returns that status.
  virtual absl::Status Recover(absl::FunctionRef<void(const StoredTimer&)> on_timer,
                               absl::FunctionRef<void(const StoredExpiration&)> on_expiration,
                               absl::FunctionRef<bool(const absl::Status&)> on_corrupt) = 0;
  // As above, stopping at the first corrupt record.
  absl::Status Recover(absl::FunctionRef<void(const StoredTimer&)> on_timer,
                       absl::FunctionRef<void(const StoredExpiration&)> on_expiration) {
    return Recover(on_timer, on_expiration, [](const absl::Status&) { return false; });
  }

  // Cluster members: calls `on_staged` for every record of the staging area (expirations another member
  // handed over, kept until their partition is this member's; StoreBatch::PutIncoming), in staging-id order;
  // the delivery_id of each is its staging id. Stores without a staging area have none.
  virtual absl::Status ForEachIncoming(absl::FunctionRef<void(const StoredExpiration&)> on_staged) {
    (void)on_staged;
    return absl::OkStatus();
  }

  // A counter that grows by one on every call and survives restarts (used to make delivery ids unique
  // across restarts). Written synchronously.
  virtual absl::StatusOr<uint64_t> NextBootEpoch() = 0;

  // Writes a consistent, openable copy of the store to `dir` (which must not exist), for backups: what had
  // been written when the call began, or later. Errors: FAILED_PRECONDITION if `dir` exists or the store has
  // no checkpoints; RESOURCE_EXHAUSTED if the copy would take the disk below the free-space guard;
  // UNAVAILABLE on I/O errors.
  virtual absl::Status Checkpoint(const std::string& dir) {
    return absl::FailedPreconditionError("checkpoint to " + dir + ": this store has no checkpoints");
  }
};

}  // namespace lawn
