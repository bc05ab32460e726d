// A store lawnd cannot fully read back: a corrupt record stops recovery before anything fires, with the key
// and the reason in the log and exit code 3; --skip-corrupt-records starts anyway, logging and counting what
// it skipped.
#include <signal.h>

#include <string>

#include "gtest/gtest.h"
#include "tests/integration/lawnd_process.h"
#include "tests/integration/test_client.h"
#include "tests/testing/raw_rocksdb.h"

namespace lawn::testing {
namespace {

using std::chrono::milliseconds;

TEST(RecoveryFailureTest, CorruptRecordStopsRecoveryWithExitCode3UnlessSkipped) {
  TempDir dir;
  const std::string data = dir.path() + "/data";
  {
    LawndProcess lawnd(data);
    lawnd.Start();
    auto stub = lawnd.stub();
    ASSERT_TRUE(StartTtl(*stub, "ns", "good", milliseconds(2000)).ok());
    ASSERT_EQ(lawnd.Stop(SIGTERM), 0);
  }
  ASSERT_TRUE(PutRawForTest(data, "timers", std::string("ns\0bad", 6), std::string("\x09garbage")).ok());

  LawndProcess refused(data);
  EXPECT_EQ(refused.RunToExit(std::chrono::seconds(60)), 3);
  const std::string log = refused.Log();
  EXPECT_NE(log.find("recovery failed"), std::string::npos) << log;
  EXPECT_NE(log.find("0x6e7300626164"), std::string::npos) << "the key, in hex: " << log;
  EXPECT_NE(log.find("--skip-corrupt-records"), std::string::npos) << log;

  LawndProcess skipping(data, {"--skip-corrupt-records", "--metrics-listen", "127.0.0.1:0"});
  skipping.Start();
  EXPECT_NE(skipping.Log().find("skipped 1 corrupt records"), std::string::npos) << skipping.Log();
  EXPECT_EQ(MetricSample(HttpGet(MetricsPortFromLog(skipping.Log()), "/metrics"), "lawn_corrupt_records_skipped"), 1);
  // The good timer survived and still fires.
  auto stub = skipping.stub();
  TestSubscriber sub(*stub, "ns");
  std::optional<v1::Expiration> e = sub.Next(milliseconds(30000));
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->timer().id(), "good");
  ASSERT_TRUE(sub.Ack(e->delivery_id()));
}

}  // namespace
}  // namespace lawn::testing
