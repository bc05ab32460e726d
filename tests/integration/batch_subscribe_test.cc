// Batched expirations (Subscribe open.max_batch > 0) against the real lawnd: batch sizes bounded by
// max_batch, by lawnd's cap of 1000 and by about 1 MiB per response; max_in_flight still bounding what a
// batching stream holds; a stream of the original shape next to a batching one; redelivery of one batch
// member that was not acked; acks of a whole batch in one message.
//
// Batch sizes are exact where the test makes them so: every expiration has fired and waits in the outbox
// before the stream opens, and lawnd fills each response with what is ready when it writes. Where timers
// fire while streams are open, only the bounds are asserted.
#include <algorithm>
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

constexpr auto kWait = seconds(30);  // Bound on every wait for an event.

class BatchSubscribeTest : public ::testing::Test {
 protected:
  void StartLawnd(const std::string& config_yaml = "") {
    std::vector<std::string> args;
    if (!config_yaml.empty()) args = {"--config", WriteFile(dir_.path() + "/lawn.yaml", config_yaml)};
    lawnd_ = std::make_unique<LawndProcess>(dir_.path() + "/data", args);
    lawnd_->Start();
    stub_ = lawnd_->stub();
  }
  // Starts `n` timers "<prefix>0".. in `ns`, due in 50 ms, each with `payload`.
  void StartSoon(const std::string& ns, const std::string& prefix, int n, const std::string& payload = "") {
    std::vector<v1::StartTimerRequest> requests;
    for (int i = 0; i < n; ++i) {
      requests.push_back(TtlRequest(ns, prefix + std::to_string(i), milliseconds(50), payload));
    }
    ASSERT_TRUE(StartAll(*stub_, requests));
  }
  // Waits until every timer of `ns` has fired and `outbox` expirations wait (ready or in flight).
  bool WaitFired(const std::string& ns, uint64_t outbox) {
    return WaitFor(
        [&] {
          const v1::NamespaceStats s = NamespaceStatsOf(*stub_, ns);
          return s.pending_timers() == 0 && s.outbox() == outbox;
        },
        kWait);
  }
  static std::vector<uint64_t> Ids(const std::vector<v1::Expiration>& got) {
    std::vector<uint64_t> ids;
    for (const auto& e : got) ids.push_back(e.delivery_id());
    return ids;
  }
  // `n` times `size`, then `last` if not 0.
  static std::vector<size_t> Sizes(size_t n, size_t size, size_t last = 0) {
    std::vector<size_t> sizes(n, size);
    if (last != 0) sizes.push_back(last);
    return sizes;
  }

  TempDir dir_;
  std::unique_ptr<LawndProcess> lawnd_;
  std::unique_ptr<v1::TimerService::Stub> stub_;
};

TEST_F(BatchSubscribeTest, ResponsesHoldUpToMaxBatchOfWhatIsReady) {
  StartLawnd();
  StartSoon("sizes", "t", 50);
  ASSERT_TRUE(WaitFired("sizes", 50));
  TestSubscriber sub(*stub_, "sizes", 100, false, /*max_batch=*/4);
  const std::vector<v1::Expiration> got = sub.Take(50, kWait);
  ASSERT_EQ(got.size(), 50u);
  EXPECT_EQ(sub.batch_sizes(), Sizes(12, 4, 2));
  EXPECT_EQ(sub.single_responses(), 0u);
  EXPECT_EQ(sub.malformed_responses(), 0u);
  std::set<std::string> ids;
  std::set<uint64_t> delivery_ids;
  for (const v1::Expiration& e : got) {
    EXPECT_EQ(e.timer().namespace_(), "sizes");
    EXPECT_EQ(e.attempt(), 1u);
    EXPECT_GE(ToNs(e.fired_at()), ToNs(e.timer().deadline()));
    ids.insert(e.timer().id());
    delivery_ids.insert(e.delivery_id());
  }
  EXPECT_EQ(ids.size(), 50u);
  EXPECT_EQ(delivery_ids.size(), 50u);
  sub.Ack(Ids(got));
  ASSERT_TRUE(WaitFired("sizes", 0));
}

TEST_F(BatchSubscribeTest, MaxBatchAboveOneThousandMeansOneThousand) {
  // A window of 4000: half of it (BatchBound) is above 1000, so 1000 is the bound that applies.
  StartLawnd("max_in_flight: 4000\n");
  StartSoon("cap", "t", 1500);
  ASSERT_TRUE(WaitFired("cap", 1500));
  TestSubscriber sub(*stub_, "cap", 4000, false, /*max_batch=*/5000);
  EXPECT_EQ(sub.Take(1500, kWait).size(), 1500u);
  EXPECT_EQ(sub.batch_sizes(), Sizes(1, 1000, 500));
}

