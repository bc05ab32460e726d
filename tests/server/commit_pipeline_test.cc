// The shard worker's commit pipeline (server/shard_worker_commit.cc), on a store whose writes can be held:
// while the commit thread writes round N, the worker applies round N+1 (at once for a command with enough
// work, at the end of the write for small ones, all together); N+1 is answered only after N's write (and its
// own); a failed write also fails the round applied on top of it; rounds of acks alone are not synced; a
// small round that needs no fsync is written by the worker itself, and only when no round is being written.
#include <atomic>
#include <chrono>
#include <cstddef>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "config/options.h"
#include "gtest/gtest.h"
#include "server/runtime.h"
#include "server/shard_command.h"
#include "server/shard_worker.h"
#include "server/worker_commands.h"
#include "tests/testing/memory_timer_store.h"

namespace lawn {
namespace {

// A MemoryTimerStore whose next write can be held until released, and made to fail.
class HeldStore final : public TimerStore {
 public:
  MemoryTimerStore inner;

  // The next Write waits (after `entered`) until Release.
  void HoldNextWrite() {
    absl::MutexLock l(&mu_);
    hold_ = true;
  }
  void WaitUntilHeld() {
    absl::MutexLock l(&mu_);
    mu_.Await(absl::Condition(&held_));
  }
  void Release() {
    absl::MutexLock l(&mu_);
    hold_ = false;
    held_ = false;
  }
  int writes() {
    absl::MutexLock l(&mu_);
    return writes_;
  }
  // The thread of each write so far, and the number of records it held.
  std::vector<std::pair<std::thread::id, size_t>> write_log() {
    absl::MutexLock l(&mu_);
    return write_log_;
  }

  absl::Status Write(const StoreBatch& batch, SyncMode mode) override {
    {
      absl::MutexLock l(&mu_);
      if (hold_) {
        held_ = true;
        mu_.Await(absl::Condition(+[](bool* hold) { return !*hold; }, &hold_));
      }
      ++writes_;
      write_log_.emplace_back(std::this_thread::get_id(), batch.count());
    }
    return inner.Write(batch, mode);
  }
  absl::Status Sync() override { return inner.Sync(); }
  using TimerStore::Recover;
  absl::Status Recover(absl::FunctionRef<void(const StoredTimer&)> on_timer,
                       absl::FunctionRef<void(const StoredExpiration&)> on_expiration,
                       absl::FunctionRef<bool(const absl::Status&)> on_corrupt) override {
    return inner.Recover(on_timer, on_expiration, on_corrupt);
  }
  absl::StatusOr<uint64_t> NextBootEpoch() override { return inner.NextBootEpoch(); }

 private:
  absl::Mutex mu_;
  bool hold_ ABSL_GUARDED_BY(mu_) = false;
  bool held_ ABSL_GUARDED_BY(mu_) = false;
  int writes_ ABSL_GUARDED_BY(mu_) = 0;
  std::vector<std::pair<std::thread::id, size_t>> write_log_ ABSL_GUARDED_BY(mu_);
};

// What a PutCommand saw: when it was applied and answered, and with what. Owned by the test (the command
// itself is destroyed with its round once answered).
struct PutState {
  absl::Notification applied;
  std::thread::id apply_thread;  // Written before `applied` is notified.
  absl::Mutex mu;
  bool done ABSL_GUARDED_BY(mu) = false;
  absl::Status status ABSL_GUARDED_BY(mu);

  bool Done() {
    absl::MutexLock l(&mu);
    return done;
  }
  absl::Status WaitDone() {
    absl::MutexLock l(&mu);
    mu.Await(absl::Condition(&done));
    return status;
  }
};

// Writes `records` timer records (`key`, then `key` + "#1", ...); says it does `ops` operations
// (ShardCommand::ops, the worker's wake-up policy).
class PutCommand final : public ShardCommand {
 public:
  PutCommand(std::string key, std::shared_ptr<PutState> state, size_t ops, size_t records)
      : key_(std::move(key)), state_(std::move(state)), ops_(ops), records_(records) {}
  void Apply(ShardContext& ctx) override {
    ctx.batch()->PutTimer(key_, 1, 1, 0, "");
    for (size_t i = 1; i < records_; ++i) ctx.batch()->PutTimer(key_ + "#" + std::to_string(i), 1, 1, 0, "");
    state_->apply_thread = std::this_thread::get_id();
    state_->applied.Notify();
  }
  void Done(const absl::Status& status) override {
    absl::MutexLock l(&state_->mu);
    state_->status = status;
    state_->done = true;
  }
  size_t ops() const override { return ops_; }

