// ShardWorker: the thread that owns one core::Shard.
//
// Commands arrive on a multi-producer queue (a mutex and a vector private to this worker: no lock is shared
// between shards). The worker is tickless: it sleeps until the earlier of the shard's next deadline and the
// next command. It applies commands and fires due timers into an open round (ShardRound); each round
// group-commits: its storage operations become one write (one fsync in `sync` durability) before any of its
// commands is answered or any of its expirations is handed to the outbox.
//
// With a store, rounds are committed by a second thread per shard, a pipeline of depth one: while the commit
// thread writes and syncs round N, the worker goes on applying commands and firing timers into round N+1,
// which it hands over as soon as round N is done. Small commands that arrive during N's write do not wake the
// worker: it takes them all when N is done (one thread hand-off for many; see kWakeOps). Rounds are committed
// in order, so every answer (reads included) follows the write of everything it could have seen. A failed
// write fails every later round too (the runtime refuses writes from then on), since those were applied on
// top of it. Without a store (memory durability) the worker answers each round itself, and so it does with a
// store for a small round that needs no fsync while the commit thread is idle (CommitHere).
//
// Thread-safety: Submit, EnableExpiry and Stop may be called from any thread; the ShardContext methods and
// the shard run on the worker thread, the commit of a round on the commit thread (or on the worker thread:
// memory durability, CommitHere).
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
#include "server/shard_round.h"
#include "storage/store_batch.h"
#include "storage/timer_store.h"

namespace lawn {

class Runtime;

class ShardWorker final : private ShardContext {
 public:
  // A round of at most this many storage records and bytes that needs no fsync is written by the worker
  // itself: about what two thread hand-offs cost (BENCHMARKS.md section 30).
  static constexpr size_t kMaxInlineRecords = 16;
  static constexpr size_t kMaxInlineBytes = 64 << 10;

  ShardWorker(uint32_t index, const ShardOptions& options, Runtime& runtime, TimerStore* store,
              SyncMode sync_mode);
  ShardWorker(const ShardWorker&) = delete;
  ShardWorker& operator=(const ShardWorker&) = delete;
  ~ShardWorker();

  void Start();
  // Queues a command; it runs in the worker's next round (a ListTimers may take more rounds: see Defer).
  void Submit(std::unique_ptr<ShardCommand> command);
  // Commands queued and not yet taken by the worker (approximate; for backpressure).
  size_t queued() const { return queued_.load(std::memory_order_relaxed); }
  // Whether the worker is asleep, waiting for a command, a deadline or the commit thread. For tests.
  bool Sleeping();
  // Runs the commands already queued, then ends the thread. Pending timers stay pending (and on disk).
  void Stop();
  // Fire nothing until EnableExpiry (used while recovery loads the shard). Delivery ids issued from then on
  // are greater than `min_delivery_id` (the largest recovered one).
  void EnableExpiry(uint64_t min_delivery_id);

 private:
  // ShardContext
  Shard& shard() override { return shard_; }
  StoreBatch* batch() override { return store_ != nullptr ? &open_->batch : nullptr; }
  StoreBatch* repairs() override { return store_ != nullptr ? &repairs_ : nullptr; }
  uint64_t now_mono_ns() const override { return now_mono_ns_; }
  uint32_t shard_index() const override { return index_; }
  Runtime& runtime() override { return runtime_; }
  absl::StatusOr<NamespaceState*> Namespace(std::string_view name) override;
  absl::StatusOr<NamespaceState*> AcquireNamespace(std::string_view name) override;
  void ForgetNamespace(const NamespaceState* ns) override;
  const absl::Status& write_admission() const override { return admission_; }
  RoundCounters& counters() override { return open_->counters; }
  void ReleaseHeld(NamespaceState* ns) override;
  void SetTick(uint64_t tick_ns) override;
  void ReleaseGated() override { release_gated_ = true; }
  uint64_t NextDeliveryId() override;
  void Defer() override { deferring_ = true; }
  size_t* order_budget() override { return &order_budget_; }
  // Gauges of the shard (worker thread) and counters of a committed round (the thread that committed it).
  void PublishGauges();
  void PublishCounters(const RoundCounters& counters, uint64_t expired);
  // fired_at - deadline of a committed round's firings (lawn_fired_lateness_seconds), one observation call.
  void ObserveLateness(const std::vector<Delivery>& deliveries);

