// lawnctl's output formatting (client/cli_output.h) and the chrono <-> protobuf time conversions it relies
// on.
#include "client/cli_output.h"

#include <chrono>
#include <string>

#include "client/proto_time.h"
#include "gtest/gtest.h"

namespace lawn {
namespace {

using std::chrono::milliseconds;
using std::chrono::nanoseconds;
using std::chrono::seconds;

constexpr int64_t kJan31Noon = 1738324800;  // 2025-01-31T12:00:00Z

google::protobuf::Timestamp Ts(int64_t s, int32_t nanos = 0) {
  google::protobuf::Timestamp t;
  t.set_seconds(s);
  t.set_nanos(nanos);
  return t;
}

v1::Timer SampleTimer() {
  v1::Timer timer;
  timer.set_namespace_("default");
  timer.set_id("job-1");
  *timer.mutable_ttl() = ToProtoDuration(milliseconds(1500));
  *timer.mutable_deadline() = Ts(kJan31Noon, 250'000'000);
  timer.set_payload("hi");
  return timer;
}

TEST(PrintableBytesTest, PrintsPlainTextVerbatimAndQuotesTheRest) {
  EXPECT_EQ(PrintableBytes("job-1"), "job-1");
  EXPECT_EQ(PrintableBytes("a b"), "\"a b\"");
  EXPECT_EQ(PrintableBytes(std::string("\x00\x01", 2)), "\"\\x00\\x01\"");
  EXPECT_EQ(PrintableBytes("say \"x\""), "\"say \\\"x\\\"\"");
  EXPECT_EQ(PrintableBytes(""), "\"\"");
}

TEST(FormatTimestampTest, PrintsRfc3339UtcWithTheNeededFraction) {
  EXPECT_EQ(FormatTimestamp(Ts(kJan31Noon)), "2025-01-31T12:00:00Z");
  EXPECT_EQ(FormatTimestamp(Ts(kJan31Noon, 250'000'000)), "2025-01-31T12:00:00.25Z");
  EXPECT_EQ(FormatTimestamp(Ts(kJan31Noon, 1)), "2025-01-31T12:00:00.000000001Z");
}

TEST(ProtoTimeTest, ConvertsExactlyBothWays) {
  for (int64_t ns : {int64_t{0}, int64_t{1}, int64_t{-1}, int64_t{1'500'000'000}, int64_t{-1'500'000'000}}) {
    const google::protobuf::Duration d = ToProtoDuration(nanoseconds(ns));
    EXPECT_TRUE((d.seconds() <= 0 && d.nanos() <= 0) || (d.seconds() >= 0 && d.nanos() >= 0)) << ns;
    EXPECT_EQ(FromProtoDuration(d).count(), ns);
    const auto t = std::chrono::system_clock::time_point(nanoseconds(ns));
    const google::protobuf::Timestamp ts = ToProtoTimestamp(t);
    EXPECT_GE(ts.nanos(), 0) << ns;
    EXPECT_EQ(FromProtoTimestamp(ts), t);
  }
  const google::protobuf::Timestamp before_epoch =
      ToProtoTimestamp(std::chrono::system_clock::time_point(-milliseconds(1)));
  EXPECT_EQ(before_epoch.seconds(), -1);
  EXPECT_EQ(before_epoch.nanos(), 999'000'000);
}

TEST(ExpirationLineTest, ShowsIdTimesLatenessAttemptAndPayload) {
  v1::Expiration e;
  *e.mutable_timer() = SampleTimer();
  *e.mutable_fired_at() = Ts(kJan31Noon, 251'500'000);
  e.set_attempt(2);
  e.set_delivery_id(9);
  EXPECT_DOUBLE_EQ(LatenessMs(e), 1.5);
  EXPECT_EQ(ExpirationLine(e),
            "job-1 deadline=2025-01-31T12:00:00.25Z fired_at=2025-01-31T12:00:00.2515Z lateness_ms=1.500 "
            "attempt=2 payload=hi");
}

TEST(ExpirationJsonTest, IsTheMessageJsonWithLatenessFirst) {
  v1::Expiration e;
  *e.mutable_timer() = SampleTimer();
  *e.mutable_fired_at() = Ts(kJan31Noon, 252'000'000);
  e.set_attempt(1);
  e.set_delivery_id(7);
  absl::StatusOr<std::string> json = ExpirationJson(e);
  ASSERT_TRUE(json.ok()) << json.status();
  EXPECT_EQ(json->rfind("{\"latenessMs\":2.000,\"timer\":{", 0), 0u) << *json;
  EXPECT_NE(json->find("\"id\":\"am9iLTE=\""), std::string::npos) << *json;  // base64("job-1")
  EXPECT_NE(json->find("\"deliveryId\":\"7\""), std::string::npos) << *json;
  EXPECT_NE(json->find("\"late\":false"), std::string::npos) << *json;  // Defaults are printed too.
  EXPECT_EQ(json->find('\n'), std::string::npos);
}

TEST(TimerTextTest, SummaryAndDetailsShowTheTimer) {
  v1::Timer timer = SampleTimer();
  EXPECT_EQ(TimerSummary("started", timer),
            "started job-1 in namespace default: deadline 2025-01-31T12:00:00.25Z (ttl 1.5s)");
  *timer.mutable_interval() = ToProtoDuration(seconds(60));
  EXPECT_EQ(TimerSummary("rescheduled", timer),
            "rescheduled job-1 in namespace default: deadline 2025-01-31T12:00:00.25Z (ttl 1.5s, every 1m)");
  EXPECT_EQ(TimerDetails(timer),
            "namespace  default\n"
            "id         job-1\n"
            "deadline   2025-01-31T12:00:00.25Z\n"
            "ttl        1.5s\n"
            "interval   1m\n"
            "payload    hi\n");
}

TEST(TimerTableTest, AlignsColumnsUnderAHeader) {
  v1::ListTimersResponse page;
  *page.add_timers() = SampleTimer();
  v1::Timer other = SampleTimer();
  other.set_id("a-much-longer-id");
  other.clear_payload();
  *page.add_timers() = other;
  EXPECT_EQ(TimerTable(page),
            "ID                DEADLINE                 TTL   INTERVAL  PAYLOAD\n"
            "job-1             2025-01-31T12:00:00.25Z  1.5s  -         hi\n"
            "a-much-longer-id  2025-01-31T12:00:00.25Z  1.5s  -         -\n");
  EXPECT_EQ(TimerTable(v1::ListTimersResponse()), "ID  DEADLINE  TTL  INTERVAL  PAYLOAD\n");
}

TEST(StatsTextTest, PrintsTotalsShardsAndNamespaces) {
  v1::GetStatsResponse stats;
  stats.set_pending_timers(12);
  stats.set_outbox(3);
  stats.set_redeliveries(1);
  v1::ShardStats* shard = stats.add_shards();
  shard->set_shard(0);
  shard->set_pending_timers(12);
  shard->set_lawn_timers(10);
  shard->set_wheel_timers(2);
  shard->set_lawn_buckets(4);
  v1::NamespaceStats* ns = stats.add_namespaces();
  ns->set_namespace_("default");
  ns->set_pending_timers(12);
  ns->set_outbox(3);
  ns->set_subscribers(2);
  EXPECT_EQ(StatsText(stats),
            "pending timers  12\n"
            "outbox          3\n"
            "redeliveries    1\n"
            "\n"
            "SHARD  PENDING  LAWN  WHEEL  BUCKETS\n"
            "0      12       10    2      4\n"
            "\n"
            "NAMESPACE  PENDING  OUTBOX  SUBSCRIBERS\n"
            "default    12       3       2\n");
}

TEST(ToJsonTest, PrintsDefaultFieldsOnOneLine) {
  v1::GetStatsResponse stats;
  absl::StatusOr<std::string> json = ToJson(stats);
  ASSERT_TRUE(json.ok()) << json.status();
  EXPECT_EQ(
      *json,
      "{\"pendingTimers\":\"0\",\"outbox\":\"0\",\"redeliveries\":\"0\",\"shards\":[],\"namespaces\":[]}");
}

}  // namespace
}  // namespace lawn
