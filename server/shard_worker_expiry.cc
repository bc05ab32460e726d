// ShardWorker's expiry: admission of due timers against their namespace's outbox bound (fire, hold or
// skip), and the records a firing writes (the timer out or re-armed, the expiration into the outbox) in the
// open round's batch. Runs on the worker thread, inside Apply.
#include <algorithm>

#include "server/partition_gate.h"
#include "server/runtime.h"
#include "server/shard_worker.h"

namespace lawn {

void ShardWorker::ReleaseHeld(NamespaceState* ns) {
  if (std::find(release_.begin(), release_.end(), ns) == release_.end()) release_.push_back(ns);
}

void ShardWorker::SetTick(uint64_t tick_ns) {
  shard_.SetTick(tick_ns, now_mono_ns_);
  late_after_ns_ = std::max<uint64_t>(kLateAfterNs, tick_ns);
}

uint64_t ShardWorker::NextDeliveryId() { return delivery_ids_.Next(TimeBase::WallNowNs() / 1'000'000); }

AdmitDecision ShardWorker::Admit(const TimerView& t) {
  // Cluster mode: a partition that is not this member's, or is being handed over, fires nothing here. Its
  // due timers wait in the engine (pending, on disk) until it opens or the hand-over takes them away.
  if (const PartitionGate* gate = runtime_.gate(); gate != nullptr && !gate->Open(NamespaceOf(t), t.id)) {
    admitted_ns_ = nullptr;
    return {Admission::kHold, PartitionGate::kHoldGroup};
  }
  absl::StatusOr<NamespaceState*> ns = Namespace(NamespaceOf(t));
  if (!ns.ok()) {
    // Only a recovered timer of a namespace beyond max_namespaces: it stays pending (and on disk), held in a
    // group no release names, until a restart with a higher limit.
    admitted_ns_ = nullptr;
    return {Admission::kHold, UINT16_MAX};
  }
  admitted_ns_ = *ns;
  if ((*ns)->outbox.TryReserve(Delivery::ChargeFor(t.key_size(), t.payload.size()))) return {Admission::kFire, 0};
  // The outbox is full. Recurring timers skip this firing (and stay on their grid); one-shot timers wait in
  // the engine, pending, until acks make room (the runtime then asks every shard to release them).
  if (t.interval_ns != 0) {
    open_->counters.skipped++;
    return {Admission::kSkip, (*ns)->index()};
  }
  open_->counters.held++;
  (*ns)->holding.store(true, std::memory_order_release);
  return {Admission::kHold, (*ns)->index()};
}

void ShardWorker::OnFired(const Fired& fired, int64_t fired_at) {
  const TimeBase& time = runtime_.time();
  StoreBatch* batch = this->batch();
  const TimerView& t = fired.timer;
  NamespaceState* ns = admitted_ns_;
  if (fired.skipped) {
    // Nothing delivered: only the re-armed deadline is stored, so a restart does not fire the skipped one.
    if (batch != nullptr) {
      key_scratch_.assign(t.group).append(t.id);
      batch->DeleteTimer(key_scratch_, time.ToWall(t.deadline_ns));
      batch->PutTimer(key_scratch_, time.ToWall(fired.next_deadline_ns), t.interval_ns, t.interval_ns, t.payload);
    }
    return;
  }
  Delivery& d = open_->AddDelivery(ns);
  d.delivery_id = delivery_ids_.Next(fired_at / 1'000'000);
  d.key.reserve(t.key_size());
  d.key.assign(t.group).append(t.id);  // The whole key: the view splits it at its namespace.
  d.payload.assign(t.payload);
  d.deadline_unix_ns = time.ToWall(t.deadline_ns);
  d.fired_at_unix_ns = fired_at;
  d.ttl_ns = t.ttl_ns;
  d.interval_ns = t.interval_ns;
  d.late = now_mono_ns_ > t.deadline_ns + late_after_ns_;
  if (batch != nullptr) {
    // One atomic write per round: the timer leaves (or moves to its next deadline) and the expiration
    // enters the outbox.
    // The record is stored under the deadline that fired (storage/FORMAT.md); a recurring timer's next one
    // is a new record.
    batch->DeleteTimer(d.key, d.deadline_unix_ns);
    if (fired.next_deadline_ns != 0) {
      batch->PutTimer(d.key, time.ToWall(fired.next_deadline_ns), t.interval_ns, t.interval_ns, t.payload);
    }
    batch->PutExpiration(d.delivery_id, d.key, d.deadline_unix_ns, t.ttl_ns, t.interval_ns, t.payload, fired_at,
                         0);
  }
  if (fired.next_deadline_ns == 0) {
    if (ns != fired_ns_) ReleaseFiredQuota();
    fired_ns_ = ns;
    fired_timers_++;
    fired_bytes_ += t.key_size() + t.payload.size();
  }
}

void ShardWorker::ReleaseFiredQuota() {
  if (fired_ns_ == nullptr) return;
  // Until now the counters were high by these, which only makes admission stricter for a moment. The
  // namespace is alive: this worker holds its deliveries in the open round.
  fired_ns_->pending.fetch_sub(fired_timers_, std::memory_order_relaxed);
  fired_ns_->pending_bytes.fetch_sub(fired_bytes_, std::memory_order_relaxed);
  runtime_.total_pending().fetch_sub(fired_timers_, std::memory_order_relaxed);
  runtime_.total_pending_bytes().fetch_sub(fired_bytes_, std::memory_order_relaxed);
  fired_ns_ = nullptr;
  fired_timers_ = fired_bytes_ = 0;
}

void ShardWorker::Expire() {
  const int64_t fired_at = TimeBase::WallNowNs();
  auto admit = [this](const TimerView& t) { return Admit(t); };
  auto sink = [this, fired_at](const Fired& fired) { OnFired(fired, fired_at); };
  // Held timers first: they were due before anything that comes due now.
  if (release_gated_) {
    release_gated_ = false;
    shard_.ReleaseHeld(PartitionGate::kHoldGroup, now_mono_ns_, admit, sink);
    // A timer held for its namespace's full outbox whose partition closed meanwhile stays first in its
    // namespace's list, stopping that list's release: offer every list again.
    for (const auto& [name, ns] : namespace_cache_) {
      if (std::find(release_.begin(), release_.end(), ns) == release_.end()) release_.push_back(ns);
    }
  }
  for (NamespaceState* ns : release_) shard_.ReleaseHeld(ns->index(), now_mono_ns_, admit, sink);
  release_.clear();
  shard_.Advance(now_mono_ns_, admit, sink);
  ReleaseFiredQuota();
}

}  // namespace lawn
