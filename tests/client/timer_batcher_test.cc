// TimerBatcher against a scripted StartTimers service on a real gRPC server (FakeServer): coalescing of many
// threads' timers into few calls, per-timer results, one partial batch in flight, the linger, the size bounds,
// max_pending, call failures, Flush and Close. No test waits for time to pass: a held service keeps calls in
// flight, and a linger of a minute keeps a batch open until Flush or Close.
#include "client/timer_batcher.h"

#include <algorithm>
#include <chrono>
#include <future>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/synchronization/mutex.h"
#include "gtest/gtest.h"
#include "tests/client/fake_timer_service.h"

namespace lawn {
namespace {

using std::chrono::seconds;

constexpr auto kWait = seconds(30);  // Bound on every wait for a future; never reached when all is well.
// A linger no test outlives (the longest allowed): the batch stays open until Flush, Close or max_batch.
constexpr auto kNever = seconds(60);

// StartTimers only. Records the ids of each call; answers each timer by its id's prefix ("taken" ->
// ALREADY_EXISTS, "bad" -> INVALID_ARGUMENT, "odd" -> code 99, else OK), never echoing the timer; can hold
// calls until released, fail whole calls, or answer too few results.
class BatchService final : public v1::TimerService::Service {
 public:
  grpc::Status StartTimers(grpc::ServerContext* context, const v1::StartTimersRequest* request,
                           v1::StartTimersResponse* response) override {
    const auto& metadata = context->client_metadata();
    const auto auth = metadata.find("authorization");
    absl::MutexLock lock(&mu_);
    authorization_ = auth == metadata.end() ? "" : std::string(auth->second.data(), auth->second.size());
    std::vector<std::string>& ids = calls_.emplace_back();
    for (const v1::StartTimerRequest& r : request->timers()) ids.push_back(r.id());
    const auto released = [this] {
      mu_.AssertReaderHeld();
      return !held_;
    };
    mu_.Await(absl::Condition(&released));
    if (!fail_.ok()) return fail_;
    for (const v1::StartTimerRequest& r : request->timers()) {
      if (short_answer_ && response->results_size() + 1 == request->timers_size()) break;
      v1::StartTimerResult* result = response->add_results();
      if (absl::StartsWith(r.id(), "taken")) {
        result->set_code(grpc::StatusCode::ALREADY_EXISTS);
        result->set_message("timer '" + r.id() + "' exists");
      } else if (absl::StartsWith(r.id(), "bad")) {
        result->set_code(grpc::StatusCode::INVALID_ARGUMENT);
        result->set_message("id '" + r.id() + "' is bad");
      } else if (absl::StartsWith(r.id(), "odd")) {
        result->set_code(99);
        result->set_message("from the future");
      }
    }
    return grpc::Status::OK;
  }

  // Calls arriving from now on wait until Release.
  void Hold() {
    absl::MutexLock lock(&mu_);
    held_ = true;
  }
  void Release() {
    absl::MutexLock lock(&mu_);
    held_ = false;
  }
  void FailCalls(grpc::Status status) {
    absl::MutexLock lock(&mu_);
    fail_ = std::move(status);
  }
  void AnswerShort() {
    absl::MutexLock lock(&mu_);
    short_answer_ = true;
  }
  // Ids of each call received so far, in arrival order.
  std::vector<std::vector<std::string>> calls() {
    absl::MutexLock lock(&mu_);
    return calls_;
  }
  // Sizes of the calls received so far, sorted (concurrent calls may arrive in any order).
  std::vector<size_t> sorted_sizes() {
    std::vector<size_t> sizes;
    for (const auto& call : calls()) sizes.push_back(call.size());
    std::sort(sizes.begin(), sizes.end());
    return sizes;
  }
  std::string authorization() {
    absl::MutexLock lock(&mu_);
    return authorization_;
  }

