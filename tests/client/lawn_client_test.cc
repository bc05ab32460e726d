// LawnClient and Subscription against an in-process fake TimerService on a real gRPC server (port 0): status
// mapping, request building, and the Subscribe stream's acks, stop and errors. lawnd itself is covered by
// tests/integration/.
#include "client/lawn_client.h"

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "client/proto_time.h"
#include "grpcpp/grpcpp.h"
#include "grpcpp/health_check_service_interface.h"
#include "gtest/gtest.h"

namespace lawn {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

// How the fake's Subscribe ends.
enum class StreamEnd {
  kWhenAllAcked,  // Return OK once every expiration sent has been acked.
  kOnHalfClose,   // Keep reading acks until the client half-closes, then return OK.
};

// A scripted TimerService. Subscribe sends `expirations` expirations (delivery ids 1..n) while no more than
// `window` are unacked, like lawnd; a namespace "bad" is refused with INVALID_ARGUMENT.
class FakeTimerService final : public v1::TimerService::Service {
 public:
  int expirations = 0;
  size_t window = 100;
  StreamEnd end = StreamEnd::kWhenAllAcked;

  grpc::Status StartTimer(grpc::ServerContext*, const v1::StartTimerRequest* request,
                          v1::StartTimerResponse* response) override {
    absl::MutexLock lock(&mu_);
    last_start_ = *request;
    v1::Timer* timer = response->mutable_timer();
    timer->set_namespace_(request->namespace_().empty() ? "default" : request->namespace_());
    timer->set_id(request->id());
    timer->set_payload(request->payload());
    if (request->has_ttl()) *timer->mutable_ttl() = request->ttl();
    return grpc::Status::OK;
  }

  grpc::Status StartTimers(grpc::ServerContext*, const v1::StartTimersRequest* request,
                           v1::StartTimersResponse* response) override {
    for (const v1::StartTimerRequest& r : request->timers()) {
      v1::StartTimerResult* result = response->add_results();
      if (r.id() == "taken") {
        result->set_code(grpc::StatusCode::ALREADY_EXISTS);
        result->set_message("timer 'taken' exists");
      } else {
        result->mutable_timer()->set_id(r.id());
      }
    }
    return grpc::Status::OK;
  }

  grpc::Status GetTimer(grpc::ServerContext*, const v1::GetTimerRequest* request, v1::GetTimerResponse*) override {
    return grpc::Status(grpc::StatusCode::NOT_FOUND, "no timer '" + request->id() + "'");
  }

  grpc::Status RescheduleTimer(grpc::ServerContext*, const v1::RescheduleTimerRequest* request,
                               v1::RescheduleTimerResponse* response) override {
    absl::MutexLock lock(&mu_);
    last_reschedule_ = *request;
    response->mutable_timer()->set_id(request->id());
    return grpc::Status::OK;
  }

  grpc::Status Subscribe(grpc::ServerContext*,
                         grpc::ServerReaderWriter<v1::SubscribeResponse, v1::SubscribeRequest>* stream) override {
    v1::SubscribeRequest request;
    if (!stream->Read(&request) || !request.has_open()) {
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "open first");
    }
    {
      absl::MutexLock lock(&mu_);
      open_ = request.open();
    }
    if (request.open().namespace_() == "bad") {
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "namespace: \"bad\" is bad");
    }
    int sent = 0;
    size_t unacked = 0;
    for (;;) {
      while (sent < expirations && (request.open().observe() || unacked < window)) {
        ++sent;
        ++unacked;
        {
          absl::MutexLock lock(&mu_);
          sent_ = sent;
        }
        v1::SubscribeResponse response;
        v1::Expiration* e = response.mutable_expiration();
        e->mutable_timer()->set_id("t" + std::to_string(sent));
        e->set_delivery_id(static_cast<uint64_t>(sent));
        e->set_attempt(1);
        if (!stream->Write(response)) return grpc::Status(grpc::StatusCode::UNAVAILABLE, "write failed");
      }
      if (end == StreamEnd::kWhenAllAcked && sent == expirations && unacked == 0) return grpc::Status::OK;
      if (!stream->Read(&request)) return grpc::Status::OK;  // Half-close.
      absl::MutexLock lock(&mu_);
      ++ack_messages_;
      for (uint64_t id : request.ack().delivery_ids()) acked_.push_back(id);
      unacked -= std::min<size_t>(unacked, static_cast<size_t>(request.ack().delivery_ids_size()));
    }
  }

  v1::StartTimerRequest last_start() {
    absl::MutexLock lock(&mu_);
    return last_start_;
  }
  v1::RescheduleTimerRequest last_reschedule() {
    absl::MutexLock lock(&mu_);
    return last_reschedule_;
  }
  v1::SubscribeRequest::Open open() {
    absl::MutexLock lock(&mu_);
    return open_;
  }
  std::vector<uint64_t> acked() {
    absl::MutexLock lock(&mu_);
    return acked_;
  }
  int ack_messages() {
    absl::MutexLock lock(&mu_);
    return ack_messages_;
  }
  void AwaitSent(int n) {
    const auto enough = [&] {
      mu_.AssertReaderHeld();
      return sent_ >= n;
    };
    absl::MutexLock lock(&mu_, absl::Condition(&enough));
  }

 private:
  absl::Mutex mu_;
  v1::StartTimerRequest last_start_ ABSL_GUARDED_BY(mu_);
  v1::RescheduleTimerRequest last_reschedule_ ABSL_GUARDED_BY(mu_);
  v1::SubscribeRequest::Open open_ ABSL_GUARDED_BY(mu_);
  std::vector<uint64_t> acked_ ABSL_GUARDED_BY(mu_);
  int ack_messages_ ABSL_GUARDED_BY(mu_) = 0;
  int sent_ ABSL_GUARDED_BY(mu_) = 0;
};

