// What the real lawnd leaves on disk (storage/FORMAT.md, format version 2: a timer's record is keyed by its
// deadline): after every way a timer moves to another deadline (reschedule, replacing start, a recurring
// timer's firings, delivered and skipped) or leaves (delete, one-shot firing), and a kill -9, the store holds
// exactly one record per pending timer, at the deadline lawnd answered. A record left behind under an old
// deadline would bring a deleted or fired timer back at the next start.
#include <csignal>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "client/lawn_client.h"
#include "gtest/gtest.h"
#include "storage/record_coding.h"
#include "tests/integration/lawnd_process.h"
#include "tests/integration/test_client.h"
#include "tests/testing/raw_rocksdb.h"

namespace lawn::testing {
namespace {

using std::chrono::hours;
using std::chrono::milliseconds;
using std::chrono::seconds;

std::string KeyOf(const std::string& ns, const std::string& id) { return ns + std::string(1, '\0') + id; }

TEST(StoredRecordsTest, EachPendingTimerHasOneRecordAtTheDeadlineLawndAnswered) {
  TempDir dir;
  const std::string data = dir.path() + "/data";
  // An outbox of 2 per namespace: the recurring timer's later firings are skipped (re-armed only).
  const std::string config = WriteFile(dir.path() + "/lawn.yaml", "max_outbox_per_namespace: 2\n");
  // RocksDB (format 2): the test reads its records beneath lawnd.
  LawndProcess lawnd(data, {"--config", config, "--shards", "2", "--storage-engine", "rocksdb"});
  lawnd.Start();
  std::unique_ptr<LawnClient> client = LawnClient::Connect(lawnd.address());

  ASSERT_TRUE(client->StartTimer("rec", "moved", hours(1)).ok());
  absl::StatusOr<v1::Timer> moved = client->RescheduleTimer("rec", "moved", hours(2));
  ASSERT_TRUE(moved.ok()) << moved.status();
  ASSERT_TRUE(client->StartTimer("rec", "moved-back", hours(3)).ok());
  absl::StatusOr<v1::Timer> moved_back = client->RescheduleTimer("rec", "moved-back", hours(1));
  ASSERT_TRUE(moved_back.ok()) << moved_back.status();
  ASSERT_TRUE(client->StartTimer("rec", "replaced", hours(1), "old").ok());
  absl::StatusOr<v1::Timer> replaced =
      client->StartTimer("rec", "replaced", hours(3), "new", {}, /*replace=*/true);
  ASSERT_TRUE(replaced.ok()) << replaced.status();
  ASSERT_TRUE(client->StartTimer("rec", "deleted", hours(1)).ok());
  ASSERT_TRUE(client->DeleteTimer("rec", "deleted").ok());
  ASSERT_TRUE(client->StartTimer("rec", "recurring", milliseconds(20), "", milliseconds(20)).ok());
  ASSERT_TRUE(client->StartTimer("once", "fired", milliseconds(20)).ok());
  // The recurring timer fires twice into the outbox, then is skipped while nobody acks; the one-shot fires.
  auto stub = lawnd.stub();
  ASSERT_TRUE(WaitFor(
      [&] {
        return NamespaceStatsOf(*stub, "rec").outbox() == 2 && NamespaceStatsOf(*stub, "once").outbox() == 1;
      },
      seconds(30)));
  std::this_thread::sleep_for(milliseconds(200));  // Several skipped firings.
  client.reset();
  stub.reset();
  lawnd.Kill();

  absl::StatusOr<std::map<std::string, std::vector<int64_t>>> read = StoredDeadlinesForTest(data);
  ASSERT_TRUE(read.ok()) << read.status();
  const std::map<std::string, std::vector<int64_t>>& stored = *read;
  ASSERT_EQ(stored.size(), 4u) << "pending: moved, moved-back, replaced, recurring";
  for (const auto& [key, deadlines] : stored) EXPECT_EQ(deadlines.size(), 1u) << "records of " << key;
  EXPECT_EQ(stored.at(KeyOf("rec", "moved")), std::vector<int64_t>{ToNs(moved->deadline())});
  EXPECT_EQ(stored.at(KeyOf("rec", "moved-back")), std::vector<int64_t>{ToNs(moved_back->deadline())});
  EXPECT_EQ(stored.at(KeyOf("rec", "replaced")), std::vector<int64_t>{ToNs(replaced->deadline())});
  ASSERT_TRUE(stored.count(KeyOf("rec", "recurring")));

  // The next lawnd recovers them at those deadlines.
  lawnd.Start();
  client = LawnClient::Connect(lawnd.address());
  absl::StatusOr<v1::Timer> back = client->GetTimer("rec", "moved");
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(ToNs(back->deadline()), ToNs(moved->deadline()));
  back = client->GetTimer("rec", "replaced");
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->payload(), "new");
  EXPECT_EQ(client->GetTimer("rec", "deleted").status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(client->GetTimer("once", "fired").status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(lawnd.Stop(SIGTERM), 0);
}

// Records lawnd could not have left itself, written beneath it: a key stored under two deadlines (a lost
// delete) and a deadline in 1677, below what a process's monotonic clock can hold. Recovery keeps the later
// of the two records and deletes the other, and moves the old one to the deadline the engine holds, so that
// its firing deletes it.
TEST(StoredRecordsTest, RecoveryRepairsATimerStoredTwiceAndOneWithoutAMonotonicDeadline) {
  TempDir dir;
  const std::string data = dir.path() + "/data";
  LawndProcess lawnd(data, {"--shards", "2", "--storage-engine", "rocksdb"});  // Records written beneath it.
  lawnd.Start();
  std::unique_ptr<LawnClient> client = LawnClient::Connect(lawnd.address());
  absl::StatusOr<v1::Timer> twice = client->StartTimer("rec", "twice", hours(1), "p");
  ASSERT_TRUE(twice.ok()) << twice.status();
  client.reset();
  ASSERT_EQ(lawnd.Stop(SIGTERM), 0);
  const int64_t later = ToNs(twice->deadline());
  const int64_t earlier = later - 600'000'000'000;
  const int64_t ancient = std::numeric_limits<int64_t>::min() + 5;
  auto put = [&](const std::string& key, int64_t deadline, const std::string& payload) {
    std::string value;
    internal::AppendTimerValue(&value, deadline, 1'000'000'000, 0, payload);
    ASSERT_TRUE(PutRawForTest(data, "pending", StoredTimerKeyForTest(deadline, key), value).ok());
  };
  put(KeyOf("rec", "twice"), earlier, "stale");
  put(KeyOf("rec", "ancient"), ancient, "old");

  lawnd.Start();
  client = LawnClient::Connect(lawnd.address());
  absl::StatusOr<v1::Timer> back = client->GetTimer("rec", "twice");
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(ToNs(back->deadline()), later);
  EXPECT_EQ(back->payload(), "p");
  auto stub = lawnd.stub();
  ASSERT_TRUE(WaitFor([&] { return NamespaceStatsOf(*stub, "rec").outbox() == 1; }, seconds(30)))
      << "the 1677 timer fires at once";
  EXPECT_NE(lawnd.Log().find("stored under two deadlines"), std::string::npos) << lawnd.Log();
  EXPECT_EQ(NamespaceStatsOf(*stub, "rec").pending_timers(), 1u) << "the key stored twice counts once";
  client.reset();
  stub.reset();
  lawnd.Kill();

  absl::StatusOr<std::map<std::string, std::vector<int64_t>>> stored = StoredDeadlinesForTest(data);
  ASSERT_TRUE(stored.ok()) << stored.status();
  EXPECT_EQ(*stored, (std::map<std::string, std::vector<int64_t>>{{KeyOf("rec", "twice"), {later}}}));
}

}  // namespace
}  // namespace lawn::testing
