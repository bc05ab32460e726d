// Runtime: lawnd's engine room. Owns the shard workers, the namespaces and their outboxes, the store, and the
// background thread that redelivers unacked expirations and (in `interval` durability) syncs the store.
//
// Life cycle: Start() starts the workers and recovers from the store on a separate thread; ready() turns true
// when every stored timer and expiration is back in memory (the health check says SERVING only then).
// Stop() runs what is queued and stops the threads; pending timers stay on disk.
//
// Write failures: a storage write that fails for any reason other than the free-space guard puts the runtime
// in a failed state: write_status() is the cause, writes are answered UNAVAILABLE and health is NOT_SERVING
// (in-memory state may be ahead of the disk, so only a restart, which recovers from disk, clears it).
//
// Thread-safety: all public methods are thread-safe.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "config/options.h"
#include "server/metrics.h"
#include "server/namespaces.h"
#include "server/shard_command.h"
#include "server/time_base.h"
#include "storage/timer_store.h"

namespace lawn {

class PartitionGate;
class ShardWorker;

struct RecoveryStats {
  uint64_t timers = 0;
  uint64_t expirations = 0;
  double seconds = 0;
};

class Runtime {
 public:
  // `store` is nullptr in `memory` durability. `metrics` may be nullptr (tests); not owned.
  Runtime(const Options& options, std::unique_ptr<TimerStore> store, Metrics* metrics);
  Runtime(const Runtime&) = delete;
  Runtime& operator=(const Runtime&) = delete;
  ~Runtime();

  // Starts workers and recovery. Errors: those of the store (e.g. FAILED_PRECONDITION for a data dir of an
  // unknown format).
  absl::Status Start();
  // Blocks until recovery is done (or failed); returns its status.
  absl::Status WaitUntilReady();
  void Stop();

  bool ready() const { return ready_.load(std::memory_order_acquire); }
  // OK, or why writes are refused for good.
  absl::Status write_status() const;
  bool write_failed() const { return write_failed_.load(std::memory_order_acquire); }
  void ReportWriteFailure(const absl::Status& status);
  // Called (from any thread) when ready or write-failed state changes, so health can follow.
  void SetHealthListener(std::function<void()> listener);

  // Cluster mode: `fence` (called by every worker before it fires; must be cheap and thread-safe) says
  // whether this member may fire now; while it says no, due timers stay pending. Set before Start.
  void SetFiringFence(std::function<bool()> fence) { fence_ = std::move(fence); }
  bool MayFire() const { return !fence_ || fence_(); }
  // Cluster mode: the per-partition gate the workers check before each write and firing (not owned). Set
  // before Start; nullptr outside a cluster.
  void SetPartitionGate(const PartitionGate* gate) { gate_ = gate; }
  const PartitionGate* gate() const { return gate_; }
  // OK, or why a write to the timer with this key must not be applied now: the free-space guard's status
  // `admission` first, then the partition gate.
  absl::Status AdmitWrite(const absl::Status& admission, std::string_view key) const;
  // Asks every shard to offer its gated (and namespace-held) timers again: a partition opened.
  void ReleaseGated();
  // Publishes persisted expirations into their namespaces' outboxes, unreserved like recovery's (what is on
  // disk comes back even above the outbox bounds), keeping their order within each namespace. `what` names
  // them in the error logged for a namespace that cannot be created (they stay on disk, unpublished).
  void PublishPersisted(std::vector<Delivery> deliveries, std::string_view what);
  // Cluster mode: the expirations recovery read back, not yet published (the start-up settle publishes those
  // of partitions this member owns). Each call returns what was parked since the last one.
  std::vector<Delivery> TakeParkedExpirations();
  // Runs `make(shard)` on every shard in its next round and waits until every one's round is written (the
  // returned latch counted down by each command's Done).
  void RunOnEveryShard(const std::function<std::unique_ptr<ShardCommand>(uint32_t shard)>& make);