 private:
  absl::Mutex mu_;
  std::vector<std::vector<std::string>> calls_ ABSL_GUARDED_BY(mu_);
  bool held_ ABSL_GUARDED_BY(mu_) = false;
  grpc::Status fail_ ABSL_GUARDED_BY(mu_);
  bool short_answer_ ABSL_GUARDED_BY(mu_) = false;
  std::string authorization_ ABSL_GUARDED_BY(mu_);
};

v1::StartTimerRequest Request(const std::string& id, std::string payload = {}) {
  v1::StartTimerRequest request;
  request.set_namespace_("ns");
  request.set_id(id);
  request.mutable_ttl()->set_seconds(3600);
  request.set_payload(std::move(payload));
  return request;
}

// The status BatchService answers for `id`.
absl::Status Expected(const std::string& id) {
  if (absl::StartsWith(id, "taken")) return absl::AlreadyExistsError("timer '" + id + "' exists");
  if (absl::StartsWith(id, "bad")) return absl::InvalidArgumentError("id '" + id + "' is bad");
  return absl::OkStatus();
}

// The future's value, or a test failure (and DEADLINE_EXCEEDED) if it is not resolved within kWait.
absl::Status Get(std::future<absl::Status>& future) {
  if (future.wait_for(kWait) != std::future_status::ready) {
    ADD_FAILURE() << "future not resolved within " << kWait.count() << " s";
    return absl::DeadlineExceededError("test: not resolved");
  }
  return future.get();
}

bool Ready(const std::future<absl::Status>& future) {
  return future.wait_for(std::chrono::seconds(0)) == std::future_status::ready;
}

class TimerBatcherTest : public ::testing::Test {
 protected:
  // Held calls are released before the server shuts down (its handlers would wait for ever).
  void TearDown() override { service_.Release(); }

  std::unique_ptr<TimerBatcher> Make(const BatcherOptions& options) {
    absl::StatusOr<std::unique_ptr<TimerBatcher>> batcher =
        TimerBatcher::Create(grpc::CreateChannel(server_.address(), grpc::InsecureChannelCredentials()), options);
    EXPECT_TRUE(batcher.ok()) << batcher.status();
    return batcher.ok() ? *std::move(batcher) : nullptr;
  }

