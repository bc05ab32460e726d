// TimerBatcher (client/timer_batcher.h) against the real lawnd: timers started from several threads through
// one batcher are all stored and read back, and lawnd's own per-item codes reach each timer's future.
#include <future>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "client/lawn_client.h"
#include "client/timer_batcher.h"
#include "gtest/gtest.h"
#include "tests/integration/lawnd_process.h"

namespace lawn::testing {
namespace {

using std::chrono::seconds;

constexpr auto kWait = seconds(30);

v1::StartTimerRequest Request(const std::string& id) {
  v1::StartTimerRequest request;
  request.set_namespace_("batched");
  request.set_id(id);
  request.mutable_ttl()->set_seconds(3600);
  request.set_payload("p-" + id);
  return request;
}

absl::Status Get(std::future<absl::Status>& future) {
  if (future.wait_for(kWait) != std::future_status::ready) {
    ADD_FAILURE() << "future not resolved within " << kWait.count() << " s";
    return absl::DeadlineExceededError("test: not resolved");
  }
  return future.get();
}

class BatcherIntegrationTest : public ::testing::Test {
 protected:
  void SetUp() override {
    lawnd_ = std::make_unique<LawndProcess>(dir_.path() + "/data");
    lawnd_->Start();
    client_ = LawnClient::Connect(lawnd_->address());
  }

  TempDir dir_;
  std::unique_ptr<LawndProcess> lawnd_;
  std::unique_ptr<LawnClient> client_;
};

TEST_F(BatcherIntegrationTest, TimersFromManyThreadsAreStartedAndReadBack) {
  constexpr int kThreads = 4;
  constexpr int kPerThread = 250;
  TimerBatcher batcher(client_->channel(), {.max_batch = 64, .max_in_flight = 2});
  std::vector<std::vector<std::future<absl::Status>>> futures(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kPerThread; ++i) {
        futures[t].push_back(batcher.StartTimer(Request("t" + std::to_string(t) + "-" + std::to_string(i))));
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  ASSERT_TRUE(batcher.Flush().ok());
  for (auto& per_thread : futures) {
    for (auto& future : per_thread) EXPECT_TRUE(Get(future).ok());
  }
  EXPECT_EQ(batcher.stats().timers, static_cast<uint64_t>(kThreads * kPerThread));

  std::set<std::string> listed;
  std::string page_token;
  for (int page = 0; page < 10; ++page) {  // 1000 timers: one page of 1000.
    absl::StatusOr<v1::ListTimersResponse> list = client_->ListTimers("batched", 1000, page_token);
    ASSERT_TRUE(list.ok()) << list.status();
    for (const v1::Timer& timer : list->timers()) {
      EXPECT_EQ(timer.payload(), "p-" + timer.id());
      listed.insert(timer.id());
    }
    page_token = list->next_page_token();
    if (page_token.empty()) break;
  }
  EXPECT_EQ(listed.size(), static_cast<size_t>(kThreads * kPerThread));
  EXPECT_EQ(listed.count("t3-249"), 1u);
  absl::StatusOr<v1::Timer> one = client_->GetTimer("batched", "t2-17");
  ASSERT_TRUE(one.ok()) << one.status();
  EXPECT_EQ(one->ttl().seconds(), 3600);
}

TEST_F(BatcherIntegrationTest, LawndsPerItemCodesReachEachFuture) {
  TimerBatcher batcher(client_->channel(), {.max_linger = std::chrono::seconds(60)});
  std::future<absl::Status> first = batcher.StartTimer(Request("dup"));
  ASSERT_TRUE(batcher.Flush().ok());
  ASSERT_TRUE(Get(first).ok());
  // One call: a duplicate, a bad id (empty) and a good timer.
  std::future<absl::Status> dup = batcher.StartTimer(Request("dup"));
  std::future<absl::Status> bad = batcher.StartTimer(Request(""));
  std::future<absl::Status> good = batcher.StartTimer(Request("fine"));
  ASSERT_TRUE(batcher.Flush().ok());
  EXPECT_EQ(batcher.stats().calls, 2u);
  EXPECT_EQ(Get(dup).code(), absl::StatusCode::kAlreadyExists);
  const absl::Status bad_status = Get(bad);
  EXPECT_EQ(bad_status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(bad_status.message().find("timers[1]."), std::string::npos) << bad_status;
  EXPECT_TRUE(Get(good).ok());
  EXPECT_TRUE(batcher.Close().ok());
}

}  // namespace
}  // namespace lawn::testing
