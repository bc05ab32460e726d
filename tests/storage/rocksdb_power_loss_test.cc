// Power cuts, simulated by FaultInjectionEnv (tests/testing/fault_injection_env.h): what was written with
// kSync or covered by Sync() survives; later kNoSync writes are lost; the store always reopens cleanly.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "storage/rocksdb_timer_store.h"
#include "storage/store_batch.h"
#include "tests/storage/storage_test_util.h"
#include "tests/testing/fault_injection_env.h"

namespace lawn {
namespace {

using storage_test::Contents;
using storage_test::Key;
using storage_test::StoreContents;
using storage_test::TempDir;
using storage_test::TimerKeys;

class RocksDbPowerLossTest : public ::testing::Test {
 protected:
  void SetUp() override { Open(); }

  void Open() {
    RocksDbStoreOptions options;
    options.path = dir_.Sub("data");
    absl::StatusOr<std::unique_ptr<RocksDbTimerStore>> store = RocksDbTimerStore::Open(options, env_.env());
    ASSERT_TRUE(store.ok()) << store.status();
    store_ = std::move(store).value();
  }

  // The power goes out now; the machine comes back up and lawnd reopens its data dir.
  void PowerCutAndReopen() {
    env_.CutPower();
    store_.reset();
    absl::Status s = env_.RestoreAfterPowerCut();
    ASSERT_TRUE(s.ok()) << s;
    Open();
  }

  void Put(const std::string& id, SyncMode mode) {
    StoreBatch b;
    b.PutTimer(Key("ns", id), 1, 0, 0, "payload-" + id);
    absl::Status s = store_->Write(b, mode);
    ASSERT_TRUE(s.ok()) << s;
  }

  TempDir dir_;
  FaultInjectionEnv env_;
  std::unique_ptr<RocksDbTimerStore> store_;
};

TEST_F(RocksDbPowerLossTest, SyncedWritesSurviveAndLaterUnsyncedOnesAreLost) {
  Put("a-nosync", SyncMode::kNoSync);
  Put("b-sync", SyncMode::kSync);  // Its fsync also covers "a", which is earlier in the same WAL.
  Put("c-nosync", SyncMode::kNoSync);
  PowerCutAndReopen();
  EXPECT_EQ(TimerKeys(*store_), (std::vector<std::string>{Key("ns", "a-nosync"), Key("ns", "b-sync")}));
}

TEST_F(RocksDbPowerLossTest, SyncMakesEarlierUnsyncedWritesDurable) {
  Put("a", SyncMode::kNoSync);
  Put("b", SyncMode::kNoSync);
  ASSERT_TRUE(store_->Sync().ok());
  PowerCutAndReopen();
  EXPECT_EQ(TimerKeys(*store_), (std::vector<std::string>{Key("ns", "a"), Key("ns", "b")}));
}

TEST_F(RocksDbPowerLossTest, NoSyncWritesDoNotFsyncAndSyncWritesDo) {
  Put("warm-up", SyncMode::kSync);  // The first synced write also fsyncs the new WAL's directory.
  const uint64_t before = env_.file_syncs();
  for (int i = 0; i < 10; ++i) Put("n" + std::to_string(i), SyncMode::kNoSync);
  EXPECT_EQ(env_.file_syncs(), before);
  Put("s", SyncMode::kSync);
  EXPECT_EQ(env_.file_syncs(), before + 1);
}

// Synced writers of several threads (the shards' commit threads) share WAL syncs (the store's group commit):
// every write acknowledged before the cut survives it. (How many syncs they shared depends on scheduling;
// it is printed, not asserted.)
TEST_F(RocksDbPowerLossTest, ConcurrentSyncedWritersKeepEveryAcknowledgedWrite) {
  Put("warm-up", SyncMode::kSync);
  constexpr int kThreads = 4;
  constexpr int kWrites = 200;
  const uint64_t syncs_before = env_.file_syncs();
  std::vector<std::vector<std::string>> acked(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kWrites; ++i) {
        const std::string id = "t" + std::to_string(t) + "-" + std::to_string(i);
        StoreBatch b;
        b.PutTimer(Key("ns", id), 1, 0, 0, "p");
        if (store_->Write(b, SyncMode::kSync).ok()) acked[t].push_back(Key("ns", id));
      }
    });
  }
  for (std::thread& t : threads) t.join();
  const uint64_t syncs = env_.file_syncs() - syncs_before;
  EXPECT_GE(syncs, 1u);
  std::printf("%d synced writes, %llu file syncs\n", kThreads * kWrites, static_cast<unsigned long long>(syncs));
  PowerCutAndReopen();
  std::vector<std::string> keys = TimerKeys(*store_);
  std::set<std::string> present(keys.begin(), keys.end());
  size_t total = 0;
  for (const auto& per_thread : acked) {
    ASSERT_EQ(per_thread.size(), size_t{kWrites});
    for (const std::string& k : per_thread) EXPECT_TRUE(present.count(k)) << k << " was acknowledged but lost";
    total += per_thread.size();
  }
  EXPECT_EQ(present.size(), total + 1);  // + warm-up
}