  uint32_t shard_count() const { return static_cast<uint32_t>(workers_.size()); }
  uint32_t ShardFor(std::string_view key) const;
  void Submit(uint32_t shard, std::unique_ptr<ShardCommand> command);
  // True when a shard's command queue holds max_queued_commands: calls for it are refused (backpressure).
  bool Overloaded(uint32_t shard) const;
  // Whether a shard's worker is asleep, waiting for work (ShardWorker::Sleeping). For tests.
  bool ShardSleepingForTest(uint32_t shard) const;
  // Deletes acked expirations from the store (asynchronously, through the workers), and releases the
  // timers the shards hold for `ns` if its outbox has room now.
  void PersistAcks(NamespaceState* ns, std::vector<uint64_t> delivery_ids);
  // Asks every shard to offer the timers it holds for `ns` again, if some are held and the outbox has room.
  void MaybeReleaseHeld(NamespaceState* ns);
  // Changes every shard's tick (`tick_ns` in 1us..1s, checked by the caller); calls `done` with the previous
  // tick (on a worker or commit thread) once every shard runs on the new one.
  void SetTick(uint64_t tick_ns, std::function<void(uint64_t previous)> done);
  uint64_t tick_ns() const { return tick_ns_.load(std::memory_order_relaxed); }

  Namespaces& namespaces() { return namespaces_; }
  const TimeBase& time() const { return time_; }
  const Options& options() const { return options_; }
  std::atomic<uint64_t>& total_pending() { return total_pending_; }
  std::atomic<uint64_t>& total_pending_bytes() { return total_pending_bytes_; }
  uint64_t boot_epoch() const { return boot_epoch_; }
  RecoveryStats recovery_stats() const;
  TimerStore* store() { return store_.get(); }
  Metrics* metrics() { return metrics_; }

  // An expiration read back from the store (the outbox, or a cluster member's staging area) as an outbox entry.
  static Delivery DeliveryOf(const StoredExpiration& e);
  // Builds a timer key: namespace \0 id.
  static std::string Key(std::string_view ns, std::string_view id);
  // Splits a key into namespace and id.
  static std::pair<std::string_view, std::string_view> SplitKey(std::string_view key);

 private:
  void Recover();
  void Background();
  void NotifyHealth();
  // Refreshes the gauges the workers do not own (outboxes, subscribers, data dir) and counts redeliveries.
  void UpdateMetrics(bool with_disk);
  // Has every worker drop a retired namespace from its cache, and drops its metric series.
  void ForgetRetired(std::shared_ptr<NamespaceState> ns);

  const Options options_;
  const TimeBase time_;
  std::unique_ptr<TimerStore> store_;
  Metrics* const metrics_;
  Namespaces namespaces_;
  std::vector<std::unique_ptr<ShardWorker>> workers_;
  std::function<bool()> fence_;  // Set before Start, read-only after.
  const PartitionGate* gate_ = nullptr;  // Set before Start, read-only after.
  std::atomic<uint64_t> total_pending_{0};
  absl::Mutex tick_mu_;  // Serializes SetTick.
  std::atomic<uint64_t> tick_ns_;
  std::atomic<uint64_t> total_pending_bytes_{0};  // Id + payload bytes of the pending timers.
  uint64_t boot_epoch_ = 0;

  std::atomic<bool> ready_{false};
  std::atomic<bool> write_failed_{false};
  mutable absl::Mutex mu_;
  absl::Status write_status_ ABSL_GUARDED_BY(mu_);
  absl::Status recovery_status_ ABSL_GUARDED_BY(mu_);
  bool recovery_done_ ABSL_GUARDED_BY(mu_) = false;
  RecoveryStats recovery_ ABSL_GUARDED_BY(mu_);
  std::vector<Delivery> parked_ ABSL_GUARDED_BY(mu_);  // Cluster mode: recovered, waiting for the settle.
  std::function<void()> health_listener_ ABSL_GUARDED_BY(mu_);

  TimerStore::BackgroundStats store_seen_;  // Background thread only: store_->Background() at its last look.
  uint64_t redeliveries_seen_ = 0;  // Background thread only: namespaces_.redeliveries() at its last count.
  struct SlowWatch {
    uint64_t last_ready = 0;
    uint64_t seconds = 0;  // Consecutive seconds with a backlog that did not shrink.
  };
  absl::flat_hash_map<std::string, SlowWatch> slow_;  // Background thread only.
  struct RedeliveryLog {
    uint64_t last_ns = 0;   // When the last redelivery line for the namespace was logged (monotonic).
    uint64_t unlogged = 0;  // Redeliveries since.
  };
  absl::flat_hash_map<std::string, RedeliveryLog> redelivery_log_;  // Background thread only.
  std::thread recovery_thread_;
  std::thread background_thread_;
  std::mutex stop_mu_;
  std::condition_variable stop_cv_;
  bool stopping_ = false;  // Guarded by stop_mu_.
  bool started_ = false;
};

}  // namespace lawn
