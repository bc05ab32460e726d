// Subscribe flow control and routing against the real lawnd: the server-side max_in_flight window (explicit,
// 0 = 100, capped by the config's max_in_flight), redelivery to another subscriber when a stream ends,
// namespace isolation between subscriptions, and a deleted recurring timer staying silent (also after a
// kill -9 restart).
//
// "Holds no more than N" is proved with a second subscriber: expirations a stream was not allowed to take
// stay ready and go to the next stream that connects, so its count shows what the first one left.
#include <csignal>
#include <set>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tests/integration/lawnd_process.h"
#include "tests/integration/test_client.h"

namespace lawn::testing {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

constexpr auto kWait = seconds(30);  // Bound on every wait for an event.

class SubscribeTest : public ::testing::Test {
 protected:
  void StartLawnd(const std::string& config_yaml = "") {
    std::vector<std::string> args;
    if (!config_yaml.empty()) args = {"--config", WriteFile(dir_.path() + "/lawn.yaml", config_yaml)};
    lawnd_ = std::make_unique<LawndProcess>(dir_.path() + "/data", args);
    lawnd_->Start();
    stub_ = lawnd_->stub();
  }
  // Starts `n` timers "<prefix>0".. in `ns`, due in 50 ms.
  void StartSoon(const std::string& ns, const std::string& prefix, int n) {
    std::vector<v1::StartTimerRequest> requests;
    for (int i = 0; i < n; ++i) requests.push_back(TtlRequest(ns, prefix + std::to_string(i), milliseconds(50)));
    ASSERT_TRUE(StartAll(*stub_, requests));
  }
  // Waits until every timer of `ns` has fired and `outbox` expirations wait (ready or in flight).
  bool WaitFired(const std::string& ns, uint64_t outbox) {
    return WaitFor(
        [&] {
          const v1::NamespaceStats s = NamespaceStatsOf(*stub_, ns);
          return s.pending_timers() == 0 && s.outbox() == outbox;
        },
        kWait);
  }
  v1::GetStatsResponse Stats() {
    grpc::ClientContext ctx;
    v1::GetStatsResponse resp;
    EXPECT_TRUE(stub_->GetStats(&ctx, v1::GetStatsRequest(), &resp).ok());
    return resp;
  }
  static std::vector<uint64_t> Ids(const std::vector<v1::Expiration>& got) {
    std::vector<uint64_t> ids;
    for (const auto& e : got) ids.push_back(e.delivery_id());
    return ids;
  }

