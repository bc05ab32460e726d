// Deadlines long before the host booted (a timer due during a reboot, data moved to a fresh node) keep their
// real value: the delivered deadline is the stored one, marked late, and a recurring timer stays on its grid.
#include <string>

#include "gtest/gtest.h"
#include "tests/integration/lawnd_process.h"
#include "tests/integration/test_client.h"

namespace lawn::testing {
namespace {

using std::chrono::milliseconds;

constexpr int64_t k1990 = 631'152'000;  // 1990-01-01T00:00:00Z, in seconds.

TEST(DeadlineEdgesTest, DeadlineBeforeBootIsDeliveredAsStoredAndRecurringStaysOnItsGrid) {
  TempDir dir;
  LawndProcess lawnd(dir.path() + "/data");
  lawnd.Start();
  auto stub = lawnd.stub();
  TestSubscriber sub(*stub, "old");
  v1::StartTimerRequest once = TtlRequest("old", "once", milliseconds(1));
  once.mutable_deadline()->set_seconds(k1990);
  once.mutable_deadline()->set_nanos(123);
  v1::Timer stored;
  ASSERT_TRUE(Call(*stub, once, &stored).ok());
  EXPECT_EQ(ToNs(stored.deadline()), k1990 * 1'000'000'000 + 123);
  std::optional<v1::Expiration> e = sub.Next(milliseconds(15000));
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->timer().id(), "once");
  EXPECT_EQ(ToNs(e->timer().deadline()), k1990 * 1'000'000'000 + 123);
  EXPECT_TRUE(e->late());
  ASSERT_TRUE(sub.Ack(e->delivery_id()));

  v1::StartTimerRequest beat = TtlRequest("old", "beat", milliseconds(1));
  beat.mutable_deadline()->set_seconds(k1990);
  beat.mutable_interval()->set_nanos(250'000'000);
  ASSERT_TRUE(Call(*stub, beat).ok());
  const int64_t origin = k1990 * 1'000'000'000;
  for (int i = 0; i < 3; ++i) {
    std::optional<v1::Expiration> b = sub.Next(milliseconds(15000));
    ASSERT_TRUE(b.has_value());
    const int64_t deadline = ToNs(b->timer().deadline());
    EXPECT_EQ((deadline - origin) % 250'000'000, 0) << "off the grid that started in 1990";
    EXPECT_GE(ToNs(b->fired_at()), deadline);
    ASSERT_TRUE(sub.Ack(b->delivery_id()));
  }
}

}  // namespace
}  // namespace lawn::testing
