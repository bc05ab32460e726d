// The TimerStore contract, run against every implementation: what RocksDbTimerStore and LogTimerStore keep
// across a reopen, MemoryTimerStore keeps in place, and all recover it in the same order. Upper layers are
// tested against MemoryTimerStore, so the two must not drift apart.
#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "storage/log_timer_store.h"
#include "storage/rocksdb_timer_store.h"
#include "storage/store_batch.h"
#include "storage/timer_store.h"
#include "tests/storage/storage_test_util.h"
#include "tests/testing/memory_timer_store.h"

namespace lawn {
namespace {

using storage_test::Contents;
using storage_test::ExpirationCopy;
using storage_test::Key;
using storage_test::StoreContents;
using storage_test::TempDir;
using storage_test::TimerCopy;
using storage_test::TimerKeys;

enum class Kind { kMemory, kRocksDb, kLog };

class TimerStoreConformanceTest : public ::testing::TestWithParam<Kind> {
 protected:
  void SetUp() override { Reopen(); }

  // RocksDB and log: close and open the data dir again, so that every check below reads what is on disk.
  // Memory: nothing to do; the same instance is the "reopened" store.
  void Reopen() {
    if (GetParam() == Kind::kMemory) {
      if (store_ == nullptr) store_ = std::make_unique<MemoryTimerStore>();
      return;
    }
    store_.reset();
    if (GetParam() == Kind::kLog) {
      LogStoreOptions options;
      options.path = dir_.Sub("data");
      // Small segments and snapshots after every other segment: the suite's writes cross both.
      options.segment_bytes = 4096;
      options.snapshot_log_bytes = 8192;
      options.snapshot_log_percent = 0;
      absl::StatusOr<std::unique_ptr<LogTimerStore>> opened = LogTimerStore::Open(options);
      ASSERT_TRUE(opened.ok()) << opened.status();
      store_ = std::move(opened).value();
      return;
    }
    RocksDbStoreOptions options;
    options.path = dir_.Sub("data");
    absl::StatusOr<std::unique_ptr<RocksDbTimerStore>> opened = RocksDbTimerStore::Open(options);
    ASSERT_TRUE(opened.ok()) << opened.status();
    store_ = std::move(opened).value();
  }

  void WriteOk(const StoreBatch& b, SyncMode mode = SyncMode::kSync) {
    absl::Status s = store_->Write(b, mode);
    ASSERT_TRUE(s.ok()) << s;
  }

  TimerStore& store() { return *store_; }

