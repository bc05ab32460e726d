// The C++ client library (client/lawn_client.h, client/subscription.h) against the real lawnd: every unary
// call with lawnd's own answers and error codes, Subscribe with automatic and manual acks, observing, a bad
// namespace, and the end of a stream when lawnd drains.
#include <csignal>
#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "client/lawn_client.h"
#include "gtest/gtest.h"
#include "tests/integration/lawnd_process.h"
#include "tests/integration/test_client.h"

namespace lawn::testing {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

constexpr auto kWait = seconds(30);

// Expirations a Subscription callback received, in order.
class Collected {
 public:
  void Add(const v1::Expiration& e) {
    absl::MutexLock lock(&mu_);
    all_.push_back(e);
  }
  // Waits until at least `n` arrived (or `timeout`); returns what arrived.
  std::vector<v1::Expiration> Await(size_t n, absl::Duration timeout = absl::Seconds(30)) {
    const auto enough = [&] {
      mu_.AssertReaderHeld();
      return all_.size() >= n;
    };
    absl::MutexLock lock(&mu_);
    mu_.AwaitWithTimeout(absl::Condition(&enough), timeout);
    return all_;
  }
  size_t size() {
    absl::MutexLock lock(&mu_);
    return all_.size();
  }

 private:
  absl::Mutex mu_;
  std::vector<v1::Expiration> all_ ABSL_GUARDED_BY(mu_);
};

class ClientTest : public ::testing::Test {
 protected:
  void SetUp() override {
    lawnd_ = std::make_unique<LawndProcess>(dir_.path() + "/data");
    lawnd_->Start();
    client_ = LawnClient::Connect(lawnd_->address());
  }
  v1::NamespaceStats NsStats(const std::string& ns) {
    absl::StatusOr<v1::GetStatsResponse> stats = client_->GetStats();
    EXPECT_TRUE(stats.ok()) << stats.status();
    if (stats.ok()) {
      for (const auto& n : stats->namespaces()) {
        if (n.namespace_() == ns) return n;
      }
    }
    return v1::NamespaceStats();
  }