TEST_F(RocksDbPowerLossTest, AtomicExpirySurvivesOrVanishesAsAWhole) {
  Put("t", SyncMode::kSync);
  StoreBatch expire;
  expire.DeleteTimer(Key("ns", "t"), 1);
  expire.PutExpiration(1, Key("ns", "t"), 1, 0, 0, "payload-t", 2, 0);
  ASSERT_TRUE(store_->Write(expire, SyncMode::kSync).ok());
  StoreBatch unsynced;  // Lost in the cut: neither half of it may show.
  unsynced.PutTimer(Key("ns", "u"), 1, 0, 0, "");
  unsynced.DeleteExpiration(1);
  ASSERT_TRUE(store_->Write(unsynced, SyncMode::kNoSync).ok());
  PowerCutAndReopen();
  const StoreContents c = Contents(*store_);
  EXPECT_TRUE(c.timers.empty());
  ASSERT_EQ(c.outbox.size(), 1u);
  EXPECT_EQ(c.outbox[0].delivery_id, 1u);
}

TEST_F(RocksDbPowerLossTest, RepeatedCutsAcrossFlushesAndCompactionsKeepExactlyTheSyncedData) {
  std::set<std::string> durable;
  std::map<std::string, int64_t> deadline_of;  // What each key was stored with.
  uint64_t last_epoch = 0;
  for (int round = 0; round < 6; ++round) {
    absl::StatusOr<uint64_t> epoch = store_->NextBootEpoch();
    ASSERT_TRUE(epoch.ok()) << epoch.status();
    EXPECT_EQ(*epoch, last_epoch + 1) << "round " << round;
    last_epoch = *epoch;
    StoreBatch b;
    for (int i = 0; i < 200; ++i) {
      const std::string id = std::to_string(round) + "-" + std::to_string(i);
      b.Clear();
      b.PutTimer(Key("ns", id), i, 0, 0, std::string(100, 'x'));
      deadline_of[Key("ns", id)] = i;
      if (i % 7 == 0 && !durable.empty()) b.DeleteTimer(*durable.begin(), deadline_of[*durable.begin()]);
      ASSERT_TRUE(store_->Write(b, SyncMode::kNoSync).ok());
      if (i % 7 == 0 && !durable.empty()) durable.erase(durable.begin());
      durable.insert(Key("ns", id));
    }
    ASSERT_TRUE(store_->Sync().ok());
    if (round % 2 == 1) {
      ASSERT_TRUE(store_->CompactAll().ok());  // SSTs, a new WAL, MANIFEST edits.
    }
    Put("lost-" + std::to_string(round), SyncMode::kNoSync);
    PowerCutAndReopen();
    std::vector<std::string> keys = TimerKeys(*store_);
    EXPECT_EQ(std::set<std::string>(keys.begin(), keys.end()), durable) << "round " << round;
  }
}

