// Durability with the real lawnd and RocksDB: restarts after kill -9 keep pending timers and undelivered
// expirations, downtime fires late timers at once, and the free-space guard refuses writes on a full disk
// without losing anything acknowledged.
#include <sys/statvfs.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <set>
#include <string>

#include "gtest/gtest.h"
#include "tests/integration/lawnd_process.h"
#include "tests/integration/test_client.h"

namespace lawn::testing {
namespace {

using std::chrono::milliseconds;

// Subscribes to `ns`, expects the expiration of timer "fired" with payload "keep me" (the one timer the test
// let fire unsubscribed), acks it and waits until the outbox is empty.
void ReceiveAndAckKeepMe(v1::TimerService::Stub& stub, const std::string& ns) {
  TestSubscriber sub(stub, ns);
  std::optional<v1::Expiration> e = sub.Next(milliseconds(30000));
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->timer().id(), "fired");
  EXPECT_EQ(e->timer().payload(), "keep me");
  sub.Ack(e->delivery_id());
  ASSERT_TRUE(WaitFor([&] { return StatsOf(stub).outbox() == 0; }));
  sub.Close();
}

TEST(DurabilityTest, KillNineKeepsEveryAcknowledgedTimer) {
  TempDir dir;
  LawndProcess lawnd(dir.path() + "/data");
  lawnd.Start();
  auto stub = lawnd.stub();
  std::vector<v1::Timer> started;
  for (int i = 0; i < 200; ++i) {
    v1::StartTimerRequest r = TtlRequest("keep", "t" + std::to_string(i), milliseconds(3'600'000), "p" + std::to_string(i));
    if (i % 3 == 0) r.mutable_interval()->set_seconds(60);
    v1::Timer t;
    ASSERT_TRUE(Call(*stub, r, &t).ok());
    started.push_back(t);
  }
  lawnd.Kill();
  lawnd.Start();
  stub = lawnd.stub();
  for (const v1::Timer& want : started) {
    v1::Timer got;
    ASSERT_TRUE(GetTimer(*stub, "keep", want.id(), &got).ok()) << want.id();
    EXPECT_EQ(got.payload(), want.payload());
    EXPECT_EQ(ToNs(got.deadline()), ToNs(want.deadline()));
    EXPECT_EQ(got.interval().seconds(), want.interval().seconds());
    EXPECT_EQ(got.ttl().seconds(), want.ttl().seconds());
  }
  EXPECT_EQ(StatsOf(*stub).pending_timers(), 200u);
  EXPECT_NE(lawnd.Log().find("recovery done: 200 timers"), std::string::npos);
}

// storage.engine auto, the default: a new data dir gets the log engine (storage format 3), which a restart
// keeps; a data dir a RocksDB lawnd wrote (format 2, every data dir before auto) keeps RocksDB, and its
// timers.
TEST(DurabilityTest, TheDefaultEngineIsTheLogForANewDataDirAndRocksDbForARocksDbOne) {
  TempDir dir;
  v1::Timer t;
  LawndProcess fresh(dir.path() + "/new");
  fresh.Start();
  EXPECT_NE(fresh.Log().find("storage.engine auto: log (a new data dir)"), std::string::npos) << fresh.Log();
  ASSERT_TRUE(StartTtl(*fresh.stub(), "auto", "t", milliseconds(3'600'000)).ok());
  fresh.Kill();
  std::ifstream format(dir.path() + "/new/LAWN_FORMAT");
  std::string version;
  format >> version;
  EXPECT_EQ(version, "3");
  fresh.Start();
  EXPECT_NE(fresh.Log().find("storage.engine auto: log (the data dir holds storage format 3)"),
            std::string::npos)
      << fresh.Log();
  EXPECT_TRUE(GetTimer(*fresh.stub(), "auto", "t", &t).ok());

  {
    LawndProcess old(dir.path() + "/old", {"--storage-engine", "rocksdb"});
    old.Start();
    ASSERT_TRUE(StartTtl(*old.stub(), "auto", "r", milliseconds(3'600'000)).ok());
    old.Kill();
  }
  LawndProcess upgraded(dir.path() + "/old");
  upgraded.Start();
  EXPECT_NE(upgraded.Log().find("storage.engine auto: rocksdb (the data dir holds a RocksDB store"),
            std::string::npos)
      << upgraded.Log();
  EXPECT_TRUE(GetTimer(*upgraded.stub(), "auto", "r", &t).ok());
  EXPECT_FALSE(std::filesystem::exists(dir.path() + "/old/LAWN_FORMAT"));
}

// An explicit storage.engine on a data dir the other engine wrote: `log` on a RocksDB one (format 2), and
// `rocksdb` on a format 3 one (back to format 2). lawnd migrates it at start, carrying every pending timer
// and the undelivered expiration, keeps the old store as a backup, and later starts (auto) keep the new
// format.
TEST(DurabilityTest, AnExplicitStorageEngineMigratesTheOtherEnginesDataDirWithItsTimersAndOutbox) {
  struct Way {
    const char* from;
    const char* to;
    const char* migrated_line;
    const char* backup;
    const char* building;
    const char* auto_line;
  };
  for (const Way& way :
       {Way{"rocksdb", "log", "migrated to storage format 3 in", "format2-backup", "format3.migrating",
            "storage.engine auto: log (the data dir holds storage format 3)"},
        Way{"log", "rocksdb", "migrated to storage format 2 in", "format3-backup", "format2.migrating",
            "storage.engine auto: rocksdb (the data dir holds a RocksDB store"}}) {
    SCOPED_TRACE(std::string(way.from) + " -> " + way.to);
    TempDir dir;
    const std::string data = dir.path() + "/data";
    {
      LawndProcess old(data, {"--storage-engine", way.from});
      old.Start();
      auto stub = old.stub();
      for (int i = 0; i < 100; ++i) {
        ASSERT_TRUE(StartTtl(*stub, "mig", "t" + std::to_string(i), milliseconds(3'600'000), nullptr,
                             "p" + std::to_string(i))
                        .ok());
      }
      ASSERT_TRUE(StartTtl(*stub, "mig", "fired", milliseconds(50), nullptr, "keep me").ok());
      ASSERT_TRUE(WaitFor([&] { return StatsOf(*stub).outbox() == 1; }));  // Fired; nobody subscribed.
      old.Kill();
    }
    LawndProcess lawnd(data, {"--storage-engine", way.to});
    lawnd.Start();
    EXPECT_NE(lawnd.Log().find(way.migrated_line), std::string::npos) << lawnd.Log();
    EXPECT_NE(lawnd.Log().find("100 timers, 1 outbox entries"), std::string::npos) << lawnd.Log();
    auto stub = lawnd.stub();
    EXPECT_EQ(StatsOf(*stub).pending_timers(), 100u);
    for (int i = 0; i < 100; ++i) {
      v1::Timer got;
      ASSERT_TRUE(GetTimer(*stub, "mig", "t" + std::to_string(i), &got).ok()) << i;
      EXPECT_EQ(got.payload(), "p" + std::to_string(i));
    }
    ReceiveAndAckKeepMe(*stub, "mig");
    EXPECT_TRUE(std::filesystem::exists(data + "/" + way.backup + "/CURRENT"));
    EXPECT_FALSE(std::filesystem::exists(data + "/" + way.building));
    lawnd.Stop(SIGTERM);

    LawndProcess later(data);
    later.Start();
    const std::string log = later.Log();
    const std::string last_start =
        log.substr(log.rfind("lawnd starting"));  // The log file holds every start.
    EXPECT_NE(last_start.find(way.auto_line), std::string::npos) << log;
    EXPECT_EQ(last_start.find("migrat"), std::string::npos) << log;
    stub = later.stub();
    EXPECT_EQ(StatsOf(*stub).pending_timers(), 100u);
    EXPECT_EQ(StatsOf(*stub).outbox(), 0u);
  }
}

// One lawnd per data dir, whichever engine: a second one started on it exits at once, naming the dir, and the
// first goes on serving.
TEST(DurabilityTest, ASecondLawndOnTheSameDataDirIsRefused) {
  for (const char* engine : {"log", "rocksdb"}) {
    SCOPED_TRACE(engine);
    TempDir dir;
    LawndProcess first(dir.path() + "/data", {"--storage-engine", engine});
    first.Start();
    ASSERT_TRUE(StartTtl(*first.stub(), "lock", "t", milliseconds(3'600'000)).ok());
    LawndProcess second(dir.path() + "/data", {"--storage-engine", engine});
    EXPECT_NE(second.RunToExit(kStartTimeout), 0);
    EXPECT_NE(second.Log().find("is in use by another process"), std::string::npos) << second.Log();
    v1::Timer t;
    EXPECT_TRUE(GetTimer(*first.stub(), "lock", "t", &t).ok());
  }
}

TEST(DurabilityTest, UndeliveredExpirationSurvivesKillNine) {
  TempDir dir;
  LawndProcess lawnd(dir.path() + "/data");
  lawnd.Start();
  auto stub = lawnd.stub();
  ASSERT_TRUE(StartTtl(*stub, "out", "fired", milliseconds(50), nullptr, "keep me").ok());
  ASSERT_TRUE(WaitFor([&] { return StatsOf(*stub).outbox() == 1; }));  // Fired; nobody subscribed.
  lawnd.Kill();
  lawnd.Start();
  stub = lawnd.stub();
  EXPECT_EQ(StatsOf(*stub).outbox(), 1u);
  ReceiveAndAckKeepMe(*stub, "out");
  // The ack is persisted: after another restart nothing is redelivered.
  lawnd.Stop(SIGTERM);
  lawnd.Start();
  stub = lawnd.stub();
  EXPECT_EQ(StatsOf(*stub).outbox(), 0u);
}

TEST(DurabilityTest, TimersDueDuringDowntimeFireAtOnceMarkedLate) {
  TempDir dir;
  LawndProcess lawnd(dir.path() + "/data");
  lawnd.Start();
  auto stub = lawnd.stub();
  std::set<std::string> ids;
  v1::StartTimersRequest batch;
  // Seconds of TTL: lawnd is stopped long before the first deadline, even on a slow machine.
  for (int i = 0; i < 20; ++i) {
    const std::string id = "down" + std::to_string(i);
    *batch.add_timers() = TtlRequest("down", id, milliseconds(10'000 + 10 * i));
    ids.insert(id);
  }
  batch.set_return_timers(true);  // For the deadlines.
  grpc::ClientContext ctx;
  v1::StartTimersResponse resp;
  ASSERT_TRUE(stub->StartTimers(&ctx, batch, &resp).ok());
  int64_t first_deadline = INT64_MAX, last_deadline = 0;
  for (const auto& r : resp.results()) {
    ASSERT_EQ(r.code(), 0);
    first_deadline = std::min(first_deadline, ToNs(r.timer().deadline()));
    last_deadline = std::max(last_deadline, ToNs(r.timer().deadline()));
  }
  ASSERT_EQ(lawnd.Stop(SIGTERM), 0);
  ASSERT_LT(WallNowNs(), first_deadline) << "too slow to stop before the deadlines; nothing to test";
  // Downtime: every deadline passes, by more than the 1 s lateness mark, while lawnd is not running (a wait
  // for the wall clock, not for an event).
  while (WallNowNs() < last_deadline + 1'500'000'000LL) std::this_thread::sleep_for(milliseconds(50));
  lawnd.Start();
  stub = lawnd.stub();
  TestSubscriber sub(*stub, "down");
  std::set<std::string> got;
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (got.size() < ids.size() && std::chrono::steady_clock::now() < until) {
    std::optional<v1::Expiration> e = sub.Next(milliseconds(500));
    if (!e) continue;
    EXPECT_TRUE(e->late()) << e->timer().id() << " fired " << (ToNs(e->fired_at()) - ToNs(e->timer().deadline())) / 1e6 << " ms late";
    EXPECT_GE(ToNs(e->fired_at()), ToNs(e->timer().deadline()));
    got.insert(e->timer().id());
    sub.Ack(e->delivery_id());
  }
  EXPECT_EQ(got, ids);
}

// A million stored timers take lawnd about a second to recover on two cores (BENCHMARKS.md), while its
// port is open from the start: polled from the moment the port is known, health must say NOT_SERVING (and
// writes and subscriptions must be refused UNAVAILABLE) before it says SERVING, and once SERVING every timer
// is back.
TEST(DurabilityTest, HealthIsNotServingUntilRecoveryIsDone) {
  constexpr int kTimers = 1'000'000;
  constexpr int kBatch = 10'000;
  TempDir dir;
  {
    // Loaded in `interval` mode (quicker), stopped with SIGTERM, which syncs the store.
    LawndProcess loader(dir.path() + "/data", {"--durability", "interval"});
    loader.Start();
    auto stub = loader.stub();
    for (int first = 0; first < kTimers; first += kBatch) {
      std::vector<v1::StartTimerRequest> batch;
      for (int i = first; i < first + kBatch; ++i) batch.push_back(TtlRequest("rec", "t" + std::to_string(i), milliseconds(3'600'000)));
      ASSERT_TRUE(StartAll(*stub, batch));
    }
    ASSERT_EQ(loader.Stop(SIGTERM, std::chrono::seconds(60)), 0);
  }
  LawndProcess lawnd(dir.path() + "/data");
  lawnd.StartNoWait(std::chrono::seconds(60));
  ASSERT_NE(lawnd.port(), 0);
  std::shared_ptr<grpc::Channel> channel = lawnd.channel();
  auto stub = v1::TimerService::NewStub(channel);
  int not_serving = 0;  // NOT_SERVING answers before the first SERVING.
  grpc::Status refused;
  std::optional<grpc::Status> subscribe_refused;  // How a Subscribe opened while NOT_SERVING ended.
  std::optional<ServingStatus> liveness;
  std::optional<ServingStatus> status;
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (std::chrono::steady_clock::now() < give_up) {
    status = CheckHealth(channel);
    if (status == grpc::health::v1::HealthCheckResponse::SERVING) break;
    if (status != grpc::health::v1::HealthCheckResponse::NOT_SERVING) continue;
    // While recovering, a subscription is refused: its outbox is not back yet. Tried after each NOT_SERVING
    // answer until one is refused (one accepted means recovery ended just after the answer; it stays open).
    if (!subscribe_refused.has_value()) {
      TestSubscriber sub(*stub, "rec");
      subscribe_refused = sub.WaitEnd(std::chrono::seconds(10));
    }
    if (++not_serving == 1) {
      // While recovering: writes are refused, and the process reports itself alive.
      refused = StartTtl(*stub, "rec", "during-recovery", milliseconds(3'600'000));
      liveness = CheckHealth(channel, "liveness");
    }
  }
  ASSERT_EQ(status, grpc::health::v1::HealthCheckResponse::SERVING) << lawnd.Log();
  std::printf("%d NOT_SERVING answers before SERVING\n", not_serving);
  EXPECT_GT(not_serving, 0) << "never saw NOT_SERVING while a million timers were recovered";
  EXPECT_EQ(liveness, grpc::health::v1::HealthCheckResponse::SERVING);
  ASSERT_TRUE(subscribe_refused.has_value()) << "every Subscribe opened while NOT_SERVING was accepted";
  EXPECT_EQ(subscribe_refused->error_code(), grpc::StatusCode::UNAVAILABLE) << subscribe_refused->error_message();
  EXPECT_NE(subscribe_refused->error_message().find("recovering"), std::string::npos)
      << subscribe_refused->error_message();
  // Refused while recovering (unless recovery finished between the health answer and this call).
  if (refused.error_code() != grpc::StatusCode::OK) {
    EXPECT_EQ(refused.error_code(), grpc::StatusCode::UNAVAILABLE) << refused.error_message();
    EXPECT_NE(refused.error_message().find("recovering"), std::string::npos) << refused.error_message();
  }
  // SERVING implies every timer is back.
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
  v1::GetStatsResponse stats;
  ASSERT_TRUE(stub->GetStats(&ctx, v1::GetStatsRequest(), &stats).ok());
  const uint64_t extra = refused.ok() ? 1 : 0;
  EXPECT_EQ(stats.pending_timers(), kTimers + extra);
  EXPECT_NE(lawnd.Log().find("recovery done: 1000000 timers"), std::string::npos) << lawnd.Log();
  // And it stays SERVING.
  EXPECT_EQ(CheckHealth(channel), grpc::health::v1::HealthCheckResponse::SERVING);
}

// With each storage engine (`flags` chooses it).
void CheckpointIsARestorableBackup(const std::vector<std::string>& flags) {
  TempDir dir;
  LawndProcess lawnd(dir.path() + "/data", flags);
  lawnd.Start();
  auto stub = lawnd.stub();
  for (int i = 0; i < 50; ++i) ASSERT_TRUE(StartTtl(*stub, "bk", "t" + std::to_string(i), milliseconds(3'600'000)).ok());
  auto admin = v1::AdminService::NewStub(lawnd.channel());
  grpc::ClientContext ctx;
  v1::CreateCheckpointRequest req;
  req.set_name("nightly");
  v1::CreateCheckpointResponse resp;
  ASSERT_TRUE(admin->CreateCheckpoint(&ctx, req, &resp).ok());
  EXPECT_NE(resp.path().find("checkpoints/nightly"), std::string::npos) << resp.path();
  grpc::ClientContext again;
  EXPECT_EQ(admin->CreateCheckpoint(&again, req, &resp).error_code(), grpc::StatusCode::ALREADY_EXISTS);
  grpc::ClientContext bad;
  req.set_name("../escape");
  EXPECT_EQ(admin->CreateCheckpoint(&bad, req, &resp).error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  // Changes after the checkpoint are not in it.
  ASSERT_TRUE(StartTtl(*stub, "bk", "later", milliseconds(3'600'000)).ok());
  ASSERT_EQ(lawnd.Stop(SIGTERM), 0);
  // Restore: a lawnd on (a copy of) the checkpoint has exactly the timers of that moment.
  const std::string restored = dir.path() + "/restored";
  std::filesystem::copy(dir.path() + "/data/checkpoints/nightly", restored,
                        std::filesystem::copy_options::recursive);
  LawndProcess from_backup(restored, flags);
  from_backup.Start();
  stub = from_backup.stub();
  EXPECT_EQ(StatsOf(*stub).pending_timers(), 50u);
  v1::Timer t;
  EXPECT_TRUE(GetTimer(*stub, "bk", "t7", &t).ok());
  EXPECT_EQ(GetTimer(*stub, "bk", "later", &t).error_code(), grpc::StatusCode::NOT_FOUND);
}

TEST(DurabilityTest, CheckpointIsARestorableBackup) { CheckpointIsARestorableBackup({}); }

TEST(DurabilityTest, CheckpointIsARestorableBackupWithTheRocksDbEngine) {
  CheckpointIsARestorableBackup({"--storage-engine", "rocksdb"});
}

// A disk that really fills: a small tmpfs (needs root, as in CI), with each engine. Writes are refused with
// RESOURCE_EXHAUSTED before the store could hit ENOSPC (RocksDB would abort: the guard keeps
// min_free_disk_bytes, the memtables' flush and 32 MiB of round headroom free; the log keeps
// min_free_disk_bytes, a segment and the snapshot's size), and so are checkpoints; lawnd stays up; after the
// disk grows, writes work and every acknowledged timer is still there, also after a restart.
void FullDiskRefusesWritesAndLosesNothing(const std::string& engine) {
  const bool rocksdb = engine == "rocksdb";
  TempDir dir;
  const std::string mnt = dir.path() + "/small";
  // The log engine preallocates 64 MiB segments and keeps room for the next one and the next snapshot.
  SmallTmpfs disk(mnt, rocksdb ? "160m" : "400m");
  if (!disk.mounted()) GTEST_SKIP() << disk.why();
  // A small write buffer: RocksDB preallocates each WAL file at ~0.55x write_buffer_bytes, which the default
  // (256 MiB) would take most of this disk for.
  const std::string config =
      WriteFile(dir.path() + "/lawn.yaml", rocksdb ? "min_free_disk_bytes: 8MiB\nwrite_buffer_bytes: 16MiB\n"
                                                   : "min_free_disk_bytes: 8MiB\n");
  LawndProcess lawnd(mnt + "/data", {"--config", config, "--storage-engine", engine});
  lawnd.Start();
  auto stub = lawnd.stub();
  std::vector<std::string> acked;
  const grpc::Status refused = FillUntilRefused(*stub, "full", 1, &acked);
  ASSERT_EQ(refused.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << refused.error_message();
  EXPECT_NE(refused.error_message().find("min_free_disk_bytes"), std::string::npos) << refused.error_message();
  EXPECT_NE(refused.error_message().find(rocksdb ? "write_buffer_bytes" : "next log segment"),
            std::string::npos)
      << refused.error_message();
  ASSERT_GT(acked.size(), 10u);
  // The guard keeps room to flush every memtable (RocksDB), or for the next segment (the log), on top of
  // min_free_disk_bytes: 8 + 16 or 8 + 64 MiB here.
  struct statvfs st;
  ASSERT_EQ(statvfs(mnt.c_str(), &st), 0);
  EXPECT_GE(static_cast<uint64_t>(st.f_bavail) * st.f_frsize, uint64_t{rocksdb ? 24u : 72u} << 20);
  // Still alive and answering reads.
  v1::Timer t;
  EXPECT_TRUE(GetTimer(*stub, "full", acked.front(), &t).ok());
  // A checkpoint is refused by the same guard, and nothing is written for it.
  {
    auto admin = v1::AdminService::NewStub(lawnd.channel());
    grpc::ClientContext ctx;
    v1::CreateCheckpointRequest req;
    req.set_name("on-full-disk");
    v1::CreateCheckpointResponse resp;
    const grpc::Status s = admin->CreateCheckpoint(&ctx, req, &resp);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << s.error_message();
    EXPECT_FALSE(std::filesystem::exists(mnt + "/data/checkpoints/on-full-disk"));
  }
  // Space returns.
  ASSERT_TRUE(disk.Resize(rocksdb ? "512m" : "1g"));
  ASSERT_TRUE(WaitFor([&] { return StartTtl(*stub, "full", "after", milliseconds(3'600'000)).ok(); }));
  for (const std::string& id : acked) ASSERT_TRUE(GetTimer(*stub, "full", id, &t).ok()) << id;
  lawnd.Kill();
  lawnd.Start();
  stub = lawnd.stub();
  for (const std::string& id : acked) ASSERT_TRUE(GetTimer(*stub, "full", id, &t).ok()) << id;
  EXPECT_TRUE(GetTimer(*stub, "full", "after", &t).ok());
}

TEST(DurabilityTest, FullDiskRefusesWritesAndLosesNothing) { FullDiskRefusesWritesAndLosesNothing("log"); }

TEST(DurabilityTest, FullDiskRefusesWritesAndLosesNothingWithTheRocksDbEngine) {
  FullDiskRefusesWritesAndLosesNothing("rocksdb");
}

}  // namespace
}  // namespace lawn::testing
