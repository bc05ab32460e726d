// Outbox bookkeeping on fake subscribers: who may ack what, redelivery order, the bounds.
#include "server/outbox.h"

#include <memory>
#include <vector>

#include "gtest/gtest.h"
#include "tests/server/outbox_test_util.h"

namespace lawn {
namespace {

using outbox_test::FakeSubscriber;
using outbox_test::kAckTimeout;
using outbox_test::Make;

class OutboxTest : public ::testing::Test {
 protected:
  OutboxTest() : budget_(UINT64_MAX), outbox_("ns", kAckTimeout, OutboxLimits{}, budget_) {}
  void Publish(std::vector<uint64_t> ids) {
    std::vector<Delivery> ds;
    for (uint64_t id : ids) ds.push_back(Make(id));
    outbox_.Publish(std::move(ds), /*reserved=*/false);
  }
  std::shared_ptr<FakeSubscriber> Attach(uint32_t max_in_flight, bool observe = false) {
    auto s = std::make_shared<FakeSubscriber>(max_in_flight, observe);
    outbox_.AddSubscriber(s);
    return s;
  }
  std::optional<uint64_t> Take(Subscriber& s, uint64_t now = 0) {
    Delivery d;
    if (!outbox_.Next(s, now, &d)) return std::nullopt;
    return d.delivery_id;
  }
  AckResult Ack(const Subscriber& s, std::vector<uint64_t> ids, std::vector<uint64_t>* acked = nullptr) {
    std::vector<uint64_t> scratch;
    return outbox_.Ack(s, ids.data(), ids.size(), acked != nullptr ? acked : &scratch);
  }
  OutboxBudget budget_;
  Outbox outbox_;
};

TEST_F(OutboxTest, HolderAckRemovesTheEntryAndReleasesItsCharge) {
  Publish({1});
  auto a = Attach(10);
  ASSERT_EQ(Take(*a), 1u);
  std::vector<uint64_t> acked;
  const AckResult r = Ack(*a, {1}, &acked);
  EXPECT_EQ(r.acked, 1u);
  EXPECT_EQ(acked, std::vector<uint64_t>{1});
  EXPECT_EQ(outbox_.size(), 0u);
  EXPECT_EQ(outbox_.entries(), 0u);
  EXPECT_EQ(budget_.bytes.load(), 0u);
  EXPECT_EQ(a->in_flight, 0u);
  // Its ack deadline is gone with it, at once: no entry waits for the deadline, nothing is redelivered.
  EXPECT_EQ(outbox_.ack_timeouts(), 0u);
  EXPECT_EQ(outbox_.ExpireAcks(10 * kAckTimeout), 0u);
}

TEST_F(OutboxTest, AckTimeoutBookkeepingNeverOutgrowsWhatIsInFlight) {
  // Many sends through a window of 4, each acked: the ack deadlines held track the deliveries in flight and
  // are all released by the acks, so their memory is bounded by max_in_flight, not by send rate x timeout.
  constexpr uint64_t kSends = 1000;
  std::vector<uint64_t> ids;
  for (uint64_t id = 1; id <= kSends; ++id) ids.push_back(id);
  Publish(ids);
  auto a = Attach(4);
  auto b = Attach(4);
  uint64_t sent = 0;
  while (sent < kSends) {
    std::vector<uint64_t> held_a, held_b;
    while (auto id = Take(*a, sent)) held_a.push_back(*id);
    while (auto id = Take(*b, sent)) held_b.push_back(*id);
    sent += held_a.size() + held_b.size();
    ASSERT_FALSE(held_a.empty() && held_b.empty());
    EXPECT_EQ(outbox_.ack_timeouts(), held_a.size() + held_b.size());
    EXPECT_LE(outbox_.ack_timeouts(), 8u);
    EXPECT_EQ(outbox_.ack_timeouts(), outbox_.Counters().in_flight);
    ASSERT_EQ(Ack(*a, held_a).acked, held_a.size());
    EXPECT_EQ(outbox_.ack_timeouts(), held_b.size());
    ASSERT_EQ(Ack(*b, held_b).acked, held_b.size());
    ASSERT_EQ(outbox_.ack_timeouts(), 0u);
  }
  EXPECT_EQ(sent, kSends);
  EXPECT_EQ(outbox_.size(), 0u);
  // A timeout and a detach release theirs too.
  Publish({kSends + 1, kSends + 2});
  ASSERT_EQ(Take(*a, 0), kSends + 1);
  ASSERT_EQ(Take(*b, 0), kSends + 2);
  EXPECT_EQ(outbox_.ack_timeouts(), 2u);
  outbox_.RemoveSubscriber(b.get());
  EXPECT_EQ(outbox_.ack_timeouts(), 1u);
  EXPECT_EQ(outbox_.ExpireAcks(kAckTimeout), 1u);
  EXPECT_EQ(outbox_.ack_timeouts(), 0u);
}

TEST_F(OutboxTest, ObserverAndOtherSubscribersCannotAckAndAreCountedForeign) {
  auto observer = Attach(10, /*observe=*/true);  // Observers see what is published after they attach.
  auto a = Attach(10);
  auto b = Attach(10);
  Publish({1});
  ASSERT_EQ(Take(*a), 1u);
  ASSERT_EQ(Take(*observer), 1u);  // The observer's copy.
  EXPECT_EQ(Ack(*observer, {1}).foreign, 1u);
  EXPECT_EQ(Ack(*b, {1}).foreign, 1u);
  EXPECT_EQ(Ack(*b, {99}).unknown, 1u);
  EXPECT_EQ(outbox_.Counters().in_flight, 1u);
  // The holder leaves: the delivery is ready again, and b gets it with attempt 2.
  outbox_.RemoveSubscriber(a.get());
  Delivery d;
  ASSERT_TRUE(outbox_.Next(*b, 0, &d));
  EXPECT_EQ(d.delivery_id, 1u);
  EXPECT_EQ(d.attempt, 2u);
  EXPECT_EQ(Ack(*b, {1}).acked, 1u);
  EXPECT_EQ(Ack(*b, {1}).unknown, 1u);  // Already acked.
}

TEST_F(OutboxTest, LateAckOfATimedOutDeliveryNotYetResentIsHonoured) {
  Publish({1, 2});
  auto a = Attach(1);
  ASSERT_EQ(Take(*a, 0), 1u);
  ASSERT_EQ(outbox_.ExpireAcks(kAckTimeout), 1u);  // 1 is ready again, at the front.
  EXPECT_EQ(Ack(*a, {1}).acked, 1u);              // a processed it after all: no resend needed.
  EXPECT_EQ(outbox_.entries(), 1u);
  ASSERT_EQ(Take(*a, kAckTimeout), 2u);            // 1 is skipped.
  EXPECT_EQ(outbox_.Counters().ready, 0u);
}

TEST_F(OutboxTest, AfterAResendOnlyTheNewHolderMayAck) {
  Publish({1});
  auto a = Attach(1);
  auto b = Attach(1);
  ASSERT_EQ(Take(*a, 0), 1u);
  ASSERT_EQ(outbox_.ExpireAcks(kAckTimeout), 1u);
  ASSERT_EQ(Take(*b, kAckTimeout), 1u);
  EXPECT_EQ(Ack(*a, {1}).foreign, 1u);
  EXPECT_EQ(Ack(*b, {1}).acked, 1u);
}

TEST_F(OutboxTest, RemovedSubscribersDeliveriesReturnInOrderToTheFront) {
  Publish({1, 2, 3, 4});
  auto a = Attach(2);
  ASSERT_EQ(Take(*a), 1u);
  ASSERT_EQ(Take(*a), 2u);
  EXPECT_FALSE(Take(*a).has_value());  // At max_in_flight.
  outbox_.RemoveSubscriber(a.get());
  auto b = Attach(10);
  std::vector<uint64_t> order;
  while (auto id = Take(*b)) order.push_back(*id);
  EXPECT_EQ(order, (std::vector<uint64_t>{1, 2, 3, 4}));
  EXPECT_EQ(outbox_.Counters().redeliveries, 2u);
  EXPECT_EQ(budget_.redeliveries.load(), 2u);  // The daemon-wide count, which outlives the outbox.
}

TEST(OutboxBoundsTest, ReservationsRespectCountBytesAndTheSharedBudget) {
  OutboxBudget budget(1000);
  Outbox a("a", kAckTimeout, OutboxLimits{2, 600}, budget);
  Outbox b("b", kAckTimeout, OutboxLimits{10, 10'000}, budget);
  EXPECT_TRUE(a.TryReserve(250));
  EXPECT_FALSE(a.full());
  EXPECT_FALSE(a.TryReserve(400));  // 650 bytes > 600.
  EXPECT_TRUE(a.TryReserve(300));
  EXPECT_TRUE(a.full());
  EXPECT_NE(a.FullReason().find("max_outbox_per_namespace"), std::string::npos);
  EXPECT_FALSE(a.TryReserve(1));    // Count bound.
  EXPECT_TRUE(b.TryReserve(400));   // Budget: 950 of 1000.
  EXPECT_FALSE(b.TryReserve(100));  // Would pass the shared budget.
  EXPECT_NE(b.FullReason().find("max_outbox_bytes "), std::string::npos) << b.FullReason();
  a.Unreserve(1, 300);
  EXPECT_EQ(budget.bytes.load(), 650u);
  EXPECT_TRUE(b.TryReserve(100));
}

TEST(OutboxBoundsTest, RecoveryPublishesAboveTheBoundAndAcksBringItBack) {
  OutboxBudget budget(UINT64_MAX);
  Outbox o("o", kAckTimeout, OutboxLimits{1, UINT64_MAX}, budget);
  std::vector<Delivery> ds;
  for (uint64_t id = 1; id <= 3; ++id) ds.push_back(Make(id, "p"));
  o.Publish(std::move(ds), /*reserved=*/false);
  EXPECT_EQ(o.entries(), 3u);
  EXPECT_TRUE(o.full());
  auto s = std::make_shared<FakeSubscriber>(10, false);
  o.AddSubscriber(s);
  std::vector<uint64_t> acked;
  Delivery d;
  while (o.Next(*s, 0, &d)) {
    const uint64_t id = d.delivery_id;
    o.Ack(*s, &id, 1, &acked);
  }
  EXPECT_EQ(acked.size(), 3u);
  EXPECT_EQ(o.entries(), 0u);
  EXPECT_EQ(budget.bytes.load(), 0u);
  EXPECT_FALSE(o.full());
}

}  // namespace
}  // namespace lawn
