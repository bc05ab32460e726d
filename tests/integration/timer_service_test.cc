// Every unary RPC of lawn.v1.TimerService and every validation rule, against the real lawnd.
#include <atomic>
#include <csignal>
#include <map>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "tests/integration/lawnd_process.h"
#include "tests/integration/test_client.h"

namespace lawn::testing {
namespace {

using std::chrono::milliseconds;

class TimerServiceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    lawnd_ = std::make_unique<LawndProcess>(dir_.path() + "/data", std::vector<std::string>{});
    lawnd_->Start();
    stub_ = lawnd_->stub();
  }
  grpc::ClientContext* Ctx() {
    contexts_.push_back(std::make_unique<grpc::ClientContext>());
    contexts_.back()->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    return contexts_.back().get();
  }
  // The status of starting `r`.
  grpc::Status Start(const v1::StartTimerRequest& r) { return Call(*stub_, r); }
  void ExpectInvalid(const v1::StartTimerRequest& r, const std::string& field) {
    grpc::Status s = Start(r);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << s.error_message();
    EXPECT_NE(s.error_message().find(field), std::string::npos) << s.error_message();
  }

  TempDir dir_;
  std::unique_ptr<LawndProcess> lawnd_;
  std::unique_ptr<v1::TimerService::Stub> stub_;
  std::vector<std::unique_ptr<grpc::ClientContext>> contexts_;
};

