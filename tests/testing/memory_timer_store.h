// MemoryTimerStore: a TimerStore in process memory (std::map), the fake that tests of the layers above
// storage/ use in place of RocksDbTimerStore. Same ordering and atomicity: timers by deadline, then key, the
// outbox in delivery id order, each batch applied entirely or not at all; the conformance test
// (tests/storage/timer_store_conformance_test.cc) keeps the two in step. Part of lawn_storage_testing
// (tests/testing/), which only test executables link; lawnd's `memory` durability runs with no store at all.
//
// Test hooks: FailWritesWith makes writes fail without effect; with `simulate_power_loss` the store also
// remembers what was synced, and DropUnsyncedWrites() forgets everything written with kNoSync since the last
// sync, as a power cut would.
//
// Thread-safety: every method is thread-safe. Recover holds a reader lock while calling back: the callbacks
// must not call the store.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "storage/store_batch.h"
#include "storage/timer_store.h"

namespace lawn {

struct MemoryStoreOptions {
  // Keep a second copy of the state as of the last sync, so that DropUnsyncedWrites() can simulate a power
  // cut. Doubles the memory used. Default off.
  bool simulate_power_loss = false;
};

class MemoryTimerStore final : public TimerStore {
 public:
  explicit MemoryTimerStore(MemoryStoreOptions options = MemoryStoreOptions());

  // From now on Write, Sync and NextBootEpoch return `status` and change nothing, until called again with
  // an OK status.
  void FailWritesWith(absl::Status status);

  // Forgets every write made with kNoSync since the last kSync write or Sync().
  // REQUIRES: constructed with simulate_power_loss.
  void DropUnsyncedWrites();

  size_t timer_count() const;
  size_t expiration_count() const;
  // Write(kSync) and Sync() calls that succeeded: how many fsyncs a disk store would have made at most.
  uint64_t sync_count() const;

  // TimerStore
  absl::Status Write(const StoreBatch& batch, SyncMode mode) override;
  absl::Status Sync() override;
  absl::Status ForEachIncoming(absl::FunctionRef<void(const StoredExpiration&)> on_staged) override;
  using TimerStore::Recover;
  absl::Status Recover(absl::FunctionRef<void(const StoredTimer&)> on_timer,
                       absl::FunctionRef<void(const StoredExpiration&)> on_expiration,
                       absl::FunctionRef<bool(const absl::Status&)> on_corrupt) override;
  absl::StatusOr<uint64_t> NextBootEpoch() override;

 private:
  struct Timer {
    int64_t deadline_unix_ns = 0;
    uint64_t ttl_ns = 0;
    uint64_t interval_ns = 0;
    std::string payload;
  };
  struct Expiration {
    std::string key;
    Timer timer;
    int64_t fired_at_unix_ns = 0;
    uint32_t attempt = 0;
  };
  struct State {
    // Keyed as RocksDbTimerStore keys them, by deadline then timer key: a delete that names another deadline
    // than the record's misses it here as it would on disk, and the record is recovered again.
    std::map<std::pair<int64_t, std::string>, Timer> timers;
    std::map<uint64_t, Expiration> outbox;
    std::map<uint64_t, Expiration> incoming;  // The staging area (StoreBatch::PutIncoming).
    uint64_t boot_epoch = 0;
  };

  static void Apply(const StoreBatch& batch, State& state);
  void MarkSynced() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const MemoryStoreOptions options_;
  mutable absl::Mutex mu_;
  absl::Status fail_with_ ABSL_GUARDED_BY(mu_);
  State live_ ABSL_GUARDED_BY(mu_);
  // With simulate_power_loss: the state as of the last sync, and the batches written since.
  State synced_ ABSL_GUARDED_BY(mu_);
  std::vector<StoreBatch> unsynced_ ABSL_GUARDED_BY(mu_);
  uint64_t sync_count_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace lawn
