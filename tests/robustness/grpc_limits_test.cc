// The gRPC-level limits against the real lawnd, each as a client sees it: a full shard queue refuses with
// UNAVAILABLE and loses nothing it accepted; streams beyond max concurrent streams on one connection wait
// until one ends; a client that pings too often is disconnected; an idle
// connection is closed and a busy one is not; a connection past its maximum age is told to go away while
// its calls go on; and a small gRPC memory quota refuses what does not fit without stopping the daemon.
#include <atomic>
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

class GrpcLimitsTest : public ::testing::Test {
 protected:
  void StartLawnd(const std::string& yaml, std::vector<std::string> args = {}) {
    const std::string config = WriteFile(dir_.path() + "/lawn.yaml", yaml);
    args.insert(args.end(), {"--config", config, "--metrics-listen", "127.0.0.1:0"});
    lawnd_ = std::make_unique<LawndProcess>(dir_.path() + "/data", args);
    lawnd_->Start();
    stub_ = lawnd_->stub();
  }
  // A channel of its own (not shared with other tests' calls), with `args`.
  std::shared_ptr<grpc::Channel> OwnChannel(grpc::ChannelArguments args = {}) {
    args.SetInt("lawn.test.unique", ++channels_);  // Distinct args: gRPC does not share the subchannel.
    return grpc::CreateCustomChannel(lawnd_->address(), grpc::InsecureChannelCredentials(), args);
  }
  // Waits (bounded) until `channel` is in `state`, asking it to connect when idle only if `connect`.
  static bool WaitState(grpc::Channel& channel, grpc_connectivity_state state, seconds timeout) {
    const auto end = std::chrono::system_clock::now() + timeout;
    grpc_connectivity_state now = channel.GetState(false);
    while (now != state) {
      if (!channel.WaitForStateChange(now, end)) return false;
      now = channel.GetState(false);
    }
    return true;
  }
  uint64_t Pending(const std::string& ns) { return NamespaceStatsOf(*stub_, ns).pending_timers(); }
  std::string Metrics() { return HttpGet(MetricsPortFromLog(lawnd_->Log()), "/metrics"); }

  TempDir dir_;
  std::unique_ptr<LawndProcess> lawnd_;
  std::unique_ptr<v1::TimerService::Stub> stub_;
  int channels_ = 0;
};

