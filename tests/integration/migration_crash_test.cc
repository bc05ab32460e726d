// kill -9 during the migration of a data dir between storage formats 2 and 3 (storage/store_migration.h),
// both ways: lawnd, started with --storage-engine log on a copy of a format 2 dir that a RocksDB lawnd wrote
// (or rocksdb on a format 3 dir), is killed at moments spread over its migration and started again. Every
// time, every timer is there and the migration ended finished (resumed, or done again from the start), never
// half applied.
#include <signal.h>

#include <chrono>
#include <filesystem>
#include <ostream>
#include <string>
#include <thread>

#include "gtest/gtest.h"
#include "tests/integration/lawnd_process.h"
#include "tests/integration/test_client.h"
#include "tests/testing/sanitized.h"

namespace lawn::testing {
namespace {

using std::chrono::milliseconds;
namespace fs = std::filesystem;

// About 0.5 s of migration in a plain build (BENCHMARKS: 2.5 s per million timers); sanitized builds are
// slower per timer, so fewer keep the test short while the kills still land inside the migration.
constexpr int kTimers = kSanitized ? 40'000 : 200'000;
constexpr int kBatch = 10'000;

struct Way {
  const char* from;      // storage.engine of the lawnd that writes the data dir.
  const char* to;        // storage.engine of the lawnd that migrates it.
  const char* format;    // The format migrated to.
  const char* building;  // store_migration.h's names.
  const char* backup;
};

void PrintTo(const Way& way, std::ostream* os) { *os << way.from << " -> " << way.to; }

class MigrationCrashTest : public ::testing::TestWithParam<Way> {};

TEST_P(MigrationCrashTest, AKillNineAtAnyMomentOfTheMigrationLosesNothing) {
  const Way& way = GetParam();
  TempDir dir;
  const std::string source = dir.path() + "/source";
  {
    LawndProcess old(source, {"--storage-engine", way.from, "--durability", "interval"});
    old.Start();
    auto stub = old.stub();
    for (int b = 0; b < kTimers / kBatch; ++b) {
      v1::StartTimersRequest request;
      for (int i = 0; i < kBatch; ++i) {
        *request.add_timers() =
            TtlRequest("mig", "timer-" + std::to_string(b * kBatch + i), milliseconds(3'600'000));
      }
      grpc::ClientContext ctx;
      v1::StartTimersResponse response;
      ASSERT_TRUE(stub->StartTimers(&ctx, request, &response).ok());
      for (const v1::StartTimerResult& r : response.results()) ASSERT_EQ(r.code(), 0) << r.message();
    }
    ASSERT_EQ(old.Stop(SIGTERM), 0);
  }

  // Kills from right after the migration begins to past its end (the last rounds may find it done).
  int resumed = 0, redone = 0;
  for (int delay_ms : {0, 20, 60, 120, 200, 300, 450, 700}) {
    SCOPED_TRACE("killed " + std::to_string(delay_ms) + " ms into the migration");
    const std::string data = dir.path() + "/data-" + std::to_string(delay_ms);
    fs::copy(source, data, fs::copy_options::recursive);
    LawndProcess lawnd(data, {"--storage-engine", way.to, "--durability", "interval"});
    lawnd.Launch();
    ASSERT_TRUE(lawnd.WaitForLog(std::string("migrating it to ") + way.format, kStartTimeout)) << lawnd.Log();
    std::this_thread::sleep_for(milliseconds(delay_ms));
    lawnd.Kill();

    lawnd.Start();
    const std::string log = lawnd.Log();
    const std::string restart = log.substr(log.rfind("lawnd starting"));
    if (restart.find("finished the storage migration that a restart interrupted") != std::string::npos) {
      ++resumed;
    } else if (restart.find(std::string("migrated to ") + way.format + " in") != std::string::npos) {
      ++redone;
    } else {
      // Killed after the switch: the restart finds the new format.
      EXPECT_NE(restart.find("data dir " + data + ": " + way.format), std::string::npos) << log;
    }
    EXPECT_EQ(StatsOf(*lawnd.stub()).pending_timers(), static_cast<uint64_t>(kTimers)) << log;
    v1::Timer t;
    EXPECT_TRUE(GetTimer(*lawnd.stub(), "mig", "timer-" + std::to_string(kTimers - 1), &t).ok());
    EXPECT_FALSE(fs::exists(data + "/" + way.building));
    EXPECT_TRUE(fs::exists(data + "/" + way.backup + "/CURRENT"));
    ASSERT_EQ(lawnd.Stop(SIGTERM), 0);
    fs::remove_all(data);
  }
  // Which rounds caught the switch is up to timing; most kills land while the new store is built.
  std::printf("kills during the migration: %d redone from the start, %d switches resumed\n", redone, resumed);
  EXPECT_GT(redone, 0);
}

INSTANTIATE_TEST_SUITE_P(
    Ways, MigrationCrashTest,
    ::testing::Values(Way{"rocksdb", "log", "storage format 3", "format3.migrating", "format2-backup"},
                      Way{"log", "rocksdb", "storage format 2", "format2.migrating", "format3-backup"}),
    [](const ::testing::TestParamInfo<Way>& info) {
      return std::string(info.param.to) == "log" ? "To3" : "To2";
    });

}  // namespace
}  // namespace lawn::testing
