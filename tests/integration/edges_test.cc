// The documented limits of lawn.v1.TimerService at their edges, against the real lawnd: the 100-year TTL,
// deadlines between 1678 and 2262 (int64 ns since the epoch), the 10,000-item StartTimers batch, and
// ListTimers page sizes (0 = 100, at most 1000) and its first page of a namespace whose ordered index takes
// several worker rounds to build.
#include <string>
#include <tuple>
#include <vector>

#include "gtest/gtest.h"
#include "tests/integration/lawnd_process.h"
#include "tests/integration/test_client.h"

namespace lawn::testing {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

constexpr int64_t kDay = 24 * 3600;
constexpr int64_t kHundredYears = 36525 * kDay;  // 100 Julian years: the longest any 100 years can be.
// The latest and earliest instants int64 nanoseconds since the epoch can hold.
constexpr int64_t kLatestNs = INT64_MAX;  // 2262-04-11T23:47:16.854775807Z
constexpr int64_t kEarliestNs = INT64_MIN;  // 1677-09-21T00:12:43.145224192Z

v1::StartTimerRequest TtlSeconds(const std::string& id, int64_t seconds) {
  v1::StartTimerRequest r;
  r.set_namespace_("edge");
  r.set_id(id);
  r.mutable_ttl()->set_seconds(seconds);
  return r;
}

class EdgesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    lawnd_ = std::make_unique<LawndProcess>(dir_.path() + "/data");
    lawnd_->Start();
    stub_ = lawnd_->stub();
  }
  void ExpectInvalid(const v1::StartTimerRequest& r, const std::string& needle) {
    const grpc::Status s = Call(*stub_, r);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << r.id() << ": " << s.error_message();
    EXPECT_NE(s.error_message().find(needle), std::string::npos) << r.id() << ": " << s.error_message();
  }
  grpc::Status Get(const std::string& id, v1::Timer* out = nullptr) {
    grpc::ClientContext ctx;
    v1::GetTimerRequest r;
    r.set_namespace_("edge");
    r.set_id(id);
    v1::GetTimerResponse resp;
    grpc::Status s = stub_->GetTimer(&ctx, r, &resp);
    if (out != nullptr) *out = resp.timer();
    return s;
  }
  grpc::Status Reschedule(const v1::RescheduleTimerRequest& r) {
    grpc::ClientContext ctx;
    v1::RescheduleTimerResponse resp;
    return stub_->RescheduleTimer(&ctx, r, &resp);
  }
  grpc::Status List(const std::string& ns, int32_t page_size, const std::string& token, v1::ListTimersResponse* out) {
    grpc::ClientContext ctx;
    v1::ListTimersRequest r;
    r.set_namespace_(ns);
    r.set_page_size(page_size);
    r.set_page_token(token);
    return stub_->ListTimers(&ctx, r, out);
  }

  TempDir dir_;
  std::unique_ptr<LawndProcess> lawnd_;
  std::unique_ptr<v1::TimerService::Stub> stub_;
};

