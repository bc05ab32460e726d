// CommitStage: the one thread that writes the shards' rounds to the store.
//
// Each shard worker hands over at most one round at a time (ShardWorker's pipeline of depth one). The stage
// takes every round handed over since its last write and writes them together: one storage write, so in
// `sync` durability one fsync for all shards. After a write it waits until each worker it gave a round back
// to has either handed over its next round or said it has none (Idle): otherwise the first worker back would
// be written alone and the shards would take turns again, one fsync each. It waits at most as long as that
// write took, so a worker busy firing a burst or applying a long batch delays the others by one write at
// most. With per-shard commit threads the shards' synced writes took turns on RocksDB's single WAL, one fsync
// per shard round, which doubled the fsyncs (each about 100 us of kernel CPU on a virtual disk) without
// answering any call sooner (BENCHMARKS.md section 33). The stage only writes: a round's answers and
// expirations are given back to its own worker, which sends them.
//
// Rounds of different shards are independent (a timer lives on one shard), so writing them in one batch
// changes no ordering that matters; a shard's own rounds are written in the order handed over. A failed
// write fails every round in it (nothing of the batch was written) and, through the runtime, every later one.
//
// Thread-safety: Hand and Idle may be called from any thread (the workers'); Write from the stage and the
// workers (the store's Write is thread-safe); Start and Stop from the runtime's owner.
#pragma once

#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "server/shard_round.h"
#include "storage/store_batch.h"
#include "storage/timer_store.h"

namespace lawn {

class Runtime;

// What the stage needs of a shard worker.
class CommitSource {
 public:
  virtual ~CommitSource() = default;
  // The round handed over (exactly one per Hand).
  virtual std::unique_ptr<ShardRound> TakeRound() = 0;
  // The round's write is done, with `written`; the worker answers it, then owes the stage a Hand or an Idle.
  virtual void RoundWritten(std::unique_ptr<ShardRound> round, const absl::Status& written) = 0;
};

class CommitStage {
 public:
  CommitStage(Runtime& runtime, TimerStore& store, SyncMode sync_mode);
  CommitStage(const CommitStage&) = delete;
  CommitStage& operator=(const CommitStage&) = delete;
  ~CommitStage();

  void Start();
  // Ends the thread. REQUIRES: no round handed over and not yet given back (every worker stopped).
  void Stop();

  // `source` has a round for the stage; it hands no other before that one is given back.
  void Hand(CommitSource* source);
  // `source` was given a round back and has no next round to hand over now.
  void Idle(CommitSource* source);

  // Writes `batch` unless the store has failed before (then that failure): synced in `sync` durability
  // unless it holds only acks. Observes the write's duration; reports a failure to the runtime.
  absl::Status Write(const StoreBatch& batch);

  SyncMode sync_mode() const { return sync_mode_; }

 private:
  void Loop();

  Runtime& runtime_;
  TimerStore& store_;
  const SyncMode sync_mode_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<CommitSource*> ready_;    // Guarded by mu_.
  std::vector<CommitSource*> awaited_;  // Guarded by mu_: given a round back, not yet Hand or Idle.
  uint64_t await_until_ns_ = 0;         // Guarded by mu_: how long a ready round waits for awaited_.
  bool exit_ = false;                   // Guarded by mu_.
  // Stage thread only: the rounds of one write, and the batch of several rounds together.
  std::vector<std::pair<CommitSource*, std::unique_ptr<ShardRound>>> rounds_;
  StoreBatch combined_;
  std::thread thread_;
};

}  // namespace lawn
