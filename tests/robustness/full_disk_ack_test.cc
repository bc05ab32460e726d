// An ack while the disk is below the free-space guard: lawnd stays healthy (the ack's delete is not written
// then, so at worst the expiration is redelivered after a restart) and nothing is put into the failed state.
// Needs root for a small tmpfs, as in CI.
#include <string>

#include "gtest/gtest.h"
#include "tests/integration/lawnd_process.h"
#include "tests/integration/test_client.h"

namespace lawn::testing {
namespace {

using std::chrono::milliseconds;

// With each engine (the log engine needs a larger disk: it preallocates 64 MiB segments and keeps room for
// the next one and the next snapshot).
void AckBelowTheFreeSpaceGuardDoesNotFailTheStore(const std::string& engine) {
  const bool rocksdb = engine == "rocksdb";
  TempDir dir;
  const std::string mnt = dir.path() + "/small";
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
  // One expiration waits in the outbox before the disk fills.
  ASSERT_TRUE(StartTtl(*stub, "acks", "fired", milliseconds(50)).ok());
  ASSERT_TRUE(WaitFor([&] {
    grpc::ClientContext ctx;
    v1::GetStatsResponse resp;
    return stub->GetStats(&ctx, v1::GetStatsRequest(), &resp).ok() && resp.outbox() == 1;
  }));
  // Fill the disk until the guard refuses.
  const grpc::Status refused = FillUntilRefused(*stub, "fill", 2);
  ASSERT_EQ(refused.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << refused.error_message();
  // Now ack the waiting expiration. Its round is checked with 32 MiB of headroom (kRoundHeadroomBytes), so it
  // stays below the guard even when RocksDB's background work frees a few MiB meanwhile.
  TestSubscriber sub(*stub, "acks");
  std::optional<v1::Expiration> e = sub.Next(milliseconds(15000));
  ASSERT_TRUE(e.has_value());
  ASSERT_TRUE(sub.Ack(e->delivery_id()));
  ASSERT_TRUE(WaitFor([&] {
    grpc::ClientContext ctx;
    v1::GetStatsResponse resp;
    return stub->GetStats(&ctx, v1::GetStatsRequest(), &resp).ok() && resp.outbox() == 0;
  }));
  // A few rounds later lawnd is still healthy: no failed state (a write is refused by the guard or, if
  // background work freed space meanwhile, taken; never UNAVAILABLE), liveness and readiness SERVING.
  const grpc::Status still = StartTtl(*stub, "fill", "still-healthy", milliseconds(60000));
  EXPECT_TRUE(still.ok() || still.error_code() == grpc::StatusCode::RESOURCE_EXHAUSTED)
      << still.error_message();
  EXPECT_EQ(lawnd.HealthStatus("liveness"), LawndProcess::kServing);
  EXPECT_EQ(lawnd.HealthStatus(""), LawndProcess::kServing);
  EXPECT_EQ(lawnd.Log().find("storage write failed"), std::string::npos) << lawnd.Log();
  // Space returns: writes work again.
  ASSERT_TRUE(disk.Resize(rocksdb ? "512m" : "1g"));
  EXPECT_TRUE(WaitFor([&] { return StartTtl(*stub, "fill", "after", milliseconds(3'600'000)).ok(); }));
}

TEST(FullDiskAckTest, AckBelowTheFreeSpaceGuardDoesNotFailTheStore) {
  AckBelowTheFreeSpaceGuardDoesNotFailTheStore("log");
}

TEST(FullDiskAckTest, AckBelowTheFreeSpaceGuardDoesNotFailTheStoreWithTheRocksDbEngine) {
  AckBelowTheFreeSpaceGuardDoesNotFailTheStore("rocksdb");
}

}  // namespace
}  // namespace lawn::testing
