// Subscribe semantics against the real lawnd: on time and never early, delete and reschedule, recurring
// timers, redelivery, late subscribers, work sharing, observers, and SIGTERM with open streams.
#include <functional>
#include <set>
#include <string>

#include "gtest/gtest.h"
#include "tests/integration/lawnd_process.h"
#include "tests/integration/test_client.h"

namespace lawn::testing {
namespace {

using std::chrono::milliseconds;

class DeliveryTest : public ::testing::Test {
 protected:
  void StartLawnd(std::vector<std::string> args = {}) {
    lawnd_ = std::make_unique<LawndProcess>(dir_.path() + "/data", std::move(args));
    lawnd_->Start();
    stub_ = lawnd_->stub();
  }
  std::string WriteConfig(const std::string& yaml) { return WriteFile(dir_.path() + "/lawn.yaml", yaml); }
  v1::NamespaceStats Stats(const std::string& ns) {
    grpc::ClientContext ctx;
    v1::GetStatsResponse resp;
    EXPECT_TRUE(stub_->GetStats(&ctx, v1::GetStatsRequest(), &resp).ok());
    for (const auto& n : resp.namespaces()) {
      if (n.namespace_() == ns) return n;
    }
    return v1::NamespaceStats();
  }
  TempDir dir_;
  std::unique_ptr<LawndProcess> lawnd_;
  std::unique_ptr<v1::TimerService::Stub> stub_;
};

TEST_F(DeliveryTest, ExpirationArrivesOnTimeAndNeverEarly) {
  StartLawnd();
  TestSubscriber sub(*stub_, "d");
  v1::Timer t;
  ASSERT_TRUE(StartTtl(*stub_, "d", "soon", milliseconds(200), &t, "payload").ok());
  std::optional<v1::Expiration> e = sub.Next(milliseconds(5000));
  ASSERT_TRUE(e.has_value());
  const int64_t received = WallNowNs();
  EXPECT_EQ(e->timer().id(), "soon");
  EXPECT_EQ(e->timer().payload(), "payload");
  EXPECT_EQ(e->attempt(), 1u);
  EXPECT_FALSE(e->late());
  EXPECT_GE(ToNs(e->fired_at()), ToNs(t.deadline()));
  EXPECT_GE(received, ToNs(t.deadline()));
  // Loose bound: a loaded CI machine is slow, but not seconds slow.
  EXPECT_LT(received - ToNs(t.deadline()), 1'000'000'000LL);
  sub.Ack(e->delivery_id());
}

TEST_F(DeliveryTest, DeadlineInThePastFiresAtOnce) {
  StartLawnd();
  TestSubscriber sub(*stub_, "past");
  v1::StartTimerRequest r = TtlRequest("past", "p", milliseconds(1));
  r.mutable_deadline()->set_seconds(1);  // 1970
  ASSERT_TRUE(Call(*stub_, r).ok());
  std::optional<v1::Expiration> e = sub.Next(milliseconds(3000));
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->timer().id(), "p");
}

TEST_F(DeliveryTest, DeletedTimerIsNeverDelivered) {
  StartLawnd();
  TestSubscriber sub(*stub_, "del");
  ASSERT_TRUE(StartTtl(*stub_, "del", "gone", milliseconds(300)).ok());
  ASSERT_TRUE(StartTtl(*stub_, "del", "kept", milliseconds(400)).ok());
  grpc::ClientContext ctx;
  v1::DeleteTimerRequest d;
  d.set_namespace_("del");
  d.set_id("gone");
  v1::DeleteTimerResponse dr;
  ASSERT_TRUE(stub_->DeleteTimer(&ctx, d, &dr).ok());
  std::vector<v1::Expiration> got = sub.Drain(milliseconds(1500));
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].timer().id(), "kept");
}