  TempDir dir_;
  std::unique_ptr<LawndProcess> lawnd_;
  std::unique_ptr<LawnClient> client_;
};

TEST_F(ClientTest, UnaryCallsReturnLawndsAnswersAndCodes) {
  const int64_t before = WallNowNs();
  absl::StatusOr<v1::Timer> t = client_->StartTimer("cl", "a", seconds(3600), "p", seconds(60));
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->namespace_(), "cl");
  EXPECT_EQ(t->payload(), "p");
  EXPECT_EQ(t->interval().seconds(), 60);
  EXPECT_GE(ToNs(t->deadline()), before + 3600'000'000'000LL);
  EXPECT_LE(ToNs(t->deadline()), WallNowNs() + 3600'000'000'000LL);

  absl::StatusOr<v1::Timer> dup = client_->StartTimer("cl", "a", seconds(3600));
  EXPECT_EQ(dup.status().code(), absl::StatusCode::kAlreadyExists);
  EXPECT_NE(dup.status().message().find("replace"), std::string::npos) << dup.status();
  absl::StatusOr<v1::Timer> replaced = client_->StartTimer("cl", "a", seconds(7200), "new", std::nullopt, true);
  ASSERT_TRUE(replaced.ok()) << replaced.status();
  EXPECT_FALSE(replaced->has_interval());
  EXPECT_EQ(client_->StartTimer("BAD", "a", seconds(1)).status().code(), absl::StatusCode::kInvalidArgument);

  absl::StatusOr<v1::Timer> got = client_->GetTimer("cl", "a");
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->payload(), "new");
  EXPECT_EQ(ToNs(got->deadline()), ToNs(replaced->deadline()));
  EXPECT_EQ(client_->GetTimer("cl", "nope").status().code(), absl::StatusCode::kNotFound);

  // Reschedule to an exact wall-clock deadline, and by TTL.
  const auto deadline = std::chrono::system_clock::time_point(seconds(4102444800) + milliseconds(250));
  absl::StatusOr<v1::Timer> moved = client_->RescheduleTimer("cl", "a", deadline);
  ASSERT_TRUE(moved.ok()) << moved.status();
  EXPECT_EQ(moved->deadline().seconds(), 4102444800);
  EXPECT_EQ(moved->deadline().nanos(), 250'000'000);
  EXPECT_EQ(ToNs(client_->GetTimer("cl", "a")->deadline()), ToNs(moved->deadline()));
  EXPECT_TRUE(client_->RescheduleTimer("cl", "a", seconds(600)).ok());
  EXPECT_EQ(client_->RescheduleTimer("cl", "nope", seconds(600)).status().code(), absl::StatusCode::kNotFound);

  // A batch: one result per item, in order, each with its own code (codes only, by default).
  std::vector<v1::StartTimerRequest> batch = {TtlRequest("cl", "b1", milliseconds(3'600'000)),
                                              TtlRequest("cl", "", milliseconds(3'600'000)),
                                              TtlRequest("cl", "a", milliseconds(3'600'000)),
                                              TtlRequest("cl", "b2", milliseconds(3'600'000))};
  absl::StatusOr<std::vector<absl::Status>> results = client_->StartTimers(batch);
  ASSERT_TRUE(results.ok()) << results.status();
  ASSERT_EQ(results->size(), 4u);
  EXPECT_TRUE((*results)[0].ok()) << (*results)[0];
  EXPECT_EQ((*results)[1].code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE((*results)[1].message().find("timers[1].id"), std::string::npos) << (*results)[1];
  EXPECT_EQ((*results)[2].code(), absl::StatusCode::kAlreadyExists);
  EXPECT_TRUE((*results)[3].ok()) << (*results)[3];
  // Asking for the timers: a replace of b2 comes back as stored; a duplicate still fails on its own.
  v1::StartTimerRequest replace_b2 = TtlRequest("cl", "b2", milliseconds(7'200'000), "p2");
  replace_b2.set_replace(true);
  const int64_t before_replace = WallNowNs();
  absl::StatusOr<std::vector<absl::StatusOr<v1::Timer>>> with_timers =
      client_->StartTimersReturningTimers({replace_b2, TtlRequest("cl", "b1", milliseconds(3'600'000))});
  ASSERT_TRUE(with_timers.ok()) << with_timers.status();
  ASSERT_EQ(with_timers->size(), 2u);
  ASSERT_TRUE((*with_timers)[0].ok()) << (*with_timers)[0].status();
  EXPECT_EQ((*with_timers)[0]->namespace_(), "cl");
  EXPECT_EQ((*with_timers)[0]->id(), "b2");
  EXPECT_EQ((*with_timers)[0]->payload(), "p2");
  EXPECT_GE(ToNs((*with_timers)[0]->deadline()), before_replace + 7'200'000'000'000LL);
  EXPECT_EQ((*with_timers)[1].status().code(), absl::StatusCode::kAlreadyExists);

  // Pages: 0 = lawnd's default; tokens lead through the namespace in id order.
  absl::StatusOr<v1::ListTimersResponse> page = client_->ListTimers("cl");
  ASSERT_TRUE(page.ok()) << page.status();
  ASSERT_EQ(page->timers_size(), 3);
  EXPECT_EQ(page->timers(0).id(), "a");
  EXPECT_EQ(page->timers(1).id(), "b1");
  EXPECT_EQ(page->timers(2).id(), "b2");
  page = client_->ListTimers("cl", 2);
  ASSERT_TRUE(page.ok()) << page.status();
  ASSERT_EQ(page->timers_size(), 2);
  page = client_->ListTimers("cl", 2, page->next_page_token());
  ASSERT_TRUE(page.ok()) << page.status();
  ASSERT_EQ(page->timers_size(), 1);
  EXPECT_EQ(page->timers(0).id(), "b2");
  EXPECT_TRUE(page->next_page_token().empty());
  EXPECT_EQ(client_->ListTimers("cl", 1001).status().code(), absl::StatusCode::kInvalidArgument);

  absl::StatusOr<v1::Timer> deleted = client_->DeleteTimer("cl", "b1");
  ASSERT_TRUE(deleted.ok()) << deleted.status();
  EXPECT_EQ(deleted->id(), "b1");
  EXPECT_EQ(client_->DeleteTimer("cl", "b1").status().code(), absl::StatusCode::kNotFound);

  absl::StatusOr<v1::GetStatsResponse> stats = client_->GetStats();
  ASSERT_TRUE(stats.ok()) << stats.status();
  EXPECT_EQ(stats->pending_timers(), 2u);
  EXPECT_EQ(stats->shards_size(), 2);

  EXPECT_EQ(client_->Health().value_or(ServingStatus{}), grpc::health::v1::HealthCheckResponse::SERVING);
  EXPECT_EQ(client_->Health("lawn.v1.TimerService").value_or(ServingStatus{}),
            grpc::health::v1::HealthCheckResponse::SERVING);
  EXPECT_EQ(client_->Health("liveness").value_or(ServingStatus{}), grpc::health::v1::HealthCheckResponse::SERVING);
  EXPECT_EQ(client_->Health("no.such.Service").status().code(), absl::StatusCode::kNotFound);

  absl::StatusOr<std::string> path = client_->CreateCheckpoint("from-client");
  ASSERT_TRUE(path.ok()) << path.status();
  EXPECT_TRUE(std::filesystem::is_directory(*path)) << *path;
  EXPECT_EQ(client_->CreateCheckpoint("from-client").status().code(), absl::StatusCode::kAlreadyExists);
}

// Automatic acks: the callback sees each expiration once, and once it has returned the acks reach lawnd
// (the outbox empties). Stop then ends the stream gracefully.
TEST_F(ClientTest, SubscribeAcksAutomatically) {
  Collected got;
  SubscribeOptions options;
  options.max_in_flight = 4;  // Fewer than the timers: only acks let the rest through.
  std::unique_ptr<Subscription> sub =
      client_->Subscribe("auto", options, [&](const v1::Expiration& e) { got.Add(e); });
  ASSERT_TRUE(WaitFor([&] { return NsStats("auto").subscribers() == 1; }, kWait));
  std::vector<v1::StartTimerRequest> requests;
  for (int i = 0; i < 20; ++i) requests.push_back(TtlRequest("auto", "t" + std::to_string(i), milliseconds(50)));
  absl::StatusOr<std::vector<absl::Status>> started = client_->StartTimers(requests);
  ASSERT_TRUE(started.ok()) << started.status();
  for (const absl::Status& s : *started) EXPECT_TRUE(s.ok()) << s;
  std::vector<v1::Expiration> all = got.Await(20);
  ASSERT_EQ(all.size(), 20u);
  std::set<std::string> ids;
  for (const auto& e : all) {
    ids.insert(e.timer().id());
    EXPECT_EQ(e.attempt(), 1u);
    EXPECT_GE(ToNs(e.fired_at()), ToNs(e.timer().deadline()));
  }
  EXPECT_EQ(ids.size(), 20u);
  ASSERT_TRUE(WaitFor([&] { return NsStats("auto").outbox() == 0; }, kWait));
  sub->Stop();
  EXPECT_TRUE(sub->Wait().ok()) << sub->Wait();
  EXPECT_EQ(got.size(), 20u);
  ASSERT_TRUE(WaitFor([&] { return NsStats("auto").subscribers() == 0; }, kWait));
}

TEST_F(ClientTest, SubscribeWithManualAcksHoldsUntilAcked) {
  Collected got;
  SubscribeOptions options;
  options.auto_ack = false;
  std::unique_ptr<Subscription> sub =
      client_->Subscribe("manual", options, [&](const v1::Expiration& e) { got.Add(e); });
  ASSERT_TRUE(client_->StartTimer("manual", "m", milliseconds(50)).ok());
  std::vector<v1::Expiration> all = got.Await(1);
  ASSERT_EQ(all.size(), 1u);
  // Delivered and unacked: still in lawnd's outbox (ack_timeout is 30 s).
  EXPECT_EQ(NsStats("manual").outbox(), 1u);
  sub->Ack(all[0].delivery_id());
  ASSERT_TRUE(WaitFor([&] { return NsStats("manual").outbox() == 0; }, kWait));
  sub->Stop();
  EXPECT_TRUE(sub->Wait().ok());
}

TEST_F(ClientTest, ObservingSubscriptionGetsCopiesWithoutTakingTheWork) {
  Collected seen, worked;
  SubscribeOptions observe;
  observe.observe = true;
  std::unique_ptr<Subscription> observer =
      client_->Subscribe("watched", observe, [&](const v1::Expiration& e) { seen.Add(e); });
  ASSERT_TRUE(WaitFor([&] { return NsStats("watched").subscribers() == 1; }, kWait));
  ASSERT_TRUE(client_->StartTimer("watched", "w", milliseconds(50)).ok());
  ASSERT_EQ(seen.Await(1).size(), 1u);
  // The work waits for a work-sharing subscriber.
  ASSERT_TRUE(WaitFor([&] { return NsStats("watched").outbox() == 1; }, kWait));
  std::unique_ptr<Subscription> worker =
      client_->Subscribe("watched", {}, [&](const v1::Expiration& e) { worked.Add(e); });
  std::vector<v1::Expiration> work = worked.Await(1);
  ASSERT_EQ(work.size(), 1u);
  EXPECT_EQ(work[0].timer().id(), "w");
  EXPECT_EQ(work[0].delivery_id(), seen.Await(1)[0].delivery_id());
  ASSERT_TRUE(WaitFor([&] { return NsStats("watched").outbox() == 0; }, kWait));
  EXPECT_EQ(seen.size(), 1u);
  observer->Stop();
  worker->Stop();
  EXPECT_TRUE(observer->Wait().ok());
  EXPECT_TRUE(worker->Wait().ok());
}

TEST_F(ClientTest, SubscriptionEndsWithLawndsStatus) {
  std::unique_ptr<Subscription> bad = client_->Subscribe("Not Valid", {}, [](const v1::Expiration&) {});
  const absl::Status refused = bad->Wait();
  EXPECT_EQ(refused.code(), absl::StatusCode::kInvalidArgument) << refused;
  EXPECT_NE(refused.message().find("namespace"), std::string::npos) << refused;

  SubscribeOptions greedy;
  greedy.max_in_flight = 1'000'000;  // Above lawnd's max_in_flight (1000).
  std::unique_ptr<Subscription> too_many = client_->Subscribe("ok", greedy, [](const v1::Expiration&) {});
  EXPECT_EQ(too_many->Wait().code(), absl::StatusCode::kInvalidArgument);

  // lawnd drains: the stream ends UNAVAILABLE. (Calls to a lawnd that is gone are tests/client's: its port
  // is free now and could be anyone's.)
  std::unique_ptr<Subscription> live = client_->Subscribe("ok", {}, [](const v1::Expiration&) {});
  ASSERT_TRUE(WaitFor([&] { return NsStats("ok").subscribers() == 1; }, kWait));
  ASSERT_EQ(lawnd_->Stop(SIGTERM), 0);
  std::optional<absl::Status> ended = live->WaitFor(kWait);
  ASSERT_TRUE(ended.has_value());
  EXPECT_EQ(ended->code(), absl::StatusCode::kUnavailable) << *ended;
}

}  // namespace
}  // namespace lawn::testing
