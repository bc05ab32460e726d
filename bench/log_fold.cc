// lawn_log_fold: CPU time of the log engine's fold (storage/log_state.h: LogDelta, MergeState,
// SnapshotWriter), the background work that turns the log since the last snapshot into the next snapshot
// (BENCHMARKS.md section 46). It runs FOLDS folds in a row as LogTimerStore's snapshot thread does, each over
// LOG_MIB of log records built as lawnd's shard rounds encode them (not timed), the previous fold's snapshot
// as input, and prints per fold the thread CPU time (user + system, so page faults count) of its three steps:
// reading the records into the delta, sorting it, merging it with the snapshot into a new synced snapshot
// file. Single-threaded; deterministic (fixed seed). Writes its snapshots under DIR (default /tmp).
//
//   build/bench/lawn_log_fold FOLDS LOG_MIB WORKLOAD [DIR [PERCENT]]
//
// PERCENT (default 0) applies LogTimerStore's snapshot_log_percent: a fold takes at least LOG_MIB of log and
// at least PERCENT % of the last snapshot's size, as lawnd's store waits for before it folds (so the folds
// of a growing state get longer, and runs of different PERCENT fold different amounts of log in FOLDS folds:
// compare their CPU per logged operation beside the log and the state each reached; BENCHMARKS.md s. 47).
//
// WORKLOAD:
//   starts  rounds of 100 PutTimer, 16-byte random ids in one namespace, deadline one hour after the round's
//           time (bench/scripts/rotate.sh's load): the state grows by every timer of every fold.
//   cycle   rounds of 100 starts, plus the expiration of the timers started 2,000 rounds earlier
//   (DeleteTimer,
//           PutExpiration) and the ack of those fired 20 rounds before (DeleteExpiration): the state stays at
//           about 200,000 timers while every record is put and deleted.
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "storage/log_state.h"
#include "storage/store_batch.h"

namespace {

double ThreadCpuSeconds() {
  rusage u{};
  getrusage(RUSAGE_THREAD, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) * 1e-6;
}

// Builds shard rounds as lawnd encodes them, one StoreBatch per round.
class RoundMaker {
 public:
  explicit RoundMaker(bool cycle) : cycle_(cycle) {}

  // Appends the next round's encoded operations to `rounds` and its length to `sizes`; returns how many.
  size_t Next(std::string* rounds, std::vector<uint32_t>* sizes) {
    constexpr int kStarts = 100;
    constexpr uint64_t kRoundNs = 200'000;  // 100 timers per 200 us: 500k timers/s.
    constexpr uint64_t kTtlNs = uint64_t{3600} * 1'000'000'000;
    constexpr size_t kFireAfter = 2000;  // Rounds: 400 ms of a 500k/s load.
    constexpr size_t kAckAfter = 20;
    batch_.Clear();
    now_ += kRoundNs;
    const int64_t deadline = static_cast<int64_t>(now_ + kTtlNs);
    std::vector<std::string> started;
    for (int i = 0; i < kStarts; ++i) {
      NewKey();
      batch_.PutTimer(key_, deadline, kTtlNs, 0, {});
      if (cycle_) started.push_back(key_);
    }
    if (cycle_) {
      history_.push_back(Round{deadline, std::move(started), 0});
      if (history_.size() > kFireAfter) {
        Round& fired = history_[history_.size() - 1 - kFireAfter];
        fired.first_delivery = next_delivery_;
        for (const std::string& key : fired.keys) {
          batch_.DeleteTimer(key, fired.deadline);
          batch_.PutExpiration(next_delivery_++, key, fired.deadline, kTtlNs, 0, {}, fired.deadline, 1);
        }
      }
      if (history_.size() > kFireAfter + kAckAfter) {
        const Round& acked = history_.front();
        for (size_t i = 0; i < acked.keys.size(); ++i) batch_.DeleteExpiration(acked.first_delivery + i);
        history_.pop_front();
      }
    }
    rounds->append(batch_.data());
    sizes->push_back(static_cast<uint32_t>(batch_.ByteSize()));
    return batch_.count();
  }

 private:
  struct Round {
    int64_t deadline;
    std::vector<std::string> keys;
    uint64_t first_delivery;
  };
  // lawnd's key: namespace \0 id, a namespace as lawn_load's and a 16-byte random id.
  void NewKey() {
    const uint64_t a = rng_(), b = rng_();
    std::memcpy(&key_[kPrefix], &a, 8);
    std::memcpy(&key_[kPrefix + 8], &b, 8);
  }

