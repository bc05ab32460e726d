#include "server/shard_worker.h"

#include <algorithm>
#include <chrono>
#include <utility>

#include "absl/strings/str_cat.h"
#include "server/metrics.h"
#include "server/runtime.h"
#include "server/thread_name.h"
#include "spdlog/spdlog.h"

namespace lawn {

namespace {

constexpr uint64_t kMaxSleepNs = 3600'000'000'000;
// How often a worker whose expiry is refused (disk full, storage failed) tries again.
constexpr uint64_t kBlockedRetryNs = 100'000'000;
// Bytes a round may write beyond what the guard admits up front (several max-size requests). Checked before
// the round changes memory, so the write itself is refused by the guard only in a narrow, fatal band.
constexpr uint64_t kRoundHeadroomBytes = uint64_t{32} << 20;
// While the commit thread is busy the worker keeps adding to the open round, up to these bounds; then it
// waits, so the command queue (and the backpressure read from it) fills instead. Small bounds keep the
// firings of a round from waiting behind a long write (a 2 MiB batch is a few ms of RocksDB inserts), and a
// round well inside kRoundHeadroomBytes.
constexpr size_t kMaxRoundCommands = 1024;
constexpr uint64_t kMaxRoundBytes = uint64_t{2} << 20;
// Operations queued while a round is being committed that wake the worker to apply them before it ends.
constexpr size_t kWakeOps = 32;
// A round's work on building namespaces' ordered indexes, shared by its ListTimers commands
// (Shard::RequestOrder units: a record scanned is one, an entry inserted 64): about a millisecond, so a large
// namespace's first ListTimers page delays firing by no more than that per round.
constexpr size_t kOrderBudget = 64 * 1024;
// A namespace's ordered index is dropped this long after its last ListTimers page, and rebuilt on the next.
constexpr uint64_t kOrderIdleNs = 600'000'000'000;
constexpr uint64_t kOrderDropEveryNs = 10'000'000'000;

}  // namespace

ShardWorker::ShardWorker(uint32_t index, const ShardOptions& options, Runtime& runtime, TimerStore* store,
                         SyncMode sync_mode)
    : index_(index),
      runtime_(runtime),
      store_(store),
      sync_mode_(sync_mode),
      late_after_ns_(std::max<uint64_t>(kLateAfterNs, options.tick_ns)),
      shard_(options),
      open_(std::make_unique<ShardRound>()),
      delivery_ids_(index) {}

ShardWorker::~ShardWorker() { Stop(); }

void ShardWorker::Start() {
  if (store_ != nullptr) {
    spare_ = std::make_unique<ShardRound>();
    commit_thread_ = std::thread([this] { CommitLoop(); });
  }
  thread_ = std::thread([this] { Run(); });
}

void ShardWorker::Submit(std::unique_ptr<ShardCommand> command) {
  const size_t command_ops = command->ops();
  bool wake;
  {
    std::lock_guard lock(mu_);
    queue_.push_back(std::move(command));
    queued_.store(queue_.size(), std::memory_order_relaxed);
    queued_ops_ += command_ops;
    // While a round is being committed, small commands wait for its end, when the commit thread wakes the
    // worker anyway: one wake-up for all of them instead of one each (a thread hand-off costs several us of
    // CPU). None could be answered before that round's end; they are answered later only by the time it
    // takes to apply them. Enough work (a StartTimers batch) wakes the worker at once, to apply it while the
    // write goes on.
    wake = sleeping_ && (!commit_busy_ || queued_ops_ >= kWakeOps);
  }
  if (wake) cv_.notify_one();
}

bool ShardWorker::Sleeping() {
  std::lock_guard lock(mu_);
  return sleeping_;
}

void ShardWorker::EnableExpiry(uint64_t min_delivery_id) {
  {
    std::lock_guard lock(mu_);
    // Read by the worker thread only after it sees expiry_enabled_ under mu_.
    delivery_ids_.RaiseFloor(min_delivery_id);
    expiry_enabled_ = true;
  }
  cv_.notify_one();
}

void ShardWorker::Stop() {
  {
    std::lock_guard lock(mu_);
    if (stopping_ && !thread_.joinable()) return;
    stopping_ = true;
  }
  cv_.notify_one();
  // The worker drains and ends the commit thread before it returns.
  if (thread_.joinable()) thread_.join();
}

absl::StatusOr<NamespaceState*> ShardWorker::Namespace(std::string_view name) {
  auto it = namespace_cache_.find(absl::string_view(name.data(), name.size()));
  if (it != namespace_cache_.end()) {
    // A retired state stays alive until this worker has run its ForgetCommand, so reading the flag is safe.
    if (!it->second->retired()) return it->second;
    namespace_cache_.erase(it);
  }
  absl::StatusOr<NamespaceState*> ns = runtime_.namespaces().GetOrCreate(name);
  if (ns.ok()) namespace_cache_.insert_or_assign(std::string(name), *ns);
  return ns;
}

absl::StatusOr<NamespaceState*> ShardWorker::AcquireNamespace(std::string_view name) {
  while (true) {
    absl::StatusOr<NamespaceState*> ns = Namespace(name);
    if (!ns.ok() || (*ns)->TryAcquire()) return ns;
    // Retired after the lookup: the next lookup sees the flag (or a fresh state).
  }
}

void ShardWorker::ForgetNamespace(const NamespaceState* ns) {
  auto it = namespace_cache_.find(ns->name());
  if (it != namespace_cache_.end() && it->second == ns) namespace_cache_.erase(it);
  release_.erase(std::remove(release_.begin(), release_.end(), ns), release_.end());
}

void ShardWorker::Run() {
  NameThisThread(absl::StrCat("lawn-shard-", index_));
  std::vector<std::unique_ptr<ShardCommand>> commands;
  while (true) {
    bool stop = false;
    bool full = false;
    {
      std::unique_lock lock(mu_);
      while (true) {
        // A round applied while the commit thread was busy goes over as soon as it is free.
        if (!open_->empty() && !commit_busy_) break;
        full = OpenRoundFull();
        if (stopping_ || (!full && (!queue_.empty() || !deferred_.empty()))) break;
        sleeping_ = true;
        if (full) {
          // Take nothing more until the commit thread is done with the round before; it wakes us.
          cv_.wait(lock);
          sleeping_ = false;
          continue;
        }
        if (expiry_blocked_ || !repairs_.empty()) {
          // The free-space guard (or a storage failure) refused the last expiry: due timers stay pending.
          // Retry after a pause instead of spinning on deadlines that are already past. Repairs kept for
          // space are retried the same way, so that they do not wait for this shard's next command.
          cv_.wait_for(lock, std::chrono::nanoseconds(kBlockedRetryNs));
          sleeping_ = false;
          break;
        }
        const std::optional<uint64_t> next = expiry_enabled_ ? shard_.NextDeadlineNs() : std::nullopt;
        if (next && *next <= TimeBase::MonoNowNs()) {
          sleeping_ = false;
          break;
        }
        if (next) {
          // Capped: libstdc++ converts the time point to a timespec, which far-future deadlines overflow.
          const uint64_t cap = TimeBase::MonoNowNs() + kMaxSleepNs;
          cv_.wait_until(lock, TimeBase::MonoToTimePoint(std::min(*next, cap)));
        } else {
          cv_.wait(lock);
        }
        sleeping_ = false;
      }
      stop = stopping_;
      full = !stop && OpenRoundFull();
      if (!full) {
        commands.swap(queue_);
        queued_.store(0, std::memory_order_relaxed);
        queued_ops_ = 0;
      }
    }
    last_round_ = stop;  // The last round finishes every deferred command.
    if (!commands.empty() || !deferred_.empty() || (!stop && !full)) {
      Apply(commands, /*expire=*/!stop && !full);
    }
    commands.clear();
    if (store_ == nullptr || CommitHere()) {
      Commit(*open_);
      open_->Clear();
    } else {
      TryHandOff();
    }
    if (stop) {
      DrainCommits();
      // The last round's unbounded budget lets every deferred command finish; one that still deferred would
      // never be answered, so it is told lawnd is stopping.
      for (auto& command : deferred_) command->Done(absl::UnavailableError("lawnd is stopping"));
      deferred_.clear();
      return;
    }
  }
}

void ShardWorker::Apply(std::vector<std::unique_ptr<ShardCommand>>& commands, bool expire) {
  now_mono_ns_ = TimeBase::MonoNowNs();
  // The free-space guard is checked before anything changes in memory: a refused command has nothing to undo.
  admission_ = runtime_.write_failed() ? runtime_.write_status()
               : store_ != nullptr      ? store_->CheckSpace(kRoundHeadroomBytes)
                                        : absl::OkStatus();
  // Repairs the guard kept from an earlier round go first, before any command of this one writes their keys.
  if (admission_.ok() && !repairs_.empty()) {
    spdlog::info("shard {}: the disk has room again; writing the {} repairs recovery kept", index_,
                 repairs_.count());
    open_->batch.Append(repairs_);
    repairs_.Clear();
  }
  // Commands deferred by the last round first (a ListTimers waiting for its ordered index), then new ones.
  // The last round before stopping finishes every deferred command.
  order_budget_ = last_round_ ? SIZE_MAX : kOrderBudget;
  std::vector<std::unique_ptr<ShardCommand>> again;
  again.swap(deferred_);
  for (auto* list : {&again, &commands}) {
    for (auto& command : *list) {
      deferring_ = false;
      command->Apply(*this);
      if (deferring_) {
        deferred_.push_back(std::move(command));
      } else {
        open_->commands.push_back(std::move(command));
      }
    }
  }
  deferring_ = false;
  if (now_mono_ns_ >= next_order_drop_ns_) {
    next_order_drop_ns_ = now_mono_ns_ + kOrderDropEveryNs;
    if (now_mono_ns_ > kOrderIdleNs) shard_.DropOrdersUnusedSince(now_mono_ns_ - kOrderIdleNs);
  }
  bool expiry_enabled;
  {
    std::lock_guard lock(mu_);
    expiry_enabled = expiry_enabled_;
  }
  // Expiry also writes: with the guard refusing, due timers simply stay pending until space returns.
  // Cluster mode's fence (Runtime::MayFire): a member that cannot prove its lease fires nothing, and retries
  // like a worker whose expiry the guard refused.
  const bool may_fire = admission_.ok() && runtime_.MayFire();
  expiry_blocked_ = expire && expiry_enabled && !may_fire;
  if (expire && expiry_enabled && may_fire) Expire();
  PublishGauges();
}

bool ShardWorker::OpenRoundFull() const {
  return open_->commands.size() >= kMaxRoundCommands || open_->batch.ByteSize() >= kMaxRoundBytes;
}

void ShardWorker::PublishGauges() {
  Metrics* m = runtime_.metrics();
  if (m == nullptr) return;
  m->held_timers(index_).Set(static_cast<double>(shard_.held()));
  m->pending_lawn(index_).Set(static_cast<double>(shard_.lawn_pending()));
  m->pending_wheel(index_).Set(static_cast<double>(shard_.wheel_pending()));
  m->lawn_buckets(index_).Set(static_cast<double>(shard_.lawn_buckets()));
}

}  // namespace lawn
