// Daemon-level faults, with lawnd running on the fault-injection env (tests/testing/lawnd_fault): a power cut
// drops every write that was not synced, so the durability modes can be told apart (kill -9 cannot: the page
// cache survives it), and a failing disk is seen the way an operator sees it.
#include <signal.h>

#include <string>

#include "gtest/gtest.h"
#include "tests/integration/lawnd_process.h"
#include "tests/integration/test_client.h"

namespace lawn::testing {
namespace {

using std::chrono::milliseconds;

class PowerLossTest : public ::testing::Test {
 protected:
  // lawnd_fault with `yaml` as its config (and a metrics port).
  std::unique_ptr<LawndProcess> StartFaulty(const std::string& yaml) {
    const std::string config = WriteFile(dir_.path() + "/lawn.yaml", yaml);
    auto p = std::make_unique<LawndProcess>(data_, std::vector<std::string>{"--config", config, "--metrics-listen",
                                                                            "127.0.0.1:0"});
    p->set_binary(LAWND_FAULT_PATH);
    p->Start();
    return p;
  }
  // Starts `n` timers (ten minutes out) named prefix0..; all must be acknowledged.
  void StartMany(LawndProcess& p, const std::string& prefix, int n) {
    auto stub = p.stub();
    for (int i = 0; i < n; ++i) {
      ASSERT_TRUE(StartTtl(*stub, "pl", prefix + std::to_string(i), milliseconds(600000)).ok());
    }
  }
  // Cuts the power under `p` (it exits 0 after rewinding its files).
  void CutPower(LawndProcess& p) {
    ASSERT_EQ(p.Stop(SIGUSR2), 0) << p.Log();
    ASSERT_NE(p.Log().find("power cut simulated"), std::string::npos) << p.Log();
  }
  // Restarts the real lawnd on the data dir and counts which of prefix0..prefix<n-1> survived.
  int Survivors(LawndProcess& real, const std::string& prefix, int n) {
    auto stub = real.stub();
    int alive = 0;
    for (int i = 0; i < n; ++i) {
      grpc::ClientContext ctx;
      v1::GetTimerRequest r;
      r.set_namespace_("pl");
      r.set_id(prefix + std::to_string(i));
      v1::GetTimerResponse resp;
      if (stub->GetTimer(&ctx, r, &resp).ok()) ++alive;
    }
    return alive;
  }
  double Metric(LawndProcess& p, const std::string& series) {
    return MetricSample(HttpGet(MetricsPortFromLog(p.Log()), "/metrics"), series);
  }
  TempDir dir_;
  const std::string data_ = dir_.path() + "/data";
};

TEST_F(PowerLossTest, SyncModeLosesNoAcknowledgedTimer) {
  auto faulty = StartFaulty("durability: sync\n");
  StartMany(*faulty, "s", 200);
  CutPower(*faulty);  // Right after the last acknowledgement.
  LawndProcess real(data_);
  real.Start();
  EXPECT_EQ(Survivors(real, "s", 200), 200);
}

TEST_F(PowerLossTest, IntervalModeLosesAtMostItsWindow) {
  auto faulty = StartFaulty("durability: interval\nsync_interval: 1s\n");
  StartMany(*faulty, "old", 100);
  // Two interval syncs after the last old start: the old timers are older than the window.
  const double syncs = Metric(*faulty, "lawn_storage_syncs_total");
  ASSERT_TRUE(WaitFor([&] { return Metric(*faulty, "lawn_storage_syncs_total") >= syncs + 2; },
                      std::chrono::seconds(30)));
  StartMany(*faulty, "new", 100);
  CutPower(*faulty);  // Within one sync_interval of the new starts.
  LawndProcess real(data_);
  real.Start();
  EXPECT_EQ(Survivors(real, "old", 100), 100) << "acknowledged longer than sync_interval ago";
  // The newest ones may or may not have been synced; usually most are lost. Recorded, not asserted.
  RecordProperty("new_timers_surviving_of_100", Survivors(real, "new", 100));
}

TEST_F(PowerLossTest, MemoryModeLosesEverything) {
  auto faulty = StartFaulty("durability: memory\n");
  StartMany(*faulty, "m", 50);
  CutPower(*faulty);
  LawndProcess real(data_);
  real.Start();
  EXPECT_EQ(Survivors(real, "m", 50), 0);
}

TEST_F(PowerLossTest, FailingDiskRefusesWritesAndTurnsLivenessNotServing) {
  auto faulty = StartFaulty("durability: sync\n");
  auto stub = faulty->stub();
  ASSERT_TRUE(StartTtl(*stub, "pl", "before", milliseconds(600000)).ok());
  EXPECT_EQ(faulty->HealthStatus("liveness"), LawndProcess::kServing);
  ASSERT_EQ(::kill(faulty->pid(), SIGUSR1), 0);
  ASSERT_TRUE(WaitFor([&] { return faulty->Log().find("every append now fails") != std::string::npos; }));
  grpc::Status failed = StartTtl(*stub, "pl", "after", milliseconds(600000));
  EXPECT_EQ(failed.error_code(), grpc::StatusCode::UNAVAILABLE) << failed.error_message();
  // Later writes are refused at once; reads still work; readiness and liveness both turn NOT_SERVING.
  EXPECT_EQ(StartTtl(*stub, "pl", "later", milliseconds(600000)).error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_TRUE(WaitFor([&] { return faulty->HealthStatus("") == LawndProcess::kNotServing; }));
  EXPECT_TRUE(WaitFor([&] { return faulty->HealthStatus("liveness") == LawndProcess::kNotServing; }));
  EXPECT_EQ(Metric(*faulty, "lawn_storage_failed"), 1);
  grpc::ClientContext ctx;
  v1::GetTimerRequest r;
  r.set_namespace_("pl");
  r.set_id("before");
  v1::GetTimerResponse resp;
  EXPECT_TRUE(stub->GetTimer(&ctx, r, &resp).ok());
  EXPECT_NE(faulty->Log().find("storage write failed"), std::string::npos);
  // A restart (what Kubernetes does on failed liveness) recovers what was acknowledged.
  faulty->Kill();
  LawndProcess real(data_);
  real.Start();
  auto real_stub = real.stub();
  grpc::ClientContext ctx2;
  EXPECT_TRUE(real_stub->GetTimer(&ctx2, r, &resp).ok());
}

}  // namespace
}  // namespace lawn::testing
