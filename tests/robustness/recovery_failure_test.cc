// A store lawnd cannot fully read back: a corrupt record stops recovery before anything fires (the timers
// read before it are still pending, untouched, afterwards), with the key and the reason in the log and exit
// code 3; --skip-corrupt-records starts anyway, logging and counting what it skipped.
#include <signal.h>

#include <set>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tests/integration/lawnd_process.h"
#include "tests/integration/test_client.h"
#include "tests/testing/raw_rocksdb.h"

namespace lawn::testing {
namespace {

using std::chrono::milliseconds;

TEST(RecoveryFailureTest, CorruptRecordStopsRecoveryWithExitCode3UnlessSkipped) {
  // One shard, so that recovery hands it the good timers in full batches (4096) before it reads the corrupt
  // record, which sorts after them: were the shard allowed to fire before recovery is done, the failed run
  // would fire them into the outbox, and the run after it would deliver those with a fired_at of the
  // failed run.
  constexpr int kGood = 5000;
  TempDir dir;
  const std::string data = dir.path() + "/data";
  int64_t due_ns = 0;
  {
    // RocksDB (format 2): the test corrupts a record beneath lawnd; the later starts keep it (storage.engine
    // auto).
    LawndProcess lawnd(data, {"--shards", "1", "--storage-engine", "rocksdb"});
    lawnd.Start();
    auto stub = lawnd.stub();
    std::vector<v1::StartTimerRequest> good;
    for (int i = 0; i < kGood; ++i)
      good.push_back(TtlRequest("ns", "good" + std::to_string(i), milliseconds(10'000)));
    const int64_t before = WallNowNs();
    ASSERT_TRUE(StartAll(*stub, good));
    ASSERT_EQ(lawnd.Stop(SIGTERM), 0);
    // Stopped before any came due: all are still pending on disk, none in the outbox.
    ASSERT_LT(WallNowNs(), before + 10'000'000'000) << "lawnd took too long to stop; the timers fired in it";
    // Beyond the last deadline (started after `before`, 10 s TTL: a stop under a sanitizer can take seconds).
    due_ns = WallNowNs() + 11'000'000'000;
  }
  ASSERT_TRUE(PutRawForTest(data, "pending", StoredTimerKeyForTest(0, std::string("ns\0zbad", 7)),
                            std::string("\x09garbage"))
                  .ok());
  // Every good timer is due before the failed run starts: anything that fired them would fire them there.
  ASSERT_TRUE(WaitFor([&] { return WallNowNs() > due_ns; }, std::chrono::seconds(30)));

  LawndProcess refused(data, {"--shards", "1"});
  EXPECT_EQ(refused.RunToExit(std::chrono::seconds(60)), 3);
  const std::string log = refused.Log();
  EXPECT_NE(log.find("recovery failed"), std::string::npos) << log;
  EXPECT_NE(log.find("0x6e73007a626164"), std::string::npos) << "the key, in hex: " << log;
  EXPECT_NE(log.find("--skip-corrupt-records"), std::string::npos) << log;

  const int64_t skipping_started = WallNowNs();
  LawndProcess skipping(data, {"--shards", "1", "--skip-corrupt-records", "--metrics-listen", "127.0.0.1:0"});
  skipping.Start();
  EXPECT_NE(skipping.Log().find("skipped 1 corrupt records"), std::string::npos) << skipping.Log();
  EXPECT_EQ(MetricSample(HttpGet(MetricsPortFromLog(skipping.Log()), "/metrics"), "lawn_corrupt_records_skipped"), 1);
  // The good timers survived the failed run untouched: each fires now, once, a first attempt, late, and
  // fired by this run (an expiration written by the failed run would carry that run's fired_at).
  auto stub = skipping.stub();
  TestSubscriber sub(*stub, "ns");
  std::set<std::string> fired;
  int twice = 0, not_first = 0, not_late = 0, by_failed_run = 0;
  std::string example;  // One offending expiration, for the failure message.
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (fired.size() < kGood && std::chrono::steady_clock::now() < give_up) {
    std::vector<uint64_t> acks;
    for (const v1::Expiration& e : sub.Take(100, milliseconds(5000))) {
      const bool bad[] = {!fired.insert(e.timer().id()).second, e.attempt() != 1, !e.late(),
                          ToNs(e.fired_at()) < skipping_started};
      twice += bad[0];
      not_first += bad[1];
      not_late += bad[2];
      by_failed_run += bad[3];
      if ((bad[0] || bad[1] || bad[2] || bad[3]) && example.empty()) example = e.DebugString();
      acks.push_back(e.delivery_id());
    }
    if (!acks.empty()) {
      ASSERT_TRUE(sub.Ack(acks));
    }
  }
  EXPECT_EQ(by_failed_run, 0) << "expirations fired by the failed run, e.g. " << example;
  EXPECT_EQ(twice, 0) << example;
  EXPECT_EQ(not_first, 0) << example;
  EXPECT_EQ(not_late, 0) << example;
  EXPECT_EQ(fired.size(), static_cast<size_t>(kGood));
  EXPECT_EQ(NamespaceStatsOf(*stub, "ns").pending_timers(), 0u);
}

}  // namespace
}  // namespace lawn::testing
