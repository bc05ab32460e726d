// Crash test: a load generator starts (and sometimes deletes) timers with TTLs of 1-5 s, a mix of a few fixed
// TTLs and random ones, while a subscriber acks deliveries and lawnd is killed with SIGKILL at random moments
// and restarted, 10 rounds; then everything drains. Every acknowledged StartTimer must be delivered at least
// once, none before its deadline, and no acknowledged DeleteTimer's timer at all. Runs in `sync` and
// `interval` durability with the rocksdb engine, and in `sync` with the log engine.
#include <atomic>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <string>
#include <thread>

#include "gtest/gtest.h"
#include "tests/integration/lawnd_process.h"
#include "tests/integration/test_client.h"

namespace lawn::testing {
namespace {

using std::chrono::milliseconds;

constexpr int kRounds = 10;
constexpr char kNs[] = "crash";

class CrashTest : public ::testing::TestWithParam<const char*> {
 protected:
  enum class Fate { kAcked, kUnknown, kDeleted, kMaybeDeleted };
  struct Started {
    int64_t deadline_ns = 0;
    Fate fate = Fate::kUnknown;
  };
  struct Received {
    int64_t deadline_ns;
    int64_t fired_at_ns;
    int64_t received_ns;
  };

  std::string Address() {
    std::lock_guard lock(mu_);
    return address_;
  }
  void SetAddress(const std::string& a) {
    std::lock_guard lock(mu_);
    address_ = a;
  }

  void Load(std::atomic<bool>& stop) {
    std::mt19937_64 rng(42);
    const int fixed[] = {1000, 2000, 3000, 5000};
    uint64_t seq = 0;
    while (!stop.load()) {
      const std::string address = Address();
      if (address.empty()) {
        std::this_thread::sleep_for(milliseconds(5));
        continue;
      }
      auto stub = v1::TimerService::NewStub(grpc::CreateChannel(address, grpc::InsecureChannelCredentials()));
      for (int i = 0; i < 50 && !stop.load() && Address() == address; ++i) {
        if (rng() % 5 != 0) {
          const std::string id = "t" + std::to_string(seq++);
          const int ttl = rng() % 2 ? fixed[rng() % 4] : 1000 + static_cast<int>(rng() % 4001);
          v1::Timer t;
          grpc::Status s = StartTtl(*stub, kNs, id, milliseconds(ttl), &t);
          std::lock_guard lock(mu_);
          started_[id] = {s.ok() ? ToNs(t.deadline()) : 0, s.ok() ? Fate::kAcked : Fate::kUnknown};
        } else {
          // Delete a random acknowledged timer that is not about to fire.
          std::string victim;
          {
            std::lock_guard lock(mu_);
            if (started_.empty()) continue;
            auto it = started_.lower_bound("t" + std::to_string(rng() % seq));
            if (it == started_.end() || it->second.fate != Fate::kAcked ||
                it->second.deadline_ns < WallNowNs() + 500'000'000) {
              continue;
            }
            victim = it->first;
          }
          grpc::ClientContext ctx;
          ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
          v1::DeleteTimerRequest r;
          r.set_namespace_(kNs);
          r.set_id(victim);
          v1::DeleteTimerResponse resp;
          grpc::Status s = stub->DeleteTimer(&ctx, r, &resp);
          std::lock_guard lock(mu_);
          if (s.ok()) {
            started_[victim].fate = Fate::kDeleted;
          } else if (s.error_code() != grpc::StatusCode::NOT_FOUND) {
            started_[victim].fate = Fate::kMaybeDeleted;
          }
        }
      }
    }
  }

  void Subscribe(std::atomic<bool>& stop) {
    while (!stop.load()) {
      const std::string address = Address();
      if (address.empty()) {
        std::this_thread::sleep_for(milliseconds(5));
        continue;
      }
      auto stub = v1::TimerService::NewStub(grpc::CreateChannel(address, grpc::InsecureChannelCredentials()));
      TestSubscriber sub(*stub, kNs, 200);
      while (!stop.load() && Address() == address) {
        std::optional<v1::Expiration> e = sub.Next(milliseconds(50));
        if (!e) {
          if (sub.WaitEnd(milliseconds(0)).has_value()) break;  // Stream ended: reconnect.
          continue;
        }
        {
          std::lock_guard lock(mu_);
          received_[e->timer().id()].push_back({ToNs(e->timer().deadline()), ToNs(e->fired_at()), WallNowNs()});
        }
        sub.Ack(e->delivery_id());
      }
    }
  }

