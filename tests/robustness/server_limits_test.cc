// Server-level limits against the real lawnd: a second lawnd cannot share a port, a flood of checkpoint calls
// neither piles up threads nor stops the daemon, checkpoints are written one at a time (a concurrent call is
// refused ABORTED) and counted in a metric after retention, and a namespace takes at most
// max_subscribers_per_namespace streams.
#include <signal.h>

#include <atomic>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "tests/integration/lawnd_process.h"
#include "tests/integration/test_client.h"

namespace lawn::testing {
namespace {

using std::chrono::milliseconds;

// Threads of process `pid` (from /proc), or -1.
int Threads(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("Threads:", 0) == 0) return std::stoi(line.substr(8));
  }
  return -1;
}

TEST(ServerLimitsTest, SecondLawndOnAPortInUseRefusesToStart) {
  TempDir dir;
  LawndProcess first(dir.path() + "/a", {"--metrics-listen", "127.0.0.1:0"});
  first.Start();
  const int metrics_port = MetricsPortFromLog(first.Log());
  ASSERT_GT(metrics_port, 0);

  LawndProcess same_grpc(dir.path() + "/b", {"--listen", first.address()});
  EXPECT_EQ(same_grpc.RunToExit(std::chrono::seconds(30)), 1);
  EXPECT_NE(same_grpc.Log().find("cannot listen on " + first.address()), std::string::npos) << same_grpc.Log();

  LawndProcess same_metrics(dir.path() + "/c", {"--metrics-listen", "127.0.0.1:" + std::to_string(metrics_port)});
  EXPECT_EQ(same_metrics.RunToExit(std::chrono::seconds(30)), 1);
  EXPECT_NE(same_metrics.Log().find("cannot serve metrics"), std::string::npos) << same_metrics.Log();

  // The first one still owns its port and its data.
  auto stub = first.stub();
  EXPECT_TRUE(StartTtl(*stub, "p", "still-here", milliseconds(600000)).ok());
}

TEST(ServerLimitsTest, CheckpointFloodIsRefusedCheaplyAndLawndKeepsAnswering) {
  TempDir dir;
  LawndProcess lawnd(dir.path() + "/data");
  lawnd.Start();
  auto admin = v1::AdminService::NewStub(lawnd.channel());
  {
    grpc::ClientContext ctx;
    v1::CreateCheckpointRequest req;
    req.set_name("taken");
    v1::CreateCheckpointResponse resp;
    ASSERT_TRUE(admin->CreateCheckpoint(&ctx, req, &resp).ok());
  }
  const int threads_before = Threads(lawnd.pid());
  ASSERT_GT(threads_before, 0);
  // Many concurrent calls from several client threads: each is answered at once, none starts a thread.
  std::atomic<int> already_exists{0}, other{0};
  std::vector<std::thread> clients;
  for (int c = 0; c < 4; ++c) {
    clients.emplace_back([&] {
      for (int i = 0; i < 500; ++i) {
        grpc::ClientContext ctx;
        ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
        v1::CreateCheckpointRequest req;
        req.set_name("taken");
        v1::CreateCheckpointResponse resp;
        const grpc::Status s = admin->CreateCheckpoint(&ctx, req, &resp);
        (s.error_code() == grpc::StatusCode::ALREADY_EXISTS ? already_exists : other)++;
      }
    });
  }
  for (auto& t : clients) t.join();
  EXPECT_EQ(already_exists.load(), 2000);
  EXPECT_EQ(other.load(), 0);
  // gRPC may have grown its pool a little under the load; one thread per call would be 2000 more.
  EXPECT_LT(Threads(lawnd.pid()), threads_before + 50);
  auto stub = lawnd.stub();
  EXPECT_TRUE(StartTtl(*stub, "c", "alive", milliseconds(600000)).ok());
  // New names still work, one at a time; retention keeps the newest 5.
  for (int i = 0; i < 7; ++i) {
    grpc::Status s;
    ASSERT_TRUE(WaitFor([&] {
      grpc::ClientContext ctx;
      v1::CreateCheckpointRequest req;
      req.set_name("n" + std::to_string(i));
      v1::CreateCheckpointResponse resp;
      s = admin->CreateCheckpoint(&ctx, req, &resp);
      return s.error_code() != grpc::StatusCode::ABORTED;
    }));
    ASSERT_TRUE(s.ok()) << s.error_message();
  }
  size_t kept = 0;
  for (const auto& e : std::filesystem::directory_iterator(lawnd.data_dir() + "/checkpoints")) {
    (void)e;
    ++kept;
  }
  EXPECT_EQ(kept, 5u);
  EXPECT_FALSE(std::filesystem::exists(lawnd.data_dir() + "/checkpoints/taken")) << "the oldest is deleted first";
  EXPECT_TRUE(std::filesystem::exists(lawnd.data_dir() + "/checkpoints/n6"));
}

// The checkpoint directories in `data_dir`, by name.
std::set<std::string> Checkpoints(const std::string& data_dir) {
  std::set<std::string> names;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(data_dir + "/checkpoints", ec)) {
    names.insert(e.path().filename().string());
  }
  return names;
}

