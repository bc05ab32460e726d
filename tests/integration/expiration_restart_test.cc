// What a kill -9 does to fired expirations, against the real lawnd in both durable modes: one not yet acked
// comes back with its delivery id and payload, an acked one never does, and a key started again before its
// expiration is acked keeps both the old expiration and the new timer, whichever order the ack and the
// restart come in. (Memory durability writes nothing; restart_test covers it.)
#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "tests/integration/lawnd_process.h"
#include "tests/integration/test_client.h"

namespace lawn::testing {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

constexpr auto kWait = seconds(30);
constexpr auto kQuiet = milliseconds(500);  // How long "nothing more is delivered" is watched.

class ExpirationRestartTest : public ::testing::TestWithParam<const char*> {
 protected:
  ExpirationRestartTest() : lawnd_(dir_.path() + "/data", Flags(GetParam())) {}
  static std::vector<std::string> Flags(const char* mode) {
    std::vector<std::string> flags = DurableModeFlags(mode);
    flags.insert(flags.end(), {"--shards", "2"});
    return flags;
  }

  // Returns once the acks sent so far are written: their delete commands are queued on the shards before
  // these starts (which touch every shard) are, and a start is answered only after its round's write.
  void AcksWritten() {
    // From the outbox count dropping to the command queued: a few instructions, unless the reactor's thread
    // is preempted in between (250 ms covers a sanitizer build beside other tests).
    std::this_thread::sleep_for(milliseconds(250));
    std::vector<v1::StartTimerRequest> barrier;
    for (int i = 0; i < 64; ++i) {
      barrier.push_back(TtlRequest("barrier", "b" + std::to_string(barriers_) + "-" + std::to_string(i),
                                   milliseconds(3'600'000)));
    }
    ++barriers_;
    ASSERT_TRUE(StartAll(*stub_, barrier));
  }
  void Restart() {
    lawnd_.Kill();
    lawnd_.Start();
    stub_ = lawnd_.stub();
  }
  std::optional<v1::Timer> Get(const std::string& ns, const std::string& id) {
    v1::Timer timer;
    const grpc::Status s = GetTimer(*stub_, ns, id, &timer);
    if (s.error_code() == grpc::StatusCode::NOT_FOUND) return std::nullopt;
    EXPECT_TRUE(s.ok()) << s.error_message();
    return timer;
  }

