#include "server/timer_commands.h"

#include <algorithm>
#include <optional>

#include "core/prefetch_run.h"
#include "server/namespaces.h"
#include "server/proto_convert.h"
#include "server/runtime.h"

namespace lawn {

namespace {

std::string Describe(std::string_view key) {
  const auto [ns, id] = Runtime::SplitKey(key);
  return "timer '" + PrintableId(id) + "' in namespace '" + std::string(ns) + "'";
}

absl::Status AlreadyExists(std::string_view key) {
  return absl::AlreadyExistsError(Describe(key) + " already exists; set replace to overwrite it");
}

When WhenOf(const Runtime& runtime, bool by_ttl, uint64_t ttl_ns, int64_t deadline_unix_ns) {
  // A deadline in the past maps to a monotonic time already passed: it fires at once.
  return by_ttl ? When::After(ttl_ns) : When::At(runtime.time().ToMono(deadline_unix_ns));
}

// A storage failure turns a success that was not written into the write's error.
absl::Status AfterWrite(const absl::Status& applied, bool wrote, const absl::Status& write_status) {
  if (applied.ok() && wrote && !write_status.ok()) {
    return absl::UnavailableError("not stored: " + std::string(write_status.message()));
  }
  return applied;
}

// Why a start that adds `added_timers` timers and `added_bytes` bytes of ids and payloads would pass a
// pending quota, given the counts before it (lawnd-wide, and in namespace `ns_name`); "" when it fits.
std::string QuotaRefusal(const Options& options, std::string_view ns_name, uint64_t total, uint64_t in_ns,
                         uint64_t total_bytes, uint64_t ns_bytes, uint64_t added_timers,
                         uint64_t added_bytes) {
  if (added_timers != 0 && total + added_timers > options.max_pending_timers) {
    return "lawnd holds max_pending_timers (" + std::to_string(options.max_pending_timers) +
           ") pending timers; delete some or raise the limit";
  }
  if (added_timers != 0 && in_ns + added_timers > options.max_pending_per_namespace) {
    return "namespace '" + std::string(ns_name) + "' holds max_pending_per_namespace (" +
           std::to_string(options.max_pending_per_namespace) + ") pending timers";
  }
  if (added_bytes != 0 && total_bytes + added_bytes > options.max_pending_bytes) {
    return "pending timers hold max_pending_bytes (" + std::to_string(options.max_pending_bytes) +
           " bytes of ids and payloads); delete some, use smaller payloads or raise the limit";
  }
  if (added_bytes != 0 && ns_bytes + added_bytes > options.max_pending_bytes_per_namespace) {
    return "namespace '" + std::string(ns_name) + "' holds max_pending_bytes_per_namespace (" +
           std::to_string(options.max_pending_bytes_per_namespace) + " bytes of ids and payloads)";
  }
  return "";
}

// Quota taken from the shared pending counters (lawnd-wide and one namespace's) ahead of a run of starts into
// that namespace. The counters are written by every shard worker: four atomic adds per start, on cache lines
// the other workers write too, took most of StartCommand::Apply's time in batched starts (BENCHMARKS.md
// section 34). A run takes at once what all its starts could add, if all four bounds allow that (else each
// start takes its own share, as a lone start does); each start draws on it, and what is left goes back when
// the run ends (at the command's next namespace, or its end). The counters therefore never admit past a
// bound, and are exact again before the command's round is written. Meanwhile they are high by what the run
// has not used yet: near a bound, a start elsewhere may be refused that would fit once the run ends, as with
// per-start adds two starts racing for the last room can both be refused (a refused start is retried).
class QuotaHold {
 public:
  explicit QuotaHold(Runtime& runtime) : runtime_(runtime) {}
  QuotaHold(const QuotaHold&) = delete;
  QuotaHold& operator=(const QuotaHold&) = delete;
  ~QuotaHold() { Release(); }

