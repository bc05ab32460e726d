// Runtime's background thread: redelivery of unacked expirations, the release of held timers that raced with
// an ack, interval-mode syncs, and the gauges the workers do not own (outboxes, subscribers, data dir).
#include <algorithm>
#include <chrono>

#include "server/runtime.h"
#include "server/thread_name.h"
#include "server/worker_commands.h"
#include "spdlog/spdlog.h"

namespace lawn {

namespace {

constexpr uint64_t kRedeliveryLogPeriodNs = 10'000'000'000;

}  // namespace

void Runtime::Background() {
  NameThisThread("lawn-background");
  const uint64_t ack_timeout = static_cast<uint64_t>(options_.ack_timeout.count());
  // Redelivery needs no finer resolution than a tenth of the ack timeout (at most 100 ms).
  auto period = std::chrono::nanoseconds(std::min<uint64_t>(ack_timeout / 10, 100'000'000));
  const bool interval_sync = store_ != nullptr && options_.durability == Durability::kInterval;
  if (interval_sync) period = std::min(period, options_.sync_interval);
  auto last_sync = std::chrono::steady_clock::now();
  auto last_gauges = last_sync;
  auto last_disk = last_sync - std::chrono::hours(1);
  std::unique_lock lock(stop_mu_);
  while (!stopping_) {
    stop_cv_.wait_for(lock, period);
    if (stopping_) break;
    lock.unlock();
    const uint64_t now = TimeBase::MonoNowNs();
    for (const std::shared_ptr<NamespaceState>& ns : namespaces_.All()) {
      // The ack path releases held timers as soon as it frees room; this catches a hold that raced with it.
      MaybeReleaseHeld(ns.get());
      const size_t redelivered = ns->outbox.ExpireAcks(now);
      if (redelivered > 0) {
        // At most one line per namespace per 10 s, with the count since the last one: a subscriber that never
        // acks must not flood the log (lawn_redeliveries_total counts every one).
        RedeliveryLog& log = redelivery_log_[ns->name()];
        log.unlogged += redelivered;
        if (now - log.last_ns >= kRedeliveryLogPeriodNs || log.last_ns == 0) {
          spdlog::warn("namespace '{}': {} expirations not acked within ack_timeout; redelivering", ns->name(),
                       log.unlogged);
          log.unlogged = 0;
          log.last_ns = now;
        }
      }
    }
    if (interval_sync && std::chrono::steady_clock::now() - last_sync >= options_.sync_interval) {
      last_sync = std::chrono::steady_clock::now();
      absl::Status synced = store_->Sync();
      if (!synced.ok()) ReportWriteFailure(synced);
      if (metrics_ != nullptr) metrics_->storage_syncs().Increment();
    }
    const auto now_steady = std::chrono::steady_clock::now();
    if (now_steady - last_gauges >= std::chrono::seconds(1)) {
      last_gauges = now_steady;
      // The data dir is walked file by file: every 10 s is plenty for a size gauge.
      const bool with_disk = now_steady - last_disk >= std::chrono::seconds(10);
      if (with_disk) last_disk = now_steady;
      UpdateMetrics(with_disk);
    }
    lock.lock();
  }
}

void Runtime::UpdateMetrics(bool with_disk) {
  for (const std::shared_ptr<NamespaceState>& ns : namespaces_.All()) {
    // A namespace that holds nothing is forgotten, with its metric series (not while recovering: recovery
    // fills namespaces without acquiring them).
    if (ready()) {
      if (std::shared_ptr<NamespaceState> retired = namespaces_.TryRetire(ns.get())) {
        ForgetRetired(std::move(retired));
        continue;
      }
    }
    const OutboxCounters c = ns->outbox.Counters();
    // Slow subscribers: expirations waiting while every connected subscriber is full, second after second.
    SlowWatch& watch = slow_[ns->name()];
    const bool backlog = c.subscribers + c.relays > 0 && c.ready > 0 && c.ready >= watch.last_ready;
    watch.seconds = backlog ? watch.seconds + 1 : 0;
    watch.last_ready = c.ready;
    if (watch.seconds >= 10 && watch.seconds % 10 == 0) {
      spdlog::warn("namespace '{}': {} expirations waiting for {} s while {} subscribers are at max_in_flight; "
                   "subscribers are slower than the expiry rate",
                   ns->name(), c.ready, watch.seconds, c.subscribers);
    }
    if (metrics_ == nullptr) continue;
    metrics_->outbox(ns->name()).Set(static_cast<double>(c.ready + c.in_flight));
    metrics_->subscribers(ns->name()).Set(static_cast<double>(c.subscribers + c.observers));
  }
  if (metrics_ != nullptr) {
    const uint64_t redeliveries = namespaces_.redeliveries();
    metrics_->redeliveries().Increment(static_cast<double>(redeliveries - redeliveries_seen_));
    redeliveries_seen_ = redeliveries;
    metrics_->outbox_bytes().Set(static_cast<double>(namespaces_.outbox_bytes()));
  }
  if (with_disk && store_ != nullptr && metrics_ != nullptr) {
    absl::StatusOr<uint64_t> bytes = store_->DataBytes();
    if (bytes.ok()) metrics_->data_dir_bytes().Set(static_cast<double>(*bytes));
  }
  if (store_ != nullptr) {
    const TimerStore::BackgroundStats stats = store_->Background();
    if (stats.snapshot_failures > store_seen_.snapshot_failures) {
      spdlog::warn(
          "storage: a snapshot of the log failed ({} so far); it is retried at the next log segment, "
          "and the log grows meanwhile: {}",
          stats.snapshot_failures, stats.last_failure);
    }
    if (metrics_ != nullptr) {
      metrics_->store_snapshots().Increment(static_cast<double>(stats.snapshots - store_seen_.snapshots));
      metrics_->store_snapshot_failures().Increment(
          static_cast<double>(stats.snapshot_failures - store_seen_.snapshot_failures));
      metrics_->store_log_bytes().Set(static_cast<double>(stats.log_bytes));
      metrics_->store_snapshot_bytes().Set(static_cast<double>(stats.snapshot_bytes));
    }
    store_seen_ = stats;
  }
}

void Runtime::ForgetRetired(std::shared_ptr<NamespaceState> ns) {
  spdlog::debug("namespace '{}' holds nothing; forgotten", ns->name());
  if (metrics_ != nullptr) metrics_->RemoveNamespace(ns->name());
  slow_.erase(ns->name());
  redelivery_log_.erase(ns->name());
  // Each worker drops it from its cache; the last command to finish frees it.
  for (uint32_t shard = 0; shard < workers_.size(); ++shard) {
    Submit(shard, std::make_unique<ForgetNamespaceCommand>(ns));
  }
}

}  // namespace lawn