// 300 KiB payloads: three fit in 1 MiB, a fourth would not. A payload alone above 1 MiB still goes, alone.
TEST_F(BatchSubscribeTest, ResponsesStopAtAboutOneMebibyte) {
  StartLawnd("max_payload_bytes: 2MiB\n");
  StartSoon("bytes", "t", 8, std::string(300 * 1024, 'p'));
  ASSERT_TRUE(WaitFired("bytes", 8));
  TestSubscriber sub(*stub_, "bytes", 100, false, /*max_batch=*/100);
  std::vector<v1::Expiration> got = sub.Take(8, kWait);
  ASSERT_EQ(got.size(), 8u);
  EXPECT_EQ(sub.batch_sizes(), (std::vector<size_t>{3, 3, 2}));
  for (const v1::Expiration& e : got) EXPECT_EQ(e.timer().payload().size(), 300u * 1024);
  sub.Ack(Ids(got));
  ASSERT_TRUE(WaitFired("bytes", 0));

  StartSoon("bytes", "big", 2, std::string(1536 * 1024, 'b'));
  ASSERT_TRUE(WaitFired("bytes", 2));
  got = sub.Take(2, kWait);
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(sub.batch_sizes(), (std::vector<size_t>{3, 3, 2, 1, 1}));
  for (const v1::Expiration& e : got) EXPECT_EQ(e.timer().payload().size(), 1536u * 1024);
}

// Every expiration of a batch is in flight: a batching stream holds no more than max_in_flight, and an ack
// of k opens the window by exactly k. "Holds no more" is proved as in subscribe_test: what the stream was
// not allowed to take goes to the next stream that connects.
TEST_F(BatchSubscribeTest, MaxInFlightBoundsABatchingStream) {
  StartLawnd("ack_timeout: 1h\n");
  StartSoon("window", "t", 20);
  ASSERT_TRUE(WaitFired("window", 20));
  TestSubscriber first(*stub_, "window", 5, false, /*max_batch=*/100);
  const std::vector<v1::Expiration> held = first.Take(5, kWait);
  ASSERT_EQ(held.size(), 5u);
  EXPECT_EQ(first.batch_sizes(), Sizes(2, 2, 1));  // Half the window per response (BatchBound), five in all.
  TestSubscriber second(*stub_, "window", 100, false, /*max_batch=*/100);
  std::vector<v1::Expiration> rest = second.Take(15, kWait);
  EXPECT_EQ(rest.size(), 15u);
  EXPECT_EQ(first.queued(), 0u) << "the first stream got more than max_in_flight 5";
  second.Ack(Ids(rest));
  EXPECT_TRUE(second.Close().ok());

  // Two of its five acked in one message: the first stream takes exactly two more.
  first.Ack({held[0].delivery_id(), held[1].delivery_id()});
  StartSoon("window", "more", 3);
  EXPECT_EQ(first.Take(2, kWait).size(), 2u);
  ASSERT_TRUE(WaitFired("window", 6));  // Five in flight with the first stream, one ready.
  TestSubscriber third(*stub_, "window", 100, false, /*max_batch=*/100);
  EXPECT_EQ(third.Take(1, kWait).size(), 1u);
  EXPECT_EQ(first.queued(), 0u) << "the first stream went past its window after an ack";
  for (size_t size : first.batch_sizes()) EXPECT_LE(size, 5u);
}

// A batch takes at most half the stream's window, so a second one is on its way while the client reads and
// acks the first (a batch of the whole window would leave the stream idle for a round trip): 40 ready, window
// 10, max_batch 1000 -> responses of 5, and an ack of one of them lets exactly one more of 5 go.
TEST_F(BatchSubscribeTest, ABatchTakesAtMostHalfTheWindowSoTheNextIsSentBeforeTheFirstIsAcked) {
  StartLawnd("ack_timeout: 1h\n");
  StartSoon("half", "t", 40);
  ASSERT_TRUE(WaitFired("half", 40));
  TestSubscriber sub(*stub_, "half", 10, false, /*max_batch=*/1000);
  const std::vector<v1::Expiration> got = sub.Take(10, kWait);
  ASSERT_EQ(got.size(), 10u);
  EXPECT_EQ(sub.batch_sizes(), Sizes(2, 5));
  sub.Ack(Ids(std::vector<v1::Expiration>(got.begin(), got.begin() + 5)));
  EXPECT_EQ(sub.Take(5, kWait).size(), 5u);
  EXPECT_EQ(sub.batch_sizes(), Sizes(3, 5));
  EXPECT_EQ(sub.queued(), 0u) << "the stream went past its window of 10";
}

