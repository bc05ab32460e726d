// What a restart keeps and forgets, against the real lawnd: delivery ids never repeat across restarts in
// durable mode (SIGTERM and kill -9), while an expiration still in the outbox keeps its id; `memory`
// durability forgets everything at a restart, writes nothing to data_dir and refuses CreateCheckpoint.
#include <csignal>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tests/integration/lawnd_process.h"
#include "tests/integration/test_client.h"

namespace lawn::testing {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

constexpr auto kWait = seconds(30);

// Each round: 20 timers fire and are acked, then 5 more fire and are left unacked in the outbox; lawnd
// restarts, alternately by SIGTERM and kill -9. The leftovers come back with the ids they fired with; every
// expiration fired by any process gets an id no other expiration ever had.
TEST(RestartTest, DeliveryIdsAreUniqueAcrossRestarts) {
  constexpr int kRounds = 5;
  TempDir dir;
  LawndProcess lawnd(dir.path() + "/data");
  std::map<uint64_t, std::string> owner;           // delivery id -> the expiration that had it first
  std::map<std::string, uint64_t> left_in_outbox;  // timer id -> the delivery id it fired with
  auto claim = [&](const v1::Expiration& e, int round) {
    EXPECT_NE(e.delivery_id(), 0u);
    const auto [it, fresh] = owner.emplace(e.delivery_id(), "round " + std::to_string(round) + " " + e.timer().id());
    EXPECT_TRUE(fresh) << "delivery id " << e.delivery_id() << " of " << e.timer().id() << " in round " << round
                       << " was already used by " << it->second;
  };
  for (int round = 0; round < kRounds; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    lawnd.Start();
    auto stub = lawnd.stub();
    {
      TestSubscriber sub(*stub, "ids");
      // The previous process's leftovers: the same ids they fired with.
      std::vector<v1::Expiration> back = sub.Take(left_in_outbox.size(), kWait);
      ASSERT_EQ(back.size(), left_in_outbox.size());
      for (const auto& e : back) {
        ASSERT_TRUE(left_in_outbox.count(e.timer().id())) << e.timer().id();
        EXPECT_EQ(e.delivery_id(), left_in_outbox[e.timer().id()]) << e.timer().id();
        sub.Ack(e.delivery_id());
      }
      left_in_outbox.clear();
      // Fresh expirations of this process.
      std::vector<v1::StartTimerRequest> fresh;
      for (int i = 0; i < 20; ++i) fresh.push_back(TtlRequest("ids", "r" + std::to_string(round) + "-" + std::to_string(i), milliseconds(50)));
      ASSERT_TRUE(StartAll(*stub, fresh));
      std::vector<v1::Expiration> got = sub.Take(20, kWait);
      ASSERT_EQ(got.size(), 20u);
      for (const auto& e : got) {
        claim(e, round);
        sub.Ack(e.delivery_id());
      }
      ASSERT_TRUE(WaitFor([&] { return NamespaceStatsOf(*stub, "ids").outbox() == 0; }, kWait));
      EXPECT_TRUE(sub.Close().ok());
    }
    if (round == kRounds - 1) break;
    // Five more fire; their ids are read by a stream that ends without acking, so they stay in the outbox.
    std::vector<v1::StartTimerRequest> later;
    for (int i = 0; i < 5; ++i) later.push_back(TtlRequest("ids", "left" + std::to_string(round) + "-" + std::to_string(i), milliseconds(50)));
    ASSERT_TRUE(StartAll(*stub, later));
    {
      TestSubscriber peek(*stub, "ids", 5);
      std::vector<v1::Expiration> leftovers = peek.Take(5, kWait);
      ASSERT_EQ(leftovers.size(), 5u);
      for (const auto& e : leftovers) {
        claim(e, round);
        left_in_outbox[e.timer().id()] = e.delivery_id();
      }
      EXPECT_TRUE(peek.Close().ok());
    }
    ASSERT_TRUE(WaitFor([&] { return NamespaceStatsOf(*stub, "ids").outbox() == 5; }, kWait));
    if (round % 2 == 0) {
      ASSERT_EQ(lawnd.Stop(SIGTERM), 0);
    } else {
      lawnd.Kill();
    }
  }
  EXPECT_EQ(owner.size(), static_cast<size_t>(kRounds * 20 + (kRounds - 1) * 5));
}

TEST(RestartTest, MemoryDurabilityForgetsEverythingAtARestart) {
  TempDir dir;
  const std::string data_dir = dir.path() + "/data";
  LawndProcess lawnd(data_dir, {"--durability", "memory"});
  lawnd.Start();
  auto stub = lawnd.stub();
  ASSERT_TRUE(StartTtl(*stub, "mem", "pending", milliseconds(3'600'000)).ok());
  ASSERT_TRUE(StartTtl(*stub, "mem", "fired", milliseconds(50)).ok());
  ASSERT_TRUE(WaitFor([&] { return NamespaceStatsOf(*stub, "mem").outbox() == 1; }, kWait));
  // Everything works in memory, including delivery.
  {
    TestSubscriber sub(*stub, "mem");
    std::optional<v1::Expiration> e = sub.Next(kWait);
    ASSERT_TRUE(e.has_value());
    EXPECT_EQ(e->timer().id(), "fired");
    // Not acked: in durable mode it would come back after a restart.
  }
  // No checkpoint of a store that does not exist.
  {
    auto admin = v1::AdminService::NewStub(lawnd.channel());
    grpc::ClientContext ctx;
    v1::CreateCheckpointRequest req;
    req.set_name("nightly");
    v1::CreateCheckpointResponse resp;
    const grpc::Status s = admin->CreateCheckpoint(&ctx, req, &resp);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::FAILED_PRECONDITION) << s.error_message();
    EXPECT_NE(s.error_message().find("memory"), std::string::npos) << s.error_message();
  }
  EXPECT_FALSE(std::filesystem::exists(data_dir)) << "memory mode wrote to data_dir";