// The power goes out at the n-th sync from the moment the store is open, for many n: inside WAL syncs, and
// inside flushes and compactions (SST, MANIFEST, CURRENT, directory syncs). Every write acknowledged while
// the power was on survives, every acknowledged delete stays done, and the store always reopens.
TEST_F(RocksDbPowerLossTest, CutAtAnySyncPointKeepsEveryAcknowledgedWrite) {
  std::set<std::string> model;  // What acknowledged writes left behind.
  std::map<std::string, int64_t> deadline_of;  // What each key was stored with.
  for (uint64_t n = 1; n <= 60; ++n) {
    SCOPED_TRACE("cut at sync " + std::to_string(n));
    env_.CutPowerAtSync(n);
    std::optional<std::string> in_flight_put;
    std::optional<std::string> in_flight_delete;
    for (int i = 0; i < 200 && env_.powered(); ++i) {
      StoreBatch b;
      std::string put;
      std::string del;
      if (i % 4 == 3 && !model.empty()) {
        del = *model.begin();
        b.DeleteTimer(del, deadline_of[del]);
      } else {
        put = Key("ns", std::to_string(n) + "-" + std::to_string(i));
        b.PutTimer(put, i, 0, 0, std::string(50, 'v'));
        deadline_of[put] = i;
      }
      absl::Status s = store_->Write(b, SyncMode::kSync);
      if (!env_.powered()) {  // The cut came during this write: it may or may not have reached the disk.
        if (!put.empty()) in_flight_put = put;
        if (!del.empty()) in_flight_delete = del;
        break;
      }
      ASSERT_TRUE(s.ok()) << s;
      if (!put.empty()) model.insert(put);
      if (!del.empty()) model.erase(del);
      if (i % 6 == 5) {
        s = store_->CompactAll();
        if (env_.powered()) {
          ASSERT_TRUE(s.ok()) << s;
        }
      }
    }
    if (env_.powered()) env_.CutPower();
    store_.reset();
    absl::Status s = env_.RestoreAfterPowerCut();
    ASSERT_TRUE(s.ok()) << s;
    Open();
    ASSERT_NE(store_, nullptr);
    std::vector<std::string> keys = TimerKeys(*store_);
    std::set<std::string> got(keys.begin(), keys.end());
    if (in_flight_put.has_value() && got.count(*in_flight_put) > 0) model.insert(*in_flight_put);
    if (in_flight_delete.has_value() && got.count(*in_flight_delete) == 0) model.erase(*in_flight_delete);
    ASSERT_EQ(got, model);
  }
}

// A failed WAL append leaves RocksDB in a state where syncing the WAL aborts the process (an assertion in
// Debian's build), so the store stops: every call returns UNAVAILABLE, closing does not crash, and a reopen
// brings back everything that was synced before.
TEST_F(RocksDbPowerLossTest, FailedWalAppendStopsTheStoreUntilReopen) {
  for (AppendFailure failure : {AppendFailure::kIoError, AppendFailure::kNoSpace}) {
    SCOPED_TRACE(failure == AppendFailure::kIoError ? "I/O error" : "no space");
    const std::string id = failure == AppendFailure::kIoError ? "io" : "nospace";
    Put("before-" + id, SyncMode::kSync);
    env_.FailAppends(failure);
    StoreBatch b;
    b.PutTimer(Key("ns", "failed-" + id), 1, 0, 0, "");
    EXPECT_EQ(store_->Write(b, SyncMode::kSync).code(), absl::StatusCode::kUnavailable);
    env_.FailAppends(AppendFailure::kNone);  // The disk recovers; the store stays stopped.
    EXPECT_EQ(store_->Write(b, SyncMode::kSync).code(), absl::StatusCode::kUnavailable);
    EXPECT_EQ(store_->Write(StoreBatch(), SyncMode::kNoSync).code(), absl::StatusCode::kUnavailable);
    EXPECT_EQ(store_->Sync().code(), absl::StatusCode::kUnavailable);
    EXPECT_EQ(store_->NextBootEpoch().status().code(), absl::StatusCode::kUnavailable);
    store_.reset();
    Open();
    ASSERT_NE(store_, nullptr);
    std::vector<std::string> keys = TimerKeys(*store_);
    EXPECT_NE(std::find(keys.begin(), keys.end(), Key("ns", "before-" + id)), keys.end());
    Put("after-" + id, SyncMode::kSync);
  }
}

}  // namespace
}  // namespace lawn