TEST_F(DeliveryTest, RescheduleEarlierAndLaterFiresAtTheNewTime) {
  StartLawnd();
  TestSubscriber sub(*stub_, "rs");
  ASSERT_TRUE(StartTtl(*stub_, "rs", "earlier", milliseconds(60000)).ok());
  ASSERT_TRUE(StartTtl(*stub_, "rs", "later", milliseconds(200)).ok());
  auto reschedule = [&](const std::string& id, int64_t ms) {
    grpc::ClientContext ctx;
    v1::RescheduleTimerRequest r;
    r.set_namespace_("rs");
    r.set_id(id);
    r.mutable_ttl()->set_seconds(ms / 1000);
    r.mutable_ttl()->set_nanos(static_cast<int32_t>(ms % 1000) * 1'000'000);
    v1::RescheduleTimerResponse resp;
    EXPECT_TRUE(stub_->RescheduleTimer(&ctx, r, &resp).ok());
    return ToNs(resp.timer().deadline());
  };
  const int64_t earlier_deadline = reschedule("earlier", 300);
  const int64_t later_deadline = reschedule("later", 900);
  std::optional<v1::Expiration> first = sub.Next(milliseconds(3000));
  ASSERT_TRUE(first.has_value());
  EXPECT_EQ(first->timer().id(), "earlier");
  EXPECT_GE(ToNs(first->fired_at()), earlier_deadline);
  std::optional<v1::Expiration> second = sub.Next(milliseconds(3000));
  ASSERT_TRUE(second.has_value());
  EXPECT_EQ(second->timer().id(), "later");
  EXPECT_GE(ToNs(second->fired_at()), later_deadline);
  EXPECT_GE(WallNowNs(), later_deadline);
}

TEST_F(DeliveryTest, RecurringTimerRearmsDriftFree) {
  StartLawnd();
  TestSubscriber sub(*stub_, "rec");
  v1::StartTimerRequest r = TtlRequest("rec", "tick", milliseconds(100));
  r.mutable_interval()->set_nanos(100'000'000);
  v1::Timer t;
  ASSERT_TRUE(Call(*stub_, r, &t).ok());
  const int64_t first = ToNs(t.deadline());
  for (int k = 0; k < 5; ++k) {
    std::optional<v1::Expiration> e = sub.Next(milliseconds(3000));
    ASSERT_TRUE(e.has_value());
    // Deadlines are exactly first + k * interval: no drift, whatever the firing latency.
    EXPECT_EQ(ToNs(e->timer().deadline()), first + k * 100'000'000LL);
    EXPECT_GE(ToNs(e->fired_at()), ToNs(e->timer().deadline()));
    sub.Ack(e->delivery_id());
  }
  grpc::ClientContext ctx;
  v1::DeleteTimerRequest d;
  d.set_namespace_("rec");
  d.set_id("tick");
  v1::DeleteTimerResponse dr;
  EXPECT_TRUE(stub_->DeleteTimer(&ctx, d, &dr).ok());
}

TEST_F(DeliveryTest, UnackedExpirationIsRedelivered) {
  StartLawnd({"--config", WriteConfig("ack_timeout: 1s\n")});
  TestSubscriber sub(*stub_, "redo");
  ASSERT_TRUE(StartTtl(*stub_, "redo", "r", milliseconds(50)).ok());
  std::optional<v1::Expiration> first = sub.Next(milliseconds(3000));
  ASSERT_TRUE(first.has_value());
  EXPECT_EQ(first->attempt(), 1u);
  // No ack: after ack_timeout (1 s in this test's config) it comes again, same delivery id.
  std::optional<v1::Expiration> again = sub.Next(milliseconds(5000));
  ASSERT_TRUE(again.has_value());
  EXPECT_EQ(again->delivery_id(), first->delivery_id());
  EXPECT_EQ(again->attempt(), 2u);
  sub.Ack(again->delivery_id());
  EXPECT_FALSE(sub.Next(milliseconds(2000)).has_value());
}

