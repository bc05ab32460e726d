// Subscribe semantics against the real lawnd: on time and never early, delete and reschedule, recurring
// timers, redelivery, late subscribers, work sharing, observers, and SIGTERM with open streams.
//
// Timing: never early and order are asserted strictly; lateness only loosely (seconds), since CI machines are
// loaded. Waits are on observable events with generous bounds, not fixed sleeps.
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

// `late` says the expiration fired more than 1 s after its deadline; lawnd reads its clock for `late` just
// before it stamps fired_at, so the two agree except within a hair of the 1 s mark.
void ExpectLateMarkMatchesFiredAt(const v1::Expiration& e) {
  const int64_t lateness = ToNs(e.fired_at()) - ToNs(e.timer().deadline());
  if (e.late()) {
    EXPECT_GT(lateness, 1'000'000'000LL) << e.timer().id();
  }
  if (lateness < 900'000'000LL) {
    EXPECT_FALSE(e.late()) << e.timer().id() << " lateness " << lateness << " ns";
  }
}

TEST_F(DeliveryTest, ExpirationArrivesOnTimeAndNeverEarly) {
  StartLawnd();
  TestSubscriber sub(*stub_, "d");
  v1::Timer t;
  ASSERT_TRUE(StartTtl(*stub_, "d", "soon", milliseconds(200), &t, "payload").ok());
  std::optional<v1::Expiration> e = sub.Next(std::chrono::seconds(30));
  ASSERT_TRUE(e.has_value());
  const int64_t received = WallNowNs();
  EXPECT_EQ(e->timer().id(), "soon");
  EXPECT_EQ(e->timer().payload(), "payload");
  EXPECT_EQ(ToNs(e->timer().deadline()), ToNs(t.deadline()));
  EXPECT_EQ(e->attempt(), 1u);
  EXPECT_NE(e->delivery_id(), 0u);
  EXPECT_GE(ToNs(e->fired_at()), ToNs(t.deadline()));
  EXPECT_GE(received, ToNs(e->fired_at()));
  ExpectLateMarkMatchesFiredAt(*e);
  // Loose bound: a loaded CI machine is slow, but not ten seconds slow.
  EXPECT_LT(received - ToNs(t.deadline()), 10'000'000'000LL);
  sub.Ack(e->delivery_id());
}

TEST_F(DeliveryTest, DeadlineInThePastFiresAtOnceMarkedLate) {
  StartLawnd();
  TestSubscriber sub(*stub_, "past");
  const int64_t deadline = WallNowNs() - 5'000'000'000LL;  // 5 s ago: more than the 1 s late mark.
  const int64_t called = WallNowNs();
  v1::Timer t;
  ASSERT_TRUE(Call(*stub_, DeadlineRequest("past", "p", deadline, "then"), &t).ok());
  EXPECT_EQ(ToNs(t.deadline()), deadline);
  std::optional<v1::Expiration> e = sub.Next(std::chrono::seconds(30));
  ASSERT_TRUE(e.has_value());
  const int64_t received = WallNowNs();
  EXPECT_EQ(e->timer().id(), "p");
  EXPECT_EQ(e->timer().payload(), "then");
  EXPECT_EQ(ToNs(e->timer().deadline()), deadline);
  EXPECT_EQ(e->attempt(), 1u);
  EXPECT_TRUE(e->late());
  // It fired after it was started (at once, not at some later schedule), never before its deadline.
  EXPECT_GE(ToNs(e->fired_at()), called);
  EXPECT_GE(ToNs(e->fired_at()), deadline);
  EXPECT_LT(received - called, 10'000'000'000LL) << "a past deadline must fire at once";
  sub.Ack(e->delivery_id());
}

// A deadline before the machine's boot keeps its value in the StartTimer answer, the stored timer and the
// expiration (TimeBase's engine clock reads wall time + 2^63, so no valid deadline is clamped).
TEST_F(DeliveryTest, DeadlineBeforeBootKeepsTheDeadlineGiven) {
  StartLawnd();
  TestSubscriber sub(*stub_, "past");
  for (const int64_t deadline : {int64_t{1'000'000'000}, int64_t{-9'000'000'000'000'000'000}}) {  // 1970, 1684
    const std::string id = "p" + std::to_string(deadline);
    v1::Timer t;
    ASSERT_TRUE(Call(*stub_, DeadlineRequest("past", id, deadline), &t).ok());
    EXPECT_EQ(ToNs(t.deadline()), deadline) << "StartTimer answer";
    std::optional<v1::Expiration> e = sub.Next(std::chrono::seconds(30));
    ASSERT_TRUE(e.has_value());
    EXPECT_EQ(e->timer().id(), id);
    EXPECT_EQ(ToNs(e->timer().deadline()), deadline) << "expiration";
    EXPECT_TRUE(e->late());
    sub.Ack(e->delivery_id());
  }
}

TEST_F(DeliveryTest, DeletedTimerIsNeverDelivered) {
  StartLawnd();
  TestSubscriber sub(*stub_, "del");
  // Seconds of TTL: the delete lands long before the deadline even on a slow machine (and its OK answer
  // proves it did: a fired timer is no longer pending).
  v1::Timer gone, kept;
  ASSERT_TRUE(StartTtl(*stub_, "del", "gone", milliseconds(6000), &gone).ok());
  ASSERT_TRUE(StartTtl(*stub_, "del", "kept", milliseconds(8000), &kept).ok());
  grpc::ClientContext ctx;
  v1::DeleteTimerRequest d;
  d.set_namespace_("del");
  d.set_id("gone");
  v1::DeleteTimerResponse dr;
  ASSERT_TRUE(stub_->DeleteTimer(&ctx, d, &dr).ok());
  EXPECT_EQ(ToNs(dr.timer().deadline()), ToNs(gone.deadline()));
  // "kept" is due 2 s after "gone" was: once it has arrived, "gone" would have too.
  std::optional<v1::Expiration> e = sub.Next(std::chrono::seconds(30));
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->timer().id(), "kept");
  sub.Ack(e->delivery_id());
  EXPECT_EQ(sub.queued(), 0u);
  const v1::NamespaceStats stats = Stats("del");
  EXPECT_EQ(stats.pending_timers(), 0u);
}

TEST_F(DeliveryTest, RescheduleEarlierAndLaterFiresAtTheNewTime) {
  StartLawnd();
  TestSubscriber sub(*stub_, "rs");
  // "later" is first due in 8 s: the reschedules below land long before that on any machine (and their OK
  // answers prove the timers were still pending).
  v1::Timer later_before;
  ASSERT_TRUE(StartTtl(*stub_, "rs", "earlier", milliseconds(60000)).ok());
  ASSERT_TRUE(StartTtl(*stub_, "rs", "later", milliseconds(8000), &later_before).ok());
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
  const int64_t earlier_deadline = reschedule("earlier", 1000);
  const int64_t later_deadline = reschedule("later", 10000);
  ASSERT_GT(later_deadline, ToNs(later_before.deadline()));
  std::optional<v1::Expiration> first = sub.Next(std::chrono::seconds(30));
  ASSERT_TRUE(first.has_value());
  EXPECT_EQ(first->timer().id(), "earlier");
  EXPECT_EQ(ToNs(first->timer().deadline()), earlier_deadline);
  EXPECT_GE(ToNs(first->fired_at()), earlier_deadline);
  sub.Ack(first->delivery_id());
  // "later" fires once, at its new deadline, not at its old one.
  std::optional<v1::Expiration> second = sub.Next(std::chrono::seconds(30));
  ASSERT_TRUE(second.has_value());
  EXPECT_EQ(second->timer().id(), "later");
  EXPECT_EQ(ToNs(second->timer().deadline()), later_deadline);
  EXPECT_GE(ToNs(second->fired_at()), later_deadline);
  EXPECT_GE(WallNowNs(), later_deadline);
  sub.Ack(second->delivery_id());
  EXPECT_EQ(sub.queued(), 0u);
}

TEST_F(DeliveryTest, RecurringTimerRearmsDriftFree) {
  StartLawnd();
  TestSubscriber sub(*stub_, "rec");
  constexpr int64_t kInterval = 100'000'000;
  v1::StartTimerRequest r = TtlRequest("rec", "tick", milliseconds(100));
  r.mutable_interval()->set_nanos(static_cast<int32_t>(kInterval));
  v1::Timer t;
  ASSERT_TRUE(Call(*stub_, r, &t).ok());
  const int64_t first = ToNs(t.deadline());
  int64_t previous = 0;
  for (int k = 0; k < 5; ++k) {
    std::optional<v1::Expiration> e = sub.Next(std::chrono::seconds(30));
    ASSERT_TRUE(e.has_value());
    // Every deadline is on the grid first + k * interval: no drift, whatever the firing latency. A loaded
    // lawnd may coalesce whole periods it fell behind on, so consecutive firings may skip grid points, but
    // they never repeat or go back.
    const int64_t deadline = ToNs(e->timer().deadline());
    EXPECT_EQ((deadline - first) % kInterval, 0) << "off the grid by " << (deadline - first) % kInterval << " ns";
    EXPECT_GE(deadline, first);
    EXPECT_GT(deadline, previous);
    previous = deadline;
    EXPECT_EQ(e->timer().interval().nanos(), kInterval);
    EXPECT_GE(ToNs(e->fired_at()), deadline);
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
  // 3 s: long enough that the ack below lands within one ack_timeout even on a loaded machine.
  StartLawnd({"--config", WriteConfig("ack_timeout: 3s\n")});
  TestSubscriber sub(*stub_, "redo");
  ASSERT_TRUE(StartTtl(*stub_, "redo", "r", milliseconds(50)).ok());
  std::optional<v1::Expiration> first = sub.Next(std::chrono::seconds(30));
  ASSERT_TRUE(first.has_value());
  EXPECT_EQ(first->attempt(), 1u);
  const int64_t first_received = WallNowNs();
  // No ack: after ack_timeout it comes again, same delivery id, never before the ack timeout.
  std::optional<v1::Expiration> again = sub.Next(std::chrono::seconds(30));
  ASSERT_TRUE(again.has_value());
  // Never before ack_timeout (3 s from the send; 1.5 s leaves room for a slow first receipt).
  EXPECT_GE(WallNowNs() - first_received, 1'500'000'000LL) << "redelivered well before ack_timeout";
  EXPECT_EQ(again->delivery_id(), first->delivery_id());
  EXPECT_EQ(again->attempt(), 2u);
  sub.Ack(again->delivery_id());
  // Acked: it leaves the outbox and is not sent again.
  ASSERT_TRUE(WaitFor([&] { return Stats("redo").outbox() == 0; }, std::chrono::seconds(30)));
  EXPECT_EQ(sub.queued(), 0u);
}

TEST_F(DeliveryTest, SubscriberConnectingAfterExpiryReceivesIt) {
  StartLawnd();
  ASSERT_TRUE(StartTtl(*stub_, "late", "waiting", milliseconds(50)).ok());
  // Fired with nobody connected: it waits in the outbox.
  ASSERT_TRUE(WaitFor([&] { return Stats("late").outbox() == 1; }));
  TestSubscriber sub(*stub_, "late");
  std::optional<v1::Expiration> e = sub.Next(std::chrono::seconds(30));
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

TEST_F(DeliveryTest, ObserverGetsOneCopyOfEachWithoutAckingAndIsNeverRedeliveredTo) {
  StartLawnd({"--config", WriteConfig("ack_timeout: 1s\n")});
  // max_in_flight 1 bounds an observer's queue, not what it holds unacked: it never acks, yet gets all three.
  TestSubscriber observer(*stub_, "obs", 1, /*observe=*/true);
  TestSubscriber worker(*stub_, "obs");
  ASSERT_TRUE(WaitFor([&] { return Stats("obs").subscribers() == 2; }, std::chrono::seconds(30)));
  std::vector<v1::Expiration> work;
  for (int k = 0; k < 3; ++k) {
    const std::string id = "x" + std::to_string(k);
    ASSERT_TRUE(StartTtl(*stub_, "obs", id, milliseconds(50)).ok());
    std::optional<v1::Expiration> seen = observer.Next(std::chrono::seconds(30));
    ASSERT_TRUE(seen.has_value()) << id;
    std::optional<v1::Expiration> taken = worker.Next(std::chrono::seconds(30));
    ASSERT_TRUE(taken.has_value()) << id;
    EXPECT_EQ(seen->timer().id(), id);
    EXPECT_EQ(taken->timer().id(), id);
    EXPECT_EQ(seen->delivery_id(), taken->delivery_id());
    EXPECT_EQ(seen->attempt(), 1u);
    work.push_back(*taken);
    // The worker acks x0 and x1 at once (left unacked for the 1 s ack_timeout, a slow machine would
    // redeliver them among the checks below); the observer's unacked copies hold nothing.
    if (k < 2) {
      EXPECT_TRUE(worker.Ack(taken->delivery_id()));
    }
  }
  // Only x2 (the worker's) is left.
  ASSERT_TRUE(WaitFor([&] { return Stats("obs").outbox() == 1; }, std::chrono::seconds(30)));
  // x2 is never acked by the worker: it is redelivered to the worker twice (attempts 2 and 3, each after the
  // 1 s ack_timeout), and not once to the observer.
  for (uint32_t attempt : {2u, 3u}) {
    std::optional<v1::Expiration> again = worker.Next(std::chrono::seconds(30));
    ASSERT_TRUE(again.has_value()) << attempt;
    EXPECT_EQ(again->delivery_id(), work[2].delivery_id());
    EXPECT_EQ(again->attempt(), attempt);
  }
  EXPECT_EQ(observer.queued(), 0u) << "a redelivery reached the observer";
  worker.Ack(work[2].delivery_id());
  ASSERT_TRUE(WaitFor([&] { return Stats("obs").outbox() == 0; }, std::chrono::seconds(30)));
  EXPECT_EQ(observer.queued(), 0u);
}

TEST_F(DeliveryTest, SubscribeRejectsBadOpen) {
  StartLawnd();
  TestSubscriber bad(*stub_, "BAD NS");
  std::optional<grpc::Status> s = bad.WaitEnd(std::chrono::seconds(30));
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  TestSubscriber greedy(*stub_, "ok", 1'000'000);
  s = greedy.WaitEnd(std::chrono::seconds(30));
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(s->error_message().find("max_in_flight"), std::string::npos);
}

// SIGTERM with open streams: every stream (worker and observer) ends UNAVAILABLE, health never says SERVING
// again, lawnd exits 0, and the pending timer is still there after a restart. (With nothing in flight the drain is over at once: drain_test.cc holds one open to watch
// NOT_SERVING and the UNAVAILABLE answers during it.)
TEST_F(DeliveryTest, SigtermEndsStreamsUnavailableAndKeepsPendingTimers) {
  StartLawnd();
  // One channel (one HTTP/2 connection) for everything.
  std::shared_ptr<grpc::Channel> channel = lawnd_->channel();
  auto stub = v1::TimerService::NewStub(channel);
  HealthWatch health(channel);
  ASSERT_TRUE(health.WaitFor(grpc::health::v1::HealthCheckResponse::SERVING, std::chrono::seconds(30)));
  TestSubscriber worker(*stub, "bye");
  TestSubscriber observer(*stub, "bye", 5, /*observe=*/true);
  v1::Timer pending;
  ASSERT_TRUE(StartTtl(*stub, "bye", "pending", milliseconds(3'600'000), &pending, "still here").ok());
  ASSERT_TRUE(WaitFor([&] { return Stats("bye").subscribers() == 2; }, std::chrono::seconds(30)));

  EXPECT_EQ(lawnd_->Stop(SIGTERM, std::chrono::seconds(30)), 0);
  for (TestSubscriber* sub : {&worker, &observer}) {
    std::optional<grpc::Status> s = sub->WaitEnd(std::chrono::seconds(30));
    ASSERT_TRUE(s.has_value());
    // Usually the drain's own "lawnd is shutting down; reconnect"; the server shutdown that follows at once
    // may cancel the stream before that status is sent, which is UNAVAILABLE too.
    EXPECT_EQ(s->error_code(), grpc::StatusCode::UNAVAILABLE) << s->error_message();
    EXPECT_EQ(sub->queued(), 0u) << "nothing was due";
  }
  ASSERT_TRUE(health.WaitEnd(std::chrono::seconds(30)).has_value()) << "the health watch outlived lawnd";
  const std::vector<ServingStatus> seen = health.seen();
  ASSERT_FALSE(seen.empty());
  EXPECT_EQ(seen.front(), grpc::health::v1::HealthCheckResponse::SERVING);
  for (size_t i = 1; i < seen.size(); ++i) {
    EXPECT_FALSE(seen[i - 1] == grpc::health::v1::HealthCheckResponse::NOT_SERVING &&
                 seen[i] == grpc::health::v1::HealthCheckResponse::SERVING)
        << "SERVING again after NOT_SERVING";
  }
  const std::string log = lawnd_->Log();
  EXPECT_NE(log.find("received SIGTERM; draining"), std::string::npos) << log;
  EXPECT_NE(log.find("lawnd stopped"), std::string::npos) << log;

  // The pending timer survived the drain unchanged, and nothing fired or was left in the outbox.
  lawnd_->Start();
  stub_ = lawnd_->stub();
  grpc::ClientContext ctx;
  v1::GetTimerRequest get;
  get.set_namespace_("bye");
  get.set_id("pending");
  v1::GetTimerResponse got;
  ASSERT_TRUE(stub_->GetTimer(&ctx, get, &got).ok());
  EXPECT_EQ(got.timer().payload(), "still here");
  EXPECT_EQ(ToNs(got.timer().deadline()), ToNs(pending.deadline()));
  const v1::NamespaceStats stats = Stats("bye");
  EXPECT_EQ(stats.pending_timers(), 1u);
  EXPECT_EQ(stats.outbox(), 0u);
  EXPECT_EQ(StartTtl(*stub_, "bye", "after-restart", milliseconds(60000)).error_code(), grpc::StatusCode::OK);
}

}  // namespace
}  // namespace lawn::testing
