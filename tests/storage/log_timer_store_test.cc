// LogTimerStore (storage.engine `log`) beyond the conformance suite: random histories checked against
// MemoryTimerStore across snapshots and reopens, checkpoints, a data dir of the other engine refused both
// ways, left-overs of a snapshot cut short, damage to a snapshot, kill -9 of a writing process at random
// points (every acknowledged synced write survives), and the read that changes nothing (ReadWithoutOpening).
#include "storage/log_timer_store.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "storage/rocksdb_timer_store.h"
#include "storage/store_batch.h"
#include "tests/storage/storage_test_util.h"
#include "tests/testing/memory_timer_store.h"

namespace lawn {
namespace {

using storage_test::Contents;
using storage_test::Copy;
using storage_test::DirFingerprint;
using storage_test::ExpirationCopy;
using storage_test::Incoming;
using storage_test::Key;
using storage_test::StoreContents;
using storage_test::TempDir;

LogStoreOptions SmallOptions(const std::string& path) {
  LogStoreOptions options;
  options.path = path;
  options.segment_bytes = 4096;
  options.snapshot_log_bytes = 3 * 4096;
  options.snapshot_log_percent = 0;  // A snapshot every three segments, whatever the state's size.
  options.min_free_disk_bytes = 0;
  return options;
}

std::unique_ptr<LogTimerStore> OpenOrDie(const LogStoreOptions& options) {
  absl::StatusOr<std::unique_ptr<LogTimerStore>> opened = LogTimerStore::Open(options);
  EXPECT_TRUE(opened.ok()) << opened.status();
  return opened.ok() ? std::move(opened).value() : nullptr;
}

size_t SegmentFiles(const std::string& data_dir) {
  size_t n = 0;
  for (const auto& entry : std::filesystem::directory_iterator(data_dir + "/log"))
    n += entry.is_regular_file();
  return n;
}

// Random batches of every operation: puts and deletes of timers (also of absent records), expirations and
// staged records.
class RandomBatches {
 public:
  explicit RandomBatches(uint64_t seed) : rng_(seed) {}

  StoreBatch Next() {
    StoreBatch b;
    const int ops = 1 + static_cast<int>(rng_() % 12);
    for (int i = 0; i < ops; ++i) {
      const int kind = static_cast<int>(rng_() % 8);
      const std::string key = Key("ns" + std::to_string(rng_() % 3), "id" + std::to_string(rng_() % 200));
      const int64_t deadline = static_cast<int64_t>(rng_() % 50) - 10;
      const std::string payload(rng_() % 40, static_cast<char>('a' + rng_() % 26));
      if (kind <= 2) {
        b.PutTimer(key, deadline, rng_() % 5, rng_() % 2, payload);
        timers_.emplace_back(key, deadline);
      } else if (kind == 3 && !timers_.empty()) {
        const auto& [k, d] = timers_[rng_() % timers_.size()];
        b.DeleteTimer(k, d);
      } else if (kind == 4) {
        b.PutExpiration(next_id_, key, deadline, 1, 0, payload, deadline + 1,
                        static_cast<uint32_t>(rng_() % 3));
        ids_.push_back(next_id_++);
      } else if (kind == 5 && !ids_.empty()) {
        b.DeleteExpiration(ids_[rng_() % ids_.size()]);
      } else if (kind == 6) {
        b.PutIncoming(next_id_++, key, deadline, 0, 0, payload, deadline, 0);
      } else {
        b.DeleteIncoming(1 + rng_() % next_id_);
      }
    }
    return b;
  }
  SyncMode Mode() { return rng_() % 2 ? SyncMode::kSync : SyncMode::kNoSync; }