TEST_F(DeliveryTest, SubscriberConnectingAfterExpiryReceivesIt) {
  StartLawnd();
  ASSERT_TRUE(StartTtl(*stub_, "late", "waiting", milliseconds(50)).ok());
  // Fired with nobody connected: it waits in the outbox.
  ASSERT_TRUE(WaitFor([&] { return Stats("late").outbox() == 1; }));
  TestSubscriber sub(*stub_, "late");
  std::optional<v1::Expiration> e = sub.Next(milliseconds(3000));
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->timer().id(), "waiting");
}

TEST_F(DeliveryTest, TwoSubscribersShareTheWorkWithNoLossOrDuplicate) {
  StartLawnd();
  TestSubscriber a(*stub_, "share", 10);
  TestSubscriber b(*stub_, "share", 10);
  constexpr int kTimers = 400;
  v1::StartTimersRequest req;
  for (int i = 0; i < kTimers; ++i) *req.add_timers() = TtlRequest("share", "t" + std::to_string(i), milliseconds(100 + i));
  grpc::ClientContext ctx;
  v1::StartTimersResponse resp;
  ASSERT_TRUE(stub_->StartTimers(&ctx, req, &resp).ok());
  std::multiset<std::string> seen;
  size_t from_a = 0, from_b = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (seen.size() < kTimers && std::chrono::steady_clock::now() < deadline) {
    for (auto* sub : {&a, &b}) {
      std::optional<v1::Expiration> e = sub->Next(milliseconds(20));
      if (!e) continue;
      seen.insert(e->timer().id());
      (sub == &a ? from_a : from_b)++;
      sub->Ack(e->delivery_id());
    }
  }
  EXPECT_EQ(seen.size(), static_cast<size_t>(kTimers));
  for (int i = 0; i < kTimers; ++i) EXPECT_EQ(seen.count("t" + std::to_string(i)), 1u) << i;
  EXPECT_GT(from_a, 0u);
  EXPECT_GT(from_b, 0u);
}

TEST_F(DeliveryTest, ObserverGetsACopyWithoutTakingTheWork) {
  StartLawnd();
  TestSubscriber observer(*stub_, "obs", 100, /*observe=*/true);
  TestSubscriber worker(*stub_, "obs");
  ASSERT_TRUE(StartTtl(*stub_, "obs", "x", milliseconds(100)).ok());
  std::optional<v1::Expiration> seen = observer.Next(milliseconds(3000));
  std::optional<v1::Expiration> work = worker.Next(milliseconds(3000));
  ASSERT_TRUE(seen.has_value());
  ASSERT_TRUE(work.has_value());
  EXPECT_EQ(seen->timer().id(), "x");
  EXPECT_EQ(work->timer().id(), "x");
}

TEST_F(DeliveryTest, SubscribeRejectsBadOpen) {
  StartLawnd();
  TestSubscriber bad(*stub_, "BAD NS");
  std::optional<grpc::Status> s = bad.WaitEnd(milliseconds(3000));
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  TestSubscriber greedy(*stub_, "ok", 1'000'000);
  s = greedy.WaitEnd(milliseconds(3000));
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(s->error_message().find("max_in_flight"), std::string::npos);
}

TEST_F(DeliveryTest, SigtermWithOpenStreamsExitsCleanly) {
  StartLawnd();
  TestSubscriber a(*stub_, "bye");
  TestSubscriber b(*stub_, "bye", 5, /*observe=*/true);
  ASSERT_TRUE(StartTtl(*stub_, "bye", "pending", milliseconds(60000)).ok());
  ASSERT_TRUE(WaitFor([&] { return Stats("bye").subscribers() == 2; }));
  EXPECT_EQ(lawnd_->Stop(SIGTERM, std::chrono::seconds(15)), 0);
  std::optional<grpc::Status> s = a.WaitEnd(milliseconds(3000));
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_NE(lawnd_->Log().find("lawnd stopped"), std::string::npos);
}

}  // namespace
}  // namespace lawn::testing
