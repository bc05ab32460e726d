#include "server/commit_stage.h"

#include <utility>
#include <vector>

#include "server/metrics.h"
#include "server/runtime.h"
#include "server/time_base.h"

namespace lawn {

CommitStage::CommitStage(Runtime& runtime, TimerStore& store, SyncMode sync_mode)
    : runtime_(runtime), store_(store), sync_mode_(sync_mode) {}

CommitStage::~CommitStage() { Stop(); }

void CommitStage::Start() {
  thread_ = std::thread([this] { Loop(); });
}

void CommitStage::Stop() {
  {
    std::lock_guard lock(mu_);
    exit_ = true;
  }
  cv_.notify_one();
  if (thread_.joinable()) thread_.join();
}

void CommitStage::Hand(CommitSource* source) {
  bool wake;
  {
    std::lock_guard lock(mu_);
    ready_.push_back(source);
    std::erase(awaited_, source);
    // The stage wakes for the first round (to write it, or to start waiting for the others) and for the last
    // worker it awaited; a wake-up in between would find it still waiting.
    wake = ready_.size() == 1 || awaited_.empty();
  }
  if (wake) cv_.notify_one();
}

void CommitStage::Idle(CommitSource* source) {
  bool wake;
  {
    std::lock_guard lock(mu_);
    std::erase(awaited_, source);
    wake = !ready_.empty() && awaited_.empty();
  }
  if (wake) cv_.notify_one();
}

absl::Status CommitStage::Write(const StoreBatch& batch) {
  if (batch.empty()) return absl::OkStatus();
  // An earlier round failed after this one was applied on top of it: writing it alone could store a state
  // that never existed (a delete without its start). It fails with the first failure.
  if (runtime_.write_failed()) return runtime_.write_status();
  // Acks alone are not worth an fsync: a lost ack only means a redelivery.
  const SyncMode mode = batch.needs_sync() ? sync_mode_ : SyncMode::kNoSync;
  const uint64_t write_start = TimeBase::MonoNowNs();
  absl::Status written = store_.Write(batch, mode);
  if (Metrics* m = runtime_.metrics()) {
    m->storage_write_duration().Observe(static_cast<double>(TimeBase::MonoNowNs() - write_start) * 1e-9);
    if (mode == SyncMode::kSync) m->storage_syncs().Increment();
  }
  if (!written.ok()) runtime_.ReportWriteFailure(written);
  return written;
}

void CommitStage::Loop() {
  std::vector<CommitSource*> ready;
  while (true) {
    {
      std::unique_lock lock(mu_);
      while (true) {
        if (exit_ || (!ready_.empty() && awaited_.empty())) break;
        if (ready_.empty()) {
          cv_.wait(lock);
          continue;
        }
        // Waiting for a worker longer than a write takes would cost more than the fsync it might save: one
        // busy firing or applying a long batch must not hold the others' answers back.
        if (TimeBase::MonoNowNs() >= await_until_ns_) break;
        cv_.wait_until(lock, TimeBase::MonoToTimePoint(await_until_ns_));
      }
      if (ready_.empty()) return;  // Stopping, and nothing left.
      ready.swap(ready_);
    }
    for (CommitSource* source : ready) rounds_.emplace_back(source, source->TakeRound());
    ready.clear();
    const uint64_t write_start = TimeBase::MonoNowNs();
    absl::Status written;
    if (rounds_.size() == 1) {
      written = Write(rounds_.front().second->batch);
    } else {
      // One write for all: a copy of the rounds' encoded operations, small beside the fsync it saves.
      combined_.Clear();
      for (const auto& [source, round] : rounds_) combined_.Append(round->batch);
      written = Write(combined_);
    }
    const uint64_t write_end = TimeBase::MonoNowNs();
    {
      // Before the rounds go back: a worker may hand its next one over at once.
      std::lock_guard lock(mu_);
      for (const auto& [source, round] : rounds_) awaited_.push_back(source);
      await_until_ns_ = write_end + (write_end - write_start);
    }
    for (auto& [source, round] : rounds_) {
      // A round that wrote nothing (reads only) is not failed by the others' write, as when written alone.
      const absl::Status status = round->batch.empty() ? absl::OkStatus() : written;
      source->RoundWritten(std::move(round), status);
    }
    rounds_.clear();
  }
}

}  // namespace lawn