// Work sharing across shapes: a stream of the original shape (max_batch 0) and a batching one on the same
// namespace share the expirations, each exactly once, each in its own shape.
TEST_F(BatchSubscribeTest, OriginalShapeStreamWorksNextToABatchingOne) {
  StartLawnd("ack_timeout: 1h\n");
  TestSubscriber single(*stub_, "mixed", 30);
  TestSubscriber batching(*stub_, "mixed", 30, false, /*max_batch=*/10);
  ASSERT_TRUE(WaitFor([&] { return NamespaceStatsOf(*stub_, "mixed").subscribers() == 2; }, kWait));
  StartSoon("mixed", "t", 100);
  // Nothing acked yet: each takes its full window of 30, so both get work.
  std::vector<v1::Expiration> got_single = single.Take(30, kWait);
  std::vector<v1::Expiration> got_batching = batching.Take(30, kWait);
  ASSERT_EQ(got_single.size(), 30u);
  ASSERT_EQ(got_batching.size(), 30u);
  std::multiset<std::string> seen;
  std::map<std::string, uint64_t> per_stream = {{"single", 30}, {"batching", 30}};
  for (const auto& e : got_single) seen.insert(e.timer().id());
  for (const auto& e : got_batching) seen.insert(e.timer().id());
  // The rest: ack what arrived, take more, until all 100 are in.
  single.Ack(Ids(got_single));
  batching.Ack(Ids(got_batching));
  const auto give_up = std::chrono::steady_clock::now() + kWait;
  while (seen.size() < 100 && std::chrono::steady_clock::now() < give_up) {
    for (auto [sub, name] : {std::pair<TestSubscriber*, const char*>{&single, "single"}, {&batching, "batching"}}) {
      // What is queued, or the next one if any comes within a short poll.
      std::vector<v1::Expiration> more = sub->Take(std::max<size_t>(1, sub->queued()), milliseconds(20));
      for (const auto& e : more) seen.insert(e.timer().id());
      per_stream[name] += more.size();
      if (!more.empty()) sub->Ack(Ids(more));
    }
  }
  ASSERT_EQ(seen.size(), 100u);
  EXPECT_EQ(std::set<std::string>(seen.begin(), seen.end()).size(), 100u) << "an expiration came twice";
  ASSERT_TRUE(WaitFired("mixed", 0));
  EXPECT_EQ(single.queued() + batching.queued(), 0u);
  EXPECT_EQ(single.batch_sizes().size(), 0u);
  EXPECT_EQ(single.single_responses(), per_stream["single"]);
  EXPECT_EQ(batching.single_responses(), 0u);
  size_t batched = 0;
  for (size_t size : batching.batch_sizes()) {
    EXPECT_GE(size, 1u);
    EXPECT_LE(size, 10u);
    batched += size;
  }
  EXPECT_EQ(batched, per_stream["batching"]);
  EXPECT_EQ(single.malformed_responses() + batching.malformed_responses(), 0u);
}

// One member of a batch left unacked is redelivered alone (same delivery id, attempt 2) after ack_timeout;
// the members acked are not.
TEST_F(BatchSubscribeTest, UnackedBatchMemberIsRedelivered) {
  // 3 s: long enough that the ack below lands within one ack_timeout even on a loaded machine.
  StartLawnd("ack_timeout: 3s\n");
  StartSoon("redo", "t", 5);
  ASSERT_TRUE(WaitFired("redo", 5));
  TestSubscriber sub(*stub_, "redo", 10, false, /*max_batch=*/10);
  std::vector<v1::Expiration> batch = sub.Take(5, kWait);
  ASSERT_EQ(batch.size(), 5u);
  EXPECT_EQ(sub.batch_sizes(), Sizes(1, 5));
  const v1::Expiration kept = batch[2];
  batch.erase(batch.begin() + 2);
  sub.Ack(Ids(batch));
  std::optional<v1::Expiration> again = sub.Next(kWait);
  ASSERT_TRUE(again.has_value());
  EXPECT_EQ(again->delivery_id(), kept.delivery_id());
  EXPECT_EQ(again->timer().id(), kept.timer().id());
  EXPECT_EQ(again->attempt(), 2u);
  EXPECT_EQ(sub.batch_sizes(), (std::vector<size_t>{5, 1}));
  sub.Ack(again->delivery_id());
  ASSERT_TRUE(WaitFired("redo", 0));
  EXPECT_EQ(sub.queued(), 0u);
  grpc::ClientContext ctx;
  v1::GetStatsResponse stats;
  ASSERT_TRUE(stub_->GetStats(&ctx, v1::GetStatsRequest(), &stats).ok());
  EXPECT_EQ(stats.redeliveries(), 1u);
}