  BatchService service_;
  FakeServer server_{service_};
};

TEST_F(TimerBatcherTest, ManyThreadsCoalesceIntoFewCallsAndEachFutureGetsItsOwnResult) {
  // One call slot, held by the first timer's call: the other 399 queue up and go as 100 + 100 + 100 + 99.
  std::unique_ptr<TimerBatcher> batcher = Make({.max_batch = 100, .max_linger = {}, .max_in_flight = 1});
  service_.Hold();
  constexpr int kThreads = 8;
  constexpr int kPerThread = 50;
  std::vector<std::vector<std::string>> ids(kThreads);
  std::vector<std::vector<std::future<absl::Status>>> futures(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kPerThread; ++i) {
        const std::string prefix = i % 7 == 3 ? "taken" : i % 11 == 5 ? "bad" : "t";
        ids[t].push_back(prefix + std::to_string(t) + "-" + std::to_string(i));
        futures[t].push_back(batcher->StartTimer(Request(ids[t].back())));
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  service_.Release();
  for (int t = 0; t < kThreads; ++t) {
    for (int i = 0; i < kPerThread; ++i) EXPECT_EQ(Get(futures[t][i]), Expected(ids[t][i])) << ids[t][i];
  }
  const std::vector<std::vector<std::string>> calls = service_.calls();
  ASSERT_EQ(calls.size(), 5u);
  EXPECT_EQ(calls[0].size(), 1u);
  for (size_t c = 1; c < 4; ++c) EXPECT_EQ(calls[c].size(), 100u);
  EXPECT_EQ(calls[4].size(), 99u);
  // Each thread's timers went out in the order it queued them.
  std::map<std::string, int> sent_at;
  for (const auto& call : calls) {
    for (const std::string& id : call) sent_at.emplace(id, static_cast<int>(sent_at.size()));
  }
  ASSERT_EQ(sent_at.size(), static_cast<size_t>(kThreads * kPerThread));
  for (int t = 0; t < kThreads; ++t) {
    for (int i = 1; i < kPerThread; ++i) EXPECT_LT(sent_at[ids[t][i - 1]], sent_at[ids[t][i]]);
  }
  EXPECT_EQ(batcher->stats().calls, 5u);
  EXPECT_EQ(batcher->stats().timers, 400u);
}

TEST_F(TimerBatcherTest, AtMostOnePartialBatchIsInFlightWhileFullOnesUseFreeSlots) {
  std::unique_ptr<TimerBatcher> batcher = Make({.max_batch = 10, .max_linger = {}, .max_in_flight = 4});
  service_.Hold();
  std::vector<std::future<absl::Status>> futures;
  futures.push_back(batcher->StartTimer(Request("a0")));  // Goes at once, alone: a partial batch.
  EXPECT_EQ(batcher->stats().calls, 1u);
  for (int i = 1; i < 10; ++i) futures.push_back(batcher->StartTimer(Request("a" + std::to_string(i))));
  EXPECT_EQ(batcher->stats().calls, 1u);  // Slots are free, but a partial batch is in flight: they wait.
  futures.push_back(batcher->StartTimer(Request("a10")));  // The tenth waiting: full, so it goes.
  EXPECT_EQ(batcher->stats().calls, 2u);
  service_.Release();
  for (auto& future : futures) EXPECT_TRUE(Get(future).ok());
  EXPECT_EQ(service_.sorted_sizes(), (std::vector<size_t>{1, 10}));
  // Futures resolve just before their call leaves in_flight; Flush returns after that.
  ASSERT_TRUE(batcher->Flush().ok());
  std::future<absl::Status> alone = batcher->StartTimer(Request("a11"));  // No partial in flight: at once.
  EXPECT_EQ(batcher->stats().calls, 3u);
  EXPECT_TRUE(Get(alone).ok());
}

TEST_F(TimerBatcherTest, UnaryStyleCallersFromManyThreadsAllGetAnswers) {
  // Each thread waits for its timer before the next, as a caller of a unary StartTimer would; the linger
  // thread and the call completions race with the callers.
  std::unique_ptr<TimerBatcher> batcher =
      Make({.max_batch = 16, .max_linger = std::chrono::microseconds(100), .max_in_flight = 2});
  constexpr int kThreads = 8;
  constexpr int kPerThread = 100;
  std::vector<int> failures(kThreads, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kPerThread; ++i) {
        const std::string id = (i % 10 == 0 ? "taken" : "u") + std::to_string(t) + "-" + std::to_string(i);
        std::future<absl::Status> future = batcher->StartTimer(Request(id));
        if (Get(future) != Expected(id)) ++failures[t];
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(failures[t], 0) << "thread " << t;
  size_t sent = 0;
  for (size_t size : service_.sorted_sizes()) sent += size;
  EXPECT_EQ(sent, static_cast<size_t>(kThreads * kPerThread));
  EXPECT_EQ(batcher->stats().timers, sent);
}

TEST_F(TimerBatcherTest, APartialBatchGoesWhenItsLingerEnds) {
  std::unique_ptr<TimerBatcher> batcher = Make({.max_linger = std::chrono::milliseconds(1)});
  std::vector<std::future<absl::Status>> futures;
  for (int i = 0; i < 3; ++i) futures.push_back(batcher->StartTimer(Request("l" + std::to_string(i))));
  for (auto& future : futures) EXPECT_TRUE(Get(future).ok());  // No Flush: the linger sent them.
  size_t sent = 0;
  for (size_t size : service_.sorted_sizes()) sent += size;
  EXPECT_EQ(sent, 3u);
}

TEST_F(TimerBatcherTest, APartialBatchWaitsForItsLingerOrFlush) {
  std::unique_ptr<TimerBatcher> batcher = Make({.max_linger = kNever});
  std::vector<std::future<absl::Status>> futures;
  for (int i = 0; i < 3; ++i) futures.push_back(batcher->StartTimer(Request("w" + std::to_string(i))));
  EXPECT_TRUE(service_.calls().empty());
  EXPECT_FALSE(Ready(futures[0]));
  EXPECT_TRUE(batcher->Flush().ok());
  for (auto& future : futures) EXPECT_TRUE(Ready(future));  // Flush returns once they are answered.
  for (auto& future : futures) EXPECT_TRUE(future.get().ok());
  EXPECT_EQ(service_.sorted_sizes(), std::vector<size_t>{3});
}

TEST_F(TimerBatcherTest, ABatchIsSentWhenFullWithoutWaitingForItsLinger) {
  std::unique_ptr<TimerBatcher> batcher = Make({.max_batch = 3, .max_linger = kNever});
  std::vector<std::future<absl::Status>> futures;
  for (int i = 0; i < 10; ++i) futures.push_back(batcher->StartTimer(Request("s" + std::to_string(i))));
  for (int i = 0; i < 9; ++i) EXPECT_TRUE(Get(futures[i]).ok());
  EXPECT_FALSE(Ready(futures[9]));  // Alone in the open batch, which lingers.
  EXPECT_EQ(service_.sorted_sizes(), (std::vector<size_t>{3, 3, 3}));
  EXPECT_TRUE(batcher->Flush().ok());
  EXPECT_TRUE(Get(futures[9]).ok());
  EXPECT_EQ(service_.sorted_sizes(), (std::vector<size_t>{1, 3, 3, 3}));
}

TEST_F(TimerBatcherTest, ABatchIsSealedBeforeItExceedsMaxBatchBytes) {
  // Two timers of ~920 bytes fit in 2048 bytes, a third does not.
  std::unique_ptr<TimerBatcher> batcher = Make({.max_batch_bytes = 2048, .max_linger = kNever});
  std::vector<std::future<absl::Status>> futures;
  for (int i = 0; i < 5; ++i) {
    futures.push_back(batcher->StartTimer(Request("b" + std::to_string(i), std::string(900, 'x'))));
  }
  EXPECT_TRUE(batcher->Flush().ok());
  for (auto& future : futures) EXPECT_TRUE(Get(future).ok());
  EXPECT_EQ(service_.sorted_sizes(), (std::vector<size_t>{1, 2, 2}));
}

TEST_F(TimerBatcherTest, BeyondMaxPendingStartTimerFailsAtOnce) {
  std::unique_ptr<TimerBatcher> batcher = Make({.max_linger = {}, .max_in_flight = 1, .max_pending = 5});
  service_.Hold();
  std::vector<std::future<absl::Status>> futures;
  for (int i = 0; i < 5; ++i) futures.push_back(batcher->StartTimer(Request("p" + std::to_string(i))));
  std::future<absl::Status> refused = batcher->StartTimer(Request("p5"));
  ASSERT_TRUE(Ready(refused));
  const absl::Status status = refused.get();
  EXPECT_EQ(status.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_TRUE(absl::StrContains(status.message(), "max_pending (5)")) << status;
  service_.Release();
  for (auto& future : futures) EXPECT_TRUE(Get(future).ok());
  ASSERT_TRUE(batcher->Flush().ok());  // A call's timers stop counting just after their futures resolve.
  std::future<absl::Status> again = batcher->StartTimer(Request("p6"));  // Room again.
  EXPECT_TRUE(Get(again).ok());
}

TEST_F(TimerBatcherTest, AFailedCallFailsEachOfItsTimersWithTheCallsStatus) {
  std::unique_ptr<TimerBatcher> batcher = Make({.max_linger = kNever});
  service_.FailCalls(grpc::Status(grpc::StatusCode::UNAVAILABLE, "lawnd is shutting down"));
  std::vector<std::future<absl::Status>> futures;
  for (int i = 0; i < 4; ++i) futures.push_back(batcher->StartTimer(Request("f" + std::to_string(i))));
  EXPECT_TRUE(batcher->Flush().ok());  // Flush waits for answers, not for successes.
  for (auto& future : futures) EXPECT_EQ(Get(future), absl::UnavailableError("lawnd is shutting down"));
}

TEST_F(TimerBatcherTest, AnAnswerWithTheWrongNumberOfResultsFailsEveryTimerWithInternal) {
  std::unique_ptr<TimerBatcher> batcher = Make({.max_linger = kNever});
  service_.AnswerShort();
  std::vector<std::future<absl::Status>> futures;
  for (int i = 0; i < 3; ++i) futures.push_back(batcher->StartTimer(Request("n" + std::to_string(i))));
  EXPECT_TRUE(batcher->Flush().ok());
  for (auto& future : futures) EXPECT_EQ(Get(future).code(), absl::StatusCode::kInternal);
}

TEST_F(TimerBatcherTest, AResultCodeOutsideTheCanonicalRangeIsUnknown) {
  std::unique_ptr<TimerBatcher> batcher = Make({.max_linger = {}});
  std::future<absl::Status> future = batcher->StartTimer(Request("odd"));
  const absl::Status status = Get(future);
  EXPECT_EQ(status.code(), absl::StatusCode::kUnknown);
  EXPECT_TRUE(absl::StrContains(status.message(), "code 99")) << status;
}

TEST_F(TimerBatcherTest, CloseSendsWhatIsQueuedAndRejectsLaterTimers) {
  std::unique_ptr<TimerBatcher> batcher = Make({.max_linger = kNever});
  std::vector<std::future<absl::Status>> futures;
  for (int i = 0; i < 3; ++i) futures.push_back(batcher->StartTimer(Request("c" + std::to_string(i))));
  EXPECT_TRUE(batcher->Close().ok());
  for (auto& future : futures) EXPECT_TRUE(Ready(future));
  for (auto& future : futures) EXPECT_TRUE(future.get().ok());
  std::future<absl::Status> late = batcher->StartTimer(Request("late"));
  ASSERT_TRUE(Ready(late));
  EXPECT_EQ(late.get().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_TRUE(batcher->Close().ok());  // Idempotent.
  EXPECT_EQ(service_.sorted_sizes(), std::vector<size_t>{3});
}

TEST_F(TimerBatcherTest, DestructionSendsWhatIsQueued) {
  std::unique_ptr<TimerBatcher> batcher = Make({.max_linger = kNever});
  std::vector<std::future<absl::Status>> futures;
  for (int i = 0; i < 3; ++i) futures.push_back(batcher->StartTimer(Request("d" + std::to_string(i))));
  batcher.reset();
  for (auto& future : futures) {
    ASSERT_TRUE(Ready(future));
    EXPECT_TRUE(future.get().ok());
  }
}

TEST_F(TimerBatcherTest, CloseTimingOutCancelsCallsInFlightAndFailsTimersNeverSent) {
  std::unique_ptr<TimerBatcher> batcher =
      Make({.max_linger = {}, .max_in_flight = 1, .close_timeout = std::chrono::nanoseconds(0)});
  service_.Hold();
  std::future<absl::Status> in_flight = batcher->StartTimer(Request("x0"));  // Takes the only slot.
  std::future<absl::Status> queued = batcher->StartTimer(Request("x1"));
  const absl::Status closed = batcher->Close();
  EXPECT_EQ(closed.code(), absl::StatusCode::kDeadlineExceeded) << closed;
  ASSERT_TRUE(Ready(in_flight));  // Close returns with every future resolved.
  ASSERT_TRUE(Ready(queued));
  EXPECT_EQ(in_flight.get().code(), absl::StatusCode::kCancelled);
  EXPECT_EQ(queued.get().code(), absl::StatusCode::kDeadlineExceeded);
}

TEST_F(TimerBatcherTest, FlushTimingOutSaysSoAndTheTimersResolveLater) {
  std::unique_ptr<TimerBatcher> batcher = Make({.max_linger = kNever});
  service_.Hold();
  std::future<absl::Status> future = batcher->StartTimer(Request("h"));
  EXPECT_EQ(batcher->Flush(std::chrono::nanoseconds(0)).code(), absl::StatusCode::kDeadlineExceeded);
  service_.Release();
  EXPECT_TRUE(Get(future).ok());
}

TEST_F(TimerBatcherTest, TheRvalueFormTakesTheRequestAndTheTokenTravelsWithEveryCall) {
  std::unique_ptr<TimerBatcher> batcher = Make({.max_linger = {}, .token = "tok-1"});
  v1::StartTimerRequest request = Request("moved");
  std::future<absl::Status> future = batcher->StartTimer(std::move(request));
  EXPECT_TRUE(Get(future).ok());
  EXPECT_TRUE(request.id().empty());  // NOLINT(bugprone-use-after-move): swapped out, documented.
  ASSERT_EQ(service_.calls().size(), 1u);
  EXPECT_EQ(service_.calls()[0], std::vector<std::string>{"moved"});
  EXPECT_EQ(service_.authorization(), "Bearer tok-1");
}

TEST(TimerBatcherOptionsTest, OutOfRangeOptionsAreRefusedByName) {
  const auto refused = [](const BatcherOptions& options, const std::string& name) {
    const absl::Status s = ValidateBatcherOptions(options);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << name;
    EXPECT_TRUE(absl::StartsWith(s.message(), name)) << s;
  };
  EXPECT_TRUE(ValidateBatcherOptions({}).ok());
  refused({.max_batch = 0}, "max_batch");
  refused({.max_batch = 10001}, "max_batch");
  refused({.max_batch_bytes = 10}, "max_batch_bytes");
  refused({.max_linger = std::chrono::nanoseconds(-1)}, "max_linger");
  refused({.max_in_flight = 0}, "max_in_flight");
  refused({.max_pending = 0}, "max_pending");
  refused({.close_timeout = std::chrono::hours(2)}, "close_timeout");
  refused({.token = "two words"}, "token");
  EXPECT_EQ(TimerBatcher::Create(grpc::CreateChannel("127.0.0.1:1", grpc::InsecureChannelCredentials()),
                                 {.max_batch = 0})
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace lawn