  // Takes `timers` and `bytes` for `state` if the bounds of `options` allow all of it and returns ""; else
  // takes nothing and returns QuotaRefusal's message.
  std::string Take(NamespaceState& state, std::string_view ns_name, uint64_t timers, uint64_t bytes,
                   const Options& options) {
    Release();
    // A share that clearly does not fit takes nothing, not even for a moment (it would be counted against
    // starts elsewhere until taken back).
    std::string refused =
        QuotaRefusal(options, ns_name, runtime_.total_pending().load(std::memory_order_relaxed),
                     state.pending.load(std::memory_order_relaxed),
                     runtime_.total_pending_bytes().load(std::memory_order_relaxed),
                     state.pending_bytes.load(std::memory_order_relaxed), timers, bytes);
    if (!refused.empty()) return refused;
    const uint64_t total = runtime_.total_pending().fetch_add(timers, std::memory_order_relaxed);
    const uint64_t in_ns = state.pending.fetch_add(timers, std::memory_order_relaxed);
    const uint64_t total_bytes = runtime_.total_pending_bytes().fetch_add(bytes, std::memory_order_relaxed);
    const uint64_t ns_bytes = state.pending_bytes.fetch_add(bytes, std::memory_order_relaxed);
    state_ = &state;
    timers_ = timers;
    bytes_ = bytes;
    refused = QuotaRefusal(options, ns_name, total, in_ns, total_bytes, ns_bytes, timers, bytes);
    if (!refused.empty()) Release();  // Another start came first.
    return refused;
  }
  // Draws one start's share from the hold; false (nothing drawn) if the hold does not cover it.
  bool Draw(uint64_t timers, uint64_t bytes) {
    if (timers > timers_ || bytes > bytes_) return false;
    timers_ -= timers;
    bytes_ -= bytes;
    return true;
  }
  // Puts back a share drawn for a start that failed.
  void Undraw(uint64_t timers, uint64_t bytes) {
    timers_ += timers;
    bytes_ += bytes;
  }
  // Gives what is left back to the counters.
  void Release() {
    if (state_ == nullptr) return;
    // Skipped when all was drawn (a lone start's share): no locked instruction on the shared lines.
    if (timers_ != 0) {
      runtime_.total_pending().fetch_sub(timers_, std::memory_order_relaxed);
      state_->pending.fetch_sub(timers_, std::memory_order_relaxed);
    }
    if (bytes_ != 0) {
      runtime_.total_pending_bytes().fetch_sub(bytes_, std::memory_order_relaxed);
      state_->pending_bytes.fetch_sub(bytes_, std::memory_order_relaxed);
    }
    state_ = nullptr;
    timers_ = bytes_ = 0;
  }