  TempDir dir_;
  std::unique_ptr<TimerStore> store_;
};

TEST_P(TimerStoreConformanceTest, NewStoreRecoversNothing) { EXPECT_EQ(Contents(store()), StoreContents{}); }

TEST_P(TimerStoreConformanceTest, PutTimerIsRecoveredWithEveryField) {
  StoreBatch b;
  const std::string payload("\0binary\xff", 8);
  b.PutTimer(Key("ns", "a"), std::numeric_limits<int64_t>::min(), 5, 7, payload);
  b.PutTimer(Key("ns", "b"), -3, std::numeric_limits<uint64_t>::max(), 0, "");
  WriteOk(b);
  Reopen();
  const std::vector<TimerCopy> want = {
      {Key("ns", "a"), std::numeric_limits<int64_t>::min(), 5, 7, payload},
      {Key("ns", "b"), -3, std::numeric_limits<uint64_t>::max(), 0, ""},
  };
  EXPECT_EQ(Contents(store()).timers, want);
}

TEST_P(TimerStoreConformanceTest, PutTimerOverwritesTheSameKeyAndDeadline) {
  StoreBatch b;
  b.PutTimer(Key("ns", "a"), 100, 0, 0, "old");
  WriteOk(b);
  b.Clear();
  b.PutTimer(Key("ns", "a"), 100, 1, 2, "new");
  WriteOk(b);
  Reopen();
  EXPECT_EQ(Contents(store()).timers, (std::vector<TimerCopy>{{Key("ns", "a"), 100, 1, 2, "new"}}));
}

// A record is found by its deadline and key (FORMAT.md): moving a timer is a delete of the deadline it was
// stored with and a put of the new one. Without the delete both records stay.
TEST_P(TimerStoreConformanceTest, MovingATimerDeletesTheRecordOfItsOldDeadline) {
  StoreBatch b;
  b.PutTimer(Key("ns", "moved"), 100, 0, 0, "p");
  b.PutTimer(Key("ns", "twice"), 100, 0, 0, "p");
  WriteOk(b);
  b.Clear();
  b.DeleteTimer(Key("ns", "moved"), 100);
  b.PutTimer(Key("ns", "moved"), 300, 0, 0, "p");
  b.DeleteTimer(Key("ns", "twice"), 99);  // Not its deadline: deletes nothing.
  b.PutTimer(Key("ns", "twice"), 200, 0, 0, "p");
  WriteOk(b);
  Reopen();
  const std::vector<TimerCopy> want = {
      {Key("ns", "twice"), 100, 0, 0, "p"},
      {Key("ns", "twice"), 200, 0, 0, "p"},
      {Key("ns", "moved"), 300, 0, 0, "p"},
  };
  EXPECT_EQ(Contents(store()).timers, want);
}

TEST_P(TimerStoreConformanceTest, DeleteTimerRemovesItAndIgnoresAbsentKeys) {
  StoreBatch b;
  b.PutTimer(Key("ns", "a"), 1, 0, 0, "");
  b.PutTimer(Key("ns", "b"), 2, 0, 0, "");
  WriteOk(b);
  b.Clear();
  b.DeleteTimer(Key("ns", "a"), 1);
  b.DeleteTimer(Key("ns", "never-existed"), 1);
  WriteOk(b);
  Reopen();
  EXPECT_EQ(TimerKeys(store()), std::vector<std::string>{Key("ns", "b")});
}

TEST_P(TimerStoreConformanceTest, OperationsOfOneBatchApplyInOrder) {
  StoreBatch b;
  b.PutTimer(Key("ns", "gone"), 1, 0, 0, "");
  b.DeleteTimer(Key("ns", "gone"), 1);
  b.DeleteTimer(Key("ns", "back"), 2);
  b.PutTimer(Key("ns", "back"), 2, 0, 0, "");
  WriteOk(b);
  Reopen();
  EXPECT_EQ(TimerKeys(store()), std::vector<std::string>{Key("ns", "back")});
}

TEST_P(TimerStoreConformanceTest, TimersRecoverInDeadlineThenBytewiseKeyOrder) {
  // Written out of order. Deadlines first, negative before positive; within one deadline high bytes sort
  // after ASCII (unsigned comparison), and a namespace's keys stay together even when another namespace
  // extends its name ("a" vs "a\x01").
  const std::vector<std::pair<int64_t, std::string>> sorted = {
      {std::numeric_limits<int64_t>::min(), Key("z", "first")},
      {-1, Key("z", "second")},
      {1, Key("a", "1")},
      {1, Key("a", "2")},
      {1, Key("a", "\xff")},
      {1, Key("a\x01", "0")},
      {1, Key("b", "")},
      {1, Key("\xc3\xa9", "x")},
      {256, Key("a", "0")},
      {std::numeric_limits<int64_t>::max(), Key("a", "last")},
  };
  StoreBatch b;
  for (auto it = sorted.rbegin(); it != sorted.rend(); ++it) b.PutTimer(it->second, it->first, 0, 0, "");
  WriteOk(b);
  Reopen();
  std::vector<std::pair<int64_t, std::string>> got;
  for (const TimerCopy& t : Contents(store()).timers) got.emplace_back(t.deadline_unix_ns, t.key);
  EXPECT_EQ(got, sorted);
}

TEST_P(TimerStoreConformanceTest, OutboxRecoversInDeliveryIdOrder) {
  const std::vector<uint64_t> ids = {std::numeric_limits<uint64_t>::max(), 1, uint64_t{1} << 40, 256, 255};
  StoreBatch b;
  for (uint64_t id : ids) b.PutExpiration(id, Key("ns", std::to_string(id)), 10, 20, 30, "p", 40, 2);
  WriteOk(b);
  Reopen();
  std::vector<uint64_t> got;
  for (const ExpirationCopy& e : Contents(store()).outbox) {
    got.push_back(e.delivery_id);
    EXPECT_EQ(e.timer, (TimerCopy{Key("ns", std::to_string(e.delivery_id)), 10, 20, 30, "p"}));
    EXPECT_EQ(e.fired_at_unix_ns, 40);
    EXPECT_EQ(e.attempt, 2u);
  }
  EXPECT_EQ(got,
            (std::vector<uint64_t>{1, 255, 256, uint64_t{1} << 40, std::numeric_limits<uint64_t>::max()}));
}

TEST_P(TimerStoreConformanceTest, ExpiryMovesTimerToOutboxInOneBatch) {
  StoreBatch b;
  b.PutTimer(Key("ns", "once"), 1000, 0, 0, "payload");
  b.PutTimer(Key("ns", "stays"), 5000, 0, 0, "");
  WriteOk(b);
  b.Clear();
  b.DeleteTimer(Key("ns", "once"), 1000);
  b.PutExpiration(7, Key("ns", "once"), 1000, 0, 0, "payload", 1003, 0);
  WriteOk(b);
  Reopen();
  const StoreContents want{
      .timers = {{Key("ns", "stays"), 5000, 0, 0, ""}},
      .outbox = {{7, {Key("ns", "once"), 1000, 0, 0, "payload"}, 1003, 0}},
  };
  EXPECT_EQ(Contents(store()), want);
}

TEST_P(TimerStoreConformanceTest, RecurringExpiryRewritesTimerWithNextDeadline) {
  StoreBatch b;
  b.PutTimer(Key("ns", "tick"), 1000, 0, 500, "p");
  WriteOk(b);
  b.Clear();
  b.DeleteTimer(Key("ns", "tick"), 1000);
  b.PutTimer(Key("ns", "tick"), 1500, 0, 500, "p");
  b.PutExpiration(8, Key("ns", "tick"), 1000, 0, 500, "p", 1001, 0);
  WriteOk(b);
  Reopen();
  const StoreContents want{
      .timers = {{Key("ns", "tick"), 1500, 0, 500, "p"}},
      .outbox = {{8, {Key("ns", "tick"), 1000, 0, 500, "p"}, 1001, 0}},
  };
  EXPECT_EQ(Contents(store()), want);
}

TEST_P(TimerStoreConformanceTest, AckDeletesOnlyThatOutboxEntry) {
  StoreBatch b;
  b.PutExpiration(1, Key("ns", "a"), 1, 0, 0, "", 2, 0);
  b.PutExpiration(2, Key("ns", "b"), 1, 0, 0, "", 2, 0);
  WriteOk(b);
  b.Clear();
  b.DeleteExpiration(1);
  b.DeleteExpiration(99);  // Never existed: a duplicate ack.
  WriteOk(b);
  Reopen();
  const StoreContents c = Contents(store());
  ASSERT_EQ(c.outbox.size(), 1u);
  EXPECT_EQ(c.outbox[0].delivery_id, 2u);
}

TEST_P(TimerStoreConformanceTest, BootEpochGrowsByOneAcrossReopens) {
  absl::StatusOr<uint64_t> first = store().NextBootEpoch();
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_EQ(*first, 1u);
  Reopen();
  absl::StatusOr<uint64_t> second = store().NextBootEpoch();
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_EQ(*second, 2u);
  Reopen();
  absl::StatusOr<uint64_t> third = store().NextBootEpoch();
  ASSERT_TRUE(third.ok()) << third.status();
  EXPECT_EQ(*third, 3u);
}

TEST_P(TimerStoreConformanceTest, EmptyBatchesAndSyncSucceed) {
  StoreBatch empty;
  EXPECT_TRUE(store().Write(empty, SyncMode::kSync).ok());
  EXPECT_TRUE(store().Write(empty, SyncMode::kNoSync).ok());
  EXPECT_TRUE(store().Sync().ok());
  EXPECT_EQ(Contents(store()), StoreContents{});
}

TEST_P(TimerStoreConformanceTest, ConcurrentSyncedWritersAllLand) {
  constexpr int kThreads = 4;
  constexpr int kWritesPerThread = 100;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      StoreBatch b;
      for (int i = 0; i < kWritesPerThread; ++i) {
        b.Clear();
        b.PutTimer(Key("t" + std::to_string(t), std::to_string(1000 + i)), i, 0, 0, "x");
        EXPECT_TRUE(store().Write(b, SyncMode::kSync).ok());
      }
    });
  }
  for (std::thread& th : threads) th.join();
  Reopen();
  EXPECT_EQ(Contents(store()).timers.size(), size_t{kThreads * kWritesPerThread});
}

INSTANTIATE_TEST_SUITE_P(EveryStore, TimerStoreConformanceTest,
                         ::testing::Values(Kind::kMemory, Kind::kRocksDb, Kind::kLog),
                         [](const ::testing::TestParamInfo<Kind>& info) {
                           return info.param == Kind::kMemory    ? "Memory"
                                  : info.param == Kind::kRocksDb ? "RocksDb"
                                                                 : "Log";
                         });

}  // namespace
}  // namespace lawn
