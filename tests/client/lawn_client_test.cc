// LawnClient's unary calls against FakeTimerService on a real gRPC server: status mapping, request building
// and the bearer token. lawnd itself is covered by tests/integration/; TLS by lawn_client_tls_test.cc.
#include "client/lawn_client.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tests/client/fake_timer_service.h"

namespace lawn {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

TEST(LawnClientTest, ServerErrorsKeepTheirCodeAndMessage) {
  FakeTimerService service;
  FakeServer server(service);
  std::unique_ptr<LawnClient> client = LawnClient::Connect(server.address());
  absl::StatusOr<v1::Timer> timer = client->GetTimer("default", "nope");
  EXPECT_EQ(timer.status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(timer.status().message(), "no timer 'nope'");
}

// A loopback port that is bound but not listening, held for the object's life: connections to it are
// refused, and no other process can take it meanwhile (a port freed by a stopped server could be reused by a
// parallel test).
class RefusingPort {
 public:
  RefusingPort() : fd_(socket(AF_INET, SOCK_STREAM, 0)) {
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = 0;
    socklen_t len = sizeof(addr);
    if (fd_ < 0 || bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
        getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
      ADD_FAILURE() << "cannot bind a loopback port";
      return;
    }
    port_ = ntohs(addr.sin_port);
  }
  ~RefusingPort() {
    if (fd_ >= 0) close(fd_);
  }
  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }

 private:
  int fd_;
  int port_ = 0;
};

TEST(LawnClientTest, UnreachableServerIsUnavailable) {
  RefusingPort port;  // Nobody listens there.
  const std::string address = port.address();
  std::unique_ptr<LawnClient> client = LawnClient::Connect(address);
  EXPECT_EQ(client->GetStats().status().code(), absl::StatusCode::kUnavailable);
  std::unique_ptr<Subscription> subscription = client->Subscribe("default", {}, [](const v1::Expiration&) {});
  EXPECT_EQ(subscription->Wait().code(), absl::StatusCode::kUnavailable);
}

TEST(LawnClientTest, ConvenienceStartTimerFillsTheRequest) {
  FakeTimerService service;
  FakeServer server(service);
  std::unique_ptr<LawnClient> client = LawnClient::Connect(server.address());
  absl::StatusOr<v1::Timer> timer =
      client->StartTimer("ns", "id", milliseconds(1500), "p", seconds(60), true);
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
  absl::StatusOr<std::vector<absl::Status>> results = client->StartTimers(requests);
  ASSERT_TRUE(results.ok()) << results.status();
  ASSERT_EQ(results->size(), 3u);
  EXPECT_TRUE((*results)[0].ok());
  EXPECT_EQ((*results)[1].code(), absl::StatusCode::kAlreadyExists);
  EXPECT_EQ((*results)[1].message(), "timer 'taken' exists");
  EXPECT_TRUE((*results)[2].ok());
}

// The fake echoes timers only when the request asks for them (return_timers), as lawnd does.
TEST(LawnClientTest, StartTimersReturningTimersAsksForTheTimers) {
  FakeTimerService service;
  FakeServer server(service);
  std::unique_ptr<LawnClient> client = LawnClient::Connect(server.address());
  std::vector<v1::StartTimerRequest> requests(3);
  requests[0].set_id("a");
  requests[1].set_id("taken");
  requests[2].set_id("c");
  auto results = client->StartTimersReturningTimers(requests);
  ASSERT_TRUE(results.ok()) << results.status();
  ASSERT_EQ(results->size(), 3u);
  ASSERT_TRUE((*results)[0].ok()) << (*results)[0].status();
  EXPECT_EQ((*results)[0]->id(), "a");
  EXPECT_EQ((*results)[1].status().code(), absl::StatusCode::kAlreadyExists);
  EXPECT_EQ((*results)[1].status().message(), "timer 'taken' exists");
  ASSERT_TRUE((*results)[2].ok()) << (*results)[2].status();
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

TEST(LawnClientTest, SendsTheTokenAsBearerMetadataOnEveryCallAndStream) {
  FakeTimerService service;
  service.expirations = 1;
  FakeServer server(service);
  ClientOptions options;
  options.token = "tok-123";
  std::unique_ptr<LawnClient> client = LawnClient::Connect(server.address(), options);
  ASSERT_TRUE(client->StartTimer("ns", "id", seconds(1)).ok());
  ASSERT_TRUE(client->StartTimers({v1::StartTimerRequest()}).ok());
  ASSERT_TRUE(client->RescheduleTimer("ns", "id", seconds(2)).ok());
  EXPECT_EQ(client->GetTimer("ns", "id").status().code(), absl::StatusCode::kNotFound);
  std::unique_ptr<Subscription> subscription = client->Subscribe("ns", {}, [](const v1::Expiration&) {});
  EXPECT_TRUE(subscription->Wait().ok());  // The fake ends the stream once its one expiration is acked.
  EXPECT_EQ(service.authorizations(), std::vector<std::string>(5, "Bearer tok-123"));
}

TEST(LawnClientTest, SendsNoAuthorizationWithoutAToken) {
  FakeTimerService service;
  FakeServer server(service);
  std::unique_ptr<LawnClient> client = LawnClient::Connect(server.address());
  ASSERT_TRUE(client->StartTimer("ns", "id", seconds(1)).ok());
  std::unique_ptr<Subscription> subscription = client->Subscribe("ns", {}, [](const v1::Expiration&) {});
  EXPECT_TRUE(subscription->Wait().ok());
  EXPECT_EQ(service.authorizations(), std::vector<std::string>(2, ""));
}

TEST(LawnClientTest, AClientOverAGivenChannelSendsTheTokenToo) {
  FakeTimerService service;
  FakeServer server(service);
  ClientOptions options;
  options.token = "tok-456";
  LawnClient client(grpc::CreateChannel(server.address(), grpc::InsecureChannelCredentials()), options);
  ASSERT_TRUE(client.StartTimer("ns", "id", seconds(1)).ok());
  EXPECT_EQ(service.authorizations(), std::vector<std::string>{"Bearer tok-456"});
}

TEST(LawnClientTest, CreateRefusesOptionsThatCannotMakeAChannel) {
  ClientOptions bad_token;
  bad_token.token = "two words";
  absl::StatusOr<std::unique_ptr<LawnClient>> client = LawnClient::Create("127.0.0.1:1", bad_token);
  EXPECT_EQ(client.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(client.status().message().find("words"), std::string::npos) << client.status();

  ClientOptions half_pair;
  half_pair.tls.emplace().cert_pem = "-----BEGIN CERTIFICATE-----\n";
  client = LawnClient::Create("127.0.0.1:1", half_pair);
  EXPECT_EQ(client.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(client.status().message().find("needs its key"), std::string::npos) << client.status();

  EXPECT_TRUE(LawnClient::Create("127.0.0.1:1").ok());
}

}  // namespace
}  // namespace lawn