 private:
  Runtime& runtime_;
  NamespaceState* state_ = nullptr;  // Whose counters the hold was taken from; nullptr: none held.
  uint64_t timers_ = 0;
  uint64_t bytes_ = 0;
};

}  // namespace

// ---- Start ------------------------------------------------------------------------------------------------

void StartCommand::Apply(ShardContext& ctx) {
  Runtime& runtime = ctx.runtime();
  const Options& options = runtime.options();
  // The namespace is held acquired while its items are applied, so it cannot be retired between the checks
  // and the start; consecutive items of one namespace (the usual batch) share one acquisition.
  NamespaceState* held = nullptr;
  struct Releaser {
    NamespaceState*& ns;
    ~Releaser() {
      if (ns != nullptr) ns->Release();
    }
  } releaser{held};
  QuotaHold hold(runtime);  // Declared after `releaser`: given back while the namespace is still held.
  // The items' index chunks and records are loaded a few items ahead (core/prefetch_run.h): at a million
  // timers each start otherwise waits on its own cache misses (BENCHMARKS.md section 39).
  RunPrefetched(
      ctx.shard(), indices_.size(),
      [&](size_t position) { return TimerIdHash(batch_->ops[indices_[position]].key); },
      [&](size_t position) {
        StartOp& op = batch_->ops[indices_[position]];
        if (absl::Status admitted = runtime.AdmitWrite(ctx.write_admission(), op.key); !admitted.ok()) {
          op.status = std::move(admitted);
          return;
        }
        const auto [ns_name, id] = Runtime::SplitKey(op.key);
        if (held == nullptr || held->name() != ns_name) {
          hold.Release();  // The last run's unused quota, before the checks below read the counters.
          // A start refused into a namespace that does not exist yet must not create it, not even until the
          // background pass forgets empty namespaces (it would show in GetStats and take a max_namespaces
          // slot meanwhile): the quotas are checked as for an empty namespace first. (A start racing with
          // others for the last room may still pass this check and be refused below, after the namespace was
          // created.) The namespace found cannot be freed meanwhile: a retired one stays alive until this
          // worker has dropped it, which it does between commands.
          const NamespaceState* found = runtime.namespaces().Find(ns_name);
          if (found == nullptr || !found->exists()) {
            std::string refused =
                QuotaRefusal(options, ns_name, runtime.total_pending().load(std::memory_order_relaxed), 0,
                             runtime.total_pending_bytes().load(std::memory_order_relaxed), 0, 1,
                             op.key.size() + op.payload.size());
            if (!refused.empty()) {
              op.status = absl::ResourceExhaustedError(std::move(refused));
              return;
            }
          }
          if (held != nullptr) held->Release();
          held = nullptr;
          absl::StatusOr<NamespaceState*> ns = ctx.AcquireNamespace(ns_name);
          if (!ns.ok()) {
            op.status = ns.status();
            return;
          }
          held = *ns;
          // The quota of this start and of the command's next starts into the same namespace, at once.
          uint64_t run_timers = 0, run_bytes = 0;
          for (size_t next = position; next < indices_.size(); ++next) {
            const StartOp& later = batch_->ops[indices_[next]];
            if (Runtime::SplitKey(later.key).first != ns_name) break;
            ++run_timers;
            run_bytes += later.key.size() + later.payload.size();
          }
          if (run_timers > 1) hold.Take(*held, ns_name, run_timers, run_bytes, options);
        }
        NamespaceState& state = *held;
        // A namespace whose expirations are not being consumed takes no new timers: they could not fire.
        if (const std::string full = state.outbox.FullReason(); !full.empty()) {
          op.status =
              absl::ResourceExhaustedError("namespace '" + std::string(ns_name) + "': its outbox holds " +
                                           full + " of unacknowledged expirations; subscribe and ack them");
          return;
        }
        // A replace needs the timer it replaces (its bytes for the quota, its record's key). A plain start
        // that draws from its run's hold lets Start find a duplicate, so a batch probes the index once per
        // start.
        const std::optional<TimerView> existing =
            op.replace ? ctx.shard().Get(op.key) : std::optional<TimerView>();
        const bool exists = existing.has_value();
        // Quotas are reserved before the start (taken into the hold, given back on refusal or failure) so
        // concurrent shards never admit past a bound together. A replace changes the byte count only.
        const uint64_t bytes = op.key.size() + op.payload.size();
        const uint64_t old_bytes = exists ? existing->key_size() + existing->payload.size() : 0;
        const uint64_t added_timers = exists ? 0 : 1;
        const uint64_t added_bytes = bytes > old_bytes ? bytes - old_bytes : 0;
        const uint64_t freed_bytes = old_bytes > bytes ? old_bytes - bytes : 0;
        if (!hold.Draw(added_timers, added_bytes)) {
          // Without a hold, a plain start looks for a duplicate before it touches the shared counters: a
          // retried start is ALREADY_EXISTS at a bound too, and a duplicate never counts against one, even
          // for a moment.
          if (!op.replace && ctx.shard().Get(op.key).has_value()) {
            op.status = AlreadyExists(op.key);
            return;
          }
          // This start's own share (a run's hold that does not cover it was given back first).
          if (std::string refused = hold.Take(state, ns_name, added_timers, added_bytes, options);
              !refused.empty()) {
            op.status = absl::ResourceExhaustedError(std::move(refused));
            return;
          }
          hold.Draw(added_timers, added_bytes);  // Covered exactly.
        }
        StartSpec spec;
        spec.id = op.key;
        spec.payload = op.payload;
        spec.when = WhenOf(runtime, op.by_ttl, op.ttl_ns, op.deadline_unix_ns);
        spec.interval_ns = op.interval_ns;
        spec.replace = op.replace;
        // A replaced timer's record is stored under its own deadline: the replacement deletes it.
        std::optional<int64_t> replaced_deadline;
        if (exists && ctx.batch() != nullptr)
          replaced_deadline = runtime.time().ToWall(existing->deadline_ns);
        op.status = ctx.shard().Start(spec, ctx.now_mono_ns(), [&](const TimerView& t) {
          // The view splits the id at its namespace (core's groups); op.key is the whole of it.
          const int64_t deadline = runtime.time().ToWall(t.deadline_ns);
          if (op.out != nullptr) FillTimer(op.key, t.payload, deadline, t.ttl_ns, t.interval_ns, op.out);
          if (StoreBatch* batch = ctx.batch()) {
            if (replaced_deadline) batch->DeleteTimer(op.key, *replaced_deadline);
            batch->PutTimer(op.key, deadline, t.ttl_ns, t.interval_ns, t.payload);
          }
        });
        if (absl::IsAlreadyExists(op.status)) op.status = AlreadyExists(op.key);
        if (op.status.ok()) {
          ctx.counters().starts++;
          if (freed_bytes != 0) {
            runtime.total_pending_bytes().fetch_sub(freed_bytes, std::memory_order_relaxed);
            state.pending_bytes.fetch_sub(freed_bytes, std::memory_order_relaxed);
          }
        } else {
          hold.Undraw(added_timers, added_bytes);  // Given back with the hold.
        }
      });
}

void StartCommand::Done(const absl::Status& write_status) {
  for (uint32_t i : indices_) {
    StartOp& op = batch_->ops[i];
    op.status = AfterWrite(op.status, true, write_status);
  }
  if (batch_->remaining.fetch_sub(1, std::memory_order_acq_rel) == 1) batch_->Finish();
}

void StartBatch::Finish() {
  timer.Observe();
  if (batch_response == nullptr) {
    call->Reply(ToGrpcStatus(ops[0].status));
    return;
  }
  for (size_t i = 0; i < ops.size(); ++i) {
    v1::StartTimerResult* result = batch_response->mutable_results(static_cast<int>(i));
    result->set_code(static_cast<int32_t>(ops[i].status.code()));
    if (!ops[i].status.ok()) {
      result->set_message(std::string(ops[i].status.message()));
      if (ops[i].out != nullptr) result->clear_timer();  // Filled by Apply before the write failed.
    }
  }
  call->Reply(grpc::Status::OK);
}

// ---- Delete / Reschedule / Get ----------------------------------------------------------------------------

void KeyCommand::Apply(ShardContext& ctx) {
  Runtime& runtime = ctx.runtime();
  Shard& shard = ctx.shard();
  if (kind_ != Kind::kGet) {
    if (absl::Status admitted = runtime.AdmitWrite(ctx.write_admission(), key_); !admitted.ok()) {
      status_ = std::move(admitted);
      return;
    }
  }
  // key_ is the timer's whole id (the view splits it at its namespace).
  auto fill = [&](const TimerView& t) {
    FillTimer(key_, t.payload, runtime.time().ToWall(t.deadline_ns), t.ttl_ns, t.interval_ns, out_);
  };
  switch (kind_) {
    case Kind::kGet: {
      std::optional<TimerView> t = shard.Get(key_);
      status_ = t ? absl::OkStatus() : absl::NotFoundError("no pending " + Describe(key_));
      if (t) fill(*t);
      return;
    }
    case Kind::kDelete: {
      uint64_t bytes = 0;
      status_ = shard.Delete(key_, [&](const TimerView& t) {
        fill(t);
        bytes = t.key_size() + t.payload.size();
        if (StoreBatch* batch = ctx.batch()) batch->DeleteTimer(key_, runtime.time().ToWall(t.deadline_ns));
      });
      if (status_.ok()) {
        wrote_ = true;
        ctx.counters().deletes++;
        absl::StatusOr<NamespaceState*> ns = ctx.Namespace(Runtime::SplitKey(key_).first);
        if (ns.ok()) {
          (*ns)->pending.fetch_sub(1, std::memory_order_relaxed);
          (*ns)->pending_bytes.fetch_sub(bytes, std::memory_order_relaxed);
        }
        runtime.total_pending().fetch_sub(1, std::memory_order_relaxed);
        runtime.total_pending_bytes().fetch_sub(bytes, std::memory_order_relaxed);
      } else {
        status_ = absl::NotFoundError("no pending " + Describe(key_));
      }
      return;
    }
    case Kind::kReschedule: {
      const When when = WhenOf(runtime, by_ttl_, ttl_ns_, deadline_unix_ns_);
      // The record moves with the deadline (storage/FORMAT.md): the old one is deleted by its deadline.
      status_ = shard.Reschedule(key_, when, ctx.now_mono_ns(), [&](const TimerView& t, uint64_t previous) {
        fill(t);
        if (StoreBatch* batch = ctx.batch()) {
          batch->DeleteTimer(key_, runtime.time().ToWall(previous));
          batch->PutTimer(key_, runtime.time().ToWall(t.deadline_ns), t.ttl_ns, t.interval_ns, t.payload);
        }
      });
      if (status_.ok()) {
        wrote_ = true;
        ctx.counters().reschedules++;
      } else if (status_.code() == absl::StatusCode::kNotFound) {
        status_ = absl::NotFoundError("no pending " + Describe(key_));
      }
      return;
    }
  }
}

void KeyCommand::Done(const absl::Status& write_status) {
  timer_.Observe();
  call_->Reply(ToGrpcStatus(AfterWrite(status_, wrote_, write_status)));
}

// ---- List -------------------------------------------------------------------------------------------------

void ListCommand::Apply(ShardContext& ctx) {
  // Keys are namespace \0 id, so a namespace is one group of the shard's ordered index, and its timers one
  // range of it: a page costs O(log n + limit) on the worker, whatever the other namespaces hold.
  const std::string prefix = Runtime::Key(state_->ns, "");
  const std::string start = prefix + (state_->has_after ? state_->after : std::string());
  // The shard keeps a namespace's ordered index only while it is being listed: the first page of a large
  // namespace waits (in later rounds, none of them long) while it is built.
  if (!ctx.shard().RequestOrder(start, ctx.now_mono_ns(), ctx.order_budget())) {
    ctx.Defer();
    return;
  }
  read_ = true;
  std::vector<v1::Timer>& out = state_->per_shard[shard_];
  Runtime& runtime = ctx.runtime();
  ctx.shard().VisitGroupInOrder(start, /*inclusive=*/!state_->has_after, [&](const TimerView& t) {
    if (out.size() >= state_->limit || t.group != prefix) return false;
    out.emplace_back();
    FillTimerParts(state_->ns, t.id, t.payload, runtime.time().ToWall(t.deadline_ns), t.ttl_ns, t.interval_ns,
                   &out.back());
    return true;
  });
}

void ListCommand::Done(const absl::Status&) {
  // A list writes nothing, so the write's status is not its own; but a worker that stopped before this
  // shard's page was read must not let the others' pages pass for the whole answer.
  if (!read_) state_->unfinished.store(true, std::memory_order_relaxed);
  if (state_->remaining.fetch_sub(1, std::memory_order_acq_rel) == 1) state_->Finish();
}

void ListState::Finish() {
  timer.Observe();
  if (unfinished.load(std::memory_order_relaxed)) {
    call->Reply(grpc::Status(grpc::StatusCode::UNAVAILABLE, "lawnd is stopping; retry ListTimers"));
    return;
  }
  std::vector<v1::Timer*> all;
  for (auto& shard : per_shard) {
    for (auto& t : shard) all.push_back(&t);
  }
  std::sort(all.begin(), all.end(), [](const v1::Timer* a, const v1::Timer* b) { return a->id() < b->id(); });
  const size_t n = std::min(all.size(), limit);
  for (size_t i = 0; i < n; ++i) response->add_timers()->Swap(all[i]);
  // More may follow if any shard filled its page.
  bool more = all.size() > limit;
  for (auto& shard : per_shard) more = more || shard.size() == limit;
  if (more && n > 0)
    response->set_next_page_token(EncodePageToken(response->timers(static_cast<int>(n - 1)).id()));
  call->Reply(grpc::Status::OK);
}

// ---- Stats ------------------------------------------------------------------------------------------------

void StatsCommand::Apply(ShardContext& ctx) {
  v1::ShardStats& s = state_->per_shard[shard_];
  s.set_shard(shard_);
  s.set_pending_timers(ctx.shard().pending());
  s.set_lawn_timers(ctx.shard().lawn_pending());
  s.set_wheel_timers(ctx.shard().wheel_pending());
  s.set_lawn_buckets(ctx.shard().lawn_buckets());
}

void StatsCommand::Done(const absl::Status&) {
  if (state_->remaining.fetch_sub(1, std::memory_order_acq_rel) == 1) state_->Finish();
}

void StatsState::Finish() {
  timer.Observe();
  uint64_t pending = 0, outbox = 0, redeliveries = 0;
  if (all) {
    for (auto& s : per_shard) {
      pending += s.pending_timers();
      *response->add_shards() = std::move(s);
    }
  }
  for (const std::shared_ptr<NamespaceState>& ns : runtime->namespaces().All()) {
    if (!all && !caller.Allows(kPermRead, ns->name())) continue;
    if (!all) pending += ns->pending.load(std::memory_order_relaxed);
    const OutboxCounters c = ns->outbox.Counters();
    v1::NamespaceStats* n = response->add_namespaces();
    n->set_namespace_(ns->name());
    n->set_pending_timers(ns->pending.load(std::memory_order_relaxed));
    n->set_outbox(c.ready + c.in_flight);
    n->set_subscribers(static_cast<uint32_t>(c.subscribers + c.observers));
    outbox += c.ready + c.in_flight;
    if (!all) redeliveries += c.redeliveries;
  }
  // The whole daemon's count for a caller who may see everything: a sum over the live namespaces would miss
  // the forgotten ones.
  if (all) redeliveries = runtime->namespaces().redeliveries();
  response->set_pending_timers(pending);
  response->set_outbox(outbox);
  response->set_redeliveries(redeliveries);
  call->Reply(grpc::Status::OK);
}

}  // namespace lawn
