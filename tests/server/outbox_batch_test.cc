// Outbox::NextBatch on fake subscribers: the count, window and byte bounds of a batch, what it skips, when it
// marks the subscriber waiting, observers, and a randomized differential test against repeated Next calls.
#include <cstdint>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "gtest/gtest.h"
#include "server/outbox.h"
#include "tests/server/outbox_test_util.h"

namespace lawn {
namespace {

using outbox_test::FakeSubscriber;
using outbox_test::kAckTimeout;
using outbox_test::Make;

class OutboxBatchTest : public ::testing::Test {
 protected:
  OutboxBatchTest() : budget_(UINT64_MAX), outbox_("ns", kAckTimeout, OutboxLimits{}, budget_) {}
  void Publish(std::vector<uint64_t> ids, const std::string& payload = "") {
    std::vector<Delivery> ds;
    for (uint64_t id : ids) ds.push_back(Make(id, payload));
    outbox_.Publish(std::move(ds), /*reserved=*/false);
  }
  std::shared_ptr<FakeSubscriber> Attach(uint32_t max_in_flight, bool observe = false) {
    auto s = std::make_shared<FakeSubscriber>(max_in_flight, observe);
    outbox_.AddSubscriber(s);
    s->waiting = false;  // As after the first (empty) Next a real stream makes on its wake.
    return s;
  }
  // Delivery ids of one NextBatch.
  std::vector<uint64_t> Batch(Subscriber& s, size_t max_count, uint64_t max_bytes = UINT64_MAX,
                              uint64_t now = 0) {
    std::vector<Delivery> out;
    const size_t n = outbox_.NextBatch(s, now, max_count, max_bytes, &out);
    EXPECT_EQ(n, out.size());
    std::vector<uint64_t> ids;
    for (const Delivery& d : out) ids.push_back(d.delivery_id);
    return ids;
  }
  AckResult Ack(const Subscriber& s, std::vector<uint64_t> ids) {
    std::vector<uint64_t> scratch;
    return outbox_.Ack(s, ids.data(), ids.size(), &scratch);
  }
  OutboxBudget budget_;
  Outbox outbox_;
};

TEST_F(OutboxBatchTest, TakesUpToMaxCountInOrderEachInFlight) {
  Publish({1, 2, 3, 4, 5});
  auto a = Attach(10);
  EXPECT_EQ(Batch(*a, 3), (std::vector<uint64_t>{1, 2, 3}));
  EXPECT_EQ(a->in_flight, 3u);
  EXPECT_EQ(outbox_.Counters().in_flight, 3u);
  EXPECT_EQ(outbox_.Counters().ready, 2u);
  EXPECT_FALSE(a->waiting);
  EXPECT_EQ(Batch(*a, 3), (std::vector<uint64_t>{4, 5}));  // What is there, not waiting for a third.
  EXPECT_FALSE(a->waiting);                                  // It took something.
  EXPECT_TRUE(Batch(*a, 3).empty());
  EXPECT_TRUE(a->waiting);
  // Each member is acked on its own, and each has its own ack deadline (all the same: one send).
  EXPECT_EQ(Ack(*a, {2, 4}).acked, 2u);
  EXPECT_EQ(outbox_.ExpireAcks(kAckTimeout), 3u);
  EXPECT_EQ(Batch(*a, 10, UINT64_MAX, kAckTimeout), (std::vector<uint64_t>{1, 3, 5}));
}

TEST_F(OutboxBatchTest, StopsAtTheSubscribersWindow) {
  Publish({1, 2, 3, 4, 5, 6});
  auto a = Attach(4);
  EXPECT_EQ(Batch(*a, 100), (std::vector<uint64_t>{1, 2, 3, 4}));
  EXPECT_TRUE(Batch(*a, 100).empty());
  EXPECT_EQ(Ack(*a, {1}).acked, 1u);
  EXPECT_EQ(Batch(*a, 100), (std::vector<uint64_t>{5}));  // One acked, one more.
  EXPECT_EQ(a->in_flight, 4u);
}

TEST_F(OutboxBatchTest, StopsBeforeTheByteBoundButTakesAnOversizedFirstAlone) {
  const std::string payload(100, 'p');
  Publish({1, 2, 3, 4, 5}, payload);
  const uint64_t each = Make(1, payload).WireBytes();
  auto a = Attach(100);
  EXPECT_EQ(Batch(*a, 100, 2 * each), (std::vector<uint64_t>{1, 2}));
  EXPECT_EQ(Batch(*a, 100, 2 * each + each - 1), (std::vector<uint64_t>{3, 4}));
  EXPECT_EQ(Batch(*a, 100, 1), (std::vector<uint64_t>{5}));  // Larger than the bound: alone.
}

TEST_F(OutboxBatchTest, SkipsEntriesAckedWhileWaitingForAResend) {
  Publish({1, 2, 3});
  auto a = Attach(10);
  EXPECT_EQ(Batch(*a, 10), (std::vector<uint64_t>{1, 2, 3}));
  ASSERT_EQ(outbox_.ExpireAcks(kAckTimeout), 3u);
  EXPECT_EQ(Ack(*a, {1, 3}).acked, 2u);  // Late, from their holder: they count, and are not sent again.
  std::vector<Delivery> out;
  ASSERT_EQ(outbox_.NextBatch(*a, kAckTimeout, 10, UINT64_MAX, &out), 1u);
  EXPECT_EQ(out[0].delivery_id, 2u);
  EXPECT_EQ(out[0].attempt, 2u);
  EXPECT_EQ(outbox_.Counters().ready, 0u);
}

TEST_F(OutboxBatchTest, ObserversGetBatchesOfTheirCopiesWithoutHoldingThem) {
  auto observer = Attach(10, /*observe=*/true);
  Publish({1, 2, 3, 4});
  std::vector<Delivery> out;
  ASSERT_EQ(outbox_.NextBatch(*observer, 0, 3, UINT64_MAX, &out), 3u);
  for (const Delivery& d : out) EXPECT_EQ(d.attempt, 1u);
  EXPECT_EQ(Batch(*observer, 3), (std::vector<uint64_t>{4}));
  EXPECT_TRUE(Batch(*observer, 3).empty());
  EXPECT_TRUE(observer->waiting);
  EXPECT_EQ(observer->in_flight, 0u);
  EXPECT_EQ(outbox_.Counters().in_flight, 0u);
  EXPECT_EQ(outbox_.Counters().ready, 4u);  // Still there for a work-sharing subscriber.
}

// The oracle: a batch of k is what k calls of Next would hand out (stopping at the first that finds
// nothing), with the same attempts, the same ack deadlines and the same counters afterwards. Random
// publishes, batches, acks (by the holder, by another subscriber, unknown), ack timeouts and subscribers
// leaving run against two outboxes, one served by NextBatch, one by Next.
TEST(OutboxBatchDifferentialTest, NextBatchMatchesRepeatedNext) {
  std::mt19937_64 rng(20261124);
  for (int round = 0; round < 50; ++round) {
    OutboxBudget budget_a(UINT64_MAX), budget_b(UINT64_MAX);
    Outbox batched("a", kAckTimeout, OutboxLimits{}, budget_a);
    Outbox oracle("b", kAckTimeout, OutboxLimits{}, budget_b);
    constexpr int kSubscribers = 3;
    std::vector<std::shared_ptr<FakeSubscriber>> subs_a, subs_b;
    // What each subscriber holds according to what it was sent (delivery ids), to ack from.
    std::vector<std::vector<uint64_t>> sent(kSubscribers);
    for (int i = 0; i < kSubscribers; ++i) {
      const uint32_t window = 1 + static_cast<uint32_t>(rng() % 8);
      subs_a.push_back(std::make_shared<FakeSubscriber>(window, false));
      subs_b.push_back(std::make_shared<FakeSubscriber>(window, false));
      batched.AddSubscriber(subs_a.back());
      oracle.AddSubscriber(subs_b.back());
    }
    uint64_t next_id = 1, now = 0;
    for (int step = 0; step < 400; ++step) {
      const int i = static_cast<int>(rng() % kSubscribers);
      switch (rng() % 6) {
        case 0: {  // Publish a few.
          std::vector<Delivery> a, b;
          for (uint64_t n = rng() % 5; n > 0; --n, ++next_id) {
            a.push_back(Make(next_id, std::string(rng() % 50, 'x')));
            b.push_back(a.back());
          }
          batched.Publish(std::move(a), false);
          oracle.Publish(std::move(b), false);
          break;
        }
        case 1:
        case 2: {  // A batch of up to k.
          const size_t k = 1 + rng() % 6;
          std::vector<Delivery> got;
          batched.NextBatch(*subs_a[i], now, k, UINT64_MAX, &got);
          std::vector<Delivery> want;
          Delivery d;
          while (want.size() < k && oracle.Next(*subs_b[i], now, &d)) want.push_back(d);
          ASSERT_EQ(got.size(), want.size()) << "round " << round << " step " << step;
          for (size_t j = 0; j < got.size(); ++j) {
            EXPECT_EQ(got[j].delivery_id, want[j].delivery_id);
            EXPECT_EQ(got[j].attempt, want[j].attempt);
            EXPECT_EQ(got[j].payload, want[j].payload);
            sent[i].push_back(got[j].delivery_id);
          }
          break;
        }
        case 3: {  // Ack some of what it was sent, plus maybe an id it never held.
          std::vector<uint64_t> ids;
          for (uint64_t id : sent[i]) {
            if (rng() % 2 == 0) ids.push_back(id);
          }
          if (rng() % 4 == 0) ids.push_back(next_id + 1000);
          std::vector<uint64_t> acked_a, acked_b;
          const AckResult ra = batched.Ack(*subs_a[i], ids.data(), ids.size(), &acked_a);
          const AckResult rb = oracle.Ack(*subs_b[i], ids.data(), ids.size(), &acked_b);
          EXPECT_EQ(acked_a, acked_b);
          EXPECT_EQ(ra.acked, rb.acked);
          EXPECT_EQ(ra.unknown, rb.unknown);
          EXPECT_EQ(ra.foreign, rb.foreign);
          break;
        }
        case 4:  // Time passes; some ack deadlines with it.
          now += kAckTimeout / 2;
          EXPECT_EQ(batched.ExpireAcks(now), oracle.ExpireAcks(now));
          break;
        case 5:  // Rarely, a subscriber leaves and a new one takes its place.
          if (rng() % 8 == 0) {
            batched.RemoveSubscriber(subs_a[i].get());
            oracle.RemoveSubscriber(subs_b[i].get());
            const uint32_t window = 1 + static_cast<uint32_t>(rng() % 8);
            subs_a[i] = std::make_shared<FakeSubscriber>(window, false);
            subs_b[i] = std::make_shared<FakeSubscriber>(window, false);
            batched.AddSubscriber(subs_a[i]);
            oracle.AddSubscriber(subs_b[i]);
            sent[i].clear();
          }
          break;
      }
      const OutboxCounters ca = batched.Counters(), cb = oracle.Counters();
      ASSERT_EQ(ca.ready, cb.ready) << "round " << round << " step " << step;
      ASSERT_EQ(ca.in_flight, cb.in_flight);
      ASSERT_EQ(ca.redeliveries, cb.redeliveries);
      ASSERT_EQ(ca.entries, cb.entries);
      ASSERT_EQ(ca.bytes, cb.bytes);
      for (int j = 0; j < kSubscribers; ++j) ASSERT_EQ(subs_a[j]->in_flight, subs_b[j]->in_flight);
    }
  }
}

}  // namespace
}  // namespace lawn
