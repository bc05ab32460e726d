// ShardWorker's commit side: the hand-over of rounds to the commit thread, and a round's commit (one storage
// write, then the answers, then the expirations to the outboxes). See shard_worker.h for the pipeline.
#include <algorithm>
#include <functional>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "server/histogram_batch.h"
#include "server/metrics.h"
#include "server/runtime.h"
#include "server/shard_worker.h"
#include "server/thread_name.h"

namespace lawn {

void ShardWorker::HandOffLocked() {
  committing_ = std::move(open_);
  open_ = std::move(spare_);  // Given back by the commit thread whenever it is not busy.
  commit_busy_ = true;
  commit_cv_.notify_one();
}

bool ShardWorker::CommitHere() {
  if (open_->empty() || open_->batch.count() > kMaxInlineRecords ||
      open_->batch.ByteSize() > kMaxInlineBytes) {
    return false;
  }
  if (sync_mode_ == SyncMode::kSync && open_->batch.needs_sync()) return false;
  // Only the worker hands rounds over, so an idle commit thread stays idle until this round is written: the
  // rounds are still written in order.
  std::lock_guard lock(mu_);
  return !commit_busy_;
}

bool ShardWorker::TryHandOff() {
  if (open_->empty()) return false;
  std::lock_guard lock(mu_);
  if (commit_busy_) return false;
  HandOffLocked();
  return true;
}

void ShardWorker::DrainCommits() {
  if (store_ == nullptr) return;
  std::unique_lock lock(mu_);
  for (int pass = 0; pass < 2; ++pass) {
    cv_.wait(lock, [this] { return !commit_busy_; });
    if (pass == 0 && !open_->empty()) HandOffLocked();
  }
  commit_exit_ = true;
  commit_cv_.notify_one();
  lock.unlock();
  commit_thread_.join();
}

void ShardWorker::CommitLoop() {
  NameThisThread(absl::StrCat("lawn-commit-", index_));
  std::unique_ptr<ShardRound> round;
  while (true) {
    {
      std::unique_lock lock(mu_);
      if (round != nullptr) {
        spare_ = std::move(round);
        commit_busy_ = false;
        // The worker may be waiting for this (a round to hand over, a full round, or the drain at stop).
        cv_.notify_one();
      }
      commit_cv_.wait(lock, [this] { return committing_ != nullptr || commit_exit_; });
      if (committing_ == nullptr) return;
      round = std::move(committing_);
    }
    Commit(*round);
    round->Clear();
  }
}

void ShardWorker::Commit(ShardRound& round) {
  absl::Status written = absl::OkStatus();
  if (store_ != nullptr && !round.batch.empty()) {
    if (runtime_.write_failed()) {
      // An earlier round failed after this one was applied on top of it: writing it alone could store a
      // state that never existed (a delete without its start). It fails with the first failure.
      written = runtime_.write_status();
    } else {
      // Acks alone are not worth an fsync: a lost ack only means a redelivery.
      const SyncMode mode = round.batch.needs_sync() ? sync_mode_ : SyncMode::kNoSync;
      const uint64_t write_start = TimeBase::MonoNowNs();
      written = store_->Write(round.batch, mode);
      if (Metrics* m = runtime_.metrics()) {
        m->storage_write_duration().Observe(static_cast<double>(TimeBase::MonoNowNs() - write_start) * 1e-9);
        if (mode == SyncMode::kSync) m->storage_syncs().Increment();
      }
      if (!written.ok()) runtime_.ReportWriteFailure(written);
    }
  }
  for (auto& command : round.commands) command->Done(written);
  if (!written.ok()) {
    // Nothing fired in this round is acknowledged; the disk still has the timers. Return the outbox room.
    size_t begin = 0;
    for (const auto& [ns, end] : round.delivery_runs) {
      uint64_t bytes = 0;
      for (size_t i = begin; i < end; ++i) bytes += round.deliveries[i].Charge();
      ns->outbox.Unreserve(end - begin, bytes);
      begin = end;
    }
    round.deliveries.clear();
    round.delivery_runs.clear();
    return;
  }
  PublishCounters(round.counters, round.deliveries.size());
  ObserveLateness(round.deliveries);

  // Publish each run of one namespace's deliveries in one call.
  const absl::Span<Delivery> deliveries = absl::MakeSpan(round.deliveries);
  size_t begin = 0;
  for (const auto& [ns, end] : round.delivery_runs) {
    ns->outbox.Publish(deliveries.subspan(begin, end - begin), /*reserved=*/true);
    begin = end;
  }
  round.deliveries.clear();
  round.delivery_runs.clear();
}

void ShardWorker::ObserveLateness(const std::vector<Delivery>& deliveries) {
  Metrics* m = runtime_.metrics();
  if (m == nullptr || deliveries.empty()) return;
  HistogramBatch lateness(Metrics::LatenessBuckets());
  uint64_t late = 0;
  for (const Delivery& d : deliveries) {
    if (d.attempt != 0) continue;  // Recovered or re-offered: already counted when it first fired.
    // In double: a deadline near the int64 edge (1678) subtracted from fired_at overflows int64.
    lateness.Add(std::max(
        0.0, (static_cast<double>(d.fired_at_unix_ns) - static_cast<double>(d.deadline_unix_ns)) * 1e-9));
    if (d.late) ++late;
  }
  lateness.ObserveInto(m->fired_lateness());
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
