// ShardWorker's commit side: the hand-over of rounds to the commit stage and back, and a round's commit (one
// storage write, then the answers, then the expirations to the outboxes). See shard_worker.h for the
// pipeline.
#include <algorithm>
#include <functional>
#include <utility>
#include <vector>

#include "server/metrics.h"
#include "server/runtime.h"
#include "server/shard_worker.h"

namespace lawn {

bool ShardWorker::CommitHere() {
  if (open_->empty() || open_->batch.count() > kMaxInlineRecords ||
      open_->batch.ByteSize() > kMaxInlineBytes) {
    return false;
  }
  if (stage_->sync_mode() == SyncMode::kSync && open_->batch.needs_sync()) return false;
  // Only the worker hands rounds over, so while none of its rounds is at the stage none will be until this
  // one is written: the rounds are still written in order.
  std::lock_guard lock(mu_);
  return !commit_busy_;
}

bool ShardWorker::TryHandOff() {
  if (open_->empty()) return false;
  {
    std::lock_guard lock(mu_);
    if (commit_busy_) return false;
    committing_ = std::move(open_);
    commit_busy_ = true;
  }
  open_ = std::move(spare_);  // Answered and cleared by CollectWritten whenever no round is at the stage.
  stage_->Hand(this);
  return true;
}

bool ShardWorker::CollectWritten() {
  std::unique_ptr<ShardRound> round;
  absl::Status written;
  {
    std::lock_guard lock(mu_);
    if (written_ == nullptr) return false;
    round = std::move(written_);
    written = std::move(written_status_);
  }
  Answer(*round, written);
  round->Clear();
  spare_ = std::move(round);
  std::lock_guard lock(mu_);
  commit_busy_ = false;
  return true;
}

void ShardWorker::Report(bool collected, bool handed) {
  if (collected && !handed) stage_->Idle(this);
}

void ShardWorker::DrainCommits() {
  if (store_ == nullptr) return;
  for (int pass = 0; pass < 2; ++pass) {
    {
      std::unique_lock lock(mu_);
      cv_.wait(lock, [this] { return !commit_busy_ || written_ != nullptr; });
    }
    const bool collected = CollectWritten();
    Report(collected, pass == 0 && TryHandOff());
  }
}

std::unique_ptr<ShardRound> ShardWorker::TakeRound() {
  std::lock_guard lock(mu_);
  return std::move(committing_);
}

void ShardWorker::RoundWritten(std::unique_ptr<ShardRound> round, const absl::Status& written) {
  {
    std::lock_guard lock(mu_);
    written_ = std::move(round);
    written_status_ = written;
  }
  // The worker may be waiting for this (to answer it, to hand over the next round, or to stop).
  cv_.notify_one();
}

void ShardWorker::Commit(ShardRound& round) {
  Answer(round, stage_ != nullptr ? stage_->Write(round.batch) : absl::OkStatus());
}

void ShardWorker::Answer(ShardRound& round, const absl::Status& written) {
  for (auto& command : round.commands) command->Done(written);
  if (!written.ok()) {
    // Nothing fired in this round is acknowledged; the disk still has the timers. Return the outbox room.
    for (auto& [ns, d] : round.deliveries) ns->outbox.Unreserve(1, d.Charge());
    round.deliveries.clear();
    return;
  }
  PublishCounters(round.counters, round.deliveries.size());
  ObserveLateness(round.deliveries);

  // Publish per namespace in one call each (deliveries are grouped by the order timers fired).
  auto& deliveries = round.deliveries;
  size_t i = 0;
  while (i < deliveries.size()) {
    NamespaceState* ns = deliveries[i].first;
    std::vector<Delivery> group;
    while (i < deliveries.size() && deliveries[i].first == ns) group.push_back(std::move(deliveries[i++].second));
    ns->outbox.Publish(std::move(group), /*reserved=*/true);
  }
  deliveries.clear();
}

void ShardWorker::ObserveLateness(const std::vector<std::pair<NamespaceState*, Delivery>>& deliveries) {
  Metrics* m = runtime_.metrics();
  if (m == nullptr || deliveries.empty()) return;
  const std::vector<double>& bounds = Metrics::LatenessBuckets();
  std::vector<double> counts(bounds.size() + 1, 0.0);
  double sum = 0;
  uint64_t late = 0;
  for (const auto& [ns, d] : deliveries) {
    if (d.attempt != 0) continue;  // Recovered or re-offered: already counted when it first fired.
    // In double: a deadline near the int64 edge (1678) subtracted from fired_at overflows int64.
    const double seconds =
        std::max(0.0, (static_cast<double>(d.fired_at_unix_ns) - static_cast<double>(d.deadline_unix_ns)) * 1e-9);
    counts[std::upper_bound(bounds.begin(), bounds.end(), seconds, std::less_equal<double>()) - bounds.begin()] += 1;
    sum += seconds;
    if (d.late) ++late;
  }
  m->fired_lateness().ObserveMultiple(counts, sum);
  if (late != 0) m->late_expirations().Increment(static_cast<double>(late));
}

void ShardWorker::PublishCounters(const RoundCounters& c, uint64_t expired) {
  Metrics* m = runtime_.metrics();
  if (m == nullptr) return;
  if (c.starts != 0) m->starts().Increment(static_cast<double>(c.starts));
  if (c.deletes != 0) m->deletes().Increment(static_cast<double>(c.deletes));
  if (c.reschedules != 0) m->reschedules().Increment(static_cast<double>(c.reschedules));
  if (expired != 0) m->expirations().Increment(static_cast<double>(expired));
  if (c.skipped != 0) m->skipped_firings().Increment(static_cast<double>(c.skipped));
  if (c.held != 0) m->held_expirations().Increment(static_cast<double>(c.held));
}

}  // namespace lawn