  std::mutex mu_;
  std::string address_;
  std::map<std::string, Started> started_;
  std::map<std::string, std::vector<Received>> received_;
};

TEST_P(CrashTest, KillNineLosesNothingAcknowledged) {
  TempDir dir;
  const std::string config = WriteFile(dir.path() + "/lawn.yaml", "ack_timeout: 2s\n");
  std::vector<std::string> flags = {"--config", config};
  for (std::string& flag : DurableModeFlags(GetParam())) flags.push_back(std::move(flag));
  LawndProcess lawnd(dir.path() + "/data", flags);
  lawnd.Start();
  SetAddress(lawnd.address());
  std::atomic<bool> stop_load{false}, stop_sub{false};
  std::thread load([&] { Load(stop_load); });
  std::thread subscriber([&] { Subscribe(stop_sub); });
  std::mt19937_64 rng(7);
  // Acknowledged starts so far: each round waits for some before its kill, so that a slow machine still
  // tests something (the counts are checked at the end).
  auto acked_so_far = [&] {
    std::lock_guard lock(mu_);
    size_t n = 0;
    for (const auto& [id, s] : started_) n += s.fate == Fate::kAcked;
    return n;
  };
  size_t acked_before = 0;
  for (int round = 0; round < kRounds; ++round) {
    std::this_thread::sleep_for(milliseconds(300 + rng() % 1200));
    EXPECT_TRUE(WaitFor([&] { return acked_so_far() >= acked_before + 15; }, std::chrono::seconds(30)));
    acked_before = acked_so_far();
    SetAddress("");
    lawnd.Kill();
    lawnd.Start();
    SetAddress(lawnd.address());
  }
  std::this_thread::sleep_for(milliseconds(500));
  stop_load = true;
  load.join();

  // Drain: wait until every acknowledged, undeleted timer was received (or time runs out).
  int64_t last_deadline = 0;
  std::set<std::string> expected;
  {
    std::lock_guard lock(mu_);
    for (const auto& [id, s] : started_) {
      if (s.fate == Fate::kAcked) {
        expected.insert(id);
        last_deadline = std::max(last_deadline, s.deadline_ns);
      }
    }
  }
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (std::chrono::steady_clock::now() < give_up) {
    size_t missing = 0;
    {
      std::lock_guard lock(mu_);
      for (const std::string& id : expected) missing += received_.count(id) == 0;
    }
    if (missing == 0 && WallNowNs() > last_deadline) break;
    std::this_thread::sleep_for(milliseconds(50));
  }
  stop_sub = true;
  subscriber.join();

  std::lock_guard lock(mu_);
  size_t acked = 0, deleted = 0, deliveries = 0;
  for (const auto& [id, s] : started_) {
    auto got = received_.find(id);
    if (s.fate == Fate::kAcked) {
      ++acked;
      EXPECT_NE(got, received_.end()) << "acknowledged timer " << id << " was never delivered";
    }
    if (s.fate == Fate::kDeleted) {
      ++deleted;
      EXPECT_EQ(got, received_.end()) << "deleted timer " << id << " was delivered";
    }
  }
  for (const auto& [id, list] : received_) {
    for (const Received& r : list) {
      ++deliveries;
      EXPECT_GE(r.fired_at_ns, r.deadline_ns) << id << " fired early";
      EXPECT_GE(r.received_ns, r.deadline_ns) << id << " received early";
      auto s = started_.find(id);
      if (s != started_.end() && s->second.fate == Fate::kAcked) {
        EXPECT_EQ(r.deadline_ns, s->second.deadline_ns);
      }
    }
  }
  std::printf("[%s] %zu acknowledged starts, %zu acknowledged deletes, %zu deliveries over %d kill -9 rounds\n",
              GetParam(), acked, deleted, deliveries, kRounds);
  EXPECT_GT(acked, 100u);
  EXPECT_GT(deleted, 5u);
}

// The default engine (auto: log, for a new data dir) in both modes; RocksDB (data dirs written before auto
// was the default) in `sync` only: its `interval` differs in nothing but the sync's timing, which lawnd's
// layers above the store decide (ExpirationRestartTest runs both modes on it).
INSTANTIATE_TEST_SUITE_P(Durability, CrashTest, ::testing::Values("sync", "interval", "sync-rocksdb"));

}  // namespace
}  // namespace lawn::testing
