#include "server/worker_commands.h"

#include "server/namespaces.h"
#include "server/runtime.h"

namespace lawn {

void RecoverCommand::Apply(ShardContext& ctx) {
  Runtime& runtime = ctx.runtime();
  for (const RecoveredTimer& t : timers_) {
    StartSpec spec;
    spec.id = t.key;
    spec.payload = t.payload;
    spec.when = When::At(runtime.time().ToMono(t.deadline_unix_ns));
    spec.interval_ns = t.interval_ns;
    spec.ttl_ns = t.ttl_ns;
    // A key is stored once (under its current deadline), so Start fails only for a record that could never
    // have been written.
    if (!ctx.shard().Start(spec, ctx.now_mono_ns()).ok()) continue;
    const uint64_t bytes = t.key.size() + t.payload.size();
    absl::StatusOr<NamespaceState*> ns = ctx.Namespace(Runtime::SplitKey(t.key).first);
    if (ns.ok()) {
      (*ns)->pending.fetch_add(1, std::memory_order_relaxed);
      (*ns)->pending_bytes.fetch_add(bytes, std::memory_order_relaxed);
    }
    runtime.total_pending().fetch_add(1, std::memory_order_relaxed);
    runtime.total_pending_bytes().fetch_add(bytes, std::memory_order_relaxed);
  }
}

}  // namespace lawn
