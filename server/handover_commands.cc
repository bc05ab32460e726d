// Shard commands of a partition hand-over (server/handover_commands.h).
#include "server/handover_commands.h"

#include "server/partition_gate.h"
#include "server/runtime.h"

namespace lawn {

void ExportCommand::Apply(ShardContext& ctx) {
  const TimeBase& time = ctx.runtime().time();
  ctx.shard().ForEach([&](const TimerView& t) {
    if (!partitions_[PartitionOf(NamespaceOf(t), t.id, gate_.partitions())]) return;
    RecoveredTimer& out = out_->emplace_back();
    out.key.reserve(t.key_size());
    out.key.assign(t.group).append(t.id);
    out.payload.assign(t.payload);
    out.deadline_unix_ns = time.ToWall(t.deadline_ns);
    out.ttl_ns = t.ttl_ns;
    out.interval_ns = t.interval_ns;
  });
}

void DropTimersCommand::Apply(ShardContext& ctx) {
  Runtime& runtime = ctx.runtime();
  // Below the free-space guard the store keeps its copy: the partition is not this member's any more, so the
  // copy never fires here, and the sweep at the next start deletes it. (Unless the partition comes back
  // before that start: its timers are then stored twice, and recovery keeps the later record of each.)
  StoreBatch* batch = ctx.write_admission().ok() ? ctx.batch() : nullptr;
  for (const RecoveredTimer& t : timers_) {
    uint64_t bytes = 0;
    const absl::Status deleted = ctx.shard().Delete(t.key, [&](const TimerView& v) {
      bytes = v.key_size() + v.payload.size();
      if (batch != nullptr) batch->DeleteTimer(t.key, runtime.time().ToWall(v.deadline_ns));
    });
    if (!deleted.ok()) continue;
    absl::StatusOr<NamespaceState*> ns = ctx.Namespace(Runtime::SplitKey(t.key).first);
    if (ns.ok()) {
      (*ns)->pending.fetch_sub(1, std::memory_order_relaxed);
      (*ns)->pending_bytes.fetch_sub(bytes, std::memory_order_relaxed);
    }
    runtime.total_pending().fetch_sub(1, std::memory_order_relaxed);
    runtime.total_pending_bytes().fetch_sub(bytes, std::memory_order_relaxed);
  }
}

void AdoptCommand::Apply(ShardContext& ctx) {
  runtime_ = &ctx.runtime();
  StoreBatch* batch = ctx.batch();
  for (Delivery& d : staged_) {
    const uint64_t staging_id = d.delivery_id;
    d.delivery_id = ctx.NextDeliveryId();
    if (batch != nullptr) {
      batch->PutExpiration(d.delivery_id, d.key, d.deadline_unix_ns, d.ttl_ns, d.interval_ns, d.payload,
                           d.fired_at_unix_ns, d.attempt);
      batch->DeleteIncoming(staging_id);
    }
  }
}

void AdoptCommand::Done(const absl::Status& write_status) {
  *status_ = write_status;
  if (!write_status.ok() || runtime_ == nullptr) return;
  runtime_->PublishPersisted(std::move(staged_), "hand-over");
}

}  // namespace lawn
