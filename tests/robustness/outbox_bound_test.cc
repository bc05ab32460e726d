// A namespace's outbox is bounded: when it is full, one-shot timers that come due wait in the engine (still
// pending, never dropped, never early), recurring timers skip firings and stay on their grid, new starts are
// refused naming the limit, and a restart with a full outbox comes back within the same bound.
#include <signal.h>

#include <map>
#include <set>
#include <string>

#include "gtest/gtest.h"
#include "tests/integration/lawnd_process.h"
#include "tests/integration/test_client.h"

namespace lawn::testing {
namespace {

using std::chrono::milliseconds;

class OutboxBoundTest : public ::testing::Test {
 protected:
  void StartLawnd(const std::string& yaml) {
    const std::string config = WriteFile(dir_.path() + "/lawn.yaml", yaml);
    lawnd_ = std::make_unique<LawndProcess>(dir_.path() + "/data",
                                            std::vector<std::string>{"--config", config, "--metrics-listen",
                                                                     "127.0.0.1:0"});
    lawnd_->Start();
    stub_ = lawnd_->stub();
  }
  v1::NamespaceStats Stats(const std::string& ns) {
    grpc::ClientContext ctx;
    v1::GetStatsResponse resp;
    EXPECT_TRUE(stub_->GetStats(&ctx, v1::GetStatsRequest(), &resp).ok());
    for (const auto& n : resp.namespaces()) {
      if (n.namespace_() == ns) return n;
    }
    return v1::NamespaceStats();
  }
  double Metric(const std::string& series) {
    return MetricSample(HttpGet(MetricsPortFromLog(lawnd_->Log()), "/metrics"), series);
  }
  // Starts `n` timers prefix0.. in one StartTimers call, `ttl` plus 10 ms per index; returns their deadlines.
  // None may fire before all are in, or a later one is refused by the full outbox: the call's parts reach the
  // shards in separate rounds (CI's TSan runs saw more than 100 ms between them, and once, with four cluster
  // tests beside it, more than 1 s), so the tests use 3 s.
  std::map<std::string, int64_t> StartAll(const std::string& ns, const std::string& prefix, int n, int ttl_ms) {
    v1::StartTimersRequest req;
    for (int i = 0; i < n; ++i) {
      *req.add_timers() = TtlRequest(ns, prefix + std::to_string(i), milliseconds(ttl_ms + 10 * i));
    }
    req.set_return_timers(true);  // For the deadlines.
    grpc::ClientContext ctx;
    v1::StartTimersResponse resp;
    std::map<std::string, int64_t> deadlines;
    EXPECT_TRUE(stub_->StartTimers(&ctx, req, &resp).ok());
    for (const auto& r : resp.results()) {
      EXPECT_EQ(r.code(), 0) << r.message();
      deadlines[r.timer().id()] = ToNs(r.timer().deadline());
    }
    return deadlines;
  }
  grpc::Status Get(const std::string& ns, const std::string& id, v1::Timer* out) {
    grpc::ClientContext ctx;
    v1::GetTimerRequest r;
    r.set_namespace_(ns);
    r.set_id(id);
    v1::GetTimerResponse resp;
    grpc::Status s = stub_->GetTimer(&ctx, r, &resp);
    *out = resp.timer();
    return s;
  }
  TempDir dir_;
  std::unique_ptr<LawndProcess> lawnd_;
  std::unique_ptr<v1::TimerService::Stub> stub_;
};

TEST_F(OutboxBoundTest, FullOutboxHoldsDueTimersRefusesStartsAndDeliversAllLater) {
  StartLawnd("max_outbox_per_namespace: 3\n");
  std::map<std::string, int64_t> deadlines = StartAll("full", "t", 6, 3000);
  ASSERT_EQ(deadlines.size(), 6u);
  // Three fire into the outbox; the other three come due and are held, still pending.
  ASSERT_TRUE(WaitFor([&] { return Stats("full").outbox() == 3 && Metric("lawn_held_expirations_total") >= 3; }));
  EXPECT_EQ(Stats("full").outbox(), 3u);
  EXPECT_EQ(Stats("full").pending_timers(), 3u);
  EXPECT_EQ(Metric(R"(lawn_held_timers\{shard="0"\})") + Metric(R"(lawn_held_timers\{shard="1"\})"), 3);
  size_t still_pending = 0;
  for (const auto& [id, deadline] : deadlines) {
    v1::Timer t;
    if (Get("full", id, &t).ok()) {
      ++still_pending;
      EXPECT_EQ(ToNs(t.deadline()), deadline) << "a held timer keeps its deadline";
    }
  }
  EXPECT_EQ(still_pending, 3u);
  // New starts into the full namespace are refused, naming the limit; other namespaces are unaffected.
  grpc::Status refused = StartTtl(*stub_, "full", "more", milliseconds(50));
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_NE(refused.error_message().find("max_outbox_per_namespace"), std::string::npos) << refused.error_message();
  EXPECT_TRUE(StartTtl(*stub_, "other", "fine", milliseconds(60000)).ok());
  // A subscriber drains it: every timer is delivered once, with its own deadline, never early.
  TestSubscriber sub(*stub_, "full");
  std::set<std::string> got;
  while (got.size() < deadlines.size()) {
    std::optional<v1::Expiration> e = sub.Next(milliseconds(15000));
    ASSERT_TRUE(e.has_value()) << "missing after " << got.size();
    EXPECT_TRUE(got.insert(e->timer().id()).second) << "duplicate " << e->timer().id();
    EXPECT_EQ(ToNs(e->timer().deadline()), deadlines[e->timer().id()]);
    EXPECT_GE(ToNs(e->fired_at()), deadlines[e->timer().id()]) << "fired early";
    ASSERT_TRUE(sub.Ack(e->delivery_id()));
  }
  ASSERT_TRUE(WaitFor([&] { return Stats("full").outbox() == 0 && Stats("full").pending_timers() == 0; }));
  EXPECT_TRUE(StartTtl(*stub_, "full", "more", milliseconds(50)).ok());
}

TEST_F(OutboxBoundTest, FullOutboxSkipsRecurringFiringsOnTheGrid) {
  StartLawnd("max_outbox_per_namespace: 2\n");
  v1::StartTimerRequest r = TtlRequest("rec", "beat", milliseconds(100));
  r.mutable_interval()->set_nanos(100'000'000);
  v1::Timer t;
  ASSERT_TRUE(Call(*stub_, r, &t).ok());
  const int64_t first = ToNs(t.deadline());
  ASSERT_TRUE(WaitFor([&] { return Metric("lawn_skipped_firings_total") >= 3; }));
  EXPECT_EQ(Stats("rec").outbox(), 2u) << "skipped firings do not grow the outbox";
  EXPECT_EQ(Stats("rec").pending_timers(), 1u);
  TestSubscriber sub(*stub_, "rec");
  for (int i = 0; i < 4; ++i) {
    std::optional<v1::Expiration> e = sub.Next(milliseconds(15000));
    ASSERT_TRUE(e.has_value());
    const int64_t deadline = ToNs(e->timer().deadline());
    EXPECT_EQ((deadline - first) % 100'000'000, 0) << "off the grid";
    EXPECT_GE(ToNs(e->fired_at()), deadline);
    ASSERT_TRUE(sub.Ack(e->delivery_id()));
  }
}

TEST_F(OutboxBoundTest, RestartWithFullOutboxKeepsEveryTimerAndTheBound) {
  const std::string yaml = "max_outbox_per_namespace: 2\n";
  StartLawnd(yaml);
  ASSERT_EQ(StartAll("r", "t", 5, 3000).size(), 5u);
  ASSERT_TRUE(WaitFor([&] { return Stats("r").outbox() == 2 && Stats("r").pending_timers() == 3; }));
  ASSERT_EQ(lawnd_->Stop(SIGKILL), 128 + SIGKILL);
  lawnd_->Start();
  stub_ = lawnd_->stub();
  // The two undelivered expirations come back; the three held timers are pending again and wait again.
  ASSERT_TRUE(WaitFor([&] { return Stats("r").outbox() == 2 && Stats("r").pending_timers() == 3; }));
  TestSubscriber sub(*stub_, "r");
  std::set<std::string> got;
  while (got.size() < 5) {
    std::optional<v1::Expiration> e = sub.Next(milliseconds(15000));
    ASSERT_TRUE(e.has_value()) << "missing after " << got.size();
    got.insert(e->timer().id());
    ASSERT_TRUE(sub.Ack(e->delivery_id()));
  }
  ASSERT_TRUE(WaitFor([&] { return Stats("r").outbox() == 0 && Stats("r").pending_timers() == 0; }));
}

TEST_F(OutboxBoundTest, PendingByteQuotaRefusesStartsNamingTheLimit) {
  StartLawnd("max_pending_bytes_per_namespace: 2KiB\n");
  const std::string payload(500, 'p');
  int started = 0;
  grpc::Status last;
  for (int i = 0; i < 10 && last.ok(); ++i) {
    last = StartTtl(*stub_, "bytes", "t" + std::to_string(i), milliseconds(600000), nullptr, payload);
    if (last.ok()) ++started;
  }
  // Each counts its key ("bytes" \0 "tN", 8 bytes) and payload: 4 x 508 = 2032 fit in 2 KiB, a fifth does not.
  EXPECT_EQ(started, 4);
  EXPECT_EQ(last.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_NE(last.error_message().find("max_pending_bytes_per_namespace"), std::string::npos) << last.error_message();
  EXPECT_TRUE(StartTtl(*stub_, "elsewhere", "t", milliseconds(600000), nullptr, payload).ok());
  grpc::ClientContext ctx;
  v1::DeleteTimerRequest d;
  d.set_namespace_("bytes");
  d.set_id("t0");
  v1::DeleteTimerResponse dr;
  ASSERT_TRUE(stub_->DeleteTimer(&ctx, d, &dr).ok());
  EXPECT_TRUE(StartTtl(*stub_, "bytes", "again", milliseconds(600000), nullptr, payload).ok());
}

TEST_F(OutboxBoundTest, TotalPendingByteQuotaRefusesStartsNamingTheLimitAndCreatesNothing) {
  // max_pending_bytes_per_namespace is left at its default (the total): only the server-wide bound applies.
  StartLawnd("max_pending_bytes: 2KiB\n");
  const std::string payload(500, 'p');
  // Each counts its key ("a" \0 "t0", 4 bytes) and payload: 504 bytes; four in two namespaces hold 2016.
  ASSERT_TRUE(StartTtl(*stub_, "a", "t0", milliseconds(600000), nullptr, payload).ok());
  ASSERT_TRUE(StartTtl(*stub_, "a", "t1", milliseconds(600000), nullptr, payload).ok());
  ASSERT_TRUE(StartTtl(*stub_, "b", "t0", milliseconds(600000), nullptr, payload).ok());
  ASSERT_TRUE(StartTtl(*stub_, "b", "t1", milliseconds(600000), nullptr, payload).ok());
  // A fifth passes 2 KiB in all, though its own namespace holds nothing yet: refused, naming the limit.
  grpc::Status refused = StartTtl(*stub_, "c", "t0", milliseconds(600000), nullptr, payload);
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_NE(refused.error_message().find("max_pending_bytes (2048"), std::string::npos) << refused.error_message();
  EXPECT_EQ(refused.error_message().find("per_namespace"), std::string::npos) << refused.error_message();
  // The same in a batch, into a namespace that holds some already: refused item by item.
  {
    v1::StartTimersRequest req;
    *req.add_timers() = TtlRequest("a", "t2", milliseconds(600000), payload);
    grpc::ClientContext ctx;
    v1::StartTimersResponse resp;
    ASSERT_TRUE(stub_->StartTimers(&ctx, req, &resp).ok());
    ASSERT_EQ(resp.results_size(), 1);
    EXPECT_EQ(resp.results(0).code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
    EXPECT_NE(resp.results(0).message().find("max_pending_bytes (2048"), std::string::npos)
        << resp.results(0).message();
  }
  // Nothing was created: no timer, no namespace, the counts unchanged.
  v1::Timer t;
  EXPECT_EQ(Get("c", "t0", &t).error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(Get("a", "t2", &t).error_code(), grpc::StatusCode::NOT_FOUND);
  {
    grpc::ClientContext ctx;
    v1::GetStatsResponse resp;
    ASSERT_TRUE(stub_->GetStats(&ctx, v1::GetStatsRequest(), &resp).ok());
    EXPECT_EQ(resp.pending_timers(), 4u);
    for (const auto& n : resp.namespaces()) EXPECT_NE(n.namespace_(), "c");
  }
  EXPECT_EQ(Stats("a").pending_timers(), 2u);
  // A smaller timer still fits beside them (2016 + 4 bytes), and room freed by a delete takes the big one.
  EXPECT_TRUE(StartTtl(*stub_, "c", "t0", milliseconds(600000)).ok());
  grpc::ClientContext ctx;
  v1::DeleteTimerRequest d;
  d.set_namespace_("a");
  d.set_id("t0");
  v1::DeleteTimerResponse dr;
  ASSERT_TRUE(stub_->DeleteTimer(&ctx, d, &dr).ok());
  EXPECT_TRUE(StartTtl(*stub_, "c", "t1", milliseconds(600000), nullptr, payload).ok());
}

}  // namespace
}  // namespace lawn::testing
