// The Prometheus endpoint of the real lawnd: it serves every documented metric with its documented type
// (counter, gauge, histogram), and the counters move. Also what `top -H` shows: lawnd's threads by name.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <string>
#include <thread>

#include "gtest/gtest.h"
#include "tests/integration/lawnd_process.h"
#include "tests/integration/test_client.h"

namespace lawn::testing {
namespace {

using std::chrono::milliseconds;

// Prometheus text helpers shared with the other integration tests (lawnd_process.h).
double Sample(const std::string& text, const std::string& series) { return MetricSample(text, series); }

// name -> type of every "# TYPE name type" line.
std::multimap<std::string, std::string> TypeLines(const std::string& text) {
  std::multimap<std::string, std::string> types;
  const std::regex line(R"(\n# TYPE (\S+) (\S+))");
  for (auto it = std::sregex_iterator(text.begin(), text.end(), line); it != std::sregex_iterator(); ++it) {
    types.emplace((*it)[1], (*it)[2]);
  }
  return types;
}

TEST(MetricsTest, ScrapeShowsEveryMetricWithItsTypeAndCountersMove) {
  TempDir dir;
  LawndProcess lawnd(dir.path() + "/data", {"--metrics-listen", "127.0.0.1:0"});
  lawnd.Start();
  std::smatch m;
  const std::string log = lawnd.Log();
  ASSERT_TRUE(std::regex_search(log, m, std::regex(R"(metrics on http://[^:]+:(\d+)/metrics)"))) << log;
  const int port = std::stoi(m[1]);
  auto stub = lawnd.stub();
  TestSubscriber sub(*stub, "m");
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(StartTtl(*stub, "m", "t" + std::to_string(i), milliseconds(50)).ok());
  ASSERT_TRUE(StartTtl(*stub, "m", "long", milliseconds(3'600'000)).ok());
  for (int i = 0; i < 5; ++i) {
    std::optional<v1::Expiration> e = sub.Next(milliseconds(30000));
    ASSERT_TRUE(e.has_value());
    sub.Ack(e->delivery_id());
  }
  // Gauges refresh every second; counters are published per worker round.
  std::string text;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (std::chrono::steady_clock::now() < deadline) {
    text = "\n" + HttpGet(port, "/metrics");
    if (Sample(text, R"(lawn_subscribers\{namespace="m"\})") == 1 &&
        Sample(text, R"(lawn_expirations_total)") >= 5 &&
        Sample(text, R"(lawn_timer_operations_total\{op="start"\})") == 6 &&
        Sample(text, R"(lawn_store_log_bytes)") > 0) {
      break;
    }
    std::this_thread::sleep_for(milliseconds(100));
  }
  // Every documented metric with its documented type (README, metrics reference), and no second TYPE line.
  const std::map<std::string, std::string> documented = {
      {"lawn_pending_timers", "gauge"},
      {"lawn_lawn_buckets", "gauge"},
      {"lawn_timer_operations_total", "counter"},
      {"lawn_expirations_total", "counter"},
      {"lawn_request_duration_seconds", "histogram"},
      {"lawn_expiry_lateness_seconds", "histogram"},
      {"lawn_fired_lateness_seconds", "histogram"},
      {"lawn_late_expirations_total", "counter"},
      {"lawn_outbox_expirations", "gauge"},
      {"lawn_redeliveries_total", "counter"},
      {"lawn_subscribers", "gauge"},
      {"lawn_storage_write_duration_seconds", "histogram"},
      {"lawn_storage_syncs_total", "counter"},
      {"lawn_recovery_duration_seconds", "gauge"},
      {"lawn_data_dir_bytes", "gauge"},
      {"lawn_store_snapshots_total", "counter"},
      {"lawn_store_snapshot_failures_total", "counter"},
      {"lawn_store_log_bytes", "gauge"},
      {"lawn_store_snapshot_bytes", "gauge"},
      {"lawn_storage_info", "gauge"},
  };
  const std::multimap<std::string, std::string> types = TypeLines(text);
  for (const auto& [name, type] : documented) {
    EXPECT_EQ(types.count(name), 1u) << name;
    auto it = types.find(name);
    if (it != types.end()) {
      EXPECT_EQ(it->second, type) << name;
    }
  }
  // Each type's samples have the shape Prometheus expects of it.
  EXPECT_GE(Sample(text, R"(lawn_request_duration_seconds_bucket\{method="StartTimer",le="\+Inf"\})"), 6);
  EXPECT_GE(Sample(text, R"(lawn_request_duration_seconds_sum\{method="StartTimer"\})"), 0);
  EXPECT_GE(Sample(text, R"(lawn_expiry_lateness_seconds_bucket\{le="\+Inf"\})"), 5);
  EXPECT_GE(Sample(text, R"(lawn_storage_write_duration_seconds_count)"), 1);
  EXPECT_EQ(Sample(text, R"(lawn_timer_operations_total\{op="start"\})"), 6);
  EXPECT_GE(Sample(text, R"(lawn_expirations_total)"), 5);
  EXPECT_EQ(Sample(text, R"(lawn_subscribers\{namespace="m"\})"), 1);
  EXPECT_GE(Sample(text, R"(lawn_expiry_lateness_seconds_count)"), 5);
  // The default engine for a new data dir is the log: what it wrote since its (no) snapshot.
  EXPECT_GT(Sample(text, R"(lawn_store_log_bytes)"), 0);
  EXPECT_EQ(Sample(text, R"(lawn_store_snapshot_bytes)"), 0);
  EXPECT_EQ(Sample(text, R"(lawn_storage_info\{engine="log",format="3"\})"), 1);
  // Every firing is counted once its round is written, labelled with the durability mode (sync by default).
  EXPECT_GE(Sample(text, R"(lawn_fired_lateness_seconds_count\{durability="sync"\})"), 5);
  EXPECT_GE(Sample(text, R"(lawn_fired_lateness_seconds_bucket\{durability="sync",le="\+Inf"\})"), 5);
  EXPECT_EQ(Sample(text, R"(lawn_late_expirations_total)"), 0);
  EXPECT_GE(Sample(text, R"(lawn_request_duration_seconds_count\{method="StartTimer"\})"), 6);
  EXPECT_GT(Sample(text, R"(lawn_storage_syncs_total)"), 0);
  double pending = 0;
  for (int shard = 0; shard < 2; ++shard) {
    for (const char* s : {"lawn", "wheel"}) {
      const double v = Sample(text, "lawn_pending_timers\\{shard=\"" + std::to_string(shard) +
                                        "\",structure=\"" + s + "\"\\}");
      ASSERT_GE(v, 0) << shard << s;
      pending += v;
    }
  }
  EXPECT_EQ(pending, 1);
}

// The names README's operations section gives lawnd's threads, as /proc (top -H, ps -L, perf) shows them.
TEST(MetricsTest, ThreadsAreNamedByWhatTheyDo) {
  TempDir dir;
  LawndProcess lawnd(dir.path() + "/data", {"--shards", "2", "--durability", "sync"});
  lawnd.Start();
  const std::set<std::string> want = {"lawn-shard-0",  "lawn-shard-1", "lawn-commit-0",
                                      "lawn-commit-1", "lawn-fold",    "lawn-background"};
  // Each thread names itself as it starts: give a loaded machine a moment to run them all.
  std::set<std::string> names;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (true) {
    names.clear();
    for (const auto& task :
         std::filesystem::directory_iterator("/proc/" + std::to_string(lawnd.pid()) + "/task")) {
      std::ifstream comm(task.path() / "comm");
      std::string name;
      if (std::getline(comm, name)) names.insert(name);
    }
    if (std::includes(names.begin(), names.end(), want.begin(), want.end()) ||
        std::chrono::steady_clock::now() > deadline) {
      break;
    }
    std::this_thread::sleep_for(milliseconds(50));
  }
  for (const std::string& name : want) EXPECT_TRUE(names.count(name)) << name;
}

}  // namespace
}  // namespace lawn::testing
