// Acks count only from the stream that holds the delivery: an observer or another subscriber cannot ack an
// expiration away, and delivery ids never repeat, not even across restarts in memory mode.
#include <set>
#include <string>

#include "gtest/gtest.h"
#include "tests/integration/lawnd_process.h"
#include "tests/integration/test_client.h"

namespace lawn::testing {
namespace {

using std::chrono::milliseconds;

class DeliveryOwnershipTest : public ::testing::Test {
 protected:
  void StartLawnd(std::vector<std::string> args = {}) {
    args.insert(args.end(), {"--metrics-listen", "127.0.0.1:0"});
    lawnd_ = std::make_unique<LawndProcess>(dir_.path() + "/data", std::move(args));
    lawnd_->Start();
    stub_ = lawnd_->stub();
  }
  double Metric(const std::string& series) {
    return MetricSample(HttpGet(MetricsPortFromLog(lawnd_->Log()), "/metrics"), series);
  }
  TempDir dir_;
  std::unique_ptr<LawndProcess> lawnd_;
  std::unique_ptr<v1::TimerService::Stub> stub_;
};

TEST_F(DeliveryOwnershipTest, ObserverAckDoesNotRemoveAnotherStreamsDelivery) {
  StartLawnd();
  auto holder = std::make_unique<TestSubscriber>(*stub_, "own");
  TestSubscriber observer(*stub_, "own", 100, /*observe=*/true);
  ASSERT_TRUE(StartTtl(*stub_, "own", "x", milliseconds(100)).ok());
  std::optional<v1::Expiration> held = holder->Next(milliseconds(15000));
  ASSERT_TRUE(held.has_value());
  std::optional<v1::Expiration> copy = observer.Next(milliseconds(15000));
  ASSERT_TRUE(copy.has_value());
  ASSERT_EQ(copy->delivery_id(), held->delivery_id());
  // The observer acks the delivery it saw; it is not its to ack.
  ASSERT_TRUE(observer.Ack(held->delivery_id()));
  ASSERT_TRUE(WaitFor([&] { return Metric(R"(lawn_acks_ignored_total\{reason="foreign"\})") >= 1; }));
  // The holder leaves without acking: the expiration must come back, to the next subscriber.
  holder->Close();
  holder.reset();
  TestSubscriber next(*stub_, "own");
  std::optional<v1::Expiration> again = next.Next(milliseconds(15000));
  ASSERT_TRUE(again.has_value()) << "the observer's ack removed someone else's delivery";
  EXPECT_EQ(again->delivery_id(), held->delivery_id());
  EXPECT_EQ(again->timer().id(), "x");
  EXPECT_EQ(again->attempt(), 2u);
  ASSERT_TRUE(next.Ack(again->delivery_id()));
}

TEST_F(DeliveryOwnershipTest, AckFromAnotherSubscriberIsIgnoredAndCounted) {
  StartLawnd();
  auto a = std::make_unique<TestSubscriber>(*stub_, "two", 1);
  ASSERT_TRUE(StartTtl(*stub_, "two", "x", milliseconds(50)).ok());
  std::optional<v1::Expiration> x = a->Next(milliseconds(15000));
  ASSERT_TRUE(x.has_value());
  TestSubscriber b(*stub_, "two", 1);
  ASSERT_TRUE(b.Ack(x->delivery_id()));  // Guessed or leaked id: not b's.
  ASSERT_TRUE(b.Ack(x->delivery_id() + 12345));  // Never sent at all.
  ASSERT_TRUE(WaitFor([&] {
    return Metric(R"(lawn_acks_ignored_total\{reason="foreign"\})") >= 1 &&
           Metric(R"(lawn_acks_ignored_total\{reason="unknown"\})") >= 1;
  }));
  a->Close();
  a.reset();
  std::optional<v1::Expiration> again = b.Next(milliseconds(15000));
  ASSERT_TRUE(again.has_value());
  EXPECT_EQ(again->delivery_id(), x->delivery_id());
  // Now b holds it: its ack counts, and a second ack of the same id changes nothing.
  ASSERT_TRUE(b.Ack(again->delivery_id()));
  ASSERT_TRUE(b.Ack(again->delivery_id()));
  ASSERT_TRUE(WaitFor([&] { return Metric(R"(lawn_acks_ignored_total\{reason="unknown"\})") >= 2; }));
  ASSERT_TRUE(WaitFor([&] { return Metric(R"(lawn_outbox_expirations\{namespace="two"\})") == 0; }));
}

TEST_F(DeliveryOwnershipTest, DeliveryIdsNeverRepeatAcrossMemoryModeRestarts) {
  std::set<uint64_t> seen;
  uint64_t last = 0;
  for (int run = 0; run < 3; ++run) {
    StartLawnd({"--durability", "memory"});
    TestSubscriber sub(*stub_, "ids");
    for (int i = 0; i < 5; ++i) ASSERT_TRUE(StartTtl(*stub_, "ids", "t" + std::to_string(i), milliseconds(10)).ok());
    for (int i = 0; i < 5; ++i) {
      std::optional<v1::Expiration> e = sub.Next(milliseconds(15000));
      ASSERT_TRUE(e.has_value());
      EXPECT_TRUE(seen.insert(e->delivery_id()).second) << "delivery id " << e->delivery_id() << " repeated";
      EXPECT_GT(e->delivery_id(), last) << "ids of a later process sort after an earlier one's";
      ASSERT_TRUE(sub.Ack(e->delivery_id()));
    }
    last = *seen.rbegin();
    sub.Close();
    ASSERT_EQ(lawnd_->Stop(SIGTERM), 0);
  }
  EXPECT_EQ(seen.size(), 15u);
}

}  // namespace
}  // namespace lawn::testing
