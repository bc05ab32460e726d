// lawn_dump (server/data_dir_dump.h) run as a binary on data dirs the real lawnd wrote, with either engine:
// every pending timer and undelivered expiration as a JSON line, a running lawnd's dir refused, a killed
// lawnd's dir read as its next start recovers it, and not a byte of the dir changed by the dump.
#include <signal.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/str_split.h"
#include "gtest/gtest.h"
#include "tests/integration/lawnd_process.h"
#include "tests/integration/spawn.h"
#include "tests/integration/test_client.h"
#include "tests/storage/storage_test_util.h"

namespace lawn::testing {
namespace {

using std::chrono::milliseconds;

ProgramResult Dump(const TempDir& dir, const std::string& data_dir) {
  static int runs = 0;
  return RunProgram({LAWN_DUMP_PATH, data_dir}, dir.path(), "dump" + std::to_string(runs++), kStartTimeout);
}

// The lines of `out` that hold `needle`.
std::vector<std::string> LinesWith(const std::string& out, const std::string& needle) {
  std::vector<std::string> lines;
  for (absl::string_view line : absl::StrSplit(out, '\n', absl::SkipEmpty())) {
    if (line.find(needle) != absl::string_view::npos) lines.emplace_back(line);
  }
  return lines;
}

class DumpTest : public ::testing::TestWithParam<const char*> {};

TEST_P(DumpTest, PrintsEveryPendingTimerAndUndeliveredExpirationOfAStoppedLawnd) {
  TempDir dir;
  const std::string data = dir.path() + "/data";
  LawndProcess lawnd(data, {"--storage-engine", GetParam()});
  lawnd.Start();
  auto stub = lawnd.stub();
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(StartTtl(*stub, "dump", "t" + std::to_string(i), milliseconds(3'600'000), nullptr,
                         "payload " + std::to_string(i))
                    .ok());
  }
  ASSERT_TRUE(StartTtl(*stub, "dump", "fired", milliseconds(50), nullptr, "keep me").ok());
  ASSERT_TRUE(WaitFor([&] { return StatsOf(*stub).outbox() == 1; }));  // Fired; nobody subscribed.

  // A running lawnd holds its data dir.
  ProgramResult refused = Dump(dir, data);
  EXPECT_EQ(refused.code, 1) << refused.err;
  EXPECT_NE(refused.err.find("in use by another process"), std::string::npos) << refused.err;
  EXPECT_TRUE(refused.out.empty()) << refused.out;

  ASSERT_EQ(lawnd.Stop(SIGTERM), 0);
  const auto before = storage_test::DirFingerprint(data);
  ProgramResult dumped = Dump(dir, data);
  ASSERT_EQ(dumped.code, 0) << dumped.err;
  EXPECT_EQ(storage_test::DirFingerprint(data), before) << "the dump wrote into the data dir";
  EXPECT_NE(dumped.err.find("3 pending timers, 1 outbox entries, 0 staged entries"), std::string::npos)
      << dumped.err;
  EXPECT_EQ(LinesWith(dumped.out, "{\"pending\":").size(), 3u) << dumped.out;
  for (int i = 0; i < 3; ++i) {
    const std::string id = "\"id\":\"" + absl::Base64Escape("t" + std::to_string(i)) + "\"";
    const std::vector<std::string> lines = LinesWith(dumped.out, id);
    ASSERT_EQ(lines.size(), 1u) << dumped.out;
    EXPECT_NE(lines[0].find("\"namespace\":\"dump\""), std::string::npos) << lines[0];
    EXPECT_NE(lines[0].find("\"payload\":\"" + absl::Base64Escape("payload " + std::to_string(i)) + "\""),
              std::string::npos)
        << lines[0];
    EXPECT_NE(lines[0].find("\"ttl\":\"3600s\""), std::string::npos) << lines[0];
  }
  const std::vector<std::string> outbox = LinesWith(dumped.out, "{\"outbox\":");
  ASSERT_EQ(outbox.size(), 1u) << dumped.out;
  EXPECT_NE(outbox[0].find("\"id\":\"" + absl::Base64Escape("fired") + "\""), std::string::npos) << outbox[0];
  EXPECT_NE(outbox[0].find("\"payload\":\"" + absl::Base64Escape("keep me") + "\""), std::string::npos)
      << outbox[0];
  EXPECT_NE(outbox[0].find("\"firedAt\":"), std::string::npos) << outbox[0];
  EXPECT_NE(outbox[0].find("\"deliveryId\":"), std::string::npos) << outbox[0];

  // The dump left the dir whole.
  lawnd.Start();
  stub = lawnd.stub();
  const v1::GetStatsResponse stats = StatsOf(*stub);
  EXPECT_EQ(stats.pending_timers(), 3u);
  EXPECT_EQ(stats.outbox(), 1u);

  // A lawnd killed with SIGKILL: its last write is in the log (or RocksDB's WAL) only, and the dump reads it.
  ASSERT_TRUE(StartTtl(*stub, "dump", "last", milliseconds(3'600'000)).ok());
  lawnd.Kill();
  ProgramResult after_kill = Dump(dir, data);
  ASSERT_EQ(after_kill.code, 0) << after_kill.err;
  EXPECT_NE(after_kill.err.find("4 pending timers, 1 outbox entries"), std::string::npos) << after_kill.err;
  EXPECT_EQ(LinesWith(after_kill.out, "\"id\":\"" + absl::Base64Escape("last") + "\"").size(), 1u)
      << after_kill.out;
  lawnd.Start();
  EXPECT_EQ(StatsOf(*lawnd.stub()).pending_timers(), 4u);
}

INSTANTIATE_TEST_SUITE_P(Engines, DumpTest, ::testing::Values("log", "rocksdb"));

TEST(DumpToolTest, ADirWithoutAStoreOrMidMigrationIsRefusedAndBadUsageIsExitTwo) {
  TempDir dir;
  ProgramResult empty = Dump(dir, dir.path());
  EXPECT_EQ(empty.code, 1);
  EXPECT_NE(empty.err.find("NOT_FOUND"), std::string::npos) << empty.err;
  EXPECT_NE(empty.err.find("holds no lawn store"), std::string::npos) << empty.err;
  // A migration under way (what a crash during one leaves) is lawnd's to finish, not the dump's to read.
  std::filesystem::create_directories(dir.path() + "/migrating/format3.migrating");
  {
    std::ofstream current(dir.path() + "/migrating/CURRENT");
    current << "MANIFEST-000001\n";
  }
  ProgramResult migrating = Dump(dir, dir.path() + "/migrating");
  EXPECT_EQ(migrating.code, 1);
  EXPECT_NE(migrating.err.find("FAILED_PRECONDITION"), std::string::npos) << migrating.err;
  EXPECT_NE(migrating.err.find("has not finished"), std::string::npos) << migrating.err;
  ProgramResult usage = RunProgram({LAWN_DUMP_PATH}, dir.path(), "usage", kStartTimeout);
  EXPECT_EQ(usage.code, 2);
  EXPECT_NE(usage.err.find("usage: lawn_dump DATA_DIR"), std::string::npos) << usage.err;
}

}  // namespace
}  // namespace lawn::testing