TEST_F(EdgesTest, TtlOfAHundredYearsIsAcceptedAndMoreIsRefused) {
  const int64_t before = WallNowNs();
  v1::Timer t;
  ASSERT_TRUE(Call(*stub_, TtlSeconds("century", kHundredYears), &t).ok());
  const int64_t after = WallNowNs();
  EXPECT_EQ(t.ttl().seconds(), kHundredYears);
  EXPECT_GE(ToNs(t.deadline()), before + kHundredYears * 1'000'000'000);
  EXPECT_LE(ToNs(t.deadline()), after + kHundredYears * 1'000'000'000);
  v1::Timer got;
  ASSERT_TRUE(Get("century", &got).ok());
  EXPECT_EQ(ToNs(got.deadline()), ToNs(t.deadline()));

  ExpectInvalid(TtlSeconds("101-years", 36890 * kDay), "100 years");
  // Past any allowance for leap days: 100 years of 366 days, plus a second.
  ExpectInvalid(TtlSeconds("366-day-years", 36600 * kDay + 1), "100 years");
  // The interval has the same bound.
  v1::StartTimerRequest recurring = TtlSeconds("interval", 60);
  recurring.mutable_interval()->set_seconds(kHundredYears);
  EXPECT_TRUE(Call(*stub_, recurring).ok());
  recurring.set_id("interval-101-years");
  recurring.mutable_interval()->set_seconds(36890 * kDay);
  ExpectInvalid(recurring, "interval");
  // So does a reschedule's TTL.
  v1::RescheduleTimerRequest move;
  move.set_namespace_("edge");
  move.set_id("century");
  move.mutable_ttl()->set_seconds(36890 * kDay);
  const grpc::Status refused = Reschedule(move);
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << refused.error_message();
  move.mutable_ttl()->set_seconds(kHundredYears);
  EXPECT_TRUE(Reschedule(move).ok());
  // Nothing refused was started.
  EXPECT_EQ(Get("101-years").error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(Get("366-day-years").error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(Get("interval-101-years").error_code(), grpc::StatusCode::NOT_FOUND);
}

// "At most 100 years" is 100 Julian years (36525 days), the longest any 100 years are; a day more is refused.
TEST_F(EdgesTest, TtlOfADayMoreThanAHundredYearsIsRefused) {
  ExpectInvalid(TtlSeconds("century-and-a-day", kHundredYears + kDay), "100 years");
}

TEST_F(EdgesTest, DeadlinesFrom1678To2262AreAcceptedAndBeyondRefused) {
  // The last whole second before 2262-04-11T23:47:16Z, to the nanosecond: pending, listed, exact.
  const int64_t latest = 9'223'372'035'999'999'999;  // 2262-04-11T23:47:15.999999999Z
  v1::Timer t;
  ASSERT_TRUE(Call(*stub_, DeadlineRequest("edge", "2262", latest), &t).ok());
  EXPECT_EQ(ToNs(t.deadline()), latest);
  v1::Timer got;
  ASSERT_TRUE(Get("2262", &got).ok());
  EXPECT_EQ(ToNs(got.deadline()), latest);
  v1::ListTimersResponse page;
  ASSERT_TRUE(List("edge", 0, "", &page).ok());
  ASSERT_EQ(page.timers_size(), 1);
  EXPECT_EQ(ToNs(page.timers(0).deadline()), latest);

  // 1677-09-21T00:12:45Z, in range: long past, so it fires at once, marked late.
  TestSubscriber sub(*stub_, "edge");
  ASSERT_TRUE(Call(*stub_, DeadlineRequest("edge", "1677", -9'223'372'035'000'000'000)).ok());
  std::optional<v1::Expiration> e = sub.Next(seconds(30));
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->timer().id(), "1677");
  EXPECT_TRUE(e->late());
  sub.Ack(e->delivery_id());

  // Beyond what int64 ns can hold, on either side, and malformed nanos: refused, naming the rule.
  for (const auto& [id, s, nanos] : {std::tuple<const char*, int64_t, int32_t>{"after-2262", 9'223'372'037, 0},
                                     {"year-40000", 38'000LL * 365 * kDay, 0},
                                     {"before-1678", -9'223'372'037, 0},
                                     {"negative-nanos", 1'000, -1},
                                     {"nanos-overflow", 1'000, 1'000'000'000}}) {
    v1::StartTimerRequest r = DeadlineRequest("edge", id, 0);
    r.mutable_deadline()->set_seconds(s);
    r.mutable_deadline()->set_nanos(nanos);
    ExpectInvalid(r, "deadline");
    EXPECT_EQ(Get(id).error_code(), grpc::StatusCode::NOT_FOUND) << id;
  }
  const grpc::Status s = Call(*stub_, [] {
    v1::StartTimerRequest r = DeadlineRequest("edge", "msg", 0);
    r.mutable_deadline()->set_seconds(9'223'372'037);
    return r;
  }());
  EXPECT_NE(s.error_message().find("1678"), std::string::npos) << s.error_message();
  EXPECT_NE(s.error_message().find("2262"), std::string::npos) << s.error_message();

  // A reschedule to the edge is accepted, and beyond it refused.
  v1::RescheduleTimerRequest move;
  move.set_namespace_("edge");
  move.set_id("2262");
  SetTimestampNs(latest - 1'000'000'000, move.mutable_deadline());
  EXPECT_TRUE(Reschedule(move).ok());
  move.mutable_deadline()->set_seconds(9'223'372'037);
  move.mutable_deadline()->set_nanos(0);
  EXPECT_EQ(Reschedule(move).error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  ASSERT_TRUE(Get("2262", &got).ok());
  EXPECT_EQ(ToNs(got.deadline()), latest - 1'000'000'000);
}

// Every deadline representable as int64 ns since the epoch is accepted, to the last and first nanosecond.
TEST_F(EdgesTest, EveryRepresentableDeadlineIsAccepted) {
  v1::Timer t;
  const grpc::Status latest = Call(*stub_, DeadlineRequest("edge", "latest", kLatestNs), &t);
  EXPECT_TRUE(latest.ok()) << latest.error_message();
  EXPECT_EQ(ToNs(t.deadline()), kLatestNs);
  const grpc::Status earliest = Call(*stub_, DeadlineRequest("edge", "earliest", kEarliestNs));
  EXPECT_TRUE(earliest.ok()) << earliest.error_message();
}

TEST_F(EdgesTest, StartTimersTakesUpTo10000ItemsAndRefusesMore) {
  auto batch_of = [](int n, const std::string& prefix) {
    v1::StartTimersRequest req;
    for (int i = 0; i < n; ++i) *req.add_timers() = TtlRequest("batch", prefix + std::to_string(i), milliseconds(3'600'000));
    req.set_return_timers(true);  // 10,000 timers echoed still fit in one answer.
    return req;
  };
  {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + seconds(60));
    v1::StartTimersResponse resp;
    ASSERT_TRUE(stub_->StartTimers(&ctx, batch_of(10'000, "ok-"), &resp).ok());
    ASSERT_EQ(resp.results_size(), 10'000);
    for (int i = 0; i < resp.results_size(); ++i) {
      ASSERT_EQ(resp.results(i).code(), 0) << i << ": " << resp.results(i).message();
      ASSERT_EQ(resp.results(i).timer().id(), "ok-" + std::to_string(i));
    }
  }
  {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + seconds(60));
    v1::StartTimersResponse resp;
    const grpc::Status s = stub_->StartTimers(&ctx, batch_of(10'001, "over-"), &resp);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << s.error_message();
    EXPECT_NE(s.error_message().find("10000"), std::string::npos) << s.error_message();
    EXPECT_EQ(resp.results_size(), 0);
  }
  // The refused batch started nothing; the accepted one all of its items.
  const v1::NamespaceStats stats = NamespaceStatsOf(*stub_, "batch");
  EXPECT_EQ(stats.pending_timers(), 10'000u);
  grpc::ClientContext ctx;
  v1::GetTimerRequest r;
  r.set_namespace_("batch");
  r.set_id("over-0");
  v1::GetTimerResponse resp;
  EXPECT_EQ(stub_->GetTimer(&ctx, r, &resp).error_code(), grpc::StatusCode::NOT_FOUND);
}

TEST_F(EdgesTest, ListTimersPageSizeZeroMeansOneHundred) {
  std::vector<v1::StartTimerRequest> requests;
  std::vector<std::string> ids;
  for (int i = 0; i < 250; ++i) {
    ids.push_back("id-" + std::to_string(1000 + i));
    requests.push_back(TtlRequest("pages", ids.back(), milliseconds(3'600'000)));
  }
  ASSERT_TRUE(StartAll(*stub_, requests));
  std::vector<std::string> seen;
  std::vector<int> sizes;
  std::string token;
  do {
    v1::ListTimersResponse page;
    ASSERT_TRUE(List("pages", 0, token, &page).ok());
    sizes.push_back(page.timers_size());
    for (const auto& t : page.timers()) seen.push_back(t.id());
    token = page.next_page_token();
    ASSERT_LT(sizes.size(), 10u) << "ListTimers keeps returning a next_page_token";
  } while (!token.empty());
  EXPECT_EQ(sizes, (std::vector<int>{100, 100, 50}));
  EXPECT_EQ(seen, ids);
  // 1000 is the largest page: everything at once, no token.
  v1::ListTimersResponse all;
  ASSERT_TRUE(List("pages", 1000, "", &all).ok());
  EXPECT_EQ(all.timers_size(), 250);
  EXPECT_TRUE(all.next_page_token().empty());
  for (const int32_t bad : {1001, -1}) {
    v1::ListTimersResponse page;
    const grpc::Status s = List("pages", bad, "", &page);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << bad;
    EXPECT_NE(s.error_message().find("page_size"), std::string::npos) << s.error_message();
  }
}

// A shard builds a namespace's ordered index when it is first listed, about a thousand timers per round: the
// first page of 30,000 timers waits for several rounds of each shard, and every page after it comes from the
// kept index, which follows the starts and deletes made between pages.
TEST_F(EdgesTest, ListingALargeNamespaceBuildsItsOrderOnceAndKeepsIt) {
  constexpr int kTimers = 30'000;
  for (const std::string ns : {"big", "other"}) {
    for (int base = 0; base < kTimers; base += 10'000) {
      v1::StartTimersRequest req;
      for (int i = base; i < base + 10'000; ++i) {
        *req.add_timers() = TtlRequest(ns, "t" + std::to_string(100'000 + i), milliseconds(3'600'000));
      }
      grpc::ClientContext ctx;
      ctx.set_deadline(std::chrono::system_clock::now() + seconds(60));
      v1::StartTimersResponse resp;
      ASSERT_TRUE(stub_->StartTimers(&ctx, req, &resp).ok());
      for (const auto& r : resp.results()) ASSERT_EQ(r.code(), 0) << r.message();
    }
  }
  std::vector<std::string> seen;
  std::string token;
  for (int page = 0; page < 40; ++page) {
    v1::ListTimersResponse out;
    ASSERT_TRUE(List("big", 1000, token, &out).ok());
    for (const auto& t : out.timers()) seen.push_back(t.id());
    token = out.next_page_token();
    if (page == 0) {
      // Between pages: one timer deleted ahead of the cursor, one started ahead of it, one behind it.
      grpc::ClientContext ctx;
      v1::DeleteTimerRequest del;
      del.set_namespace_("big");
      del.set_id("t120000");
      v1::DeleteTimerResponse del_resp;
      ASSERT_TRUE(stub_->DeleteTimer(&ctx, del, &del_resp).ok());
      ASSERT_TRUE(Call(*stub_, TtlRequest("big", "t125000x", milliseconds(3'600'000))).ok());
      ASSERT_TRUE(Call(*stub_, TtlRequest("big", "t100000x", milliseconds(3'600'000))).ok());
    }
    if (token.empty()) break;
  }
  std::vector<std::string> expected;
  for (int i = 0; i < kTimers; ++i) {
    const std::string id = "t" + std::to_string(100'000 + i);
    if (id == "t120000") continue;
    expected.push_back(id);
    if (id == "t125000") expected.push_back("t125000x");
  }
  ASSERT_EQ(seen.size(), expected.size());
  EXPECT_EQ(seen, expected);
}

}  // namespace
}  // namespace lawn::testing