  static constexpr size_t kPrefix = 21;  // "load-4242-1795000000" and '\0'.
  const bool cycle_;
  std::string key_ = std::string("load-4242-1795000000\0", kPrefix) + std::string(16, 'x');
  std::mt19937_64 rng_{1};
  uint64_t now_ = uint64_t{1795000000} * 1'000'000'000;
  uint64_t next_delivery_ = 1;
  std::deque<Round> history_;
  lawn::StoreBatch batch_;
};

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4 || argc > 6) {
    std::fprintf(stderr, "usage: %s FOLDS LOG_MIB starts|cycle [DIR [PERCENT]]\n", argv[0]);
    return 2;
  }
  const int folds = std::atoi(argv[1]);
  const size_t log_bytes = std::strtoull(argv[2], nullptr, 10) << 20;
  const std::string workload = argv[3];
  if (workload != "starts" && workload != "cycle") {
    std::fprintf(stderr, "WORKLOAD must be starts or cycle\n");
    return 2;
  }
  if (folds < 1 || log_bytes == 0 || log_bytes > (uint64_t{4} << 30)) {
    std::fprintf(stderr, "FOLDS must be at least 1 and LOG_MIB 1..4096\n");
    return 2;
  }
  const std::string dir = argc >= 5 ? argv[4] : "/tmp";
  const long percent = argc == 6 ? std::atol(argv[5]) : 0;
  if (percent < 0 || percent > 1000) {
    std::fprintf(stderr, "PERCENT must be 0..1000\n");
    return 2;
  }
  uint64_t snapshot_bytes = 0;  // The previous fold's snapshot's size.
  RoundMaker maker(workload == "cycle");
  std::string snapshot;  // The previous fold's, empty for none.
  double total_cpu = 0;
  uint64_t total_ops = 0;
  for (int fold = 1; fold <= folds; ++fold) {
    std::string rounds;
    std::vector<uint32_t> sizes;
    const uint64_t fold_bytes = std::max<uint64_t>(log_bytes, snapshot_bytes / 100 * percent);
    rounds.reserve(fold_bytes + (1 << 20));
    uint64_t ops = 0;
    while (rounds.size() < fold_bytes) ops += maker.Next(&rounds, &sizes);

    lawn::logstore::LogDelta delta;
    const double t0 = ThreadCpuSeconds();
    delta.Reserve(fold_bytes);
    std::string_view kept = delta.Keep(std::move(rounds));
    for (uint32_t size : sizes) {
      if (!delta.Add(kept.substr(0, size), /*copy=*/false)) std::abort();
      kept.remove_prefix(size);
    }
    const double t1 = ThreadCpuSeconds();
    const size_t distinct = delta.Sorted().size();
    const double t2 = ThreadCpuSeconds();
    const std::string path = dir + "/lawn-log-fold-" + std::to_string(getpid()) + "-" + std::to_string(fold);
    auto writer = lawn::logstore::SnapshotWriter::Create(path);
    if (!writer.ok()) {
      std::fprintf(stderr, "%s\n", writer.status().ToString().c_str());
      return 1;
    }
    uint64_t records = 0;
    absl::Status merged = lawn::logstore::MergeState(
        snapshot, delta,
        [&](const lawn::logstore::StateRecord& record) {
          ++records;
          return (*writer)->AddEncoded(record.op());
        },
        [](const absl::Status&) { return false; });
    if (merged.ok()) merged = (*writer)->Finish(fold);
    if (!merged.ok()) {
      std::fprintf(stderr, "%s\n", merged.ToString().c_str());
      return 1;
    }
    const double t3 = ThreadCpuSeconds();
    if (!snapshot.empty()) std::remove(snapshot.c_str());
    snapshot = path;
    snapshot_bytes = (*writer)->bytes();
    total_cpu += t3 - t0;
    total_ops += ops;
    std::printf(
        "fold=%d log_mib=%.0f log_ops=%llu distinct=%zu state_records=%llu snapshot_mib=%.1f cpu_s read=%.3f "
        "sort=%.3f "
        "merge=%.3f total=%.3f us_per_log_op=%.3f\n",
        fold, static_cast<double>(fold_bytes) / (1 << 20), static_cast<unsigned long long>(ops), distinct,
        static_cast<unsigned long long>(records), static_cast<double>((*writer)->bytes()) / (1 << 20),
        t1 - t0, t2 - t1, t3 - t2, t3 - t0, (t3 - t0) * 1e6 / static_cast<double>(ops));
  }
  if (!snapshot.empty()) std::remove(snapshot.c_str());
  std::printf("workload=%s folds=%d log_mib=%zu percent=%ld total_cpu_s=%.3f us_per_log_op=%.3f\n",
              workload.c_str(), folds, log_bytes >> 20, percent, total_cpu,
              total_cpu * 1e6 / static_cast<double>(total_ops));
  return 0;
}
