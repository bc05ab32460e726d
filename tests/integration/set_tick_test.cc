// AdminService.SetTick against the real lawnd: the tick changes on the running daemon (every shard), timers
// pending across the change still fire and never early, and bad ticks are refused with what is allowed.
#include <chrono>
#include <set>
#include <string>
#include <vector>

#include "client/lawn_client.h"
#include "gtest/gtest.h"
#include "tests/integration/lawnd_process.h"
#include "tests/integration/test_client.h"

namespace lawn::testing {
namespace {

using std::chrono::milliseconds;

// Each timer's expiration arrives once, at or after its deadline, and fired_at is never before it.
void ExpectAllFireOnTime(TestSubscriber& sub, const std::vector<std::string>& ids) {
  std::vector<v1::Expiration> got = sub.Take(ids.size(), milliseconds(30'000));
  ASSERT_EQ(got.size(), ids.size());
  std::set<std::string> seen;
  for (const v1::Expiration& e : got) {
    seen.insert(e.timer().id());
    const int64_t deadline = e.timer().deadline().seconds() * 1'000'000'000LL + e.timer().deadline().nanos();
    const int64_t fired = e.fired_at().seconds() * 1'000'000'000LL + e.fired_at().nanos();
    EXPECT_GE(fired, deadline) << e.timer().id() << " fired early";
    // Not marked late unless it was (a starved worker under a sanitizer may fire a second late).
    if (fired - deadline < 900'000'000LL) {
      EXPECT_FALSE(e.late()) << e.timer().id();
    }
    sub.Ack(e.delivery_id());
  }
  EXPECT_EQ(seen, std::set<std::string>(ids.begin(), ids.end()));
}

TEST(SetTickTest, ChangesTheTickOfTheRunningDaemonAndNothingFiresEarly) {
  TempDir dir;
  LawndProcess lawnd(dir.path() + "/data", {"--tick", "1ms"});
  lawnd.Start();
  std::unique_ptr<LawnClient> client = LawnClient::Connect(lawnd.address());
  auto stub = lawnd.stub();
  TestSubscriber sub(*stub, "tick");

  // Pending across the change: some in the wheel (irregular TTLs), re-filed under the new tick.
  std::vector<std::string> ids;
  for (int i = 0; i < 40; ++i) {
    ids.push_back("a" + std::to_string(i));
    ASSERT_TRUE(StartTtl(*stub, "tick", ids.back(), milliseconds(300 + 7 * i)).ok());
  }
  absl::StatusOr<std::chrono::nanoseconds> previous = client->SetTick(milliseconds(10));
  ASSERT_TRUE(previous.ok()) << previous.status();
  EXPECT_EQ(*previous, milliseconds(1));
  // Started under the new tick.
  for (int i = 0; i < 40; ++i) {
    ids.push_back("b" + std::to_string(i));
    ASSERT_TRUE(StartTtl(*stub, "tick", ids.back(), milliseconds(50 + 3 * i)).ok());
  }
  ExpectAllFireOnTime(sub, ids);

  // The answer names the tick in force before; a fine tick back works the same way.
  previous = client->SetTick(std::chrono::microseconds(1));
  ASSERT_TRUE(previous.ok()) << previous.status();
  EXPECT_EQ(*previous, milliseconds(10));
  std::vector<std::string> more;
  for (int i = 0; i < 20; ++i) {
    more.push_back("c" + std::to_string(i));
    ASSERT_TRUE(StartTtl(*stub, "tick", more.back(), milliseconds(20 + 5 * i)).ok());
  }
  ExpectAllFireOnTime(sub, more);
}

TEST(SetTickTest, RefusesTicksOutsideTheConfigRangeAndKeepsTheOldOne) {
  TempDir dir;
  LawndProcess lawnd(dir.path() + "/data");
  lawnd.Start();
  std::unique_ptr<LawnClient> client = LawnClient::Connect(lawnd.address());
  for (std::chrono::nanoseconds bad : {std::chrono::nanoseconds(0), std::chrono::nanoseconds(999),
                                       std::chrono::nanoseconds(1'000'000'001), std::chrono::nanoseconds(-5)}) {
    absl::StatusOr<std::chrono::nanoseconds> r = client->SetTick(bad);
    ASSERT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << bad.count();
    EXPECT_NE(r.status().message().find("1us to 1s"), std::string::npos) << r.status();
  }
  // Still the default.
  absl::StatusOr<std::chrono::nanoseconds> r = client->SetTick(milliseconds(1));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(*r, milliseconds(1));
}

}  // namespace
}  // namespace lawn::testing