TEST_F(TimerServiceTest, StartTimerReturnsTheStoredTimer) {
  const int64_t before = WallNowNs();
  v1::Timer t;
  ASSERT_TRUE(StartTtl(*stub_, "orders", "o-1", milliseconds(60000), &t, "hello").ok());
  EXPECT_EQ(t.namespace_(), "orders");
  EXPECT_EQ(t.id(), "o-1");
  EXPECT_EQ(t.payload(), "hello");
  EXPECT_EQ(t.ttl().seconds(), 60);
  EXPECT_GE(ToNs(t.deadline()), before + 60'000'000'000LL);
  EXPECT_LE(ToNs(t.deadline()), WallNowNs() + 60'000'000'000LL);
  EXPECT_FALSE(t.has_interval());
}

TEST_F(TimerServiceTest, EmptyNamespaceMeansDefault) {
  v1::Timer t;
  ASSERT_TRUE(StartTtl(*stub_, "", "x", milliseconds(60000), &t).ok());
  EXPECT_EQ(t.namespace_(), "default");
}

TEST_F(TimerServiceTest, StartWithAbsoluteDeadline) {
  v1::StartTimerRequest r = TtlRequest("n", "abs", milliseconds(1));
  const int64_t deadline = WallNowNs() + 3600'000'000'000LL;
  r.mutable_deadline()->set_seconds(deadline / 1'000'000'000);
  r.mutable_deadline()->set_nanos(static_cast<int32_t>(deadline % 1'000'000'000));
  v1::Timer t;
  ASSERT_TRUE(Call(*stub_, r, &t).ok());
  EXPECT_NEAR(static_cast<double>(ToNs(t.deadline())), static_cast<double>(deadline), 1e6);
}

TEST_F(TimerServiceTest, DuplicateIdIsAlreadyExistsUnlessReplace) {
  ASSERT_TRUE(StartTtl(*stub_, "n", "dup", milliseconds(60000)).ok());
  grpc::Status s = StartTtl(*stub_, "n", "dup", milliseconds(60000));
  EXPECT_EQ(s.error_code(), grpc::StatusCode::ALREADY_EXISTS);
  EXPECT_NE(s.error_message().find("replace"), std::string::npos);
  v1::StartTimerRequest r = TtlRequest("n", "dup", milliseconds(120000), "new");
  r.set_replace(true);
  v1::Timer t;
  ASSERT_TRUE(Call(*stub_, r, &t).ok());
  EXPECT_EQ(t.payload(), "new");
  EXPECT_EQ(t.ttl().seconds(), 120);
  // The same id in another namespace is another timer.
  EXPECT_TRUE(StartTtl(*stub_, "other", "dup", milliseconds(60000)).ok());
}

TEST_F(TimerServiceTest, GetTimerFindsAPendingTimerAndNotFoundOtherwise) {
  ASSERT_TRUE(StartTtl(*stub_, "n", "g", milliseconds(60000), nullptr, "p").ok());
  v1::GetTimerRequest req;
  req.set_namespace_("n");
  req.set_id("g");
  v1::GetTimerResponse resp;
  ASSERT_TRUE(stub_->GetTimer(Ctx(), req, &resp).ok());
  EXPECT_EQ(resp.timer().payload(), "p");
  req.set_id("missing");
  grpc::Status s = stub_->GetTimer(Ctx(), req, &resp);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_NE(s.error_message().find("missing"), std::string::npos);
}

TEST_F(TimerServiceTest, DeleteTimerReturnsItAndThenNotFound) {
  ASSERT_TRUE(StartTtl(*stub_, "n", "d", milliseconds(60000), nullptr, "bye").ok());
  v1::DeleteTimerRequest req;
  req.set_namespace_("n");
  req.set_id("d");
  v1::DeleteTimerResponse resp;
  ASSERT_TRUE(stub_->DeleteTimer(Ctx(), req, &resp).ok());
  EXPECT_EQ(resp.timer().payload(), "bye");
  EXPECT_EQ(stub_->DeleteTimer(Ctx(), req, &resp).error_code(), grpc::StatusCode::NOT_FOUND);
}

TEST_F(TimerServiceTest, RescheduleMovesTheDeadline) {
  ASSERT_TRUE(StartTtl(*stub_, "n", "r", milliseconds(60000)).ok());
  v1::RescheduleTimerRequest req;
  req.set_namespace_("n");
  req.set_id("r");
  req.mutable_ttl()->set_seconds(3600);
  v1::RescheduleTimerResponse resp;
  const int64_t before = WallNowNs();
  ASSERT_TRUE(stub_->RescheduleTimer(Ctx(), req, &resp).ok());
  EXPECT_GE(ToNs(resp.timer().deadline()), before + 3600'000'000'000LL);
  req.set_id("nope");
  EXPECT_EQ(stub_->RescheduleTimer(Ctx(), req, &resp).error_code(), grpc::StatusCode::NOT_FOUND);
  req.set_id("r");
  req.clear_ttl();
  EXPECT_EQ(stub_->RescheduleTimer(Ctx(), req, &resp).error_code(), grpc::StatusCode::INVALID_ARGUMENT);
}

TEST_F(TimerServiceTest, StartTimersReportsEachItemInOrder) {
  v1::StartTimersRequest req;
  *req.add_timers() = TtlRequest("b", "ok-1", milliseconds(60000));
  *req.add_timers() = TtlRequest("b", "", milliseconds(60000));  // bad id
  *req.add_timers() = TtlRequest("b", "ok-2", milliseconds(60000));
  *req.add_timers() = TtlRequest("b", "ok-1", milliseconds(60000));  // duplicate of item 0
  v1::StartTimersResponse resp;
  ASSERT_TRUE(stub_->StartTimers(Ctx(), req, &resp).ok());
  ASSERT_EQ(resp.results_size(), 4);
  EXPECT_EQ(resp.results(0).code(), 0);
  EXPECT_EQ(resp.results(1).code(), static_cast<int>(grpc::StatusCode::INVALID_ARGUMENT));
  EXPECT_NE(resp.results(1).message().find("timers[1].id"), std::string::npos) << resp.results(1).message();
  EXPECT_EQ(resp.results(2).code(), 0);
  EXPECT_EQ(resp.results(3).code(), static_cast<int>(grpc::StatusCode::ALREADY_EXISTS));
}

// return_timers false (the default): codes and messages only, no timer in any result, started or not.
TEST_F(TimerServiceTest, StartTimersAnswersCodesOnlyByDefault) {
  v1::StartTimersRequest req;
  *req.add_timers() = TtlRequest("codes", "c-1", milliseconds(60000), "payload");
  *req.add_timers() = TtlRequest("codes", "", milliseconds(60000));  // bad id
  *req.add_timers() = TtlRequest("codes", "c-2", milliseconds(60000));
  v1::StartTimersResponse resp;
  ASSERT_TRUE(stub_->StartTimers(Ctx(), req, &resp).ok());
  ASSERT_EQ(resp.results_size(), 3);
  EXPECT_EQ(resp.results(0).code(), 0);
  EXPECT_EQ(resp.results(1).code(), static_cast<int>(grpc::StatusCode::INVALID_ARGUMENT));
  EXPECT_EQ(resp.results(2).code(), 0);
  for (const v1::StartTimerResult& r : resp.results()) EXPECT_FALSE(r.has_timer()) << r.DebugString();
  EXPECT_TRUE(resp.results(0).message().empty());
  // Started all the same: the timers are there as asked.
  v1::GetTimerRequest get;
  get.set_namespace_("codes");
  get.set_id("c-1");
  v1::GetTimerResponse got;
  ASSERT_TRUE(stub_->GetTimer(Ctx(), get, &got).ok());
  EXPECT_EQ(got.timer().payload(), "payload");
  EXPECT_EQ(NamespaceStatsOf(*stub_, "codes").pending_timers(), 2u);
}

// return_timers true: each started item's result carries the timer as stored (what StartTimer returns);
// a failed item's carries none.
TEST_F(TimerServiceTest, StartTimersReturnsTheTimersWhenAsked) {
  v1::StartTimersRequest req;
  *req.add_timers() = TtlRequest("echo", "e-1", milliseconds(60000), "p1");
  *req.add_timers() = TtlRequest("echo", "e-1", milliseconds(60000));  // duplicate of item 0
  v1::StartTimerRequest recurring = TtlRequest("echo", "e-2", milliseconds(5000));
  recurring.mutable_interval()->set_seconds(7);
  *req.add_timers() = recurring;
  req.set_return_timers(true);
  const int64_t before = WallNowNs();
  v1::StartTimersResponse resp;
  ASSERT_TRUE(stub_->StartTimers(Ctx(), req, &resp).ok());
  const int64_t after = WallNowNs();
  ASSERT_EQ(resp.results_size(), 3);
  ASSERT_EQ(resp.results(0).code(), 0) << resp.results(0).message();
  const v1::Timer& first = resp.results(0).timer();
  EXPECT_EQ(first.namespace_(), "echo");
  EXPECT_EQ(first.id(), "e-1");
  EXPECT_EQ(first.payload(), "p1");
  EXPECT_EQ(first.ttl().seconds(), 60);
  EXPECT_FALSE(first.has_interval());
  EXPECT_GE(ToNs(first.deadline()), before + 60'000'000'000LL);
  EXPECT_LE(ToNs(first.deadline()), after + 60'000'000'000LL);
  EXPECT_EQ(resp.results(1).code(), static_cast<int>(grpc::StatusCode::ALREADY_EXISTS));
  EXPECT_FALSE(resp.results(1).has_timer());
  ASSERT_EQ(resp.results(2).code(), 0) << resp.results(2).message();
  EXPECT_EQ(resp.results(2).timer().id(), "e-2");
  EXPECT_EQ(resp.results(2).timer().interval().seconds(), 7);
  // The same timer GetTimer reads.
  v1::GetTimerRequest get;
  get.set_namespace_("echo");
  get.set_id("e-1");
  v1::GetTimerResponse got;
  ASSERT_TRUE(stub_->GetTimer(Ctx(), get, &got).ok());
  EXPECT_EQ(ToNs(got.timer().deadline()), ToNs(first.deadline()));
}

TEST_F(TimerServiceTest, ListTimersPagesThroughANamespaceInIdOrder) {
  v1::StartTimersRequest req;
  for (int i = 0; i < 25; ++i) *req.add_timers() = TtlRequest("list", "id-" + std::to_string(100 + i), milliseconds(60000));
  *req.add_timers() = TtlRequest("elsewhere", "id-x", milliseconds(60000));
  v1::StartTimersResponse sresp;
  ASSERT_TRUE(stub_->StartTimers(Ctx(), req, &sresp).ok());
  std::vector<std::string> seen;
  std::string token;
  int pages = 0;
  do {
    v1::ListTimersRequest lreq;
    lreq.set_namespace_("list");
    lreq.set_page_size(10);
    lreq.set_page_token(token);
    v1::ListTimersResponse lresp;
    ASSERT_TRUE(stub_->ListTimers(Ctx(), lreq, &lresp).ok());
    for (const auto& t : lresp.timers()) seen.push_back(t.id());
    token = lresp.next_page_token();
    ASSERT_LT(++pages, 10);
  } while (!token.empty());
  ASSERT_EQ(seen.size(), 25u);
  for (int i = 0; i < 25; ++i) EXPECT_EQ(seen[i], "id-" + std::to_string(100 + i));
  v1::ListTimersRequest bad;
  bad.set_page_token("zz");
  v1::ListTimersResponse lresp;
  EXPECT_EQ(stub_->ListTimers(Ctx(), bad, &lresp).error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  bad.set_page_token("");
  bad.set_page_size(5000);
  EXPECT_EQ(stub_->ListTimers(Ctx(), bad, &lresp).error_code(), grpc::StatusCode::INVALID_ARGUMENT);
}

TEST_F(TimerServiceTest, GetStatsCountsShardsAndNamespaces) {
  ASSERT_TRUE(StartTtl(*stub_, "s1", "a", milliseconds(60000)).ok());
  ASSERT_TRUE(StartTtl(*stub_, "s1", "b", milliseconds(60000)).ok());
  ASSERT_TRUE(StartTtl(*stub_, "s2", "a", milliseconds(60000)).ok());
  v1::GetStatsResponse resp;
  ASSERT_TRUE(stub_->GetStats(Ctx(), v1::GetStatsRequest(), &resp).ok());
  EXPECT_EQ(resp.pending_timers(), 3u);
  EXPECT_EQ(resp.shards_size(), 2);
  bool found = false;
  for (const auto& n : resp.namespaces()) {
    if (n.namespace_() == "s1") {
      found = true;
      EXPECT_EQ(n.pending_timers(), 2u);
    }
  }
  EXPECT_TRUE(found);
}

TEST_F(TimerServiceTest, NamespaceRules) {
  ExpectInvalid(TtlRequest(std::string(65, 'a'), "x", milliseconds(1000)), "namespace");
  ExpectInvalid(TtlRequest("Upper", "x", milliseconds(1000)), "namespace");
  ExpectInvalid(TtlRequest("sp ace", "x", milliseconds(1000)), "namespace");
  EXPECT_TRUE(Start(TtlRequest(std::string(64, 'a'), "x", milliseconds(60000))).ok());
  EXPECT_TRUE(Start(TtlRequest("a.b_c-9", "x", milliseconds(60000))).ok());
}

TEST_F(TimerServiceTest, IdRules) {
  ExpectInvalid(TtlRequest("n", "", milliseconds(1000)), "id");
  ExpectInvalid(TtlRequest("n", std::string(257, 'i'), milliseconds(1000)), "id");
  EXPECT_TRUE(Start(TtlRequest("n", std::string(256, 'i'), milliseconds(60000))).ok());
  EXPECT_TRUE(Start(TtlRequest("n", std::string("\0\xff binary", 9), milliseconds(60000))).ok());
}

TEST_F(TimerServiceTest, WhenRules) {
  v1::StartTimerRequest none = TtlRequest("n", "w", milliseconds(1000));
  none.clear_ttl();
  ExpectInvalid(none, "ttl or deadline");
  ExpectInvalid(TtlRequest("n", "w", milliseconds(0)), "ttl");
  v1::StartTimerRequest negative = TtlRequest("n", "w", milliseconds(1000));
  negative.mutable_ttl()->set_seconds(-5);
  negative.mutable_ttl()->set_nanos(0);
  ExpectInvalid(negative, "ttl");
  v1::StartTimerRequest bad_nanos = TtlRequest("n", "w", milliseconds(1000));
  bad_nanos.mutable_ttl()->set_nanos(2'000'000'000);
  ExpectInvalid(bad_nanos, "ttl");
  v1::StartTimerRequest far = TtlRequest("n", "w", milliseconds(1000));
  far.mutable_deadline()->set_seconds(400LL * 365 * 24 * 3600);
  ExpectInvalid(far, "deadline");
}

TEST_F(TimerServiceTest, IntervalMustBeAtLeastOneTick) {
  v1::StartTimerRequest r = TtlRequest("n", "i", milliseconds(1000));
  r.mutable_interval()->set_nanos(500'000);  // 0.5 ms < 1 ms tick
  ExpectInvalid(r, "interval");
  r.mutable_interval()->set_nanos(0);
  ExpectInvalid(r, "interval");
  r.mutable_interval()->set_nanos(1'000'000);
  EXPECT_TRUE(Start(r).ok());
}

TEST_F(TimerServiceTest, PayloadLimit) {
  ExpectInvalid(TtlRequest("n", "p", milliseconds(1000), std::string(64 * 1024 + 1, 'x')), "payload");
  EXPECT_TRUE(Start(TtlRequest("n", "p", milliseconds(60000), std::string(64 * 1024, 'x'))).ok());
}

TEST_F(TimerServiceTest, HugeRequestIsRefusedNotBuffered) {
  v1::StartTimersRequest req;
  for (int i = 0; i < 80; ++i) *req.add_timers() = TtlRequest("n", "h" + std::to_string(i), milliseconds(1000), std::string(60000, 'x'));
  v1::StartTimersResponse resp;
  grpc::Status s = stub_->StartTimers(Ctx(), req, &resp);  // ~4.8 MB > max_message_bytes (4 MiB)
  EXPECT_EQ(s.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << s.error_message();
  // lawnd is still fine.
  EXPECT_TRUE(StartTtl(*stub_, "n", "after", milliseconds(60000)).ok());
}

TEST_F(TimerServiceTest, BadKeyRequestsAreInvalid) {
  v1::GetTimerRequest g;
  g.set_namespace_("BAD");
  g.set_id("x");
  v1::GetTimerResponse gr;
  EXPECT_EQ(stub_->GetTimer(Ctx(), g, &gr).error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  v1::DeleteTimerRequest d;
  v1::DeleteTimerResponse dr;
  EXPECT_EQ(stub_->DeleteTimer(Ctx(), d, &dr).error_code(), grpc::StatusCode::INVALID_ARGUMENT);
}

TEST(TimerServiceLimitsTest, PendingLimitsAreResourceExhausted) {
  TempDir dir;
  const std::string config =
      WriteFile(dir.path() + "/lawn.yaml", "max_pending_timers: 5\nmax_pending_per_namespace: 3\n");
  LawndProcess lawnd(dir.path() + "/data", {"--config", config});
  lawnd.Start();
  auto stub = lawnd.stub();
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(StartTtl(*stub, "a", "t" + std::to_string(i), milliseconds(60000)).ok());
  grpc::Status s = StartTtl(*stub, "a", "t3", milliseconds(60000));
  EXPECT_EQ(s.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_NE(s.error_message().find("max_pending_per_namespace"), std::string::npos) << s.error_message();
  ASSERT_TRUE(StartTtl(*stub, "b", "t0", milliseconds(60000)).ok());
  ASSERT_TRUE(StartTtl(*stub, "b", "t1", milliseconds(60000)).ok());
  s = StartTtl(*stub, "b", "t2", milliseconds(60000));
  EXPECT_EQ(s.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_NE(s.error_message().find("max_pending_timers"), std::string::npos) << s.error_message();
  // Replacing an existing timer does not count twice.
  v1::StartTimerRequest r = TtlRequest("a", "t0", milliseconds(60000));
  r.set_replace(true);
  EXPECT_TRUE(Call(*stub, r).ok());
  // A start of an id that exists is ALREADY_EXISTS even at the bound (a retry learns its timer is there),
  // alone and in a batch.
  s = StartTtl(*stub, "a", "t1", milliseconds(60000));
  EXPECT_EQ(s.error_code(), grpc::StatusCode::ALREADY_EXISTS) << s.error_message();
  v1::StartTimersRequest batch;
  for (const char* id : {"t1", "t2", "t9"}) *batch.add_timers() = TtlRequest("a", id, milliseconds(60000));
  v1::StartTimersResponse answer;
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  ASSERT_TRUE(stub->StartTimers(&ctx, batch, &answer).ok());
  ASSERT_EQ(answer.results_size(), 3);
  EXPECT_EQ(answer.results(0).code(), grpc::StatusCode::ALREADY_EXISTS) << answer.results(0).message();
  EXPECT_EQ(answer.results(0).message(),
            "timer 't1' in namespace 'a' already exists; set replace to overwrite it");
  EXPECT_EQ(s.error_message(), answer.results(0).message());
  EXPECT_EQ(answer.results(1).code(), grpc::StatusCode::ALREADY_EXISTS) << answer.results(1).message();
  EXPECT_EQ(answer.results(2).code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << answer.results(2).message();
}

// StartTimers takes the quota of a namespace's items at once (QuotaHold in server/timer_commands.cc): at the
// bound it must still admit exactly up to it, from callers racing over two shards, and give back what items
// that were refused (or duplicates) did not use.
TEST(TimerServiceLimitsTest, BatchesAtTheBoundAdmitExactlyUpToItAndGiveBackWhatTheyDidNotUse) {
  TempDir dir;
  const std::string config =
      WriteFile(dir.path() + "/lawn.yaml", "max_pending_timers: 400\nmax_pending_per_namespace: 250\n");
  LawndProcess lawnd(dir.path() + "/data", {"--config", config, "--shards", "2"});
  lawnd.Start();
  auto stub = lawnd.stub();
  // Codes of a StartTimers call of `ids` in `ns`, as code -> count; `message` gets a refusal's message.
  auto start = [&](const std::string& ns, const std::vector<std::string>& ids, std::string* message) {
    v1::StartTimersRequest request;
    for (const std::string& id : ids) *request.add_timers() = TtlRequest(ns, id, std::chrono::hours(1));
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
    v1::StartTimersResponse response;
    const grpc::Status status = stub->StartTimers(&ctx, request, &response);
    EXPECT_TRUE(status.ok()) << status.error_message();
    std::map<int, int> codes;
    for (const v1::StartTimerResult& r : response.results()) {
      codes[r.code()]++;
      if (r.code() != 0 && message != nullptr) *message = r.message();
    }
    return codes;
  };
  auto ids = [](const std::string& prefix, int n) {
    std::vector<std::string> out;
    for (int i = 0; i < n; ++i) out.push_back(prefix + std::to_string(i));
    return out;
  };
  // 4 callers x 3 batches of 100 into "a", at once: exactly 250 admitted.
  std::atomic<int> admitted{0}, refused{0};
  std::string refusal;
  std::mutex mu;
  std::vector<std::thread> callers;
  for (int c = 0; c < 4; ++c) {
    callers.emplace_back([&, c] {
      for (int b = 0; b < 3; ++b) {
        std::string message;
        std::map<int, int> codes =
            start("a", ids("c" + std::to_string(c) + "b" + std::to_string(b) + "-", 100), &message);
        admitted += codes[0];
        refused += codes[static_cast<int>(grpc::StatusCode::RESOURCE_EXHAUSTED)];
        std::lock_guard lock(mu);
        if (!message.empty()) refusal = message;
      }
    });
  }
  for (auto& t : callers) t.join();
  EXPECT_EQ(admitted.load(), 250);
  EXPECT_EQ(refused.load(), 1200 - 250);
  EXPECT_NE(refusal.find("max_pending_per_namespace"), std::string::npos) << refusal;
  EXPECT_EQ(NamespaceStatsOf(*stub, "a").pending_timers(), 250u);
  // A batch with 10 ids given twice: the second of each is ALREADY_EXISTS, and its quota goes back.
  std::vector<std::string> with_duplicates = ids("d", 90);
  for (int i = 0; i < 10; ++i) with_duplicates.push_back("d" + std::to_string(i));
  std::map<int, int> codes = start("b", with_duplicates, nullptr);
  EXPECT_EQ(codes[0], 90);
  EXPECT_EQ(codes[static_cast<int>(grpc::StatusCode::ALREADY_EXISTS)], 10);
  EXPECT_EQ(NamespaceStatsOf(*stub, "b").pending_timers(), 90u);
  // 340 pending of 400: a batch of 100 gets 60 in, the rest refused by the lawnd-wide bound.
  codes = start("b", ids("e", 100), &refusal);
  EXPECT_EQ(codes[0], 60);
  EXPECT_EQ(codes[static_cast<int>(grpc::StatusCode::RESOURCE_EXHAUSTED)], 40);
  EXPECT_NE(refusal.find("max_pending_timers"), std::string::npos) << refusal;
  grpc::ClientContext ctx;
  v1::GetStatsResponse stats;
  ASSERT_TRUE(stub->GetStats(&ctx, v1::GetStatsRequest(), &stats).ok());
  EXPECT_EQ(stats.pending_timers(), 400u);
  EXPECT_EQ(NamespaceStatsOf(*stub, "b").pending_timers(), 150u);
}

// What a run of starts held and did not use (here: all of it, every item a duplicate) is given back before
// the next item's checks read the counters: the item into a new namespace fits.
TEST(TimerServiceLimitsTest, ABatchGivesBackItsUnusedQuotaBeforeItsNextNamespace) {
  TempDir dir;
  const std::string config = WriteFile(dir.path() + "/lawn.yaml", "max_pending_timers: 20\n");
  LawndProcess lawnd(dir.path() + "/data", {"--config", config, "--shards", "1"});
  lawnd.Start();
  auto stub = lawnd.stub();
  v1::StartTimersRequest request;
  for (int i = 0; i < 10; ++i)
    *request.add_timers() = TtlRequest("b", "t" + std::to_string(i), std::chrono::hours(1));
  auto call = [&](v1::StartTimersResponse* response) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
    return stub->StartTimers(&ctx, request, response);
  };
  v1::StartTimersResponse first;
  ASSERT_TRUE(call(&first).ok());
  for (const v1::StartTimerResult& r : first.results()) ASSERT_EQ(r.code(), 0) << r.message();
  // The same 10 again (a run that takes 10, the bound, and uses none), then one into a new namespace.
  *request.add_timers() = TtlRequest("c", "new", std::chrono::hours(1));
  v1::StartTimersResponse second;
  ASSERT_TRUE(call(&second).ok());
  ASSERT_EQ(second.results_size(), 11);
  for (int i = 0; i < 10; ++i)
    EXPECT_EQ(second.results(i).code(), static_cast<int>(grpc::StatusCode::ALREADY_EXISTS));
  EXPECT_EQ(second.results(10).code(), 0) << second.results(10).message();
  EXPECT_EQ(NamespaceStatsOf(*stub, "c").pending_timers(), 1u);
}

TEST(LawndStartupTest, BadConfigRefusesToStartNamingTheKey) {
  TempDir dir;
  const std::string config = WriteFile(dir.path() + "/lawn.yaml", "tick: 5 parsecs\n");
  LawndProcess lawnd(dir.path() + "/data", {"--config", config});
  EXPECT_EQ(lawnd.RunToExit(std::chrono::seconds(10)), 2);
  EXPECT_NE(lawnd.Log().find("tick"), std::string::npos) << lawnd.Log();
}

}  // namespace
}  // namespace lawn::testing

namespace lawn::testing {
namespace {

TEST(LawndStartupTest, JsonLogFormatWritesOneObjectPerLine) {
  TempDir dir;
  LawndProcess lawnd(dir.path() + "/data", {"--log-format", "json"});
  lawnd.Start();
  ASSERT_EQ(lawnd.Stop(SIGTERM), 0);
  std::istringstream lines(lawnd.Log());
  std::string line;
  int count = 0;
  while (std::getline(lines, line)) {
    ++count;
    EXPECT_EQ(line.front(), '{') << line;
    EXPECT_EQ(line.back(), '}') << line;
    EXPECT_NE(line.find("\"level\":\""), std::string::npos) << line;
    EXPECT_NE(line.find("\"msg\":\""), std::string::npos) << line;
  }
  EXPECT_GE(count, 3);
  EXPECT_NE(lawnd.Log().find("lawnd starting: "), std::string::npos);
}

}  // namespace
}  // namespace lawn::testing