TEST_F(GrpcLimitsTest, FullShardQueueRefusesWithUnavailableAndKeepsEverythingItAccepted) {
  // One shard with the smallest queue (1000 commands), kept busy by batches of 10,000 starts (each one
  // command, fsynced), while bursts of 3000 single starts arrive at once: they queue past the bound.
  StartLawnd("max_queued_commands: 1000\ngrpc_max_concurrent_streams: 100000\n",
             {"--shards", "1", "--durability", "sync"});
  std::atomic<uint64_t> accepted{0};
  std::atomic<uint64_t> refused{0};
  std::atomic<int> other_errors{0};
  std::atomic<bool> stop{false};
  std::string refusal, other_message;
  std::mutex mu;
  const auto deadline = std::chrono::steady_clock::now() + seconds(60);
  std::vector<std::thread> loaders;
  for (int c = 0; c < 2; ++c) {
    loaders.emplace_back([&, c] {
      auto stub = v1::TimerService::NewStub(OwnChannel());
      for (int round = 0; !stop && std::chrono::steady_clock::now() < deadline; ++round) {
        v1::StartTimersRequest batch;
        for (int i = 0; i < 10'000; ++i) {
          *batch.add_timers() = TtlRequest(
              "bp", "b" + std::to_string(c) + "-" + std::to_string(round) + "-" + std::to_string(i),
              std::chrono::hours(1));
        }
        grpc::ClientContext ctx;
        ctx.set_deadline(std::chrono::system_clock::now() + seconds(60));
        v1::StartTimersResponse resp;
        grpc::Status s = stub->StartTimers(&ctx, batch, &resp);
        std::lock_guard lock(mu);
        if (s.error_code() == grpc::StatusCode::UNAVAILABLE) {
          refusal = s.error_message();
          refused += 10'000;
        } else if (!s.ok()) {
          other_message = s.error_message();
          other_errors++;
        } else {
          for (const auto& r : resp.results()) {
            if (r.code() == 0) {
              accepted++;
            } else {
              other_message = r.message();
              other_errors++;
            }
          }
        }
      }
    });
  }
  // Bursts of single starts, all in flight at once, until some were refused (bounded in count and time).
  auto burst_stub = v1::TimerService::NewStub(OwnChannel());
  constexpr int kBurst = 3000;
  for (int burst = 0; burst < 20 && refused == 0 && std::chrono::steady_clock::now() < deadline; ++burst) {
    grpc::CompletionQueue cq;
    struct Call {
      grpc::ClientContext ctx;
      v1::StartTimerResponse resp;
      grpc::Status status;
      std::unique_ptr<grpc::ClientAsyncResponseReader<v1::StartTimerResponse>> rpc;
    };
    std::vector<std::unique_ptr<Call>> calls(kBurst);
    for (int i = 0; i < kBurst; ++i) {
      calls[i] = std::make_unique<Call>();
      calls[i]->ctx.set_deadline(std::chrono::system_clock::now() + seconds(60));
      calls[i]->rpc = burst_stub->AsyncStartTimer(
          &calls[i]->ctx, TtlRequest("bp", "u" + std::to_string(burst) + "-" + std::to_string(i),
                                     std::chrono::hours(1)),
          &cq);
      calls[i]->rpc->Finish(&calls[i]->resp, &calls[i]->status, calls[i].get());
    }
    for (int done = 0; done < kBurst; ++done) {
      void* tag;
      bool ok;
      ASSERT_TRUE(cq.Next(&tag, &ok));
      const grpc::Status& s = static_cast<Call*>(tag)->status;
      std::lock_guard lock(mu);
      if (s.ok()) {
        accepted++;
      } else if (s.error_code() == grpc::StatusCode::UNAVAILABLE) {
        refusal = s.error_message();
        refused++;
      } else {
        other_message = s.error_message();
        other_errors++;
      }
    }
  }
  stop = true;
  for (auto& t : loaders) t.join();
  EXPECT_EQ(other_errors.load(), 0) << other_message;
  ASSERT_GT(refused.load(), 0u) << "the queue never filled";
  EXPECT_NE(refusal.find("max_queued_commands"), std::string::npos) << refusal;
  EXPECT_NE(refusal.find("retry"), std::string::npos) << refusal;
  // Backpressure loses nothing it accepted, and lawnd takes calls again once the queue drained.
  EXPECT_TRUE(WaitFor([&] { return StartTtl(*stub_, "bp", "after", std::chrono::hours(1)).ok(); }, seconds(30)));
  EXPECT_EQ(Pending("bp"), accepted.load() + 1);
  const std::string metrics = Metrics();
  EXPECT_NE(metrics.find("lawn_overload_refusals_total"), std::string::npos);
  EXPECT_EQ(metrics.find("lawn_overload_refusals_total 0\n"), std::string::npos) << "refusals are counted";
  std::printf("queue: %llu starts accepted, %llu refused\n", static_cast<unsigned long long>(accepted.load()),
              static_cast<unsigned long long>(refused.load()));
}