  TempDir dir_;
  LawndProcess lawnd_;
  std::unique_ptr<v1::TimerService::Stub> stub_;
  int barriers_ = 0;
};

TEST_P(ExpirationRestartTest, UnackedExpirationsComeBackWithTheirIdsAndAckedOnesNever) {
  constexpr int kTimers = 1000;  // The default max_in_flight: one subscriber holds them all.
  lawnd_.Start();
  stub_ = lawnd_.stub();
  std::vector<v1::StartTimerRequest> starts;
  for (int i = 0; i < kTimers; ++i) {
    starts.push_back(TtlRequest("ip", "t" + std::to_string(i), milliseconds(20 + i % 50), "p" + std::to_string(i)));
  }
  ASSERT_TRUE(StartAll(*stub_, starts));
  std::map<std::string, uint64_t> unacked;  // timer id -> delivery id
  {
    TestSubscriber sub(*stub_, "ip", kTimers);
    const std::vector<v1::Expiration> got = sub.Take(kTimers, kWait);
    ASSERT_EQ(got.size(), static_cast<size_t>(kTimers));
    std::vector<uint64_t> ack;
    for (size_t i = 0; i < got.size(); ++i) {
      EXPECT_EQ(got[i].timer().payload(), "p" + got[i].timer().id().substr(1));
      if (i % 2 == 0) {
        ack.push_back(got[i].delivery_id());
      } else {
        unacked[got[i].timer().id()] = got[i].delivery_id();
      }
    }
    ASSERT_TRUE(sub.Ack(ack));
    ASSERT_TRUE(WaitFor([&] { return NamespaceStatsOf(*stub_, "ip").outbox() == unacked.size(); }, kWait));
    AcksWritten();
  }
  Restart();
  EXPECT_EQ(NamespaceStatsOf(*stub_, "ip").pending_timers(), 0u);
  TestSubscriber sub(*stub_, "ip", kTimers);
  const std::vector<v1::Expiration> back = sub.Take(unacked.size(), kWait);
  ASSERT_EQ(back.size(), unacked.size());
  std::vector<uint64_t> ack;
  for (const v1::Expiration& e : back) {
    ASSERT_EQ(unacked.count(e.timer().id()), 1u) << e.timer().id() << " was acked, or came back twice";
    EXPECT_EQ(e.delivery_id(), unacked[e.timer().id()]) << e.timer().id();
    EXPECT_EQ(e.timer().payload(), "p" + e.timer().id().substr(1));
    unacked.erase(e.timer().id());
    ack.push_back(e.delivery_id());
  }
  EXPECT_TRUE(sub.Drain(kQuiet).empty());
  ASSERT_TRUE(sub.Ack(ack));
  ASSERT_TRUE(WaitFor([&] { return NamespaceStatsOf(*stub_, "ip").outbox() == 0; }, kWait));
  AcksWritten();
  EXPECT_TRUE(sub.Close().ok());
  Restart();
  TestSubscriber after(*stub_, "ip");
  EXPECT_TRUE(after.Drain(kQuiet).empty());
  EXPECT_EQ(NamespaceStatsOf(*stub_, "ip").pending_timers(), 0u);
}

// The pattern of a client that starts the next timer of a key from its handler, before it acks: the new timer
// takes the key while the old expiration still waits for its ack.
TEST_P(ExpirationRestartTest, AKeyStartedAgainBeforeTheAckKeepsTheExpirationAndTheNewTimer) {
  lawnd_.Start();
  stub_ = lawnd_.stub();
  uint64_t first_id = 0;
  {
    TestSubscriber sub(*stub_, "again");
    ASSERT_TRUE(StartTtl(*stub_, "again", "k", milliseconds(20), nullptr, "first").ok());
    std::optional<v1::Expiration> e = sub.Next(kWait);
    ASSERT_TRUE(e.has_value());
    first_id = e->delivery_id();
    // Started again at once, twice in a row (the second is refused: it is pending now).
    ASSERT_TRUE(StartTtl(*stub_, "again", "k", milliseconds(3'600'000), nullptr, "second").ok());
    EXPECT_EQ(StartTtl(*stub_, "again", "k", milliseconds(3'600'000), nullptr, "third").error_code(),
              grpc::StatusCode::ALREADY_EXISTS);
  }
  Restart();  // Before the ack: both must be there.
  {
    std::optional<v1::Timer> pending = Get("again", "k");
    ASSERT_TRUE(pending.has_value());
    EXPECT_EQ(pending->payload(), "second");
    TestSubscriber sub(*stub_, "again");
    std::optional<v1::Expiration> e = sub.Next(kWait);
    ASSERT_TRUE(e.has_value());
    EXPECT_EQ(e->delivery_id(), first_id);
    EXPECT_EQ(e->timer().payload(), "first");
    ASSERT_TRUE(sub.Ack(e->delivery_id()));
    ASSERT_TRUE(WaitFor([&] { return NamespaceStatsOf(*stub_, "again").outbox() == 0; }, kWait));
    AcksWritten();
  }
  Restart();  // The ack deleted the expiration, not the new timer.
  {
    std::optional<v1::Timer> pending = Get("again", "k");
    ASSERT_TRUE(pending.has_value());
    EXPECT_EQ(pending->payload(), "second");
    TestSubscriber sub(*stub_, "again");
    EXPECT_TRUE(sub.Drain(kQuiet).empty());
  }
  // The other order: fired, started again, acked, then the restart.
  ASSERT_TRUE(StartTtl(*stub_, "again", "j", milliseconds(20), nullptr, "one").ok());
  {
    TestSubscriber sub(*stub_, "again");
    std::optional<v1::Expiration> e = sub.Next(kWait);
    ASSERT_TRUE(e.has_value());
    EXPECT_EQ(e->timer().id(), "j");
    ASSERT_TRUE(StartTtl(*stub_, "again", "j", milliseconds(3'600'000), nullptr, "two").ok());
    ASSERT_TRUE(sub.Ack(e->delivery_id()));
    ASSERT_TRUE(WaitFor([&] { return NamespaceStatsOf(*stub_, "again").outbox() == 0; }, kWait));
    AcksWritten();
  }
  Restart();
  std::optional<v1::Timer> pending = Get("again", "j");
  ASSERT_TRUE(pending.has_value());
  EXPECT_EQ(pending->payload(), "two");
  TestSubscriber sub(*stub_, "again");
  EXPECT_TRUE(sub.Drain(kQuiet).empty());
  EXPECT_EQ(NamespaceStatsOf(*stub_, "again").pending_timers(), 2u);
}

INSTANTIATE_TEST_SUITE_P(DurableModes, ExpirationRestartTest,
                         ::testing::Values("sync", "interval", "sync-rocksdb", "interval-rocksdb"),
                         [](const ::testing::TestParamInfo<const char*>& info) {
                           std::string name(info.param);
                           return name == "sync-rocksdb"       ? std::string("SyncRocksDb")
                                  : name == "interval-rocksdb" ? std::string("IntervalRocksDb")
                                                               : name;
                         });

}  // namespace
}  // namespace lawn::testing
