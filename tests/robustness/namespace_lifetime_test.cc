// Namespaces come and go: one that holds nothing (no pending timer, no outbox entry, no subscriber) is
// forgotten with its metric series, so max_namespaces bounds what a client can make lawnd hold, not how
// many names it ever used.
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tests/integration/lawnd_process.h"
#include "tests/integration/test_client.h"

namespace lawn::testing {
namespace {

using std::chrono::milliseconds;

class NamespaceLifetimeTest : public ::testing::Test {
 protected:
  void StartLawnd(const std::string& yaml) {
    const std::string config = WriteFile(dir_.path() + "/lawn.yaml", yaml);
    lawnd_ = std::make_unique<LawndProcess>(dir_.path() + "/data",
                                            std::vector<std::string>{"--config", config, "--metrics-listen",
                                                                     "127.0.0.1:0"});
    lawnd_->Start();
    stub_ = lawnd_->stub();
  }
  bool Listed(const std::string& ns) {
    grpc::ClientContext ctx;
    v1::GetStatsResponse resp;
    EXPECT_TRUE(stub_->GetStats(&ctx, v1::GetStatsRequest(), &resp).ok());
    for (const auto& n : resp.namespaces()) {
      if (n.namespace_() == ns) return true;
    }
    return false;
  }
  std::string Metrics() { return HttpGet(MetricsPortFromLog(lawnd_->Log()), "/metrics"); }
  grpc::Status Delete(const std::string& ns, const std::string& id) {
    grpc::ClientContext ctx;
    v1::DeleteTimerRequest d;
    d.set_namespace_(ns);
    d.set_id(id);
    v1::DeleteTimerResponse dr;
    return stub_->DeleteTimer(&ctx, d, &dr);
  }
  TempDir dir_;
  std::unique_ptr<LawndProcess> lawnd_;
  std::unique_ptr<v1::TimerService::Stub> stub_;
};

TEST_F(NamespaceLifetimeTest, NamespaceThatHoldsNothingIsForgottenWithItsMetrics) {
  StartLawnd("");
  {
    TestSubscriber sub(*stub_, "temp");
    ASSERT_TRUE(StartTtl(*stub_, "temp", "t", milliseconds(20)).ok());
    std::optional<v1::Expiration> e = sub.Next(milliseconds(15000));
    ASSERT_TRUE(e.has_value());
    ASSERT_TRUE(sub.Ack(e->delivery_id()));
    ASSERT_TRUE(WaitFor([&] { return Metrics().find(R"(lawn_subscribers{namespace="temp"})") != std::string::npos; }));
    // Still held: a subscriber is attached.
    EXPECT_TRUE(Listed("temp"));
    sub.Close();
  }
  ASSERT_TRUE(WaitFor([&] { return !Listed("temp"); }, std::chrono::seconds(30)));
  ASSERT_TRUE(WaitFor([&] { return Metrics().find(R"(namespace="temp")") == std::string::npos; },
                      std::chrono::seconds(30)));
  // It comes back on use, working as before.
  TestSubscriber again(*stub_, "temp");
  ASSERT_TRUE(StartTtl(*stub_, "temp", "t2", milliseconds(20)).ok());
  std::optional<v1::Expiration> e = again.Next(milliseconds(15000));
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->timer().id(), "t2");
}

// GetStats' redeliveries and lawn_redeliveries_total count since start: a forgotten namespace takes its
// outbox with it, not its redeliveries.
TEST_F(NamespaceLifetimeTest, RedeliveriesOfAForgottenNamespaceStayCounted) {
  StartLawnd("");
  {
    auto first = std::make_unique<TestSubscriber>(*stub_, "gone");
    ASSERT_TRUE(StartTtl(*stub_, "gone", "t", milliseconds(20)).ok());
    std::optional<v1::Expiration> e = first->Next(milliseconds(15000));
    ASSERT_TRUE(e.has_value());
    TestSubscriber second(*stub_, "gone");
    ASSERT_TRUE(WaitFor([&] { return NamespaceStatsOf(*stub_, "gone").subscribers() == 2; }));
    first->Close();  // Unacked: it goes to the second stream, attempt 2.
    std::optional<v1::Expiration> again = second.Next(milliseconds(15000));
    ASSERT_TRUE(again.has_value());
    EXPECT_EQ(again->attempt(), 2u);
    ASSERT_TRUE(second.Ack(again->delivery_id()));
    second.Close();
  }
  ASSERT_TRUE(WaitFor([&] { return !Listed("gone"); }, std::chrono::seconds(30)));
  grpc::ClientContext ctx;
  v1::GetStatsResponse stats;
  ASSERT_TRUE(stub_->GetStats(&ctx, v1::GetStatsRequest(), &stats).ok());
  EXPECT_EQ(stats.redeliveries(), 1u);
  // The background thread counts the metric once a second; the namespace may be forgotten before that.
  EXPECT_TRUE(WaitFor([&] { return MetricSample(Metrics(), "lawn_redeliveries_total") == 1.0; }));
}

TEST_F(NamespaceLifetimeTest, MaxNamespacesBoundsLiveNamespacesNotNamesEverUsed) {
  StartLawnd("max_namespaces: 2\n");
  ASSERT_TRUE(StartTtl(*stub_, "a", "t", milliseconds(600000)).ok());
  ASSERT_TRUE(StartTtl(*stub_, "b", "t", milliseconds(600000)).ok());
  grpc::Status refused = StartTtl(*stub_, "c", "t", milliseconds(600000));
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_NE(refused.error_message().find("max_namespaces"), std::string::npos) << refused.error_message();
  // A subscription does not create a namespace: it is accepted beyond the limit (GetStats shows its
  // subscriber and nothing else), and starts into its name are still refused.
  TestSubscriber watcher(*stub_, "d");
  ASSERT_TRUE(WaitFor([&] { return NamespaceStatsOf(*stub_, "d").subscribers() == 1; }));
  EXPECT_EQ(NamespaceStatsOf(*stub_, "d").pending_timers(), 0u);
  EXPECT_EQ(StartTtl(*stub_, "d", "t", milliseconds(600000)).error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  // b empties: it is forgotten, and c fits.
  ASSERT_TRUE(Delete("b", "t").ok());
  ASSERT_TRUE(WaitFor([&] { return StartTtl(*stub_, "c", "t", milliseconds(600000)).ok(); },
                      std::chrono::seconds(30)));
  EXPECT_TRUE(Listed("a"));
  EXPECT_TRUE(Listed("c"));
  EXPECT_FALSE(Listed("b"));
  // a empties too: a start into d fits, and the subscriber that waited on d gets its expiration.
  ASSERT_TRUE(Delete("a", "t").ok());
  ASSERT_TRUE(WaitFor([&] { return StartTtl(*stub_, "d", "soon", milliseconds(20)).ok(); },
                      std::chrono::seconds(30)));
  std::optional<v1::Expiration> e = watcher.Next(milliseconds(15000));
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->timer().id(), "soon");
  EXPECT_TRUE(watcher.Ack(e->delivery_id()));
}

TEST_F(NamespaceLifetimeTest, FailedStartIntoANewNamespaceCreatesNothing) {
  // Two namespaces at most, three pending timers at most, 1 KiB of ids and payloads per namespace.
  StartLawnd("max_namespaces: 2\nmax_pending_timers: 3\nmax_pending_bytes_per_namespace: 1KiB\n");
  ASSERT_TRUE(StartTtl(*stub_, "a", "t", milliseconds(600000)).ok());
  ASSERT_TRUE(StartTtl(*stub_, "a", "u", milliseconds(600000)).ok());
  ASSERT_TRUE(StartTtl(*stub_, "a", "v", milliseconds(600000)).ok());
  auto expect_refused_and_absent = [&](const grpc::Status& s, grpc::StatusCode code, const std::string& ns,
                                       const std::string& names) {
    EXPECT_EQ(s.error_code(), code) << ns << ": " << s.error_message();
    EXPECT_NE(s.error_message().find(names), std::string::npos) << s.error_message();
    // Checked at once, not after lawnd's background pass forgets empty namespaces (about once a second).
    EXPECT_FALSE(Listed(ns)) << ns;
  };
  // Quota on the number of pending timers, lawnd-wide.
  expect_refused_and_absent(StartTtl(*stub_, "count", "t", milliseconds(600000)),
                            grpc::StatusCode::RESOURCE_EXHAUSTED, "count", "max_pending_timers");
  ASSERT_TRUE(Delete("a", "u").ok());
  ASSERT_TRUE(Delete("a", "v").ok());
  // Quota on bytes per namespace: one timer larger than the namespace may hold.
  expect_refused_and_absent(StartTtl(*stub_, "bytes", "t", milliseconds(600000), nullptr, std::string(2000, 'p')),
                            grpc::StatusCode::RESOURCE_EXHAUSTED, "bytes", "max_pending_bytes_per_namespace");
  // Validation: a TTL of zero, and an empty id.
  expect_refused_and_absent(StartTtl(*stub_, "ttl", "t", milliseconds(0)), grpc::StatusCode::INVALID_ARGUMENT,
                            "ttl", "ttl");
  expect_refused_and_absent(StartTtl(*stub_, "noid", "", milliseconds(600000)), grpc::StatusCode::INVALID_ARGUMENT,
                            "noid", "id");
  // In a batch: the items refused into new namespaces create none, the one that succeeds creates its own.
  {
    v1::StartTimersRequest req;
    *req.add_timers() = TtlRequest("big", "t", milliseconds(600000), std::string(2000, 'p'));
    *req.add_timers() = TtlRequest("a", "t", milliseconds(600000));  // Duplicate: a/t exists.
    *req.add_timers() = TtlRequest("b", "t", milliseconds(600000));
    grpc::ClientContext ctx;
    v1::StartTimersResponse resp;
    ASSERT_TRUE(stub_->StartTimers(&ctx, req, &resp).ok());
    ASSERT_EQ(resp.results_size(), 3);
    EXPECT_EQ(resp.results(0).code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << resp.results(0).message();
    EXPECT_EQ(resp.results(1).code(), grpc::StatusCode::ALREADY_EXISTS) << resp.results(1).message();
    EXPECT_EQ(resp.results(2).code(), grpc::StatusCode::OK) << resp.results(2).message();
    EXPECT_FALSE(Listed("big"));
    EXPECT_TRUE(Listed("b"));
  }
  // The refused starts took no namespace slot: with a and b there, a third is refused for max_namespaces
  // (and is not created either), and once b is gone a new one fits at the first try.
  expect_refused_and_absent(StartTtl(*stub_, "third", "t", milliseconds(600000)),
                            grpc::StatusCode::RESOURCE_EXHAUSTED, "third", "max_namespaces");
  ASSERT_TRUE(Delete("b", "t").ok());
  ASSERT_TRUE(WaitFor([&] { return !Listed("b"); }, std::chrono::seconds(30)));
  EXPECT_TRUE(StartTtl(*stub_, "third", "t", milliseconds(600000)).ok());
  grpc::ClientContext ctx;
  v1::GetStatsResponse resp;
  ASSERT_TRUE(stub_->GetStats(&ctx, v1::GetStatsRequest(), &resp).ok());
  std::vector<std::string> names;
  for (const auto& n : resp.namespaces()) names.push_back(n.namespace_());
  EXPECT_EQ(names, (std::vector<std::string>{"a", "third"}));
}

TEST_F(NamespaceLifetimeTest, SubscriptionsToEmptyNamesAreBoundedAndLeaveNoTrace) {
  StartLawnd("max_namespaces: 2\n");
  TestSubscriber w1(*stub_, "w1");
  TestSubscriber w2(*stub_, "w2");
  // Both open in the background: a third watch opened before they are attached could take a slot first (and
  // one of them be refused instead; seen under ASan with tests in parallel).
  ASSERT_TRUE(WaitFor([&] { return Listed("w1") && Listed("w2"); }, std::chrono::seconds(30)));
  ASSERT_TRUE(WaitFor([&] {
    // Both are attached: a third watch is refused.
    TestSubscriber w3(*stub_, "w3");
    std::optional<grpc::Status> end = w3.WaitEnd(milliseconds(2000));
    if (!end.has_value()) return false;
    EXPECT_EQ(end->error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
    EXPECT_NE(end->error_message().find("max_namespaces"), std::string::npos) << end->error_message();
    return true;
  }, std::chrono::seconds(30)));
  // Watches take no namespace slot: both namespaces can still be created.
  EXPECT_TRUE(StartTtl(*stub_, "a", "t", milliseconds(600000)).ok());
  EXPECT_TRUE(StartTtl(*stub_, "b", "t", milliseconds(600000)).ok());
  // Closing the watches frees their bound, and they leave no trace.
  w1.Close();
  w2.Close();
  ASSERT_TRUE(WaitFor([&] {
    TestSubscriber w3(*stub_, "w3");
    // Accepted: counted as w3's subscriber (however slow the machine); refused: the stream ends.
    const bool settled = WaitFor(
        [&] {
          return NamespaceStatsOf(*stub_, "w3").subscribers() == 1 || w3.WaitEnd(milliseconds(0)).has_value();
        },
        std::chrono::seconds(10));
    return settled && !w3.WaitEnd(milliseconds(0)).has_value();
  }, std::chrono::seconds(30)));
  ASSERT_TRUE(WaitFor([&] { return !Listed("w1") && !Listed("w2"); }, std::chrono::seconds(30)));
  ASSERT_TRUE(WaitFor([&] { return Metrics().find(R"(namespace="w1")") == std::string::npos; },
                      std::chrono::seconds(30)));
}

}  // namespace
}  // namespace lawn::testing
