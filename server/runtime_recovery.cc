// Runtime::Recover: start-up recovery, on its own thread. Reads every stored timer (routed to its shard in
// batches) and every undelivered expiration (back into its namespace's outbox, unreserved), waits for every
// shard to have applied them, then lets the shards fire. A failed recovery fires nothing (see runtime.h).
#include <algorithm>
#include <chrono>
#include <utility>

#include "server/runtime.h"
#include "server/shard_worker.h"
#include "server/thread_name.h"
#include "server/worker_commands.h"
#include "spdlog/spdlog.h"

namespace lawn {

namespace {

// Recovered records travel to their shard in batches of this many.
constexpr size_t kRecoveryBatch = 4096;

}  // namespace

Delivery Runtime::DeliveryOf(const StoredExpiration& e) {
  Delivery d;
  d.delivery_id = e.delivery_id;
  d.key.assign(e.timer.key);
  d.payload.assign(e.timer.payload);
  d.deadline_unix_ns = e.timer.deadline_unix_ns;
  d.fired_at_unix_ns = e.fired_at_unix_ns;
  d.ttl_ns = e.timer.ttl_ns;
  d.interval_ns = e.timer.interval_ns;
  d.attempt = e.attempt;
  // In 128 bits: a deadline near the int64 edge (1678) minus now does not fit in 64.
  d.late = static_cast<__int128>(e.fired_at_unix_ns) - e.timer.deadline_unix_ns > static_cast<__int128>(kLateAfterNs);
  return d;
}

void Runtime::Recover() {
  NameThisThread("lawn-recovery");
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
          max_delivery_id = std::max(max_delivery_id, e.delivery_id);
          if (gate_ != nullptr) {
            // Cluster mode: some may belong to partitions this member handed over just before it stopped
            // (their new owner delivers them); they wait for the start-up settle, which knows the map.
            absl::MutexLock lock(&mu_);
            parked_.push_back(Runtime::DeliveryOf(e));
          } else {
            current.push_back(Runtime::DeliveryOf(e));
          }
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

}  // namespace lawn
