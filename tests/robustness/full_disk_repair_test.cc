// Recovery's repair of the store (a key stored under two deadlines: storage/FORMAT.md) when lawnd starts
// below the free-space guard: the repair waits for the first round the guard admits, and is written then,
// before anything else. Needs root for a small tmpfs, as in CI.
#include <csignal>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "storage/record_coding.h"
#include "tests/integration/lawnd_process.h"
#include "tests/integration/test_client.h"
#include "tests/testing/raw_rocksdb.h"

namespace lawn::testing {
namespace {

using std::chrono::milliseconds;

TEST(FullDiskRepairTest, ARepairRefusedAtRecoveryIsWrittenByTheFirstAdmittedRound) {
  TempDir dir;
  const std::string mnt = dir.path() + "/small";
  SmallTmpfs disk(mnt, "160m");
  if (!disk.mounted()) GTEST_SKIP() << disk.why();
  const std::string data = mnt + "/data";
  const std::string config =
      WriteFile(dir.path() + "/lawn.yaml", "min_free_disk_bytes: 8MiB\nwrite_buffer_bytes: 16MiB\n");
  // RocksDB (format 2): the test writes records beneath lawnd; the later starts keep it (storage.engine
  // auto).
  LawndProcess lawnd(data, {"--config", config, "--storage-engine", "rocksdb"});
  lawnd.Start();
  auto stub = lawnd.stub();
  ASSERT_TRUE(StartTtl(*stub, "rec", "twice", milliseconds(3'600'000)).ok());
  v1::Timer twice;
  ASSERT_TRUE(GetTimer(*stub, "rec", "twice", &twice).ok());
  const int64_t later = ToNs(twice.deadline());
  // Fill the disk until the guard refuses.
  const grpc::Status refused = FillUntilRefused(*stub, "fill", 3);
  ASSERT_EQ(refused.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << refused.error_message();
  stub.reset();
  ASSERT_EQ(lawnd.Stop(SIGTERM), 0);

  // A second record of the same key, at an earlier deadline (a lost delete), written beneath lawnd. The
  // test's own RocksDB needs room first: opening the store replays lawnd's WAL and flushes it to a file (up
  // to write_buffer_bytes), which on the disk as lawnd left it (about 24 MiB free) once aborted the test
  // process (Debian's RocksDB asserts on a failed WAL write). 300 MiB leaves at most 164 MiB free: still
  // below the 200 MiB guard of the start below.
  ASSERT_TRUE(disk.Resize("300m"));
  const int64_t earlier = later - 600'000'000'000;
  const std::string key = std::string("rec") + '\0' + "twice";
  std::string value;
  internal::AppendTimerValue(&value, earlier, 3'600'000'000'000, 0, "");
  ASSERT_TRUE(PutRawForTest(data, "pending", StoredTimerKeyForTest(earlier, key), value).ok());

  // Recovery keeps the later one; the guard refuses the repair's write (a restart may free some space, so the
  // guard is raised above what the disk has), which waits.
  const std::string full =
      WriteFile(dir.path() + "/full.yaml", "min_free_disk_bytes: 200MiB\nwrite_buffer_bytes: 16MiB\n");
  LawndProcess refusing(data, {"--config", full});
  refusing.StartNoWait();  // Below the guard readiness is NOT_SERVING; liveness and reads still answer.
  // The log file is the data dir's, shared with the first process: this one's recovery is the second.
  auto count = [&](const std::string& what) {
    const std::string log = refusing.Log();
    size_t n = 0;
    for (size_t at = log.find(what); at != std::string::npos; at = log.find(what, at + 1)) ++n;
    return n;
  };
  ASSERT_TRUE(WaitFor([&] { return count("recovery done") == 2; })) << refusing.Log();
  stub = refusing.stub();
  const grpc::Status got = GetTimer(*stub, "rec", "twice", &twice);
  ASSERT_TRUE(got.ok()) << got.error_message() << "\n" << refusing.Log();
  EXPECT_EQ(ToNs(twice.deadline()), later);
  EXPECT_NE(refusing.Log().find("deleted once the disk has room"), std::string::npos) << refusing.Log();
  EXPECT_EQ(StartTtl(*stub, "rec", "refused", milliseconds(3'600'000)).error_code(),
            grpc::StatusCode::RESOURCE_EXHAUSTED);
  // Space returns: the shard's next round (a retry every 100 ms, even without a command) writes the repair.
  ASSERT_TRUE(disk.Resize("1g"));
  EXPECT_TRUE(WaitFor([&] { return refusing.Log().find("writing the 1 repairs") != std::string::npos; }))
      << refusing.Log();
  EXPECT_TRUE(StartTtl(*stub, "rec", "after", milliseconds(3'600'000)).ok());
  stub.reset();
  refusing.Kill();
  absl::StatusOr<std::map<std::string, std::vector<int64_t>>> stored = StoredDeadlinesForTest(data);
  ASSERT_TRUE(stored.ok()) << stored.status();
  EXPECT_EQ((*stored)[key], std::vector<int64_t>{later});
}

}  // namespace
}  // namespace lawn::testing
