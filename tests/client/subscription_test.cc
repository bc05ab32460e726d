// Subscription against FakeTimerService on a real gRPC server: delivery order, acks within the window, ack
// batching, graceful and cancelling stops, manual acks, observe mode and stream errors.
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "client/lawn_client.h"
#include "gtest/gtest.h"
#include "tests/client/fake_timer_service.h"

namespace lawn {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

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

TEST(SubscriptionTest, DeliversInOrderAndAcksEverythingWithinTheWindow) {
  FakeTimerService service;
  service.expirations = 500;
  service.window = 8;  // The fake stalls unless acks keep coming: a client sitting on acks would hang here.
  FakeServer server(service);
  std::unique_ptr<LawnClient> client = LawnClient::Connect(server.address());
  Received received;
  SubscribeOptions options;
  options.max_in_flight = 8;
  std::unique_ptr<Subscription> subscription =
      client->Subscribe("work", options, [&](const v1::Expiration& e) { received.Add(e.delivery_id()); });
  EXPECT_TRUE(subscription->Wait().ok());  // The fake ends the stream once all 500 are acked.
  EXPECT_EQ(received.Await(500), Iota(500));
  EXPECT_EQ(service.acked(), Iota(500));
  EXPECT_LE(service.ack_messages(), 500);
  EXPECT_EQ(service.open().namespace_(), "work");
  EXPECT_EQ(service.open().max_in_flight(), 8u);
  EXPECT_FALSE(service.open().observe());
}

TEST(SubscriptionTest, AsksForBatchesAndHandsTheirExpirationsOutOneByOne) {
  FakeTimerService service;
  service.expirations = 100;
  service.window = 30;
  FakeServer server(service);
  std::unique_ptr<LawnClient> client = LawnClient::Connect(server.address());
  Received received;
  SubscribeOptions options;
  options.max_in_flight = 30;
  int calls = 0;  // Dispatcher thread only, read after Wait.
  std::unique_ptr<Subscription> subscription = client->Subscribe("work", options, [&](const v1::Expiration& e) {
    ++calls;
    received.Add(e.delivery_id());
  });
  EXPECT_TRUE(subscription->Wait().ok());
  EXPECT_EQ(service.open().max_batch(), SubscribeOptions().max_batch);
  EXPECT_EQ(received.Await(100), Iota(100));
  EXPECT_EQ(calls, 100);
  EXPECT_EQ(service.acked(), Iota(100));
  // The first response filled the whole window: one message of 30.
  const std::vector<size_t> sizes = service.response_sizes();
  ASSERT_FALSE(sizes.empty());
  EXPECT_EQ(sizes.front(), 30u);
  EXPECT_LT(sizes.size(), 100u);
}

TEST(SubscriptionTest, MaxBatchZeroReceivesTheOriginalShape) {
  FakeTimerService service;
  service.expirations = 20;
  service.window = 5;
  FakeServer server(service);
  std::unique_ptr<LawnClient> client = LawnClient::Connect(server.address());
  Received received;
  SubscribeOptions options;
  options.max_in_flight = 5;
  options.max_batch = 0;
  std::unique_ptr<Subscription> subscription =
      client->Subscribe("work", options, [&](const v1::Expiration& e) { received.Add(e.delivery_id()); });
  EXPECT_TRUE(subscription->Wait().ok());
  EXPECT_EQ(service.open().max_batch(), 0u);
  EXPECT_EQ(received.Await(20), Iota(20));
  EXPECT_EQ(service.acked(), Iota(20));
  EXPECT_EQ(service.response_sizes(), std::vector<size_t>(20, 1));
}

TEST(SubscriptionTest, BatchesAcksThatPileUpWhileTheCallbackRuns) {
  FakeTimerService service;
  service.expirations = 40;
  service.window = 40;
  FakeServer server(service);
  std::unique_ptr<LawnClient> client = LawnClient::Connect(server.address());
  SubscribeOptions options;
  options.max_in_flight = 40;
  options.auto_ack = false;
  absl::Mutex gate_mu;
  bool in_callback = false;  // Guarded by gate_mu.
  bool open_gate = false;    // Guarded by gate_mu.
  Received received;
  std::unique_ptr<Subscription> subscription =
      client->Subscribe("default", options, [&](const v1::Expiration& e) {
        // The first callback holds the dispatcher (the only writer) until the test opens the gate.
        if (e.delivery_id() == 1) {
          absl::MutexLock lock(&gate_mu);
          in_callback = true;
          gate_mu.Await(absl::Condition(&open_gate));
        }
        received.Add(e.delivery_id());
      });
  service.AwaitSent(40);
  {
    absl::MutexLock lock(&gate_mu, absl::Condition(&in_callback));
  }
  // While the callback runs, acks of all 40 (the fake has sent them all) pile up: none can be written yet.
  for (uint64_t id : Iota(40)) subscription->Ack(id);
  EXPECT_EQ(service.ack_messages(), 0);
  {
    absl::MutexLock lock(&gate_mu);
    open_gate = true;
  }
  // Once the callback returns they go out together, in one message (the fake ends the stream when all 40
  // are acked).
  EXPECT_TRUE(subscription->Wait().ok());
  EXPECT_EQ(service.acked(), Iota(40));
  EXPECT_EQ(service.ack_messages(), 1);
}

// Auto-acks go out for every expiration, once each (how they are batched depends on how far the reader got
// ahead of the callback, which nothing observable tells; the test above covers batching).
TEST(SubscriptionTest, AutoAcksEveryExpirationExactlyOnce) {
  FakeTimerService service;
  service.expirations = 40;
  service.window = 40;
  FakeServer server(service);
  std::unique_ptr<LawnClient> client = LawnClient::Connect(server.address());
  SubscribeOptions options;
  options.max_in_flight = 40;
  Received received;
  std::unique_ptr<Subscription> subscription =
      client->Subscribe("default", options, [&](const v1::Expiration& e) { received.Add(e.delivery_id()); });
  EXPECT_TRUE(subscription->Wait().ok());
  EXPECT_EQ(received.Await(40), Iota(40));
  EXPECT_EQ(service.acked(), Iota(40));
  EXPECT_GE(service.ack_messages(), 1);
  EXPECT_LE(service.ack_messages(), 40);
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
      absl::MutexLock lock(&mu, absl::Condition(
                                    +[](Subscription** s) { return *s != nullptr; }, &self));
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