// A gRPC server on 127.0.0.1, port 0, with the fake and the default health service.
class FakeServer {
 public:
  explicit FakeServer(FakeTimerService& service) {
    grpc::EnableDefaultHealthCheckService(true);
    grpc::ServerBuilder builder;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port_);
    builder.RegisterService(&service);
    server_ = builder.BuildAndStart();
  }
  ~FakeServer() { Shutdown(); }
  void Shutdown() {
    if (server_ != nullptr) server_->Shutdown(std::chrono::system_clock::now() + seconds(5));
  }
  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }

 private:
  int port_ = 0;
  std::unique_ptr<grpc::Server> server_;
};

// Collects what a subscription's callback saw.
struct Received {
  absl::Mutex mu;
  std::vector<uint64_t> ids ABSL_GUARDED_BY(mu);

  void Add(uint64_t id) {
    absl::MutexLock lock(&mu);
    ids.push_back(id);
  }
  std::vector<uint64_t> Await(size_t n) {
    const auto enough = [&] {
      mu.AssertReaderHeld();
      return ids.size() >= n;
    };
    absl::MutexLock lock(&mu, absl::Condition(&enough));
    return ids;
  }
};

std::vector<uint64_t> Iota(uint64_t n) {
  std::vector<uint64_t> ids;
  for (uint64_t i = 1; i <= n; ++i) ids.push_back(i);
  return ids;
}