  TempDir dir_;
  std::unique_ptr<LawndProcess> lawnd_;
  std::unique_ptr<v1::TimerService::Stub> stub_;
};

TEST_F(SubscribeTest, StreamNeverHoldsMoreThanItsMaxInFlight) {
  StartLawnd();
  TestSubscriber first(*stub_, "window", 3);
  StartSoon("window", "t", 10);
  const std::vector<v1::Expiration> held = first.Take(3, kWait);
  ASSERT_EQ(held.size(), 3u);
  ASSERT_TRUE(WaitFired("window", 10));
  // The 7 the first stream was not allowed to take are still there for the next one.
  TestSubscriber second(*stub_, "window", 100);
  std::vector<v1::Expiration> rest = second.Take(7, kWait);
  EXPECT_EQ(rest.size(), 7u);
  EXPECT_EQ(first.queued(), 0u) << "the first stream got more than max_in_flight 3";
  second.Ack(Ids(rest));
  EXPECT_TRUE(second.Close().ok());
  // An ack opens the window by one: with one of its three acked, the first stream takes exactly one more.
  first.Ack(held[0].delivery_id());
  StartSoon("window", "more", 2);
  EXPECT_EQ(first.Take(1, kWait).size(), 1u);
  ASSERT_TRUE(WaitFired("window", 4));  // Three in flight with the first stream, one ready.
  TestSubscriber third(*stub_, "window", 100);
  EXPECT_EQ(third.Take(1, kWait).size(), 1u);
  EXPECT_EQ(first.queued(), 0u) << "the first stream went past its window after an ack";
}

TEST_F(SubscribeTest, MaxInFlightZeroMeansOneHundred) {
  StartLawnd();
  TestSubscriber first(*stub_, "dflt", 0);
  StartSoon("dflt", "t", 150);
  EXPECT_EQ(first.Take(100, kWait).size(), 100u);
  ASSERT_TRUE(WaitFired("dflt", 150));
  TestSubscriber second(*stub_, "dflt", 1000);
  EXPECT_EQ(second.Take(50, kWait).size(), 50u);
  EXPECT_EQ(first.queued(), 0u) << "max_in_flight 0 let the stream hold more than 100";
}

TEST_F(SubscribeTest, MaxInFlightIsCappedByTheConfigLimit) {
  StartLawnd("max_in_flight: 5\n");
  // Above the limit: refused, naming the field, the limit and what 0 means under it.
  TestSubscriber greedy(*stub_, "cap", 6);
  std::optional<grpc::Status> s = greedy.WaitEnd(kWait);
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(s->error_message().find("max_in_flight"), std::string::npos) << s->error_message();
  EXPECT_NE(s->error_message().find("0 means 5"), std::string::npos) << s->error_message();
  // 0 under a limit below 100 means the limit.
  TestSubscriber by_default(*stub_, "cap", 0);
  StartSoon("cap", "t", 12);
  EXPECT_EQ(by_default.Take(5, kWait).size(), 5u);
  ASSERT_TRUE(WaitFired("cap", 12));
  TestSubscriber at_limit(*stub_, "cap", 5);  // The limit itself is accepted.
  EXPECT_EQ(at_limit.Take(5, kWait).size(), 5u);
  ASSERT_TRUE(WaitFor([&] { return NamespaceStatsOf(*stub_, "cap").subscribers() == 2; }, kWait));
  EXPECT_EQ(by_default.queued(), 0u) << "max_in_flight 0 exceeded the config limit of 5";
  EXPECT_EQ(at_limit.queued(), 0u);
}

// Whatever a stream held unacked goes to another subscriber as soon as the stream ends (half-closed by the
// client, or cancelled), with the same delivery ids and attempt 2; what it had acked does not. ack_timeout is
// an hour, so nothing here is an ack-timeout redelivery.
TEST_F(SubscribeTest, StreamEndRedeliversWhatItHeldToAnotherSubscriber) {
  StartLawnd("ack_timeout: 1h\n");
  for (const bool cancel : {false, true}) {
    SCOPED_TRACE(cancel ? "cancelled" : "half-closed");
    const std::string ns = cancel ? "end-cancel" : "end-close";
    auto first = std::make_unique<TestSubscriber>(*stub_, ns, 10);
    StartSoon(ns, "t", 5);
    std::vector<v1::Expiration> held = first->Take(5, kWait);
    ASSERT_EQ(held.size(), 5u);
    for (const auto& e : held) EXPECT_EQ(e.attempt(), 1u);
    // Two acked, three held when the stream ends.
    first->Ack({held[0].delivery_id(), held[1].delivery_id()});
    ASSERT_TRUE(WaitFor([&] { return NamespaceStatsOf(*stub_, ns).outbox() == 3; }, kWait));
    TestSubscriber second(*stub_, ns, 10);
    ASSERT_TRUE(WaitFor([&] { return NamespaceStatsOf(*stub_, ns).subscribers() == 2; }, kWait));
    EXPECT_EQ(second.queued(), 0u) << "the second stream got work the first still held";
    if (cancel) {
      first.reset();  // Cancels the call.
    } else {
      EXPECT_TRUE(first->Close().ok());
    }
    std::vector<v1::Expiration> again = second.Take(3, kWait);
    ASSERT_EQ(again.size(), 3u);
    std::set<uint64_t> want = {held[2].delivery_id(), held[3].delivery_id(), held[4].delivery_id()};
    std::set<uint64_t> got;
    for (const auto& e : again) {
      got.insert(e.delivery_id());
      EXPECT_EQ(e.attempt(), 2u);
      EXPECT_EQ(e.timer().namespace_(), ns);
    }
    EXPECT_EQ(got, want);
    second.Ack(Ids(again));
    ASSERT_TRUE(WaitFor([&] { return NamespaceStatsOf(*stub_, ns).outbox() == 0; }, kWait));
    EXPECT_EQ(second.queued(), 0u) << "an acked expiration was redelivered";
  }
  EXPECT_EQ(Stats().redeliveries(), 6u);
}

// Subscriptions of one namespace never see another's expirations, work-sharing or observing; a namespace
// with no subscriber keeps its expirations until one connects.
TEST_F(SubscribeTest, SubscriptionsSeeOnlyTheirOwnNamespace) {
  StartLawnd();
  TestSubscriber a(*stub_, "iso-a");
  TestSubscriber b(*stub_, "iso-b");
  TestSubscriber a_observer(*stub_, "iso-a", 100, /*observe=*/true);
  ASSERT_TRUE(WaitFor([&] { return NamespaceStatsOf(*stub_, "iso-a").subscribers() == 2; }, kWait));
  ASSERT_TRUE(WaitFor([&] { return NamespaceStatsOf(*stub_, "iso-b").subscribers() == 1; }, kWait));
  // The same ids in every namespace: different timers.
  for (const char* ns : {"iso-a", "iso-b", "iso-c"}) StartSoon(ns, "same", 10);
  for (auto [sub, ns] : {std::pair<TestSubscriber*, const char*>{&a, "iso-a"}, {&b, "iso-b"}, {&a_observer, "iso-a"}}) {
    std::vector<v1::Expiration> got = sub->Take(10, kWait);
    ASSERT_EQ(got.size(), 10u) << ns;
    std::set<std::string> ids;
    for (const auto& e : got) {
      EXPECT_EQ(e.timer().namespace_(), ns);
      ids.insert(e.timer().id());
    }
    EXPECT_EQ(ids.size(), 10u) << ns;
    if (sub != &a_observer) sub->Ack(Ids(got));
  }
  ASSERT_TRUE(WaitFired("iso-a", 0));
  ASSERT_TRUE(WaitFired("iso-b", 0));
  // "iso-c" fired too, and its expirations wait for a subscriber of their own.
  ASSERT_TRUE(WaitFired("iso-c", 10));
  EXPECT_EQ(a.queued(), 0u);
  EXPECT_EQ(b.queued(), 0u);
  EXPECT_EQ(a_observer.queued(), 0u);
  TestSubscriber c(*stub_, "iso-c");
  std::vector<v1::Expiration> got = c.Take(10, kWait);
  ASSERT_EQ(got.size(), 10u);
  for (const auto& e : got) EXPECT_EQ(e.timer().namespace_(), "iso-c");
  EXPECT_EQ(a.queued() + b.queued() + a_observer.queued(), 0u);
}

// A recurring timer, once deleted, never fires again: nothing with a deadline at or after the one it was
// deleted at arrives, neither while lawnd runs nor after a kill -9 restart. A one-shot sentinel due three
// periods later marks how long to look.
TEST_F(SubscribeTest, DeletedRecurringTimerStaysSilent) {
  StartLawnd();
  auto sub = std::make_unique<TestSubscriber>(*stub_, "rec");
  v1::StartTimerRequest r = TtlRequest("rec", "every-second", milliseconds(1000));
  r.mutable_interval()->set_seconds(1);
  ASSERT_TRUE(Call(*stub_, r).ok());
  for (int k = 0; k < 2; ++k) {
    std::optional<v1::Expiration> e = sub->Next(kWait);
    ASSERT_TRUE(e.has_value());
    EXPECT_EQ(e->timer().id(), "every-second");
    sub->Ack(e->delivery_id());
  }
  grpc::ClientContext ctx;
  v1::DeleteTimerRequest d;
  d.set_namespace_("rec");
  d.set_id("every-second");
  v1::DeleteTimerResponse deleted;
  ASSERT_TRUE(stub_->DeleteTimer(&ctx, d, &deleted).ok());
  const int64_t next_deadline = ToNs(deleted.timer().deadline());  // The firing the delete cancelled.
  EXPECT_EQ(deleted.timer().interval().seconds(), 1);

  // Runs a sentinel due three periods from now; returns what arrived for the recurring timer meanwhile.
  auto watch_until_sentinel = [&](const std::string& sentinel) {
    std::vector<v1::Expiration> recurring;
    EXPECT_TRUE(StartTtl(*stub_, "rec", sentinel, milliseconds(3500)).ok());
    const auto give_up = std::chrono::steady_clock::now() + kWait;
    while (std::chrono::steady_clock::now() < give_up) {
      std::optional<v1::Expiration> e = sub->Next(seconds(1));
      if (!e) continue;
      sub->Ack(e->delivery_id());
      if (e->timer().id() == sentinel) return recurring;
      // Anything else (e.g. an expiration whose ack the kill -9 lost) may come again; only the deleted
      // timer's own firings matter.
      if (e->timer().id() == "every-second") recurring.push_back(*e);
    }
    ADD_FAILURE() << "sentinel " << sentinel << " never arrived";
    return recurring;
  };
  for (const v1::Expiration& e : watch_until_sentinel("sentinel-1")) {
    // Only a firing already on its way before the delete may still arrive.
    EXPECT_LT(ToNs(e.timer().deadline()), next_deadline) << "the deleted timer fired again";
  }
  v1::GetTimerResponse got;
  grpc::ClientContext get_ctx;
  v1::GetTimerRequest get;
  get.set_namespace_("rec");
  get.set_id("every-second");
  EXPECT_EQ(stub_->GetTimer(&get_ctx, get, &got).error_code(), grpc::StatusCode::NOT_FOUND);

  // The delete is on disk: a kill -9 and restart do not bring the timer back.
  sub.reset();
  lawnd_->Kill();
  lawnd_->Start();
  stub_ = lawnd_->stub();
  sub = std::make_unique<TestSubscriber>(*stub_, "rec");
  for (const v1::Expiration& e : watch_until_sentinel("sentinel-2")) {
    EXPECT_LT(ToNs(e.timer().deadline()), next_deadline) << "the deleted timer came back after a restart";
  }
  grpc::ClientContext get_again;
  EXPECT_EQ(stub_->GetTimer(&get_again, get, &got).error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(NamespaceStatsOf(*stub_, "rec").pending_timers(), 0u);
}

}  // namespace
}  // namespace lawn::testing