  for (const bool kill : {false, true}) {
    if (kill) {
      lawnd.Kill();
    } else {
      ASSERT_EQ(lawnd.Stop(SIGTERM), 0);
    }
    lawnd.Start();
    stub = lawnd.stub();
    grpc::ClientContext ctx;
    v1::GetTimerRequest get;
    get.set_namespace_("mem");
    get.set_id("pending");
    v1::GetTimerResponse resp;
    EXPECT_EQ(stub->GetTimer(&ctx, get, &resp).error_code(), grpc::StatusCode::NOT_FOUND);
    grpc::ClientContext stats_ctx;
    v1::GetStatsResponse stats;
    ASSERT_TRUE(stub->GetStats(&stats_ctx, v1::GetStatsRequest(), &stats).ok());
    EXPECT_EQ(stats.pending_timers(), 0u);
    EXPECT_EQ(stats.outbox(), 0u);
    // Each start (the first one included) recovered nothing.
    const std::string log = lawnd.Log();
    int recoveries = 0;
    for (size_t at = log.find("recovery done: 0 timers and 0 undelivered expirations"); at != std::string::npos;
         at = log.find("recovery done: 0 timers and 0 undelivered expirations", at + 1)) {
      ++recoveries;
    }
    EXPECT_EQ(recoveries, kill ? 3 : 2) << log;
    // The id is free again.
    EXPECT_TRUE(StartTtl(*stub, "mem", "pending", milliseconds(3'600'000)).ok());
  }
  EXPECT_FALSE(std::filesystem::exists(data_dir)) << "memory mode wrote to data_dir";
}

// In `memory` durability too, delivery ids never repeat across restarts, even quick ones (server/
// delivery_ids.h: millisecond slots that only move forward). Restarts here take well under a second.
TEST(RestartTest, MemoryDurabilityDeliveryIdsAreUniqueAcrossQuickRestarts) {
  TempDir dir;
  LawndProcess lawnd(dir.path() + "/data", {"--durability", "memory"});
  std::map<uint64_t, int> first_start_of;
  for (int start = 0; start < 10; ++start) {
    lawnd.Start();
    auto stub = lawnd.stub();
    TestSubscriber sub(*stub, "mem-ids");
    ASSERT_TRUE(StartTtl(*stub, "mem-ids", "t", milliseconds(1)).ok());
    std::optional<v1::Expiration> e = sub.Next(kWait);
    ASSERT_TRUE(e.has_value());
    const auto [it, fresh] = first_start_of.emplace(e->delivery_id(), start);
    EXPECT_TRUE(fresh) << "start " << start << " reused delivery id " << e->delivery_id() << " of start "
                       << it->second;
    lawnd.Kill();
  }
}

}  // namespace
}  // namespace lawn::testing
