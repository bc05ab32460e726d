#include "server/runtime.h"

#include <chrono>
#include <utility>

#include "absl/hash/hash.h"
#include "server/shard_worker.h"
#include "server/worker_commands.h"
#include "spdlog/spdlog.h"

namespace lawn {

namespace {

// Recovered records travel to their shard in batches of this many.
constexpr size_t kRecoveryBatch = 4096;

NamespaceLimits LimitsOf(const Options& options) {
  NamespaceLimits limits;
  limits.ack_timeout_ns = static_cast<uint64_t>(options.ack_timeout.count());
  limits.outbox.max_entries = options.max_outbox_per_namespace;
  limits.outbox.max_bytes = options.max_outbox_bytes_per_namespace;
  limits.max_outbox_bytes = options.max_outbox_bytes;
  limits.max_namespaces = options.max_namespaces;
  return limits;
}

}  // namespace

Runtime::Runtime(const Options& options, std::unique_ptr<TimerStore> store, Metrics* metrics)
    : options_(options),
      store_(std::move(store)),
      metrics_(metrics),
      namespaces_(LimitsOf(options)) {}

Runtime::~Runtime() { Stop(); }

std::string Runtime::Key(std::string_view ns, std::string_view id) {
  std::string key;
  key.reserve(ns.size() + 1 + id.size());
  key.append(ns);
  key.push_back('\0');
  key.append(id);
  return key;
}

std::pair<std::string_view, std::string_view> Runtime::SplitKey(std::string_view key) {
  const size_t zero = key.find('\0');
  if (zero == std::string_view::npos) return {std::string_view(), key};
  return {key.substr(0, zero), key.substr(zero + 1)};
}

uint32_t Runtime::ShardFor(std::string_view key) const {
  // absl::Hash is seeded per process: fine, routing is recomputed on every start (recovery re-routes).
  return static_cast<uint32_t>(absl::Hash<std::string_view>()(key) % workers_.size());
}

absl::Status Runtime::Start() {
  if (store_ != nullptr) {
    absl::StatusOr<uint64_t> epoch = store_->NextBootEpoch();
    if (!epoch.ok()) return epoch.status();
    boot_epoch_ = *epoch;
  } else {
    // No disk: make delivery ids differ from those of earlier processes anyway.
    boot_epoch_ = static_cast<uint64_t>(TimeBase::WallNowNs() / 1'000'000'000);
  }
  ShardOptions shard_options;
  shard_options.tick_ns = static_cast<uint64_t>(options_.tick.count());
  shard_options.max_lawn_buckets = options_.lawn_max_buckets;
  shard_options.lawn_promote_after = options_.lawn_promote_after;
  shard_options.ordered_index = true;  // ListTimers reads ranges of it.
  const SyncMode mode = options_.durability == Durability::kSync ? SyncMode::kSync : SyncMode::kNoSync;
  for (uint32_t i = 0; i < options_.shards; ++i) {
    workers_.push_back(std::make_unique<ShardWorker>(i, shard_options, *this, store_.get(), mode));
  }
  for (auto& w : workers_) w->Start();
  started_ = true;
  background_thread_ = std::thread([this] { Background(); });
  recovery_thread_ = std::thread([this] { Recover(); });
  return absl::OkStatus();
}

void Runtime::Recover() {
  const auto start = std::chrono::steady_clock::now();
  std::vector<std::vector<RecoveredTimer>> pending(workers_.size());
  uint64_t timers = 0, expirations = 0;
  uint64_t max_delivery_id = 0;
  // Outbox entries are grouped per namespace and published in delivery-id (= key) order.
  NamespaceState* current_ns = nullptr;
  std::vector<Delivery> current;
  auto flush_outbox = [&] {
    // Not reserved: what is on disk comes back even above the bounds (then nothing new fires into that
    // namespace until it drains).
    if (current_ns != nullptr && !current.empty()) current_ns->outbox.Publish(std::move(current), false);
    current.clear();
  };
  absl::Status status = absl::OkStatus();
  uint64_t skipped = 0;
  auto on_corrupt = [&](const absl::Status& corrupt) {
    if (!options_.skip_corrupt_records) return false;
    ++skipped;
    spdlog::error("recovery: skipping a corrupt record (skip_corrupt_records): {}", std::string(corrupt.message()));
    return true;
  };
  if (store_ != nullptr) {
    status = store_->Recover(
        [&](const StoredTimer& t) {
          const uint32_t shard = ShardFor(t.key);
          pending[shard].push_back(RecoveredTimer{std::string(t.key), std::string(t.payload), t.deadline_unix_ns,
                                                  t.ttl_ns, t.interval_ns});
          if (pending[shard].size() >= kRecoveryBatch) {
            Submit(shard, std::make_unique<RecoverCommand>(std::move(pending[shard])));
            pending[shard].clear();
          }
          ++timers;
        },
        [&](const StoredExpiration& e) {
          absl::StatusOr<NamespaceState*> ns = namespaces_.GetOrCreate(SplitKey(e.timer.key).first);
          if (!ns.ok()) return;
          if (*ns != current_ns) {
            flush_outbox();
            current_ns = *ns;
          }
          Delivery d;
          d.delivery_id = e.delivery_id;
          d.key.assign(e.timer.key);
          d.payload.assign(e.timer.payload);
          d.deadline_unix_ns = e.timer.deadline_unix_ns;
          d.fired_at_unix_ns = e.fired_at_unix_ns;
          d.ttl_ns = e.timer.ttl_ns;
          d.interval_ns = e.timer.interval_ns;
          d.attempt = e.attempt;
          d.late = e.fired_at_unix_ns - e.timer.deadline_unix_ns > static_cast<int64_t>(kLateAfterNs);
          max_delivery_id = std::max(max_delivery_id, e.delivery_id);
          current.push_back(std::move(d));
          ++expirations;
        },
        on_corrupt);
  }
  if (metrics_ != nullptr) metrics_->corrupt_records_skipped().Set(static_cast<double>(skipped));
  flush_outbox();
  for (uint32_t shard = 0; shard < workers_.size(); ++shard) {
    if (!pending[shard].empty()) Submit(shard, std::make_unique<RecoverCommand>(std::move(pending[shard])));
  }
  // A barrier per shard: when every one has run, every recovered timer is in its shard.
  auto barrier = std::make_shared<Latch>(workers_.size());
  for (uint32_t shard = 0; shard < workers_.size(); ++shard) {
    Submit(shard, std::make_unique<BarrierCommand>(barrier));
  }
  barrier->Wait();
  // A failed recovery fires nothing: the shards may hold only part of the store, and firing from a partial
  // view could deliver a timer whose delete or reschedule was not read back. lawnd exits instead.
  if (status.ok()) {
    for (auto& w : workers_) w->EnableExpiry(max_delivery_id);
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (status.ok()) {
    spdlog::info("recovery done: {} timers and {} undelivered expirations in {:.3f} s ({:.0f} timers/s){}",
                 timers, expirations, seconds, seconds > 0 ? timers / seconds : 0.0,
                 skipped > 0 ? "; skipped " + std::to_string(skipped) + " corrupt records" : std::string());
  } else {
    spdlog::critical("recovery failed, nothing fired: {}{}", status.ToString(),
                     status.code() == absl::StatusCode::kDataLoss
                         ? " (lawnd --skip-corrupt-records starts anyway, dropping such records)"
                         : "");
  }
  if (metrics_ != nullptr) metrics_->recovery_duration().Set(seconds);
  {
    absl::MutexLock lock(&mu_);
    recovery_ = {timers, expirations, seconds};
    recovery_status_ = status;
    recovery_done_ = true;
  }
  if (status.ok()) ready_.store(true, std::memory_order_release);
  NotifyHealth();
}

absl::Status Runtime::WaitUntilReady() {
  absl::MutexLock lock(&mu_);
  mu_.Await(absl::Condition(&recovery_done_));
  return recovery_status_;
}

void Runtime::Background() {
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
    for (NamespaceState* ns : namespaces_.All()) {
      // The ack path releases held timers as soon as it frees room; this catches a hold that raced with it.
      MaybeReleaseHeld(ns);
      const size_t redelivered = ns->outbox.ExpireAcks(now);
      if (redelivered > 0) {
        spdlog::warn("namespace '{}': {} expirations not acked within ack_timeout; redelivering", ns->name(),
                     redelivered);
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

void Runtime::Submit(uint32_t shard, std::unique_ptr<ShardCommand> command) {
  workers_[shard]->Submit(std::move(command));
}

bool Runtime::Overloaded(uint32_t shard) const {
  return workers_[shard]->queued() >= options_.max_queued_commands;
}

void Runtime::PersistAcks(NamespaceState* ns, std::vector<uint64_t> delivery_ids) {
  if (delivery_ids.empty()) return;
  if (store_ != nullptr) {
    const uint32_t shard = static_cast<uint32_t>(delivery_ids.front() % workers_.size());
    Submit(shard, std::make_unique<AckCommand>(std::move(delivery_ids)));
  }
  MaybeReleaseHeld(ns);
}

void Runtime::MaybeReleaseHeld(NamespaceState* ns) {
  if (!ns->holding.load(std::memory_order_acquire) || ns->outbox.full()) return;
  if (!ns->holding.exchange(false, std::memory_order_acq_rel)) return;  // Another thread released them.
  // A shard that cannot fire them all holds the rest again and sets `holding` again.
  for (uint32_t shard = 0; shard < workers_.size(); ++shard) {
    Submit(shard, std::make_unique<ReleaseCommand>(ns));
  }
}

absl::Status Runtime::write_status() const {
  absl::MutexLock lock(&mu_);
  return write_status_;
}

void Runtime::ReportWriteFailure(const absl::Status& status) {
  // Even the free-space guard refusing at write time is fatal here: the round's changes are already in
  // memory. Workers check the guard (with headroom) before applying, so this is the rare, late case.
  {
    absl::MutexLock lock(&mu_);
    if (!write_status_.ok()) return;
    write_status_ = absl::UnavailableError("storage write failed; lawnd refuses writes until restarted: " +
                                           std::string(status.message()));
  }
  write_failed_.store(true, std::memory_order_release);
  if (metrics_ != nullptr) metrics_->storage_failed().Set(1);
  spdlog::critical("storage write failed: {}; refusing writes and reporting NOT_SERVING until restart",
                   status.ToString());
  NotifyHealth();
}

void Runtime::SetHealthListener(std::function<void()> listener) {
  {
    absl::MutexLock lock(&mu_);
    health_listener_ = std::move(listener);
  }
  NotifyHealth();
}

void Runtime::NotifyHealth() {
  std::function<void()> listener;
  {
    absl::MutexLock lock(&mu_);
    listener = health_listener_;
  }
  if (listener) listener();
}

void Runtime::UpdateMetrics(bool with_disk) {
  for (NamespaceState* ns : namespaces_.All()) {
    const OutboxCounters c = ns->outbox.Counters();
    // Slow subscribers: expirations waiting while every connected subscriber is full, second after second.
    SlowWatch& watch = slow_[ns->name()];
    const bool backlog = c.subscribers > 0 && c.ready > 0 && c.ready >= watch.last_ready;
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
    uint64_t& seen = redeliveries_seen_[ns->name()];
    if (c.redeliveries > seen) metrics_->redeliveries().Increment(static_cast<double>(c.redeliveries - seen));
    seen = c.redeliveries;
  }
  if (metrics_ != nullptr) metrics_->outbox_bytes().Set(static_cast<double>(namespaces_.outbox_bytes()));
  if (with_disk && store_ != nullptr && metrics_ != nullptr) {
    absl::StatusOr<uint64_t> bytes = store_->DataBytes();
    if (bytes.ok()) metrics_->data_dir_bytes().Set(static_cast<double>(*bytes));
  }
}

RecoveryStats Runtime::recovery_stats() const {
  absl::MutexLock lock(&mu_);
  return recovery_;
}

void Runtime::Stop() {
  if (!started_) return;
  started_ = false;
  if (recovery_thread_.joinable()) recovery_thread_.join();
  {
    std::lock_guard lock(stop_mu_);
    stopping_ = true;
  }
  stop_cv_.notify_all();
  if (background_thread_.joinable()) background_thread_.join();
  for (auto& w : workers_) w->Stop();
  if (store_ != nullptr) {
    absl::Status synced = store_->Sync();
    if (!synced.ok()) spdlog::error("final store sync failed: {}", synced.ToString());
  }
}

}  // namespace lawn