TEST(ServerLimitsTest, CheckpointsRunOneAtATimeAndTheMetricCountsThoseKept) {
  TempDir dir;
  const std::string data = dir.path() + "/data";
  std::set<std::string> written;
  {
    const std::string keep_all = WriteFile(dir.path() + "/keep_all.yaml", "checkpoint_retention: 0\n");
    LawndProcess lawnd(data, {"--config", keep_all, "--metrics-listen", "127.0.0.1:0"});
    lawnd.Start();
    auto stub = lawnd.stub();
    auto admin = v1::AdminService::NewStub(lawnd.channel());
    // Rounds of concurrent calls with new names, each after some writes (so each checkpoint flushes a
    // memtable, which takes a while), until a call was refused ABORTED because another one was running.
    constexpr int kCallers = 6;
    int aborted = 0;
    int rounds = 0;
    for (int round = 0; round < 30 && aborted == 0; ++round) {
      ++rounds;
      std::vector<v1::StartTimerRequest> load;
      for (int i = 0; i < 2000; ++i) {
        load.push_back(TtlRequest("ck", std::to_string(round) + "-" + std::to_string(i), std::chrono::hours(1),
                                  std::string(200, 'p')));
      }
      ASSERT_TRUE(StartAll(*stub, load));
      std::vector<grpc::Status> results(kCallers);
      std::atomic<int> ready{0};
      std::vector<std::thread> callers;
      for (int c = 0; c < kCallers; ++c) {
        callers.emplace_back([&, c] {
          ready++;
          while (ready.load() < kCallers) std::this_thread::yield();  // Start together.
          grpc::ClientContext ctx;
          ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(60));
          v1::CreateCheckpointRequest req;
          req.set_name("r" + std::to_string(round) + "-" + std::to_string(c));
          v1::CreateCheckpointResponse resp;
          results[c] = admin->CreateCheckpoint(&ctx, req, &resp);
        });
      }
      for (auto& t : callers) t.join();
      // Each call either wrote its checkpoint or was refused ABORTED and wrote nothing.
      const std::set<std::string> present = Checkpoints(data);
      for (int c = 0; c < kCallers; ++c) {
        const std::string name = "r" + std::to_string(round) + "-" + std::to_string(c);
        if (results[c].ok()) {
          EXPECT_TRUE(present.count(name)) << name;
          written.insert(name);
        } else {
          EXPECT_EQ(results[c].error_code(), grpc::StatusCode::ABORTED) << results[c].error_message();
          EXPECT_NE(results[c].error_message().find("being written"), std::string::npos)
              << results[c].error_message();
          EXPECT_FALSE(present.count(name)) << name << " was refused but written";
          ++aborted;
        }
      }
      EXPECT_EQ(present, written);
    }
    std::printf("checkpoints: %d rounds of %d concurrent calls, %zu written, %d refused ABORTED\n", rounds,
                kCallers, written.size(), aborted);
    ASSERT_GT(aborted, 0) << "no concurrent call was ever refused while a checkpoint was being written";
    ASSERT_FALSE(written.empty());
    // The metric counts them all (retention 0 keeps all).
    EXPECT_EQ(MetricSample(HttpGet(MetricsPortFromLog(lawnd.Log()), "/metrics"), "lawn_checkpoints"),
              static_cast<double>(written.size()));
    ASSERT_EQ(lawnd.Stop(SIGTERM), 0);
  }
  // Restarted with a retention of 2: at start the metric counts what is there; a new checkpoint leaves the
  // newest two, and the metric says 2.
  const std::string keep_two = WriteFile(dir.path() + "/keep_two.yaml", "checkpoint_retention: 2\n");
  LawndProcess lawnd(data, {"--config", keep_two, "--metrics-listen", "127.0.0.1:0"});
  lawnd.Start();
  const int metrics_port = MetricsPortFromLog(lawnd.Log());
  EXPECT_EQ(MetricSample(HttpGet(metrics_port, "/metrics"), "lawn_checkpoints"), static_cast<double>(written.size()));
  auto admin = v1::AdminService::NewStub(lawnd.channel());
  for (const std::string name : {"late-1", "late-2"}) {
    grpc::ClientContext ctx;
    v1::CreateCheckpointRequest req;
    req.set_name(name);
    v1::CreateCheckpointResponse resp;
    ASSERT_TRUE(admin->CreateCheckpoint(&ctx, req, &resp).ok());
  }
  EXPECT_EQ(Checkpoints(data), (std::set<std::string>{"late-1", "late-2"}));
  EXPECT_EQ(MetricSample(HttpGet(metrics_port, "/metrics"), "lawn_checkpoints"), 2);
}

TEST(ServerLimitsTest, NamespaceTakesAtMostMaxSubscribers) {
  TempDir dir;
  const std::string config = WriteFile(dir.path() + "/lawn.yaml", "max_subscribers_per_namespace: 2\n");
  LawndProcess lawnd(dir.path() + "/data", {"--config", config});
  lawnd.Start();
  auto stub = lawnd.stub();
  TestSubscriber a(*stub, "cap");
  TestSubscriber b(*stub, "cap", 100, /*observe=*/true);
  // Wait until both are attached (the stats count them).
  ASSERT_TRUE(WaitFor([&] {
    grpc::ClientContext ctx;
    v1::GetStatsResponse resp;
    if (!stub->GetStats(&ctx, v1::GetStatsRequest(), &resp).ok()) return false;
    for (const auto& n : resp.namespaces()) {
      if (n.namespace_() == "cap") return n.subscribers() == 2;
    }
    return false;
  }));
  TestSubscriber c(*stub, "cap");
  std::optional<grpc::Status> end = c.WaitEnd(milliseconds(15000));
  ASSERT_TRUE(end.has_value());
  EXPECT_EQ(end->error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_NE(end->error_message().find("max_subscribers_per_namespace"), std::string::npos);
  TestSubscriber elsewhere(*stub, "other");
  ASSERT_TRUE(StartTtl(*stub, "other", "t", milliseconds(10)).ok());
  EXPECT_TRUE(elsewhere.Next(milliseconds(15000)).has_value());
}

}  // namespace
}  // namespace lawn::testing