  void Run();
  // Applies `commands` (moved into the open round) and, with `expire`, fires what is due.
  void Apply(std::vector<std::unique_ptr<ShardCommand>>& commands, bool expire);
  // Whether the open round has grown so large that the worker waits for the commit thread before taking more.
  bool OpenRoundFull() const;
  // Whether the worker writes the open round itself: a small round that needs no fsync, while the commit
  // thread is idle. Its write is a buffered WAL append and a few memtable inserts, cheaper than the two
  // thread hand-offs of the commit thread (BENCHMARKS.md section 30).
  bool CommitHere();
  // Hands the open round to the commit thread if it is free; returns whether it did.
  bool TryHandOff();
  // The hand-over itself. REQUIRES: mu_ held, the commit thread not busy.
  void HandOffLocked();
  // Waits for the commit thread to finish everything handed to it, hands over the open round, waits again.
  void DrainCommits();
  // The commit thread's loop, and one round's commit: write, answer, publish.
  void CommitLoop();
  void Commit(ShardRound& round);
  // Fires due timers (and held timers whose outbox has room again) into the open round.
  void Expire();
  // Reserves outbox room for a due timer, or decides to hold (one-shot) or skip (recurring) it.
  AdmitDecision Admit(const TimerView& t);
  // Records one firing admitted by Admit.
  void OnFired(const Fired& fired, int64_t fired_at);
  // Gives the pending quota of the timers fired since the last call back to the shared counters.
  void ReleaseFiredQuota();

  const uint32_t index_;
  Runtime& runtime_;
  TimerStore* const store_;
  const SyncMode sync_mode_;
  uint64_t late_after_ns_;  // Worker thread: max(kLateAfterNs, tick).
  Shard shard_;
  std::unique_ptr<ShardRound> open_;  // Worker thread: the round being filled.
  uint64_t now_mono_ns_ = 0;
  absl::Status admission_;
  DeliveryIds delivery_ids_;
  NamespaceState* admitted_ns_ = nullptr;  // The namespace of the timer Admit saw last (OnFired's).
  // The pending quota of one-shot timers fired by this Expire and not yet given back: the counters are shared
  // by every shard worker, so they are written once per run of firings in one namespace, not per timer.
  NamespaceState* fired_ns_ = nullptr;
  uint64_t fired_timers_ = 0;
  uint64_t fired_bytes_ = 0;
  std::string key_scratch_;                // A skipped firing's whole key (views split it at its namespace).
  StoreBatch repairs_;                     // Worker thread: repairs() until a round is admitted.
  std::vector<NamespaceState*> release_;   // Namespaces whose held timers to offer again this round.
  bool release_gated_ = false;             // Offer the timers held for closed partitions again this round.
  absl::flat_hash_map<std::string, NamespaceState*> namespace_cache_;
  bool deferring_ = false;  // Set by Defer during one command's Apply.
  bool last_round_ = false;  // The round being applied is the one before the worker stops.
  size_t order_budget_ = 0;  // What this round may still spend on building ordered indexes.
  std::vector<std::unique_ptr<ShardCommand>> deferred_;  // Commands that asked to be applied again.
  uint64_t next_order_drop_ns_ = 0;  // When to drop the ordered indexes no ListTimers used for a while.

  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::unique_ptr<ShardCommand>> queue_;  // Guarded by mu_.
  std::atomic<size_t> queued_{0};                       // queue_.size(), readable without mu_.
  size_t queued_ops_ = 0;                               // Guarded by mu_: ops() of the commands in queue_.
  bool sleeping_ = false;                               // Guarded by mu_.
  bool stopping_ = false;                               // Guarded by mu_.
  bool expiry_enabled_ = false;                         // Guarded by mu_.
  bool expiry_blocked_ = false;                         // Worker thread only.
  // The hand-over between worker and commit thread. The worker hands a round over only when commit_busy_ is
  // false, so at most one round is being committed while the worker fills the other.
  std::condition_variable commit_cv_;
  std::unique_ptr<ShardRound>
      committing_;                     // Guarded by mu_: handed over, not yet taken by the commit thread.
  std::unique_ptr<ShardRound> spare_;  // Guarded by mu_: the round the commit thread gave back.
  bool commit_busy_ = false;           // Guarded by mu_: from hand-over until that round is committed.
  bool commit_exit_ = false;           // Guarded by mu_.
  std::thread thread_;
  std::thread commit_thread_;
};

}  // namespace lawn
