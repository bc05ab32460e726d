// Internal shard commands that do not answer an RPC: recovery loading, barriers, and ack persistence.
//
// Thread-safety: see ShardCommand; Latch is thread-safe.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "server/shard_command.h"

namespace lawn {

// A timer read back from the store, owned.
struct RecoveredTimer {
  std::string key;
  std::string payload;
  int64_t deadline_unix_ns = 0;
  uint64_t ttl_ns = 0;
  uint64_t interval_ns = 0;
};

// Counts down once per shard; Wait returns when all have counted.
class Latch {
 public:
  explicit Latch(size_t count) : count_(count) {}
  void CountDown() {
    absl::MutexLock lock(&mu_);
    --count_;
  }
  void Wait() {
    absl::MutexLock lock(&mu_);
    mu_.Await(absl::Condition(+[](size_t* c) { return *c == 0; }, &count_));
  }

 private:
  absl::Mutex mu_;
  size_t count_ ABSL_GUARDED_BY(mu_);
};

// Puts recovered timers into the shard (no storage write: they come from the store).
class RecoverCommand final : public ShardCommand {
 public:
  explicit RecoverCommand(std::vector<RecoveredTimer> timers) : timers_(std::move(timers)) {}
  void Apply(ShardContext& ctx) override;
  void Done(const absl::Status&) override {}

 private:
  std::vector<RecoveredTimer> timers_;
};

class BarrierCommand final : public ShardCommand {
 public:
  explicit BarrierCommand(std::shared_ptr<Latch> latch) : latch_(std::move(latch)) {}
  void Apply(ShardContext&) override {}
  void Done(const absl::Status&) override { latch_->CountDown(); }

 private:
  std::shared_ptr<Latch> latch_;
};

// Offers the timers the shard holds for a namespace (its outbox was full) to the outbox again.
class ReleaseCommand final : public ShardCommand {
 public:
  explicit ReleaseCommand(NamespaceState* ns) : ns_(ns) {}
  void Apply(ShardContext& ctx) override { ctx.ReleaseHeld(ns_); }
  void Done(const absl::Status&) override {}

 private:
  NamespaceState* ns_;
};

// Runs `inner` and counts `latch` down after its Done (Runtime::RunOnEveryShard).
class LatchedCommand final : public ShardCommand {
 public:
  LatchedCommand(std::unique_ptr<ShardCommand> inner, std::shared_ptr<Latch> latch)
      : inner_(std::move(inner)), latch_(std::move(latch)) {}
  void Apply(ShardContext& ctx) override { inner_->Apply(ctx); }
  void Done(const absl::Status& write_status) override {
    inner_->Done(write_status);
    latch_->CountDown();
  }

 private:
  std::unique_ptr<ShardCommand> inner_;
  std::shared_ptr<Latch> latch_;
};

// Offers the timers held for closed partitions (and for full outboxes) again: a partition opened.
class ReleaseGatedCommand final : public ShardCommand {
 public:
  void Apply(ShardContext& ctx) override { ctx.ReleaseGated(); }
  void Done(const absl::Status&) override {}
};

// Drops a retired namespace from the worker's cache; the state lives until the last worker has done so.
class ForgetNamespaceCommand final : public ShardCommand {
 public:
  explicit ForgetNamespaceCommand(std::shared_ptr<NamespaceState> ns) : ns_(std::move(ns)) {}
  void Apply(ShardContext& ctx) override { ctx.ForgetNamespace(ns_.get()); }
  void Done(const absl::Status&) override {}

 private:
  std::shared_ptr<NamespaceState> ns_;
};

// Changes the shard's tick; `done` runs (on a worker or commit thread) once every shard has changed it.
class SetTickCommand final : public ShardCommand {
 public:
  struct State {
    explicit State(size_t shards, std::function<void()> done) : remaining(shards), done(std::move(done)) {}
    std::atomic<size_t> remaining;
    std::function<void()> done;
  };
  SetTickCommand(uint64_t tick_ns, std::shared_ptr<State> state) : tick_ns_(tick_ns), state_(std::move(state)) {}
  void Apply(ShardContext& ctx) override { ctx.SetTick(tick_ns_); }
  void Done(const absl::Status&) override {
    if (state_->remaining.fetch_sub(1, std::memory_order_acq_rel) == 1) state_->done();
  }

 private:
  uint64_t tick_ns_;
  std::shared_ptr<State> state_;
};

// Deletes acked expirations from the outbox column family. Not synced on its own: a lost ack only means a
// redelivery after a crash, which at-least-once allows.
class AckCommand final : public ShardCommand {
 public:
  explicit AckCommand(std::vector<uint64_t> ids) : ids_(std::move(ids)) {}
  void Apply(ShardContext& ctx) override {
    // Below the free-space guard the deletes are dropped rather than written: a write refused by the guard
    // would put lawnd into the failed state, while a lost ack only means a redelivery after a restart.
    if (ctx.batch() == nullptr || !ctx.write_admission().ok()) return;
    for (uint64_t id : ids_) ctx.batch()->DeleteExpiration(id);
  }
  void Done(const absl::Status&) override {}

 private:
  std::vector<uint64_t> ids_;
};

}  // namespace lawn
