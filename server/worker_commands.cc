#include "server/worker_commands.h"

#include <optional>

#include "server/namespaces.h"
#include "server/runtime.h"
#include "spdlog/spdlog.h"

namespace lawn {

void RecoverCommand::Apply(ShardContext& ctx) {
  Runtime& runtime = ctx.runtime();
  const TimeBase& time = runtime.time();
  // Repairs below are written in this round, or, when the free-space guard refuses it, in the first round it
  // admits (nothing writes before that).
  StoreBatch* batch = ctx.write_admission().ok() ? ctx.batch() : ctx.repairs();
  size_t doubled = 0;
  size_t moved = 0;
  for (const RecoveredTimer& t : timers_) {
    StartSpec spec;
    spec.id = t.key;
    spec.payload = t.payload;
    spec.when = When::At(time.ToMono(t.deadline_unix_ns));
    spec.interval_ns = t.interval_ns;
    spec.ttl_ns = t.ttl_ns;
    int64_t bytes = static_cast<int64_t>(t.key.size() + t.payload.size());
    int64_t added = 1;
    if (std::optional<TimerView> held = ctx.shard().Get(t.key)) {
      // The key is stored under two deadlines: a delete was lost (a hand-over's drop that the free-space
      // guard refused, then the partition came back). Which write was last is unknown, so the later deadline
      // is kept (never early) and the other record deleted.
      ++doubled;
      const int64_t held_deadline = time.ToWall(held->deadline_ns);
      if (t.deadline_unix_ns <= held_deadline) {
        if (batch != nullptr && t.deadline_unix_ns != held_deadline) {
          batch->DeleteTimer(t.key, t.deadline_unix_ns);
        }
        continue;
      }
      if (batch != nullptr) batch->DeleteTimer(t.key, held_deadline);
      bytes -= static_cast<int64_t>(held->key_size() + held->payload.size());
      added = 0;
      spec.replace = true;
    }
    int64_t loaded_deadline = t.deadline_unix_ns;
    if (!ctx.shard()
             .Start(spec, ctx.now_mono_ns(),
                    [&](const TimerView& v) { loaded_deadline = time.ToWall(v.deadline_ns); })
             .ok()) {
      continue;  // Only for a record that could never have been written.
    }
    if (loaded_deadline != t.deadline_unix_ns) {
      // A deadline at the very bottom of the int64 range (1677) has no monotonic time of its own in this
      // process (TimeBase): the record moves to the one the engine holds, which later deletes name.
      ++moved;
      if (batch != nullptr) {
        batch->DeleteTimer(t.key, t.deadline_unix_ns);
        batch->PutTimer(t.key, loaded_deadline, t.ttl_ns, t.interval_ns, t.payload);
      }
    }
    absl::StatusOr<NamespaceState*> ns = ctx.Namespace(Runtime::SplitKey(t.key).first);
    if (ns.ok()) {
      (*ns)->pending.fetch_add(static_cast<uint64_t>(added), std::memory_order_relaxed);
      (*ns)->pending_bytes.fetch_add(static_cast<uint64_t>(bytes), std::memory_order_relaxed);
    }
    runtime.total_pending().fetch_add(static_cast<uint64_t>(added), std::memory_order_relaxed);
    runtime.total_pending_bytes().fetch_add(static_cast<uint64_t>(bytes), std::memory_order_relaxed);
  }
  if (doubled + moved > 0) {
    spdlog::warn(
        "shard {}: {} timers were stored under two deadlines (the later kept, the other record {}), {} "
        "records moved to a deadline this process can hold",
        ctx.shard_index(), doubled, ctx.write_admission().ok() ? "deleted" : "deleted once the disk has room",
        moved);
  }
}

}  // namespace lawn
