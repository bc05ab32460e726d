#include "tests/testing/memory_timer_store.h"

#include <cstdlib>
#include <utility>

namespace lawn {

MemoryTimerStore::MemoryTimerStore(MemoryStoreOptions options) : options_(options) {}

void MemoryTimerStore::FailWritesWith(absl::Status status) {
  absl::MutexLock l(&mu_);
  fail_with_ = std::move(status);
}

void MemoryTimerStore::DropUnsyncedWrites() {
  // A broken test setup, not bad input.
  if (!options_.simulate_power_loss) std::abort();
  absl::MutexLock l(&mu_);
  live_ = synced_;
  unsynced_.clear();
}

size_t MemoryTimerStore::timer_count() const {
  absl::ReaderMutexLock l(&mu_);
  return live_.timers.size();
}

size_t MemoryTimerStore::expiration_count() const {
  absl::ReaderMutexLock l(&mu_);
  return live_.outbox.size();
}

uint64_t MemoryTimerStore::sync_count() const {
  absl::ReaderMutexLock l(&mu_);
  return sync_count_;
}

void MemoryTimerStore::Apply(const StoreBatch& batch, State& state) {
  batch.ForEach([&](const StoreBatch::Entry& e) {
    switch (e.op) {
      case StoreBatch::Op::kPutTimer:
        state.timers.insert_or_assign(
            std::pair(e.deadline_unix_ns, std::string(e.key)),
            Timer{e.deadline_unix_ns, e.ttl_ns, e.interval_ns, std::string(e.payload)});
        break;
      case StoreBatch::Op::kDeleteTimer:
        state.timers.erase(std::pair(e.deadline_unix_ns, std::string(e.key)));
        break;
      case StoreBatch::Op::kPutExpiration:
        state.outbox.insert_or_assign(e.delivery_id, Expiration{std::string(e.key),
                                                                Timer{e.deadline_unix_ns, e.ttl_ns,
                                                                      e.interval_ns, std::string(e.payload)},
                                                                e.fired_at_unix_ns, e.attempt});
        break;
      case StoreBatch::Op::kDeleteExpiration:
        state.outbox.erase(e.delivery_id);
        break;
      case StoreBatch::Op::kPutIncoming:
        state.incoming.insert_or_assign(e.delivery_id, Expiration{std::string(e.key),
                                                                  Timer{e.deadline_unix_ns, e.ttl_ns,
                                                                        e.interval_ns, std::string(e.payload)},
                                                                  e.fired_at_unix_ns, e.attempt});
        break;
      case StoreBatch::Op::kDeleteIncoming:
        state.incoming.erase(e.delivery_id);
        break;
    }
  });
}

void MemoryTimerStore::MarkSynced() {
  ++sync_count_;
  if (!options_.simulate_power_loss) return;
  for (const StoreBatch& b : unsynced_) Apply(b, synced_);
  unsynced_.clear();
  synced_.boot_epoch = live_.boot_epoch;
}

// TimerStore

absl::Status MemoryTimerStore::Write(const StoreBatch& batch, SyncMode mode) {
  absl::MutexLock l(&mu_);
  if (!fail_with_.ok()) return fail_with_;
  Apply(batch, live_);
  if (options_.simulate_power_loss) unsynced_.push_back(batch);
  if (mode == SyncMode::kSync) MarkSynced();
  return absl::OkStatus();
}

absl::Status MemoryTimerStore::Sync() {
  absl::MutexLock l(&mu_);
  if (!fail_with_.ok()) return fail_with_;
  MarkSynced();
  return absl::OkStatus();
}

absl::Status MemoryTimerStore::Recover(absl::FunctionRef<void(const StoredTimer&)> on_timer,
                                       absl::FunctionRef<void(const StoredExpiration&)> on_expiration,
                                       absl::FunctionRef<bool(const absl::Status&)> /*on_corrupt*/) {
  absl::ReaderMutexLock l(&mu_);
  for (const auto& [key, t] : live_.timers) {
    on_timer(StoredTimer{key.second, t.deadline_unix_ns, t.ttl_ns, t.interval_ns, t.payload});
  }
  for (const auto& [id, e] : live_.outbox) {
    on_expiration(StoredExpiration{
        id,
        StoredTimer{e.key, e.timer.deadline_unix_ns, e.timer.ttl_ns, e.timer.interval_ns, e.timer.payload},
        e.fired_at_unix_ns, e.attempt});
  }
  return absl::OkStatus();
}

absl::Status MemoryTimerStore::ForEachIncoming(absl::FunctionRef<void(const StoredExpiration&)> on_staged) {
  absl::ReaderMutexLock l(&mu_);
  for (const auto& [id, e] : live_.incoming) {
    on_staged(StoredExpiration{
        id,
        StoredTimer{e.key, e.timer.deadline_unix_ns, e.timer.ttl_ns, e.timer.interval_ns, e.timer.payload},
        e.fired_at_unix_ns, e.attempt});
  }
  return absl::OkStatus();
}

absl::StatusOr<uint64_t> MemoryTimerStore::NextBootEpoch() {
  absl::MutexLock l(&mu_);
  if (!fail_with_.ok()) return fail_with_;
  ++live_.boot_epoch;
  synced_.boot_epoch = live_.boot_epoch;  // Written synchronously, like the disk store does.
  ++sync_count_;
  return live_.boot_epoch;
}

}  // namespace lawn
