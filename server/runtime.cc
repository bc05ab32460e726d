#include "server/runtime.h"

#include <chrono>
#include <map>
#include <utility>

#include "absl/hash/hash.h"
#include "server/partition_gate.h"
#include "server/shard_worker.h"
#include "server/worker_commands.h"
#include "spdlog/spdlog.h"

namespace lawn {

namespace {

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
      namespaces_(LimitsOf(options)),
      tick_ns_(static_cast<uint64_t>(options.tick.count())) {}

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
  shard_options.id_groups = true;      // Keys are namespace \0 id: a namespace is kept once per shard.
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

absl::Status Runtime::WaitUntilReady() {
  absl::MutexLock lock(&mu_);
  mu_.Await(absl::Condition(&recovery_done_));
  return recovery_status_;
}

void Runtime::Submit(uint32_t shard, std::unique_ptr<ShardCommand> command) {
  workers_[shard]->Submit(std::move(command));
}

bool Runtime::Overloaded(uint32_t shard) const {
  return workers_[shard]->queued() >= options_.max_queued_commands;
}

bool Runtime::ShardSleepingForTest(uint32_t shard) const { return workers_[shard]->Sleeping(); }

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

absl::Status Runtime::AdmitWrite(const absl::Status& admission, std::string_view key) const {
  if (!admission.ok()) return admission;
  if (gate_ != nullptr) return gate_->CheckWrite(key);
  return absl::OkStatus();
}

void Runtime::ReleaseGated() {
  for (uint32_t shard = 0; shard < workers_.size(); ++shard) Submit(shard, std::make_unique<ReleaseGatedCommand>());
}

void Runtime::PublishPersisted(std::vector<Delivery> deliveries, std::string_view what) {
  std::map<std::string, std::vector<Delivery>> by_namespace;
  for (Delivery& d : deliveries) by_namespace[std::string(SplitKey(d.key).first)].push_back(std::move(d));
  for (auto& [name, batch] : by_namespace) {
    absl::StatusOr<NamespaceState*> ns = namespaces_.GetOrCreate(name);
    if (!ns.ok()) {
      spdlog::error("{}: {} expirations of namespace '{}' stay on disk unpublished: {}", std::string(what),
                    batch.size(), name, ns.status().ToString());
      continue;
    }
    (*ns)->outbox.Publish(std::move(batch), false);
  }
}

std::vector<Delivery> Runtime::TakeParkedExpirations() {
  absl::MutexLock lock(&mu_);
  return std::exchange(parked_, {});
}

void Runtime::RunOnEveryShard(const std::function<std::unique_ptr<ShardCommand>(uint32_t shard)>& make) {
  auto latch = std::make_shared<Latch>(workers_.size());
  for (uint32_t shard = 0; shard < workers_.size(); ++shard) {
    Submit(shard, std::make_unique<LatchedCommand>(make(shard), latch));
  }
  latch->Wait();
}

void Runtime::SetTick(uint64_t tick_ns, std::function<void(uint64_t previous)> done) {
  // Serialized, so that two calls reach every shard in the same order and all shards end on the same tick.
  absl::MutexLock lock(&tick_mu_);
  const uint64_t previous = tick_ns_.exchange(tick_ns, std::memory_order_relaxed);
  auto state = std::make_shared<SetTickCommand::State>(
      workers_.size(), [done = std::move(done), previous] { done(previous); });
  for (uint32_t shard = 0; shard < workers_.size(); ++shard) {
    Submit(shard, std::make_unique<SetTickCommand>(tick_ns, state));
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