 private:
  std::mt19937_64 rng_;
  std::vector<std::pair<std::string, int64_t>> timers_;  // Possibly stale: deletes of absent records too.
  std::vector<uint64_t> ids_;
  uint64_t next_id_ = 1;
};

// Random batches, the same to both stores; the log store is reopened now and then, and
// both must recover the same records in the same order.
TEST(LogTimerStoreTest, RandomHistoriesRecoverAsTheMemoryStore) {
  TempDir dir;
  const LogStoreOptions options = SmallOptions(dir.Sub("data"));
  std::unique_ptr<LogTimerStore> log = OpenOrDie(options);
  ASSERT_NE(log, nullptr);
  MemoryTimerStore memory;
  RandomBatches batches(20261128);
  uint64_t snapshots = 0;  // Stats count from each Open.
  for (int round = 0; round < 600; ++round) {
    const StoreBatch b = batches.Next();
    const SyncMode mode = batches.Mode();
    ASSERT_TRUE(log->Write(b, mode).ok());
    ASSERT_TRUE(memory.Write(b, mode).ok());
    if (round % 97 == 96) {
      log->WaitForSnapshot();
      snapshots += log->stats().snapshots;
      EXPECT_EQ(log->stats().snapshot_failures, 0u) << log->stats().last_error;
      log.reset();
      log = OpenOrDie(options);
      ASSERT_NE(log, nullptr);
    }
    if (round % 50 == 49) {
      log->WaitForSnapshot();
      ASSERT_EQ(Contents(*log), Contents(memory)) << "after round " << round;
      ASSERT_EQ(Incoming(*log), Incoming(memory)) << "after round " << round;
    }
  }
  log->WaitForSnapshot();
  const LogTimerStore::Stats stats = log->stats();
  EXPECT_GT(snapshots + stats.snapshots, 5u);
  EXPECT_EQ(stats.snapshot_failures, 0u) << stats.last_error;
  // Retired segments are kept as two spares at most: the log is the snapshot's tail, not the history.
  EXPECT_LE(SegmentFiles(options.path), 3 + 2 + 2u);
  log.reset();
  log = OpenOrDie(options);
  ASSERT_NE(log, nullptr);
  EXPECT_EQ(Contents(*log), Contents(memory));
  EXPECT_EQ(Incoming(*log), Incoming(memory));
}

// What ReadWithoutOpening reports, as Contents and Incoming would.
absl::Status ReadCopies(const std::string& path, StoreContents* contents,
                        std::vector<ExpirationCopy>* staged) {
  return LogTimerStore::ReadWithoutOpening(
      path, [&](const StoredTimer& t) { contents->timers.push_back(Copy(t)); },
      [&](const StoredExpiration& e) {
        contents->outbox.push_back({e.delivery_id, Copy(e.timer), e.fired_at_unix_ns, e.attempt});
      },
      [&](const StoredExpiration& e) {
        staged->push_back({e.delivery_id, Copy(e.timer), e.fired_at_unix_ns, e.attempt});
      });
}

// lawn_dump's read: the records Recover and ForEachIncoming return, in their order, from a store with
// snapshots and a log after the last one, and not a byte of the dir changed; refused while a store has the
// dir open, and for a dir without a store or with the other engine's.
TEST(LogTimerStoreTest, ReadWithoutOpeningReadsWhatRecoverReadsAndChangesNothing) {
  TempDir dir;
  const LogStoreOptions options = SmallOptions(dir.Sub("data"));
  MemoryTimerStore memory;
  {
    std::unique_ptr<LogTimerStore> log = OpenOrDie(options);
    ASSERT_NE(log, nullptr);
    RandomBatches batches(20261129);
    for (int round = 0; round < 300; ++round) {
      const StoreBatch b = batches.Next();
      ASSERT_TRUE(log->Write(b, SyncMode::kNoSync).ok());
      ASSERT_TRUE(memory.Write(b, SyncMode::kNoSync).ok());
    }
    log->WaitForSnapshot();
    EXPECT_GT(log->stats().snapshots, 0u);
    // A store has the dir open (as a running lawnd has).
    StoreContents ignored;
    std::vector<ExpirationCopy> ignored_staged;
    EXPECT_EQ(ReadCopies(options.path, &ignored, &ignored_staged).code(), absl::StatusCode::kUnavailable);
  }
  const auto before = DirFingerprint(options.path);
  StoreContents contents;
  std::vector<ExpirationCopy> staged;
  const absl::Status read = ReadCopies(options.path, &contents, &staged);
  ASSERT_TRUE(read.ok()) << read;
  EXPECT_EQ(contents, Contents(memory));
  EXPECT_EQ(staged, Incoming(memory));
  EXPECT_EQ(DirFingerprint(options.path), before);

  StoreContents none;
  std::vector<ExpirationCopy> none_staged;
  EXPECT_EQ(ReadCopies(dir.Sub("missing"), &none, &none_staged).code(), absl::StatusCode::kNotFound);
  RocksDbStoreOptions rocksdb;
  rocksdb.path = dir.Sub("rocksdb");
  rocksdb.min_free_disk_bytes = 0;
  ASSERT_TRUE(RocksDbTimerStore::Open(rocksdb).ok());
  EXPECT_EQ(ReadCopies(rocksdb.path, &none, &none_staged).code(), absl::StatusCode::kFailedPrecondition);
}

// The staging area as ForEachIncoming reads it: from the files before the first Recover, and from then on
// from what Recover read and every write since (kept in memory, so a cluster settle does not fold the whole
// store under the writers' lock). Both agree with the memory store after every write and across a reopen.
TEST(LogTimerStoreTest, TheStagingAreaIsReadTheSameBeforeAndAfterRecover) {
  TempDir dir;
  const LogStoreOptions options = SmallOptions(dir.Sub("data"));
  std::unique_ptr<LogTimerStore> log = OpenOrDie(options);
  ASSERT_NE(log, nullptr);
  MemoryTimerStore memory;
  RandomBatches batches(20261129);
  for (int round = 0; round < 400; ++round) {
    if (round == 100 || round == 300) {
      log->WaitForSnapshot();
      log.reset();
      log = OpenOrDie(options);
      ASSERT_NE(log, nullptr);
      ASSERT_EQ(Incoming(*log), Incoming(memory)) << "read from the files, round " << round;
      ASSERT_EQ(Contents(*log), Contents(memory)) << "round " << round;  // Recover.
    }
    const StoreBatch b = batches.Next();
    ASSERT_TRUE(log->Write(b, SyncMode::kNoSync).ok());
    ASSERT_TRUE(memory.Write(b, SyncMode::kNoSync).ok());
    if (round >= 100) {
      ASSERT_EQ(Incoming(*log), Incoming(memory)) << "after round " << round;
    }
  }
  EXPECT_FALSE(Incoming(memory).empty());
}

// Background() reports the log a restart would replay (it grows with each write and shrinks when a snapshot
// folds it) and the snapshot's size, also after a reopen (lawn_store_log_bytes, lawn_store_snapshot_bytes).
TEST(LogTimerStoreTest, BackgroundReportsTheLogSinceTheSnapshotAndTheSnapshotSize) {
  TempDir dir;
  const LogStoreOptions options = SmallOptions(dir.Sub("data"));
  std::unique_ptr<LogTimerStore> log = OpenOrDie(options);
  ASSERT_NE(log, nullptr);
  EXPECT_EQ(log->Background().snapshot_bytes, 0u);
  uint64_t last = log->Background().log_bytes;
  int i = 0;
  for (; log->stats().snapshots == 0 && i < 1000; ++i) {
    StoreBatch b;
    b.PutTimer(Key("ns", "t" + std::to_string(i)), 1000 + i, 0, 0, std::string(100, 'p'));
    ASSERT_TRUE(log->Write(b, SyncMode::kNoSync).ok());
    const uint64_t now = log->Background().log_bytes;
    if (log->stats().snapshots == 0) {
      EXPECT_GT(now, last) << "write " << i;
      last = now;
    }
    log->WaitForSnapshot();
  }
  ASSERT_GT(log->stats().snapshots, 0u) << log->stats().last_error;
  const TimerStore::BackgroundStats after = log->Background();
  EXPECT_LT(after.log_bytes, last);
  EXPECT_LE(after.log_bytes, options.segment_bytes);  // Only what was written since the folded segments.
  // The snapshot holds the timers of the segments it folded: most of them, so more than half their payloads.
  EXPECT_GT(after.snapshot_bytes, uint64_t{100} * static_cast<uint64_t>(i - 1) / 2);
  log.reset();
  log = OpenOrDie(options);
  ASSERT_NE(log, nullptr);
  EXPECT_EQ(log->Background().snapshot_bytes, after.snapshot_bytes);
}

// With snapshot_log_percent, a state larger than snapshot_log_bytes is folded only once the log since its
// snapshot has reached that share of the snapshot's size: no snapshot starts before, one does after.
TEST(LogTimerStoreTest, ALargeStateIsFoldedOnlyAfterItsShareOfLog) {
  TempDir dir;
  LogStoreOptions options = SmallOptions(dir.Sub("data"));
  std::unique_ptr<LogTimerStore> log = OpenOrDie(options);
  ASSERT_NE(log, nullptr);
  // A state of many snapshot_log_bytes, folded every three segments.
  int next = 0;
  auto write = [&](LogTimerStore& store) {
    StoreBatch b;
    b.PutTimer(Key("ns", "t" + std::to_string(next)), 1000 + next, 0, 0, std::string(100, 'p'));
    ++next;
    ASSERT_TRUE(store.Write(b, SyncMode::kNoSync).ok());
    store.WaitForSnapshot();
  };
  while (log->Background().snapshot_bytes < 8 * options.snapshot_log_bytes && next < 5000) write(*log);
  const uint64_t snapshot = log->Background().snapshot_bytes;
  ASSERT_GE(snapshot, 8 * options.snapshot_log_bytes) << log->stats().last_error;
  log.reset();

  options.snapshot_log_percent = 50;
  log = OpenOrDie(options);
  ASSERT_NE(log, nullptr);
  const uint64_t share = snapshot / 100 * 50;
  uint64_t longest = 0;  // The log since the snapshot before each write, while no snapshot was taken.
  while (log->stats().snapshots == 0 && next < 20000) {
    longest = std::max(longest, log->Background().log_bytes);
    write(*log);
  }
  ASSERT_EQ(log->stats().snapshots, 1u) << log->stats().last_error;
  // Snapshots start when the writer leaves a segment, so the last write before this one left at most a
  // segment short of the share (at the three segments of snapshot_log_bytes, there would have been one
  // long before).
  EXPECT_GE(longest + options.segment_bytes, share);
  EXPECT_GT(longest, 3 * options.segment_bytes);
  // Nothing was lost across the reopen and the fold.
  log.reset();
  log = OpenOrDie(options);
  ASSERT_NE(log, nullptr);
  EXPECT_EQ(Contents(*log).timers.size(), static_cast<size_t>(next));
}

// A checkpoint taken while another thread writes (and snapshots come due: they wait for it, then run) holds
// a prefix of the writes: every one that returned before the call, none that started after it returned, no
// gap. The store itself loses nothing meanwhile.
TEST(LogTimerStoreTest, ACheckpointDuringWritesHoldsAPrefixOfThem) {
  TempDir dir;
  const LogStoreOptions options = SmallOptions(dir.Sub("data"));
  std::unique_ptr<LogTimerStore> log = OpenOrDie(options);
  ASSERT_NE(log, nullptr);
  constexpr int kMaxWrites = 1'000'000;  // A bound; the writer stops when told.
  std::atomic<int> started{0};
  std::atomic<int> done{0};
  std::atomic<bool> stop{false};
  std::atomic<bool> finished{false};
  std::thread writer([&] {
    for (int i = 0; i < kMaxWrites && !stop.load(); ++i) {
      StoreBatch b;
      b.PutTimer(Key("c", "t" + std::to_string(i)), i, 0, 0, std::string(64, 'p'));
      started.store(i + 1);
      if (!log->Write(b, SyncMode::kNoSync).ok()) break;
      done.store(i + 1);
    }
    finished.store(true);
  });
  struct Taken {
    std::string path;
    int done_before;
    int started_after;
  };
  std::vector<Taken> taken;
  constexpr int kCheckpoints = 10;
  for (int n = 0; n < kCheckpoints; ++n) {
    // At least 200 writes (a few segments, so snapshots too) between checkpoints.
    const int target = done.load() + 200;
    while (done.load() < target && !finished.load()) std::this_thread::yield();
    if (finished.load()) break;
    Taken t{dir.Sub("checkpoint-" + std::to_string(n)), done.load(), 0};
    const absl::Status s = log->Checkpoint(t.path);
    t.started_after = started.load();
    if (!s.ok()) {
      ADD_FAILURE() << s;
      break;
    }
    taken.push_back(t);
  }
  stop.store(true);
  writer.join();
  ASSERT_EQ(done.load(), started.load()) << "a write failed";
  log->WaitForSnapshot();
  EXPECT_GT(log->stats().snapshots, 0u);
  EXPECT_EQ(log->stats().snapshot_failures, 0u) << log->stats().last_error;
  EXPECT_EQ(Contents(*log).timers.size(), static_cast<size_t>(done.load()));
  ASSERT_EQ(taken.size(), static_cast<size_t>(kCheckpoints));
  for (const Taken& t : taken) {
    std::unique_ptr<LogTimerStore> store = OpenOrDie(SmallOptions(t.path));
    ASSERT_NE(store, nullptr) << t.path;
    const std::vector<storage_test::TimerCopy> timers = Contents(*store).timers;
    EXPECT_GE(static_cast<int>(timers.size()), t.done_before) << t.path;
    EXPECT_LE(static_cast<int>(timers.size()), t.started_after) << t.path;
    for (size_t i = 0; i < timers.size(); ++i) {
      ASSERT_EQ(timers[i].deadline_unix_ns, static_cast<int64_t>(i))
          << t.path << ": a gap before write " << i;
    }
  }
}

// Checkpoints taken between writes (before any snapshot, and after several) open as stores holding what was
// written before each one, whatever is written after; a checkpoint into an existing dir is refused.
TEST(LogTimerStoreTest, CheckpointsOpenAsTheStoreWasWhenTaken) {
  TempDir dir;
  const LogStoreOptions options = SmallOptions(dir.Sub("data"));
  std::unique_ptr<LogTimerStore> log = OpenOrDie(options);
  ASSERT_NE(log, nullptr);
  MemoryTimerStore memory;
  RandomBatches batches(7);
  struct Taken {
    std::string path;
    decltype(Contents(memory)) contents;
    std::vector<ExpirationCopy> incoming;
  };
  std::vector<Taken> taken;
  for (int round = 0; round < 400; ++round) {
    const StoreBatch b = batches.Next();
    const SyncMode mode = batches.Mode();
    ASSERT_TRUE(log->Write(b, mode).ok());
    ASSERT_TRUE(memory.Write(b, mode).ok());
    if (round == 3 || round % 90 == 89) {
      const std::string path = dir.Sub("checkpoint-" + std::to_string(round));
      const absl::Status s = log->Checkpoint(path);
      ASSERT_TRUE(s.ok()) << s;
      taken.push_back({path, Contents(memory), Incoming(memory)});
    }
  }
  EXPECT_GE(log->stats().snapshots, 3u);
  const absl::Status again = log->Checkpoint(taken.front().path);
  EXPECT_EQ(again.code(), absl::StatusCode::kFailedPrecondition) << again;
  log.reset();
  for (const Taken& t : taken) {
    LogStoreOptions restored = SmallOptions(t.path);
    std::unique_ptr<LogTimerStore> store = OpenOrDie(restored);
    ASSERT_NE(store, nullptr) << t.path;
    EXPECT_EQ(Contents(*store), t.contents) << t.path;
    EXPECT_EQ(Incoming(*store), t.incoming) << t.path;
    // And it is a working store: written to and reopened.
    StoreBatch more;
    more.PutTimer(Key("after", "x"), 1, 0, 0, "");
    ASSERT_TRUE(store->Write(more, SyncMode::kSync).ok());
  }
}

TEST(LogTimerStoreTest, RefusesARocksDbDataDirAndRocksDbRefusesItsDir) {
  TempDir dir;
  EXPECT_EQ(InspectDataDir(dir.Sub("missing")).value(), DataDirStore::kNone);
  EXPECT_EQ(InspectDataDir(dir.path()).value(), DataDirStore::kNone);
  {
    RocksDbStoreOptions options;
    options.path = dir.Sub("rocks");
    ASSERT_TRUE(RocksDbTimerStore::Open(options).ok());
  }
  EXPECT_EQ(InspectDataDir(dir.Sub("rocks")).value(), DataDirStore::kRocksDb);
  absl::StatusOr<std::unique_ptr<LogTimerStore>> log = LogTimerStore::Open(SmallOptions(dir.Sub("rocks")));
  ASSERT_FALSE(log.ok());
  EXPECT_EQ(log.status().code(), absl::StatusCode::kFailedPrecondition) << log.status();
  EXPECT_NE(log.status().message().find("RocksDB"), std::string::npos) << log.status();

  {
    std::unique_ptr<LogTimerStore> made = OpenOrDie(SmallOptions(dir.Sub("log")));
    StoreBatch b;
    b.PutTimer(Key("ns", "a"), 1, 0, 0, "");
    ASSERT_TRUE(made->Write(b, SyncMode::kSync).ok());
  }
  EXPECT_EQ(InspectDataDir(dir.Sub("log")).value(), DataDirStore::kLog);
  RocksDbStoreOptions options;
  options.path = dir.Sub("log");
  EXPECT_FALSE(RocksDbTimerStore::Open(options).ok());
  // ... and the refused open left the log store as it was.
  std::unique_ptr<LogTimerStore> reopened = OpenOrDie(SmallOptions(dir.Sub("log")));
  EXPECT_EQ(Contents(*reopened).timers.size(), 1u);
}

TEST(LogTimerStoreTest, LeftOversOfASnapshotCutShortAreIgnoredAndDeleted) {
  TempDir dir;
  const LogStoreOptions options = SmallOptions(dir.Sub("data"));
  {
    std::unique_ptr<LogTimerStore> store = OpenOrDie(options);
    StoreBatch b;
    b.PutTimer(Key("ns", "kept"), 5, 0, 0, "p");
    ASSERT_TRUE(store->Write(b, SyncMode::kSync).ok());
  }
  // A snapshot written but not yet named by MANIFEST, a temporary one, and a MANIFEST being replaced.
  std::ofstream(options.path + "/snapshot-999.lawnsnap") << "garbage";
  std::ofstream(options.path + "/snapshot-1000.lawnsnap.tmp") << "garbage";
  std::ofstream(options.path + "/MANIFEST.tmp") << "snapshot snapshot-999.lawnsnap 999\n";
  std::unique_ptr<LogTimerStore> store = OpenOrDie(options);
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(Contents(*store).timers.size(), 1u);
  EXPECT_FALSE(std::filesystem::exists(options.path + "/snapshot-999.lawnsnap"));
  EXPECT_FALSE(std::filesystem::exists(options.path + "/MANIFEST.tmp"));
}

TEST(LogTimerStoreTest, ADamagedSnapshotIsDataLossNotAnEmptyStore) {
  TempDir dir;
  const LogStoreOptions options = SmallOptions(dir.Sub("data"));
  std::string snapshot;
  {
    std::unique_ptr<LogTimerStore> store = OpenOrDie(options);
    for (int i = 0; store->stats().snapshots == 0 && i < 2000; ++i) {
      StoreBatch b;
      b.PutTimer(Key("ns", "t" + std::to_string(i)), i, 0, 0, std::string(100, 'x'));
      ASSERT_TRUE(store->Write(b, SyncMode::kNoSync).ok());
      store->WaitForSnapshot();
    }
    ASSERT_GT(store->stats().snapshots, 0u);
    snapshot = options.path + "/snapshot-" + std::to_string(store->stats().snapshot_sequence) + ".lawnsnap";
  }
  ASSERT_TRUE(std::filesystem::exists(snapshot));
  {
    std::fstream f(snapshot, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(20);
    f.put('\x7f');
  }
  std::unique_ptr<LogTimerStore> store = OpenOrDie(options);
  ASSERT_NE(store, nullptr);
  TimerStore& as_store = *store;  // The two-callback Recover is the base class's.
  absl::Status recovered = as_store.Recover([](const StoredTimer&) {}, [](const StoredExpiration&) {});
  EXPECT_EQ(recovered.code(), absl::StatusCode::kDataLoss) << recovered;
}

// A child process writes synced batches and reports each acknowledged one on a pipe; the parent kills it with
// SIGKILL at a random point (often during a snapshot: they come every three 4 KiB segments) and checks that
// every acknowledged timer is recovered, and nothing that was never written.
TEST(LogTimerStoreTest, KillNineKeepsEveryAcknowledgedWrite) {
  std::mt19937 rng(7);
  int with_snapshot = 0;  // Runs killed after a snapshot was in place (MANIFEST written).
  for (int run = 0; run < 12; ++run) {
    TempDir dir;
    const LogStoreOptions options = SmallOptions(dir.Sub("data"));
    int fds[2];
    ASSERT_EQ(pipe(fds), 0);
    const pid_t child = fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
      close(fds[0]);
      absl::StatusOr<std::unique_ptr<LogTimerStore>> store = LogTimerStore::Open(options);
      if (!store.ok()) _exit(2);
      for (uint32_t i = 0; i < 100000; ++i) {
        StoreBatch b;
        b.PutTimer(Key("ns", "t" + std::to_string(i)), i, 0, 0, std::string(i % 300, 'p'));
        if (i > 0 && i % 3 == 0) b.DeleteTimer(Key("ns", "t" + std::to_string(i - 3)), i - 3);
        if (!(*store)->Write(b, SyncMode::kSync).ok()) _exit(3);
        if (write(fds[1], &i, sizeof i) != sizeof i) _exit(4);
      }
      _exit(0);
    }
    close(fds[1]);
    const uint32_t kill_after = 50 + rng() % 400;
    uint32_t acked = 0;
    bool any = false;
    for (uint32_t got = 0; got < kill_after; ++got) {
      uint32_t i = 0;
      if (read(fds[0], &i, sizeof i) != sizeof i) break;
      acked = i;
      any = true;
    }
    kill(child, SIGKILL);
    int status = 0;
    waitpid(child, &status, 0);
    // Acknowledgements the child wrote before it died and the parent had not read yet.
    for (uint32_t i = 0; read(fds[0], &i, sizeof i) == sizeof i;) {
      acked = i;
      any = true;
    }
    close(fds[0]);
    ASSERT_TRUE(any);
    with_snapshot += std::filesystem::exists(options.path + "/MANIFEST");
    // A dump of the crashed writer's dir (its torn end included) reads what the next start recovers.
    StoreContents read_before_open;
    std::vector<ExpirationCopy> staged;
    ASSERT_TRUE(ReadCopies(options.path, &read_before_open, &staged).ok());
    std::unique_ptr<LogTimerStore> store = OpenOrDie(options);
    ASSERT_NE(store, nullptr);
    const StoreContents recovered = Contents(*store);
    EXPECT_EQ(read_before_open, recovered) << "run " << run;
    std::set<std::string> keys;
    for (const auto& t : recovered.timers) keys.insert(t.key);
    // Write acked + 1 may or may not have landed when the child was killed: so may its delete of acked - 2.
    for (uint32_t i = 0; i <= acked; ++i) {
      const bool deletable = i % 3 == 0;
      const size_t count = keys.count(Key("ns", "t" + std::to_string(i)));
      if (deletable && i + 3 == acked + 1) continue;
      ASSERT_EQ(count, deletable && i + 3 <= acked ? 0u : 1u)
          << "run " << run << ": timer " << i << " of " << acked << " acknowledged";
    }
    // Nothing beyond the one write in flight when it was killed.
    for (const std::string& key : keys) {
      EXPECT_LE(std::stoul(key.substr(key.find('\0') + 2)), acked + 1u) << "run " << run;
    }
  }
  EXPECT_GE(with_snapshot, 6);
}

}  // namespace
}  // namespace lawn
