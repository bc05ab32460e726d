// SIGTERM while a call is in flight, against the real lawnd: the drain answers the call it had admitted,
// reports NOT_SERVING and refuses new calls and streams with UNAVAILABLE until that call is answered, then
// exits 0 with the acknowledged timer on disk.
//
// A drain with nothing in flight is over in a millisecond, too fast to observe from outside. To hold one
// open, the test makes a worker busy: 200,000 timers share one deadline, so both shard workers spend their
// next round expiring them (one large, fsynced RocksDB write each); a StartTimer sent after that deadline
// waits behind the round, and SIGTERM arrives while it does.
#include <csignal>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "tests/integration/lawnd_process.h"
#include "tests/integration/test_client.h"

namespace lawn::testing {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

constexpr int kBusyTimers = 200'000;

TEST(DrainTest, AnswersTheCallInFlightAndRefusesNewCallsWhileNotServing) {
  TempDir dir;
  LawndProcess lawnd(dir.path() + "/data");
  lawnd.Start();
  std::shared_ptr<grpc::Channel> channel = lawnd.channel();
  auto stub = v1::TimerService::NewStub(channel);
  // Every busy timer due at one instant, a few seconds out (the StartTimers calls take a while).
  const int64_t busy_deadline = WallNowNs() + 10'000'000'000LL;
  {
    std::vector<v1::StartTimerRequest> busy;
    busy.reserve(kBusyTimers);
    for (int i = 0; i < kBusyTimers; ++i) busy.push_back(DeadlineRequest("busy", "b" + std::to_string(i), busy_deadline));
    ASSERT_TRUE(StartAll(*stub, busy));
  }
  const double loaded_ahead_s = static_cast<double>(busy_deadline - WallNowNs()) * 1e-9;
  ASSERT_GT(loaded_ahead_s, 0) << "loading took longer than the deadline allowed; nothing to test";
  while (WallNowNs() < busy_deadline + 100'000'000LL) std::this_thread::sleep_for(milliseconds(10));

  // The call in flight: sent now, it waits behind the expiry round of its shard.
  grpc::CompletionQueue cq;
  grpc::ClientContext call_ctx;
  call_ctx.set_deadline(std::chrono::system_clock::now() + seconds(60));
  v1::StartTimerResponse call_response;
  grpc::Status call_status;
  auto call = stub->AsyncStartTimer(&call_ctx, TtlRequest("drain", "admitted", milliseconds(3'600'000), "kept"), &cq);
  call->Finish(&call_response, &call_status, reinterpret_cast<void*>(1));
  // A round trip on the same connection: the StartTimer, sent before, has reached lawnd.
  ASSERT_EQ(CheckHealth(channel), grpc::health::v1::HealthCheckResponse::SERVING);
  const auto sent = std::chrono::steady_clock::now();

  ASSERT_TRUE(lawnd.running());
  lawnd.Signal(SIGTERM);
  // While the drain waits for the admitted call: NOT_SERVING, and new calls and streams are UNAVAILABLE.
  std::optional<ServingStatus> health;
  ASSERT_TRUE(WaitFor([&] {
    health = CheckHealth(channel);
    return health != grpc::health::v1::HealthCheckResponse::SERVING;
  }, seconds(30)));
  void* tag;
  bool ok;
  const bool answered_early = cq.AsyncNext(&tag, &ok, std::chrono::system_clock::now()) == grpc::CompletionQueue::GOT_EVENT;
  ASSERT_FALSE(answered_early) << "the in-flight call was answered before the drain could be observed ("
                               << std::chrono::duration_cast<milliseconds>(std::chrono::steady_clock::now() - sent).count()
                               << " ms); the busy round was too short: status " << call_status.error_code() << " "
                               << call_status.error_message();
  ASSERT_EQ(health, grpc::health::v1::HealthCheckResponse::NOT_SERVING) << "no answer: lawnd already gone";
  {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + seconds(10));
    v1::GetTimerRequest get;
    get.set_namespace_("drain");
    get.set_id("anything");
    v1::GetTimerResponse resp;
    const grpc::Status s = stub->GetTimer(&ctx, get, &resp);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::UNAVAILABLE) << s.error_message();
    EXPECT_NE(s.error_message().find("shutting down"), std::string::npos) << s.error_message();
  }
  {
    const grpc::Status s = StartTtl(*stub, "drain", "refused", milliseconds(3'600'000));
    EXPECT_EQ(s.error_code(), grpc::StatusCode::UNAVAILABLE) << s.error_message();
    EXPECT_NE(s.error_message().find("shutting down"), std::string::npos) << s.error_message();
  }
  {
    TestSubscriber refused(*stub, "drain");
    std::optional<grpc::Status> s = refused.WaitEnd(seconds(30));
    ASSERT_TRUE(s.has_value());
    EXPECT_EQ(s->error_code(), grpc::StatusCode::UNAVAILABLE) << s->error_message();
  }
  EXPECT_EQ(CheckHealth(channel, "liveness"), grpc::health::v1::HealthCheckResponse::SERVING);

  // The admitted call is answered OK, then lawnd exits 0.
  ASSERT_EQ(cq.AsyncNext(&tag, &ok, std::chrono::system_clock::now() + seconds(60)), grpc::CompletionQueue::GOT_EVENT);
  std::printf("busy timers loaded %.1f s before their deadline; the call in flight was answered %lld ms after it was sent\n",
              loaded_ahead_s,
              static_cast<long long>(
                  std::chrono::duration_cast<milliseconds>(std::chrono::steady_clock::now() - sent).count()));
  EXPECT_TRUE(call_status.ok()) << call_status.error_code() << " " << call_status.error_message();
  EXPECT_EQ(call_response.timer().id(), "admitted");
  EXPECT_EQ(lawnd.WaitExit(seconds(60)), 0);
  cq.Shutdown();
  while (cq.Next(&tag, &ok)) {
  }

  // Restart: the timer the drain acknowledged is on disk; the refused one is not.
  lawnd.Start(seconds(60));
  stub = lawnd.stub();
  for (const auto& [id, want] : {std::pair<std::string, grpc::StatusCode>{"admitted", grpc::StatusCode::OK},
                                 {"refused", grpc::StatusCode::NOT_FOUND}}) {
    grpc::ClientContext ctx;
    v1::GetTimerRequest get;
    get.set_namespace_("drain");
    get.set_id(id);
    v1::GetTimerResponse resp;
    EXPECT_EQ(stub->GetTimer(&ctx, get, &resp).error_code(), want) << id;
  }
}

}  // namespace
}  // namespace lawn::testing