TEST(LawnClientTest, ServerErrorsKeepTheirCodeAndMessage) {
  FakeTimerService service;
  FakeServer server(service);
  std::unique_ptr<LawnClient> client = LawnClient::Connect(server.address());
  absl::StatusOr<v1::Timer> timer = client->GetTimer("default", "nope");
  EXPECT_EQ(timer.status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(timer.status().message(), "no timer 'nope'");
}

TEST(LawnClientTest, UnreachableServerIsUnavailable) {
  FakeTimerService service;
  auto server = std::make_unique<FakeServer>(service);
  const std::string address = server->address();
  server.reset();  // Nobody listens on the port any more.
  std::unique_ptr<LawnClient> client = LawnClient::Connect(address);
  EXPECT_EQ(client->GetStats().status().code(), absl::StatusCode::kUnavailable);
  std::unique_ptr<Subscription> subscription = client->Subscribe("default", {}, [](const v1::Expiration&) {});
  EXPECT_EQ(subscription->Wait().code(), absl::StatusCode::kUnavailable);
}

TEST(LawnClientTest, ConvenienceStartTimerFillsTheRequest) {
  FakeTimerService service;
  FakeServer server(service);
  std::unique_ptr<LawnClient> client = LawnClient::Connect(server.address());
  absl::StatusOr<v1::Timer> timer = client->StartTimer("ns", "id", milliseconds(1500), "p", seconds(60), true);
  ASSERT_TRUE(timer.ok()) << timer.status();
  EXPECT_EQ(timer->id(), "id");
  const v1::StartTimerRequest sent = service.last_start();
  EXPECT_EQ(sent.namespace_(), "ns");
  EXPECT_EQ(sent.id(), "id");
  EXPECT_EQ(sent.ttl().seconds(), 1);
  EXPECT_EQ(sent.ttl().nanos(), 500'000'000);
  EXPECT_EQ(sent.payload(), "p");
  EXPECT_EQ(sent.interval().seconds(), 60);
  EXPECT_TRUE(sent.replace());

  ASSERT_TRUE(client->StartTimer("ns", "once", seconds(1)).ok());
  EXPECT_FALSE(service.last_start().has_interval());
  EXPECT_FALSE(service.last_start().replace());
}

TEST(LawnClientTest, StartTimersReportsEachItem) {
  FakeTimerService service;
  FakeServer server(service);
  std::unique_ptr<LawnClient> client = LawnClient::Connect(server.address());
  std::vector<v1::StartTimerRequest> requests(3);
  requests[0].set_id("a");
  requests[1].set_id("taken");
  requests[2].set_id("c");
  auto results = client->StartTimers(requests);
  ASSERT_TRUE(results.ok()) << results.status();
  ASSERT_EQ(results->size(), 3u);
  EXPECT_EQ((*results)[0]->id(), "a");
  EXPECT_EQ((*results)[1].status().code(), absl::StatusCode::kAlreadyExists);
  EXPECT_EQ((*results)[1].status().message(), "timer 'taken' exists");
  EXPECT_EQ((*results)[2]->id(), "c");
}

TEST(LawnClientTest, RescheduleToADeadlineSendsTheTimestamp) {
  FakeTimerService service;
  FakeServer server(service);
  std::unique_ptr<LawnClient> client = LawnClient::Connect(server.address());
  const auto deadline = std::chrono::system_clock::time_point(seconds(1738324800) + milliseconds(250));
  ASSERT_TRUE(client->RescheduleTimer("ns", "id", deadline).ok());
  const v1::RescheduleTimerRequest sent = service.last_reschedule();
  ASSERT_TRUE(sent.has_deadline());
  EXPECT_EQ(sent.deadline().seconds(), 1738324800);
  EXPECT_EQ(sent.deadline().nanos(), 250'000'000);
}

TEST(LawnClientTest, HealthReportsServingAndUnknownServices) {
  FakeTimerService service;
  FakeServer server(service);
  std::unique_ptr<LawnClient> client = LawnClient::Connect(server.address());
  absl::StatusOr<ServingStatus> status = client->Health();
  ASSERT_TRUE(status.ok()) << status.status();
  EXPECT_EQ(*status, grpc::health::v1::HealthCheckResponse::SERVING);
  EXPECT_EQ(client->Health("no.such.Service").status().code(), absl::StatusCode::kNotFound);
}

TEST(SubscriptionTest, DeliversInOrderAndAcksEverythingWithinTheWindow) {
  FakeTimerService service;
  service.expirations = 500;
  service.window = 8;  // The fake stalls unless acks keep coming: a client sitting on acks would hang here.
  FakeServer server(service);
  std::unique_ptr<LawnClient> client = LawnClient::Connect(server.address());
  Received received;
  SubscribeOptions options;
  options.max_in_flight = 8;
  std::unique_ptr<Subscription> subscription = client->Subscribe(
      "work", options, [&](const v1::Expiration& e) { received.Add(e.delivery_id()); });
  EXPECT_TRUE(subscription->Wait().ok());  // The fake ends the stream once all 500 are acked.
  EXPECT_EQ(received.Await(500), Iota(500));
  EXPECT_EQ(service.acked(), Iota(500));
  EXPECT_LE(service.ack_messages(), 500);
  EXPECT_EQ(service.open().namespace_(), "work");
  EXPECT_EQ(service.open().max_in_flight(), 8u);
  EXPECT_FALSE(service.open().observe());
}

TEST(SubscriptionTest, BatchesAcksThatPileUpWhileTheCallbackRuns) {
  FakeTimerService service;
  service.expirations = 40;
  service.window = 40;
  FakeServer server(service);
  std::unique_ptr<LawnClient> client = LawnClient::Connect(server.address());
  SubscribeOptions options;
  options.max_in_flight = 40;
  absl::Mutex gate_mu;
  bool open_gate = false;
  Received received;
  std::unique_ptr<Subscription> subscription = client->Subscribe("default", options, [&](const v1::Expiration& e) {
    // The first callback waits until all 40 have arrived, so the rest are queued behind it.
    if (e.delivery_id() == 1) {
      absl::MutexLock lock(&gate_mu, absl::Condition(&open_gate));
    }
    received.Add(e.delivery_id());
  });
  // Nothing is acked before the callback returns; then the 40 acks go out in a few messages, not 40.
  service.AwaitSent(40);
  // The client's reader queues what was sent without waiting for the callback, but nothing observable says it
  // has; a short pause lets it catch up so the batch sizes below are deterministic.
  absl::SleepFor(absl::Milliseconds(100));
  EXPECT_EQ(service.ack_messages(), 0);
  {
    absl::MutexLock lock(&gate_mu);
    open_gate = true;
  }
  EXPECT_TRUE(subscription->Wait().ok());
  EXPECT_EQ(service.acked(), Iota(40));
  EXPECT_LE(service.ack_messages(), 4);  // Batches of up to max_in_flight / 2; exactly 2 when all were queued.
}

TEST(SubscriptionTest, StopFromTheCallbackAcksOnlyWhatWasDelivered) {
  FakeTimerService service;
  service.expirations = 20;
  service.window = 20;
  service.end = StreamEnd::kOnHalfClose;
  FakeServer server(service);
  std::unique_ptr<LawnClient> client = LawnClient::Connect(server.address());
  absl::Mutex mu;
  Subscription* self = nullptr;  // Guarded by mu.
  Received received;
  std::unique_ptr<Subscription> subscription = client->Subscribe("default", {}, [&](const v1::Expiration& e) {
    received.Add(e.delivery_id());
    if (e.delivery_id() == 3) {
      absl::MutexLock lock(&mu, absl::Condition(+[](Subscription** s) { return *s != nullptr; }, &self));
      self->Stop();
    }
  });
  {
    absl::MutexLock lock(&mu);
    self = subscription.get();
  }
  EXPECT_TRUE(subscription->Wait().ok());  // Graceful: half-close, and the fake returns OK.
  EXPECT_EQ(received.Await(3), Iota(3));
  EXPECT_EQ(service.acked(), Iota(3));
}

TEST(SubscriptionTest, StopFromAnotherThreadEndsGracefully) {
  FakeTimerService service;
  service.expirations = 5;
  service.end = StreamEnd::kOnHalfClose;
  FakeServer server(service);
  std::unique_ptr<LawnClient> client = LawnClient::Connect(server.address());
  Received received;
  std::unique_ptr<Subscription> subscription =
      client->Subscribe("default", {}, [&](const v1::Expiration& e) { received.Add(e.delivery_id()); });
  EXPECT_EQ(received.Await(5), Iota(5));
  subscription->Stop();
  subscription->Stop();  // Idempotent.
  EXPECT_TRUE(subscription->Wait().ok());
  EXPECT_EQ(service.acked(), Iota(5));
  EXPECT_EQ(subscription->WaitFor(milliseconds(0)), absl::OkStatus());
}

TEST(SubscriptionTest, ManualAcksAreSentWhenAutoAckIsOff) {
  FakeTimerService service;
  service.expirations = 3;
  service.window = 3;
  FakeServer server(service);
  std::unique_ptr<LawnClient> client = LawnClient::Connect(server.address());
  SubscribeOptions options;
  options.auto_ack = false;
  Received received;
  std::unique_ptr<Subscription> subscription =
      client->Subscribe("default", options, [&](const v1::Expiration& e) { received.Add(e.delivery_id()); });
  EXPECT_EQ(received.Await(3), Iota(3));
  EXPECT_EQ(subscription->WaitFor(milliseconds(100)), std::nullopt);  // Waits for acks that never came.
  EXPECT_TRUE(service.acked().empty());
  for (uint64_t id : Iota(3)) subscription->Ack(id);
  EXPECT_TRUE(subscription->Wait().ok());
  EXPECT_EQ(service.acked(), Iota(3));
}

TEST(SubscriptionTest, ObserveSendsNoAcks) {
  FakeTimerService service;
  service.expirations = 10;
  service.end = StreamEnd::kOnHalfClose;
  FakeServer server(service);
  std::unique_ptr<LawnClient> client = LawnClient::Connect(server.address());
  SubscribeOptions options;
  options.observe = true;
  Received received;
  std::unique_ptr<Subscription> subscription =
      client->Subscribe("default", options, [&](const v1::Expiration& e) { received.Add(e.delivery_id()); });
  EXPECT_EQ(received.Await(10), Iota(10));
  subscription->Ack(1);  // Ignored in observe mode.
  subscription->Stop();
  EXPECT_TRUE(subscription->Wait().ok());
  EXPECT_TRUE(service.open().observe());
  EXPECT_TRUE(service.acked().empty());
  EXPECT_EQ(service.ack_messages(), 0);
}

TEST(SubscriptionTest, ServerRefusalEndsTheStreamWithItsStatus) {
  FakeTimerService service;
  FakeServer server(service);
  std::unique_ptr<LawnClient> client = LawnClient::Connect(server.address());
  int calls = 0;
  std::unique_ptr<Subscription> subscription =
      client->Subscribe("bad", {}, [&](const v1::Expiration&) { ++calls; });
  const absl::Status status = subscription->Wait();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(status.message(), "namespace: \"bad\" is bad");
  EXPECT_EQ(calls, 0);
}

TEST(SubscriptionTest, DestructorStopsARunningStream) {
  FakeTimerService service;
  service.end = StreamEnd::kOnHalfClose;  // Sends nothing and never ends on its own.
  FakeServer server(service);
  std::unique_ptr<LawnClient> client = LawnClient::Connect(server.address());
  auto subscription = client->Subscribe("default", {}, [](const v1::Expiration&) {});
  EXPECT_EQ(subscription->WaitFor(milliseconds(50)), std::nullopt);
  subscription.reset();  // Must not hang or leak a thread.
}

}  // namespace
}  // namespace lawn