 private:
  std::string key_;
  std::shared_ptr<PutState> state_;
  size_t ops_;
  size_t records_;
};

// A command as heavy as a StartTimers batch: the worker wakes for it even while a round is being written.
constexpr size_t kHeavy = 100;

std::shared_ptr<PutState> Put(Runtime& runtime, std::string key, size_t ops = 1, size_t records = 1) {
  auto state = std::make_shared<PutState>();
  runtime.Submit(0, std::make_unique<PutCommand>(std::move(key), state, ops, records));
  return state;
}

class PipelineTest : public ::testing::Test {
 protected:
  explicit PipelineTest(Durability durability) {
    Options options;
    options.shards = 1;
    options.durability = durability;
    auto store = std::make_unique<HeldStore>();
    store_ = store.get();
    runtime_ = std::make_unique<Runtime>(options, std::move(store), nullptr);
  }
  void SetUp() override {
    ASSERT_TRUE(runtime_->Start().ok());
    ASSERT_TRUE(runtime_->WaitUntilReady().ok());
  }
  void WaitUntilWorkerSleeps() {
    for (int i = 0; i < 10000 && !runtime_->ShardSleepingForTest(0); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    ASSERT_TRUE(runtime_->ShardSleepingForTest(0));
  }
  HeldStore* store_;
  std::unique_ptr<Runtime> runtime_;
};

class CommitPipelineTest : public PipelineTest {
 protected:
  CommitPipelineTest() : PipelineTest(Durability::kSync) {}
};

// `interval` durability: rounds need no fsync.
class UnsyncedPipelineTest : public PipelineTest {
 protected:
  UnsyncedPipelineTest() : PipelineTest(Durability::kInterval) {}
};

TEST_F(CommitPipelineTest, TheNextRoundIsAppliedDuringAWriteAndAnsweredAfterIt) {
  store_->HoldNextWrite();
  std::shared_ptr<PutState> first = Put(*runtime_, std::string("ns\0a", 4));
  store_->WaitUntilHeld();
  // The commit thread is inside round 1's write; the worker is free to apply round 2.
  std::shared_ptr<PutState> second = Put(*runtime_, std::string("ns\0b", 4), kHeavy);
  second->applied.WaitForNotification();
  EXPECT_FALSE(first->Done());
  EXPECT_FALSE(second->Done()) << "answered before the write of the round before it";
  store_->Release();
  EXPECT_TRUE(first->WaitDone().ok());
  EXPECT_TRUE(second->WaitDone().ok());
  EXPECT_EQ(store_->inner.timer_count(), 2u);
  EXPECT_EQ(store_->writes(), 2);
}

TEST_F(CommitPipelineTest, SmallCommandsWaitForTheWriteAndAreAppliedTogetherInOneRound) {
  store_->HoldNextWrite();
  std::shared_ptr<PutState> first = Put(*runtime_, std::string("ns\0a", 4));
  store_->WaitUntilHeld();
  // A worker still awake (it has just handed the round over) takes what is queued without being woken.
  WaitUntilWorkerSleeps();
  std::vector<std::shared_ptr<PutState>> small;
  for (char c = 'b'; c < 'f'; ++c) small.push_back(Put(*runtime_, std::string("ns\0", 3) + c));
  // Not woken for them: none is applied while round 1 is being written (a wake-up would have applied them
  // within microseconds; 100 ms leaves no doubt).
  for (auto& put : small) {
    EXPECT_FALSE(put->applied.WaitForNotificationWithTimeout(absl::Milliseconds(100 / small.size())));
  }
  store_->Release();
  EXPECT_TRUE(first->WaitDone().ok());
  for (auto& put : small) EXPECT_TRUE(put->WaitDone().ok());
  EXPECT_EQ(store_->inner.timer_count(), 5u);
  EXPECT_EQ(store_->writes(), 2) << "the four small commands were not applied in one round";
}

TEST_F(CommitPipelineTest, AFailedWriteFailsTheRoundAppliedOnTopOfItWithoutWritingIt) {
  store_->HoldNextWrite();
  std::shared_ptr<PutState> first = Put(*runtime_, std::string("ns\0a", 4));
  store_->WaitUntilHeld();
  std::shared_ptr<PutState> second = Put(*runtime_, std::string("ns\0b", 4), kHeavy);
  second->applied.WaitForNotification();
  store_->inner.FailWritesWith(absl::UnavailableError("disk gone"));
  store_->Release();
  EXPECT_FALSE(first->WaitDone().ok());
  const absl::Status second_status = second->WaitDone();
  EXPECT_FALSE(second_status.ok());
  EXPECT_NE(second_status.message().find("disk gone"), std::string::npos) << second_status;
  EXPECT_EQ(store_->writes(), 1) << "the round applied on top of a failed one was written";
  EXPECT_TRUE(runtime_->write_failed());
}

TEST_F(CommitPipelineTest, RoundsOfAcksAloneAreWrittenWithoutASync) {
  std::shared_ptr<PutState> put = Put(*runtime_, std::string("ns\0a", 4));
  ASSERT_TRUE(put->WaitDone().ok());
  const uint64_t syncs = store_->inner.sync_count();
  const int writes = store_->writes();
  runtime_->Submit(0, std::make_unique<AckCommand>(std::vector<uint64_t>{1, 2, 3}));
  // A later synced round, to know the ack round has been committed (rounds commit in order).
  std::shared_ptr<PutState> after = Put(*runtime_, std::string("ns\0b", 4));
  ASSERT_TRUE(after->WaitDone().ok());
  EXPECT_GE(store_->writes(), writes + 1);
  // The put after it is synced once; the acks (in their own round, or folded into the put's) add none.
  EXPECT_EQ(store_->inner.sync_count(), syncs + 1);
}

TEST_F(CommitPipelineTest, ASmallSyncedRoundIsWrittenByTheCommitThread) {
  std::shared_ptr<PutState> put = Put(*runtime_, std::string("ns\0a", 4));
  ASSERT_TRUE(put->WaitDone().ok());
  ASSERT_EQ(store_->write_log().size(), 1u);
  EXPECT_NE(store_->write_log()[0].first, put->apply_thread) << "an fsync on the shard worker";
}

TEST_F(UnsyncedPipelineTest, ASmallRoundIsWrittenByTheWorkerItself) {
  std::shared_ptr<PutState> put = Put(*runtime_, std::string("ns\0a", 4));
  ASSERT_TRUE(put->WaitDone().ok());
  ASSERT_EQ(store_->write_log().size(), 1u);
  EXPECT_EQ(store_->write_log()[0].first, put->apply_thread);
  EXPECT_EQ(store_->inner.timer_count(), 1u);
}

TEST_F(UnsyncedPipelineTest, ALargeRoundIsWrittenByTheCommitThread) {
  const size_t records = ShardWorker::kMaxInlineRecords + 1;
  std::shared_ptr<PutState> put = Put(*runtime_, std::string("ns\0a", 4), records, records);
  ASSERT_TRUE(put->WaitDone().ok());
  ASSERT_EQ(store_->write_log().size(), 1u);
  EXPECT_NE(store_->write_log()[0].first, put->apply_thread);
  EXPECT_EQ(store_->inner.timer_count(), records);
}

TEST_F(UnsyncedPipelineTest, ASmallRoundWaitsForTheRoundBeingWrittenAndIsWrittenAfterIt) {
  const size_t records = ShardWorker::kMaxInlineRecords + 1;
  store_->HoldNextWrite();
  std::shared_ptr<PutState> large = Put(*runtime_, std::string("ns\0a", 4), records, records);
  store_->WaitUntilHeld();
  std::shared_ptr<PutState> small = Put(*runtime_, std::string("ns\0b", 4), kHeavy);  // Applied at once.
  small->applied.WaitForNotification();
  EXPECT_FALSE(small->Done()) << "answered before the round before it";
  store_->Release();
  EXPECT_TRUE(large->WaitDone().ok());
  EXPECT_TRUE(small->WaitDone().ok());
  const auto log = store_->write_log();
  ASSERT_EQ(log.size(), 2u);
  EXPECT_EQ(log[0].second, records);
  EXPECT_EQ(log[1].second, 1u);
}

TEST_F(UnsyncedPipelineTest, AFailedWriteOnTheWorkerFailsItsRoundAndStopsLaterWrites) {
  store_->inner.FailWritesWith(absl::UnavailableError("disk gone"));
  std::shared_ptr<PutState> put = Put(*runtime_, std::string("ns\0a", 4));
  const absl::Status status = put->WaitDone();
  EXPECT_FALSE(status.ok());
  EXPECT_NE(status.message().find("disk gone"), std::string::npos) << status;
  ASSERT_EQ(store_->write_log().size(), 1u);
  EXPECT_EQ(store_->write_log()[0].first, put->apply_thread);
  EXPECT_TRUE(runtime_->write_failed());
  // The next round fails without being written.
  std::shared_ptr<PutState> after = Put(*runtime_, std::string("ns\0b", 4));
  EXPECT_FALSE(after->WaitDone().ok());
  EXPECT_EQ(store_->write_log().size(), 1u);
}

}  // namespace
}  // namespace lawn
