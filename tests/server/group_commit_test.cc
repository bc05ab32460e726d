// Command batching in a shard worker, on the in-memory fake store: commands queued while a round runs form
// the next round, which is one storage write (one fsync in `sync`), and every command is answered after that
// write, with its status.
#include <atomic>
#include <thread>
#include <memory>
#include <string>
#include <vector>

#include "absl/synchronization/notification.h"
#include "config/options.h"
#include "gtest/gtest.h"
#include "server/runtime.h"
#include "server/shard_command.h"
#include "tests/testing/memory_timer_store.h"

namespace lawn {
namespace {

// Holds the worker inside a round until released.
class GateCommand final : public ShardCommand {
 public:
  GateCommand(absl::Notification* entered, absl::Notification* release) : entered_(entered), release_(release) {}
  void Apply(ShardContext&) override {
    entered_->Notify();
    release_->WaitForNotification();
  }
  void Done(const absl::Status&) override {}

 private:
  absl::Notification* entered_;
  absl::Notification* release_;
};

// Writes one timer record; on Done records whether the write was already in the store and its status.
class CheckedPutCommand final : public ShardCommand {
 public:
  struct Result {
    std::atomic<int> done{0};
    std::atomic<int> ok{0};
    std::atomic<int> stored_before_answer{0};
  };
  CheckedPutCommand(std::string key, MemoryTimerStore* store, Result* result)
      : key_(std::move(key)), store_(store), result_(result) {}
  void Apply(ShardContext& ctx) override { ctx.batch()->PutTimer(key_, 1, 1, 0, ""); }
  void Done(const absl::Status& status) override {
    if (status.ok()) result_->ok++;
    if (store_->timer_count() > 0) result_->stored_before_answer++;
    result_->done++;
  }

 private:
  std::string key_;
  MemoryTimerStore* store_;
  Result* result_;
};

class GroupCommitTest : public ::testing::Test {
 protected:
  GroupCommitTest() {
    Options options;
    options.shards = 1;
    options.durability = Durability::kSync;
    auto store = std::make_unique<MemoryTimerStore>();
    store_ = store.get();
    runtime_ = std::make_unique<Runtime>(options, std::move(store), nullptr);
  }
  void SetUp() override {
    ASSERT_TRUE(runtime_->Start().ok());
    ASSERT_TRUE(runtime_->WaitUntilReady().ok());
  }
  // Queues `n` puts while the worker is held in a round, then lets it go; waits for every answer.
  void PutWhileHeld(int n, CheckedPutCommand::Result* result) {
    absl::Notification entered, release;
    runtime_->Submit(0, std::make_unique<GateCommand>(&entered, &release));
    entered.WaitForNotification();
    for (int i = 0; i < n; ++i) {
      runtime_->Submit(0, std::make_unique<CheckedPutCommand>(std::string("ns\0k", 4) + std::to_string(i),
                                                              store_, result));
    }
    release.Notify();
    while (result->done.load() < n) std::this_thread::yield();
  }
  MemoryTimerStore* store_;
  std::unique_ptr<Runtime> runtime_;
};

TEST_F(GroupCommitTest, CommandsQueuedDuringARoundShareOneSyncedWriteAndAreAnsweredAfterIt) {
  const uint64_t syncs_before = store_->sync_count();
  CheckedPutCommand::Result result;
  PutWhileHeld(50, &result);
  EXPECT_EQ(result.ok.load(), 50);
  EXPECT_EQ(result.stored_before_answer.load(), 50) << "an answer came before its write";
  EXPECT_EQ(store_->sync_count() - syncs_before, 1u) << "50 commands of one round: one fsync";
  EXPECT_EQ(store_->timer_count(), 50u);
}

TEST_F(GroupCommitTest, AFailedWriteFailsEveryCommandOfTheRoundAndTheRuntime) {
  store_->FailWritesWith(absl::UnavailableError("disk gone"));
  CheckedPutCommand::Result result;
  PutWhileHeld(10, &result);
  EXPECT_EQ(result.ok.load(), 0);
  EXPECT_EQ(store_->timer_count(), 0u);
  EXPECT_TRUE(runtime_->write_failed());
  EXPECT_NE(runtime_->write_status().message().find("disk gone"), std::string::npos);
}

}  // namespace
}  // namespace lawn
