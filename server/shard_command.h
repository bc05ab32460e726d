// ShardCommand: a unit of work a shard worker runs on its own thread, and the context it runs in.
//
// A worker runs commands in rounds: Apply every queued command (mutating the shard and recording storage
// operations in one batch), fire what is due, write the batch once (group commit), then call Done on each
// command with the write's status. A command answers its RPC in Done, so nothing is acknowledged before it is
// written. Commands that only read leave the batch alone and see Done(OK)... or the write's failure, which
// they may ignore.
//
// Thread-safety: Apply and Done run on the worker thread; a command is owned by the worker until Done returns.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "absl/status/status.h"
#include "core/shard.h"
#include "storage/store_batch.h"

namespace lawn {

class Runtime;
class NamespaceState;

// A shard timer's namespace: its group (core's), without the group's trailing 0x00.
inline std::string_view NamespaceOf(const TimerView& t) {
  return t.group.empty() ? t.group : t.group.substr(0, t.group.size() - 1);
}

// Operations applied in one round, published to the metrics once per round.
struct RoundCounters {
  uint64_t starts = 0;
  uint64_t deletes = 0;
  uint64_t reschedules = 0;
  uint64_t skipped = 0;  // Recurring firings skipped because their namespace's outbox was full.
  uint64_t held = 0;     // Due one-shot timers held back for the same reason.
};

class ShardContext {
 public:
  virtual ~ShardContext() = default;
  virtual Shard& shard() = 0;
  // Storage operations of this round; nullptr in `memory` durability.
  virtual StoreBatch* batch() = 0;
  // Storage operations for the first round the free-space guard admits: recovery's repairs of the store,
  // which must reach it before anything else writes those keys (while the guard refuses, nothing does).
  // nullptr in `memory` durability.
  virtual StoreBatch* repairs() = 0;
  virtual uint64_t now_mono_ns() const = 0;
  virtual uint32_t shard_index() const = 0;
  virtual Runtime& runtime() = 0;
  // The namespace's state, cached per worker. RESOURCE_EXHAUSTED beyond the namespace limit. For a
  // namespace that cannot be retired meanwhile (it holds the timer the command acts on).
  virtual absl::StatusOr<NamespaceState*> Namespace(std::string_view name) = 0;
  // As Namespace, acquired (NamespaceState::TryAcquire): for commands that may add to it; Release when done.
  virtual absl::StatusOr<NamespaceState*> AcquireNamespace(std::string_view name) = 0;
  // Drops a retired namespace from the worker's cache.
  virtual void ForgetNamespace(const NamespaceState* ns) = 0;
  // Status of the free-space guard for this round: writes must not be applied when it is not OK.
  virtual const absl::Status& write_admission() const = 0;
  virtual RoundCounters& counters() = 0;
  // Offers the shard's timers held for `ns` (its outbox was full) to the outbox again in this round.
  virtual void ReleaseHeld(NamespaceState* ns) = 0;
  // Changes the shard's tick (and with it the `late` threshold) from this round on.
  virtual void SetTick(uint64_t tick_ns) = 0;
  // Offers the timers the shard holds for a closed partition (PartitionGate::kHoldGroup), and those every
  // cached namespace holds, to the outbox again in this round (a partition opened).
  virtual void ReleaseGated() = 0;
  // A new delivery id of this shard (for expirations handed over by another member).
  virtual uint64_t NextDeliveryId() = 0;
  // Called from Apply: this command cannot finish in this round (it waits for the shard's ordered index of
  // its namespace to be built). The worker keeps it, skips its Done, and applies it again in the next round,
  // which it starts without sleeping.
  virtual void Defer() = 0;
  // What is left of this round's budget for building ordered indexes (Shard::RequestOrder's), shared by the
  // round's commands: small, so the rounds that build stay short; unbounded once the worker is stopping.
  virtual size_t* order_budget() = 0;
};

class ShardCommand {
 public:
  ShardCommand() = default;
  ShardCommand(const ShardCommand&) = delete;
  ShardCommand& operator=(const ShardCommand&) = delete;
  virtual ~ShardCommand() = default;

  // Runs against the shard; records storage operations in ctx.batch().
  virtual void Apply(ShardContext& ctx) = 0;
  // Called after the round's storage write with its status (OK in memory mode or when nothing was written).
  virtual void Done(const absl::Status& write_status) = 0;
  // About how many timer operations Apply does: what the worker weighs when deciding whether to wake for it.
  virtual size_t ops() const { return 1; }
};

}  // namespace lawn