TEST_F(GrpcLimitsTest, StreamsBeyondMaxConcurrentStreamsWaitUntilOneEnds) {
  StartLawnd("grpc_max_concurrent_streams: 2\n");
  auto channel = OwnChannel();
  auto stub = v1::TimerService::NewStub(channel);
  auto subscribers = [&](const std::string& ns) { return NamespaceStatsOf(*stub_, ns).subscribers(); };
  // Two streams fill the connection's limit; both are served (seen from another connection).
  auto first = std::make_unique<TestSubscriber>(*stub, "one");
  TestSubscriber second(*stub, "two");
  ASSERT_TRUE(WaitFor([&] { return subscribers("one") == 1 && subscribers("two") == 1; }, seconds(30)));
  // A third on the same connection waits in the client (the server announced 2 in its SETTINGS): lawnd
  // never sees it, so it is not attached and an expiration due in its namespace waits in the outbox. (The
  // stream is opened on a thread: opening it blocks until its headers are sent, i.e. until a slot is free.)
  std::unique_ptr<TestSubscriber> third;
  std::atomic<bool> opened{false};
  std::thread opener([&] {
    third = std::make_unique<TestSubscriber>(*stub, "three");
    opened = true;
  });
  EXPECT_TRUE(StartTtl(*stub_, "three", "t", milliseconds(10)).ok());
  EXPECT_TRUE(WaitFor([&] { return NamespaceStatsOf(*stub_, "three").outbox() == 1; }, seconds(30)));
  EXPECT_FALSE(WaitFor([&] { return subscribers("three") != 0; }, milliseconds(2000)))
      << "a stream beyond the limit was served";
  EXPECT_EQ(NamespaceStatsOf(*stub_, "three").outbox(), 1u);
  EXPECT_FALSE(opened.load()) << "a stream beyond the limit was opened at once";
  // The first one ends: the waiting stream takes its place and gets the expiration.
  first->Close();
  first.reset();
  const bool opened_in_time = WaitFor([&] { return opened.load(); }, seconds(30));
  if (!opened_in_time) second.Close();  // Frees the other slot, so that the opener ends and can be joined.
  opener.join();
  ASSERT_TRUE(opened_in_time) << "the waiting stream was not served after a slot freed";
  std::optional<v1::Expiration> e = third->Next(milliseconds(30'000));
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->timer().id(), "t");
  EXPECT_TRUE(third->Ack(e->delivery_id()));
  EXPECT_EQ(subscribers("three"), 1u);
  EXPECT_EQ(subscribers("two"), 1u);
}

TEST_F(GrpcLimitsTest, ClientThatPingsTooOftenIsDisconnectedAndOthersAreNot) {
  // lawnd allows a ping every 5 s; the client pings about once a second, as often as a gRPC client with a
  // call open can (the chttp2 transport never sends pings less than 1 s apart, whatever its keepalive time).
  // Each ping within 5 s of the last is a strike: after two, lawnd sends GOAWAY too_many_pings, which ends
  // its open Subscribe stream. (With the server's limit at the client's 1 s floor, only jitter made
  // strikes, and a busy machine could go 90 s without three.)
  StartLawnd("grpc_keepalive_min_time: 5s\n");
  grpc::ChannelArguments pinging;
  pinging.SetInt(GRPC_ARG_KEEPALIVE_TIME_MS, 1000);
  pinging.SetInt(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, 10'000);
  pinging.SetInt(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
  pinging.SetInt(GRPC_ARG_HTTP2_MAX_PINGS_WITHOUT_DATA, 0);
  pinging.SetInt(GRPC_ARG_HTTP2_MIN_SENT_PING_INTERVAL_WITHOUT_DATA_MS, 1000);
  auto abuser_stub = v1::TimerService::NewStub(OwnChannel(pinging));
  auto polite_stub = v1::TimerService::NewStub(OwnChannel());
  TestSubscriber abuser(*abuser_stub, "ka");
  TestSubscriber polite(*polite_stub, "ka");
  // About 3-4 s when the machine is idle; a generous bound, for busy CI.
  std::optional<grpc::Status> end = abuser.WaitEnd(milliseconds(90'000));
  ASSERT_TRUE(end.has_value()) << "the pinging client was never disconnected";
  EXPECT_EQ(end->error_code(), grpc::StatusCode::UNAVAILABLE) << end->error_message();
  // The other client's stream is untouched and still delivers.
  EXPECT_FALSE(polite.WaitEnd(milliseconds(100)).has_value());
  ASSERT_TRUE(StartTtl(*stub_, "ka", "t", milliseconds(10)).ok());
  std::optional<v1::Expiration> e = polite.Next(milliseconds(15'000));
  ASSERT_TRUE(e.has_value());
  EXPECT_TRUE(polite.Ack(e->delivery_id()));
}

TEST_F(GrpcLimitsTest, IdleConnectionIsClosedAndOneWithAnOpenStreamIsNot) {
  StartLawnd("grpc_max_connection_idle: 1s\n");
  auto idle = OwnChannel();
  auto idle_stub = v1::TimerService::NewStub(idle);
  ASSERT_TRUE(StartTtl(*idle_stub, "idle", "t", std::chrono::hours(1)).ok());
  auto busy = OwnChannel();
  auto busy_stub = v1::TimerService::NewStub(busy);
  TestSubscriber sub(*busy_stub, "idle");
  ASSERT_TRUE(WaitState(*busy, GRPC_CHANNEL_READY, seconds(15)));
  // lawnd closes the connection with no call in flight (GOAWAY): the client's channel goes idle.
  EXPECT_TRUE(WaitState(*idle, GRPC_CHANNEL_IDLE, seconds(30)));
  // The one carrying a Subscribe stream stays connected well past the idle limit, and its stream delivers.
  std::this_thread::sleep_for(seconds(3));
  EXPECT_EQ(busy->GetState(false), GRPC_CHANNEL_READY);
  EXPECT_FALSE(sub.WaitEnd(milliseconds(100)).has_value());
  ASSERT_TRUE(StartTtl(*stub_, "idle", "soon", milliseconds(10)).ok());
  EXPECT_TRUE(sub.Next(milliseconds(15'000)).has_value());
  // The closed one reconnects on its next call: nothing for the client to do.
  EXPECT_TRUE(StartTtl(*idle_stub, "idle", "again", std::chrono::hours(1)).ok());
}

TEST_F(GrpcLimitsTest, ConnectionPastItsMaxAgeIsToldToGoAwayWhileItsStreamGoesOn) {
  StartLawnd("grpc_max_connection_age: 1s\n");
  auto channel = OwnChannel();
  auto stub = v1::TimerService::NewStub(channel);
  TestSubscriber sub(*stub, "age");
  ASSERT_TRUE(WaitState(*channel, GRPC_CHANNEL_READY, seconds(15)));
  // At about 1 s (plus gRPC's jitter) lawnd sends GOAWAY: the channel leaves READY even though a call is
  // in flight (an idle limit would never close this connection), and new calls take a new connection.
  EXPECT_TRUE(WaitState(*channel, GRPC_CHANNEL_IDLE, seconds(30)));
  EXPECT_TRUE(StartTtl(*stub, "age", "new-connection", std::chrono::hours(1)).ok());
  // The open stream has its grace period (30 s) and still delivers meanwhile.
  EXPECT_FALSE(sub.WaitEnd(milliseconds(100)).has_value());
  ASSERT_TRUE(StartTtl(*stub_, "age", "soon", milliseconds(10)).ok());
  EXPECT_TRUE(sub.Next(milliseconds(15'000)).has_value());
}

TEST_F(GrpcLimitsTest, SmallMemoryQuotaEndsCallsThatDoNotFitAndRetriesConverge) {
  // 16 MiB for all of gRPC's buffers, messages up to 4 MiB: a dozen clients sending 3.5 MiB at once do not
  // all fit. gRPC ends what does not fit (RST_STREAM -> RESOURCE_EXHAUSTED, or GOAWAY -> UNAVAILABLE); such
  // a call may or may not have been applied, as with any call the transport ends. The daemon stays up, holds
  // nothing that was not asked for, and a client that retries ends with every timer started exactly once.
  StartLawnd("grpc_memory_quota_bytes: 16MiB\nmax_message_bytes: 4MiB\nmax_payload_bytes: 65536\n"
             "max_pending_bytes_per_namespace: 1GiB\n");
  constexpr int kClients = 12;
  constexpr int kRounds = 5;
  constexpr int kItems = 56;  // 56 x 64 KiB = 3.5 MiB.
  std::atomic<uint64_t> first_try_ok{0};
  std::atomic<int> transport_ended{0};
  std::atomic<int> unexpected{0};
  std::string unexpected_message;
  std::mutex mu;
  std::vector<std::thread> clients;
  for (int c = 0; c < kClients; ++c) {
    clients.emplace_back([&, c] {
      auto stub = v1::TimerService::NewStub(OwnChannel());
      for (int round = 0; round < kRounds; ++round) {
        v1::StartTimersRequest batch;
        for (int i = 0; i < kItems; ++i) {
          *batch.add_timers() = TtlRequest(
              "quota", std::to_string(c) + "-" + std::to_string(round) + "-" + std::to_string(i),
              std::chrono::hours(1), std::string(65536 - 64, 'x'));
        }
        // Retries until the call itself succeeds (bounded); each item then is OK, or ALREADY_EXISTS when an
        // earlier try that the transport ended had been applied.
        for (int attempt = 0; attempt < 50; ++attempt) {
          grpc::ClientContext ctx;
          ctx.set_deadline(std::chrono::system_clock::now() + seconds(60));
          v1::StartTimersResponse resp;
          grpc::Status s = stub->StartTimers(&ctx, batch, &resp);
          if (s.error_code() == grpc::StatusCode::RESOURCE_EXHAUSTED ||
              s.error_code() == grpc::StatusCode::UNAVAILABLE) {
            transport_ended++;
            std::this_thread::sleep_for(milliseconds(20 * (attempt + 1)));
            continue;
          }
          std::lock_guard lock(mu);
          if (!s.ok()) {
            unexpected_message = std::to_string(s.error_code()) + ": " + s.error_message();
            unexpected++;
            break;
          }
          for (const auto& r : resp.results()) {
            if (r.code() == 0 && attempt == 0) first_try_ok++;
            if (r.code() != 0 && r.code() != grpc::StatusCode::ALREADY_EXISTS) {
              unexpected_message = std::to_string(r.code()) + ": " + r.message();
              unexpected++;
            }
            if (r.code() == grpc::StatusCode::ALREADY_EXISTS && attempt == 0) {
              unexpected_message = "ALREADY_EXISTS on a first try: " + r.message();
              unexpected++;
            }
          }
          break;
        }
      }
    });
  }
  for (auto& t : clients) t.join();
  EXPECT_EQ(unexpected.load(), 0) << unexpected_message;
  std::printf("memory quota: %llu items accepted on the first try, %d calls ended by the transport\n",
              static_cast<unsigned long long>(first_try_ok.load()), transport_ended.load());
  // Alive, answering, and holding every timer once.
  EXPECT_TRUE(lawnd_->running());
  EXPECT_EQ(Pending("quota"), uint64_t{kClients} * kRounds * kItems);
  EXPECT_TRUE(StartTtl(*stub_, "quota", "after", std::chrono::hours(1)).ok());
}

}  // namespace
}  // namespace lawn::testing