// A whole window (two batches of half of it) acked in one `ack` message leaves the outbox, nothing of it is
// sent again, and the window is free: the next two batches fill it.
TEST_F(BatchSubscribeTest, OneAckMessageAcksAWholeBatch) {
  StartLawnd("ack_timeout: 1h\n");
  StartSoon("acks", "t", 20);
  ASSERT_TRUE(WaitFired("acks", 20));
  TestSubscriber sub(*stub_, "acks", 10, false, /*max_batch=*/10);
  const std::vector<v1::Expiration> first = sub.Take(10, kWait);
  ASSERT_EQ(first.size(), 10u);
  ASSERT_TRUE(WaitFired("acks", 20));  // Ten in flight, ten ready.
  ASSERT_TRUE(sub.Ack(Ids(first)));
  const std::vector<v1::Expiration> second = sub.Take(10, kWait);
  ASSERT_EQ(second.size(), 10u);
  ASSERT_TRUE(WaitFired("acks", 10));
  std::set<uint64_t> ids;
  for (const auto& e : first) ids.insert(e.delivery_id());
  for (const auto& e : second) {
    EXPECT_EQ(e.attempt(), 1u);
    ids.insert(e.delivery_id());
  }
  EXPECT_EQ(ids.size(), 20u);
  ASSERT_TRUE(sub.Ack(Ids(second)));
  ASSERT_TRUE(WaitFired("acks", 0));
  EXPECT_EQ(sub.queued(), 0u);
  EXPECT_EQ(sub.batch_sizes(), Sizes(4, 5));  // Half the window each: one ack message acked two batches.
}

// lawnd reuses a stream's response messages from write to write and sets every field each time: an
// expiration never carries a field of the one that used its message before (here: the interval and payload
// of recurring timers, in the messages of the one-shot timers delivered next on the same stream).
TEST_F(BatchSubscribeTest, AnExpirationCarriesNothingOfTheOneDeliveredBeforeIt) {
  StartLawnd();
  std::vector<v1::StartTimerRequest> recurring;
  for (int i = 0; i < 4; ++i) {
    v1::StartTimerRequest r = TtlRequest("reuse", "recurring" + std::to_string(i), milliseconds(50), "every hour");
    r.mutable_interval()->set_seconds(3600);
    recurring.push_back(r);
  }
  ASSERT_TRUE(StartAll(*stub_, recurring));
  ASSERT_TRUE(WaitFor([&] { return NamespaceStatsOf(*stub_, "reuse").outbox() == 4; }, kWait));
  TestSubscriber sub(*stub_, "reuse", 100, false, /*max_batch=*/4);
  std::vector<v1::Expiration> got = sub.Take(4, kWait);
  ASSERT_EQ(got.size(), 4u);
  for (const v1::Expiration& e : got) {
    EXPECT_EQ(e.timer().interval().seconds(), 3600);
    EXPECT_EQ(e.timer().payload(), "every hour");
  }
  sub.Ack(Ids(got));

  StartSoon("reuse", "once", 4);
  got = sub.Take(4, kWait);
  ASSERT_EQ(got.size(), 4u);
  std::set<std::string> ids;
  for (const v1::Expiration& e : got) {
    ids.insert(e.timer().id());
    EXPECT_FALSE(e.timer().has_interval()) << e.timer().id();
    EXPECT_EQ(e.timer().payload(), "") << e.timer().id();
    EXPECT_EQ(e.timer().ttl().seconds(), 0);
    EXPECT_EQ(e.timer().ttl().nanos(), 50'000'000);
    EXPECT_EQ(e.attempt(), 1u);
    EXPECT_GE(ToNs(e.fired_at()), ToNs(e.timer().deadline()));
  }
  EXPECT_EQ(ids, (std::set<std::string>{"once0", "once1", "once2", "once3"}));
  // The recurring ones went in one response of four, so the one-shot ones (in however many responses they
  // fired into) were written into messages that held recurring expirations.
  ASSERT_FALSE(sub.batch_sizes().empty());
  EXPECT_EQ(sub.batch_sizes().front(), 4u);
}

}  // namespace
}  // namespace lawn::testing
