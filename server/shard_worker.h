// ShardWorker: the thread that owns one core::Shard.
//
// Commands arrive on a multi-producer queue (a mutex and a vector private to this worker: no lock is shared
// between shards). The worker is tickless: it sleeps until the earlier of the shard's next deadline and the
// next command. Each round group-commits: every command queued since the last round plus the expiry of due
// timers becomes one storage write (one fsync in `sync` durability) before any of them is answered or any
// expiration is handed to the outbox.
//
// Thread-safety: Submit and Stop may be called from any thread; everything else runs on the worker thread.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "core/shard.h"
#include "server/delivery.h"
#include "server/delivery_ids.h"
#include "server/shard_command.h"
#include "storage/store_batch.h"
#include "storage/timer_store.h"

namespace lawn {

class Runtime;

class ShardWorker final : private ShardContext {
 public:
  ShardWorker(uint32_t index, const ShardOptions& options, Runtime& runtime, TimerStore* store,
              SyncMode sync_mode);
  ShardWorker(const ShardWorker&) = delete;
  ShardWorker& operator=(const ShardWorker&) = delete;
  ~ShardWorker();

  void Start();
  // Queues a command; it runs in the worker's next round.
  void Submit(std::unique_ptr<ShardCommand> command);
  // Commands queued and not yet taken by the worker (approximate; for backpressure).
  size_t queued() const { return queued_.load(std::memory_order_relaxed); }
  // Runs the commands already queued, then ends the thread. Pending timers stay pending (and on disk).
  void Stop();
  // Fire nothing until EnableExpiry (used while recovery loads the shard). Delivery ids issued from then on
  // are greater than `min_delivery_id` (the largest recovered one).
  void EnableExpiry(uint64_t min_delivery_id);

 private:
  // ShardContext
  Shard& shard() override { return shard_; }
  StoreBatch* batch() override { return store_ != nullptr ? &batch_ : nullptr; }
  uint64_t now_mono_ns() const override { return now_mono_ns_; }
  uint32_t shard_index() const override { return index_; }
  Runtime& runtime() override { return runtime_; }
  absl::StatusOr<NamespaceState*> Namespace(std::string_view name) override;
  absl::StatusOr<NamespaceState*> AcquireNamespace(std::string_view name) override;
  void ForgetNamespace(const NamespaceState* ns) override;
  const absl::Status& write_admission() const override { return admission_; }
  RoundCounters& counters() override { return counters_; }
  void ReleaseHeld(NamespaceState* ns) override;
  void PublishMetrics(uint64_t expired);

  void Run();
  void RunRound(std::vector<std::unique_ptr<ShardCommand>>& commands, bool expire);
  // Fires due timers (and held timers whose outbox has room again) into the batch and `deliveries_`.
  void Expire();
  // Reserves outbox room for a due timer, or decides to hold (one-shot) or skip (recurring) it.
  AdmitDecision Admit(const TimerView& t);
  // Records one firing admitted by Admit.
  void OnFired(const Fired& fired, int64_t fired_at);

  const uint32_t index_;
  Runtime& runtime_;
  TimerStore* const store_;
  const SyncMode sync_mode_;
  const uint64_t late_after_ns_;
  Shard shard_;
  StoreBatch batch_;
  uint64_t now_mono_ns_ = 0;
  absl::Status admission_;
  RoundCounters counters_;
  DeliveryIds delivery_ids_;
  NamespaceState* admitted_ns_ = nullptr;  // The namespace of the timer Admit saw last (OnFired's).
  std::vector<NamespaceState*> release_;   // Namespaces whose held timers to offer again this round.
  absl::flat_hash_map<std::string, NamespaceState*> namespace_cache_;
  std::vector<std::pair<NamespaceState*, Delivery>> deliveries_;  // Fired this round, published after the write.

  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::unique_ptr<ShardCommand>> queue_;  // Guarded by mu_.
  std::atomic<size_t> queued_{0};                       // queue_.size(), readable without mu_.
  bool sleeping_ = false;                               // Guarded by mu_.
  bool stopping_ = false;                               // Guarded by mu_.
  bool expiry_enabled_ = false;                         // Guarded by mu_.
  bool expiry_blocked_ = false;                         // Worker thread only.
  std::thread thread_;
};

}  // namespace lawn
