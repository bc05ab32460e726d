// Fuzz target: the Subscribe state machine, server/outbox.h's Outbox, driven by a sequence of operations
// decoded from the input (Publish, AddSubscriber, Next, Ack, RemoveSubscriber, ExpireAcks, time passing)
// and checked after every step against a model kept here.
//
// Invariants checked:
//   * every published delivery is acked exactly once, or is still ready or in flight (Counters, size(), and
//     at the end a fresh subscriber drains exactly the unacked ones, each once);
//   * a subscriber's in_flight never exceeds its max_in_flight and equals what the model says it holds;
//   * an ack is honoured only for a delivery in flight, once; nothing is acked that was not sent to the
//     acking subscriber (the harness acks ids sent to it, ids never published, and repeats);
//   * Next hands out work exactly when there is some the subscriber may take; a redelivery goes out before
//     any first delivery, first deliveries in publish order, each send with attempt + 1 and its own key and
//     payload; an observer gets a copy of each publication in order (or counts it dropped when full);
//   * ExpireAcks requeues exactly the deliveries whose ack deadline passed, never one early;
//   * no lost wake-up: a subscriber whose last Next found nothing, and which could take work now, has been
//     woken since (Subscriber::waiting itself may stay set after a successful Next: a spurious wake-up is
//     harmless, a lost one would stall the stream).
// Time only moves forward (the reactor reads a monotonic clock), by zero or more nanoseconds per step.
//
// Acks: an ack counts only from the subscriber that holds the delivery (observers never), or, for a delivery
// that timed out and waits in the ready queue not yet resent, from the subscriber it timed out at.
#include <fuzzer/FuzzedDataProvider.h>

#include <cstddef>
#include <cstdint>
#include <deque>
#include <iterator>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "server/delivery.h"
#include "server/outbox.h"
#include "tests/fuzz/fuzz_check.h"

namespace lawn {
namespace {

constexpr uint64_t kAckTimeoutNs = 1000;
constexpr size_t kMaxSubscribers = 6;
constexpr size_t kMaxSteps = 2000;

class FuzzSubscriber final : public Subscriber {
 public:
  FuzzSubscriber(uint32_t max_in_flight, bool observe) : Subscriber(max_in_flight, observe) {}
  void Wake() override { woken = true; }
  bool woken = false;  // Set by Wake, cleared when the harness calls Next (the stream answers the wake).
  bool idle = false;   // Its last Next found nothing to take: it sends again only when woken.
};

enum class State { kReady, kInFlight, kAcked };

struct ModelDelivery {
  State state = State::kReady;
  uint32_t attempt = 0;  // Sends so far, plus the attempt it was published with.
  bool sent = false;     // Sent by this outbox at least once (a requeued one goes before first deliveries).
  int holder = -1;       // Subscriber index while in flight.
  int ackable_by = -1;   // While ready after an ack timeout: the subscriber whose late ack still counts.
  uint64_t ack_deadline_ns = 0;
  uint64_t publish_seq = 0;
};

struct ModelSubscriber {
  std::shared_ptr<FuzzSubscriber> live;  // Null once released (after removal); the outbox must not touch it.
  bool attached = false;
  bool observe = false;
  uint32_t max_in_flight = 0;
  uint32_t held = 0;
  std::vector<uint64_t> sent;             // Every id ever sent to it, in order.
  std::deque<uint64_t> observed;          // Observer: copies it should get, in order.
  uint64_t dropped = 0;
};

std::string KeyOf(uint64_t id) { return "ns" + std::string(1, '\0') + "id" + std::to_string(id); }
std::string PayloadOf(uint64_t id) { return std::string(id % 7, 'p') + std::to_string(id); }

class Harness {
 public:
  explicit Harness(const uint8_t* data, size_t size) : in_(data, size) {}

  void Run() {
    for (size_t step = 0; step < kMaxSteps && in_.remaining_bytes() > 0; ++step) {
      Step();
      CheckInvariants();
    }
    Drain();
  }

 private:
  enum Op { kPublish, kAdd, kRemove, kRelease, kNext, kAck, kExpire, kAdvance, kOpCount };

  void Step() {
    switch (in_.ConsumeIntegralInRange<int>(0, kOpCount - 1)) {
      case kPublish:
        Publish();
        break;
      case kAdd:
        Add();
        break;
      case kRemove:
        if (ModelSubscriber* s = PickSubscriber(); s != nullptr && s->live != nullptr) Remove(*s);
        break;
      case kRelease:
        // The stream ended and its reactor was deleted: only the outbox could still reach the subscriber.
        if (ModelSubscriber* s = PickSubscriber(); s != nullptr && !s->attached) s->live.reset();
        break;
      case kNext:
        if (ModelSubscriber* s = PickSubscriber(); s != nullptr && s->attached) Next(*s);
        break;
      case kAck:
        // Acks may arrive from a stream that already ended (a read racing its Close).
        if (ModelSubscriber* s = PickSubscriber(); s != nullptr) Ack(*s);
        break;
      case kExpire:
        Advance();
        Expire();
        break;
      case kAdvance:
        Advance();
        break;
    }
  }

  ModelSubscriber* PickSubscriber() {
    if (subs_.empty()) return nullptr;
    return &subs_[in_.ConsumeIntegralInRange<size_t>(0, subs_.size() - 1)];
  }
  int IndexOf(const ModelSubscriber& s) const { return static_cast<int>(&s - subs_.data()); }

  void Advance() { now_ns_ += in_.ConsumeIntegralInRange<uint64_t>(0, 2 * kAckTimeoutNs); }

  void Publish() {
    const int n = in_.ConsumeIntegralInRange<int>(0, 4);
    std::vector<Delivery> batch;
    for (int i = 0; i < n; ++i) {
      Delivery d;
      next_id_ += 1 + in_.ConsumeIntegralInRange<uint64_t>(0, 3);  // Unique, increasing, with gaps.
      d.delivery_id = next_id_;
      d.key = KeyOf(d.delivery_id);
      d.payload = PayloadOf(d.delivery_id);
      d.attempt = in_.ConsumeIntegralInRange<uint32_t>(0, 2);  // Recovered expirations carry earlier attempts.
      d.deadline_unix_ns = static_cast<int64_t>(d.delivery_id);
      ModelDelivery& m = model_[d.delivery_id];
      m.attempt = d.attempt;
      m.publish_seq = ++publish_seq_;
      for (ModelSubscriber& s : subs_) {
        if (!s.attached || !s.observe) continue;
        if (s.observed.size() < s.max_in_flight) {
          s.observed.push_back(d.delivery_id);
        } else {
          ++s.dropped;
        }
      }
      batch.push_back(std::move(d));
    }
    outbox_.Publish(std::move(batch), /*reserved=*/false);
  }

  void Add() {
    if (subs_.size() >= kMaxSubscribers) return;
    ModelSubscriber s;
    s.observe = in_.ConsumeIntegralInRange<int>(0, 3) == 0;
    s.max_in_flight = in_.ConsumeIntegralInRange<uint32_t>(0, 4);
    s.live = std::make_shared<FuzzSubscriber>(s.max_in_flight, s.observe);
    s.attached = true;
    subs_.push_back(s);
    outbox_.AddSubscriber(s.live);
    FUZZ_CHECK(subs_.back().live->woken, "AddSubscriber wakes the new subscriber");
  }

  void Remove(ModelSubscriber& s) {
    outbox_.RemoveSubscriber(s.live.get());
    if (!s.attached) return;  // Idempotent.
    s.attached = false;
    for (auto& [id, d] : model_) {
      if (d.state == State::kInFlight && d.holder == IndexOf(s)) {
        d.state = State::kReady;
        d.holder = -1;
        d.ackable_by = -1;  // Its stream is gone: its acks cannot come any more.
        ++redeliveries_;
      }
    }
    s.held = 0;
  }

  // The first deliveries still ready, by publish order; and whether a requeued one is ready.
  void Ready(std::map<uint64_t, uint64_t>* fresh_by_seq, bool* requeued_ready) const {
    *requeued_ready = false;
    for (const auto& [id, d] : model_) {
      if (d.state != State::kReady) continue;
      if (d.sent) {
        *requeued_ready = true;
      } else {
        (*fresh_by_seq)[d.publish_seq] = id;
      }
    }
  }

  void Next(ModelSubscriber& s) {
    Delivery out;
    s.live->woken = false;
    const bool got = outbox_.Next(*s.live, now_ns_, &out);
    s.live->idle = !got;
    if (s.observe) {
      FUZZ_CHECK(got == !s.observed.empty());
      if (!got) return;
      const uint64_t want = s.observed.front();
      s.observed.pop_front();
      FUZZ_CHECK(out.delivery_id == want, "observer copy %llu, expected %llu",
                 static_cast<unsigned long long>(out.delivery_id), static_cast<unsigned long long>(want));
      FUZZ_CHECK(out.key == KeyOf(want) && out.payload == PayloadOf(want));
      return;
    }
    std::map<uint64_t, uint64_t> fresh;
    bool requeued_ready = false;
    Ready(&fresh, &requeued_ready);
    const bool can = (requeued_ready || !fresh.empty()) && s.held < s.max_in_flight;
    FUZZ_CHECK(got == can, "Next returned %d; model: ready %d, held %u of %u", got,
               requeued_ready || !fresh.empty(), s.held, s.max_in_flight);
    if (!got) return;
    auto it = model_.find(out.delivery_id);
    FUZZ_CHECK(it != model_.end(), "Next returned an id never published");
    ModelDelivery& d = it->second;
    FUZZ_CHECK(d.state == State::kReady, "Next returned a delivery that is not ready");
    if (requeued_ready) {
      FUZZ_CHECK(d.sent, "a first delivery went out before a redelivery");
    } else {
      FUZZ_CHECK(fresh.begin()->second == out.delivery_id, "first deliveries out of publish order");
    }
    FUZZ_CHECK(out.attempt == d.attempt + 1, "attempt %u, expected %u", out.attempt, d.attempt + 1);
    FUZZ_CHECK(out.key == KeyOf(out.delivery_id) && out.payload == PayloadOf(out.delivery_id));
    d.attempt = out.attempt;
    d.sent = true;
    d.state = State::kInFlight;
    d.holder = IndexOf(s);
    d.ackable_by = -1;
    d.ack_deadline_ns = now_ns_ + kAckTimeoutNs;
    ++s.held;
    s.sent.push_back(out.delivery_id);
  }

  uint64_t PickAckId(const ModelSubscriber& s) {
    switch (in_.ConsumeIntegralInRange<int>(0, 3)) {
      case 0:  // Never published (e.g. from before a restart whose outbox entry is gone).
        return next_id_ + 1 + in_.ConsumeIntegralInRange<uint64_t>(0, 5);
      case 1: {  // Any published id: often one held by another subscriber (a guessed or leaked id).
        if (model_.empty()) return 0;
        auto it = model_.begin();
        std::advance(it, static_cast<long>(in_.ConsumeIntegralInRange<size_t>(0, model_.size() - 1)));
        return it->first;
      }
      default:
        if (s.sent.empty()) return 0;
        return s.sent[in_.ConsumeIntegralInRange<size_t>(0, s.sent.size() - 1)];
    }
  }

  // Whether the outbox must honour an ack of `id` from subscriber `sub` (see API NOTE at the top).
  bool AckHonoured(const ModelDelivery& d, int sub) const {
    if (subs_[static_cast<size_t>(sub)].observe) return false;
    return (d.state == State::kInFlight && d.holder == sub) || (d.state == State::kReady && d.ackable_by == sub);
  }

  void Ack(ModelSubscriber& s) {
    if (s.live == nullptr) return;  // Its reactor is gone: nothing can ack on its behalf.
    std::vector<uint64_t> ids;
    const int n = in_.ConsumeIntegralInRange<int>(0, 4);
    for (int i = 0; i < n; ++i) ids.push_back(PickAckId(s));
    if (!ids.empty() && in_.ConsumeBool()) ids.push_back(ids.front());  // A repeated id in one message.
    std::vector<uint64_t> want;
    for (uint64_t id : ids) {
      auto it = model_.find(id);
      if (it == model_.end() || !AckHonoured(it->second, IndexOf(s))) continue;
      ModelDelivery& d = it->second;
      if (d.state == State::kInFlight) subs_[static_cast<size_t>(d.holder)].held--;
      d.state = State::kAcked;
      d.holder = -1;
      d.ackable_by = -1;
      want.push_back(id);
    }
    std::vector<uint64_t> acked;
    const AckResult result = outbox_.Ack(*s.live, ids.data(), ids.size(), &acked);
    FUZZ_CHECK(acked == want, "acked %zu ids, the model %zu", acked.size(), want.size());
    FUZZ_CHECK(result.acked + result.unknown + result.foreign == ids.size(), "every acked id is counted once");
    for (uint64_t id : acked) {
      bool was_sent = false;
      for (uint64_t sent : s.sent) was_sent = was_sent || sent == id;
      FUZZ_CHECK(was_sent, "acked %llu, which was never sent to the acking subscriber",
                 static_cast<unsigned long long>(id));
    }
  }

  void Expire() {
    size_t want = 0;
    for (auto& [id, d] : model_) {
      if (d.state == State::kInFlight && d.ack_deadline_ns <= now_ns_) {
        d.state = State::kReady;
        subs_[static_cast<size_t>(d.holder)].held--;
        d.ackable_by = d.holder;
        d.holder = -1;
        ++want;
      }
    }
    redeliveries_ += want;
    const size_t expired = outbox_.ExpireAcks(now_ns_);
    FUZZ_CHECK(expired == want, "ExpireAcks requeued %zu, expected %zu", expired, want);
  }

  void CheckInvariants() {
    uint64_t ready = 0;
    uint64_t in_flight = 0;
    for (const auto& [id, d] : model_) {
      ready += d.state == State::kReady;
      in_flight += d.state == State::kInFlight;
    }
    uint64_t subscribers = 0;
    uint64_t observers = 0;
    for (const ModelSubscriber& s : subs_) {
      if (s.attached) ++(s.observe ? observers : subscribers);
    }
    const OutboxCounters c = outbox_.Counters();
    FUZZ_CHECK(c.ready == ready && c.in_flight == in_flight,
               "outbox ready %llu in flight %llu, model %llu / %llu", static_cast<unsigned long long>(c.ready),
               static_cast<unsigned long long>(c.in_flight), static_cast<unsigned long long>(ready),
               static_cast<unsigned long long>(in_flight));
    FUZZ_CHECK(c.subscribers == subscribers && c.observers == observers);
    FUZZ_CHECK(c.redeliveries == redeliveries_, "redeliveries %llu, model %llu",
               static_cast<unsigned long long>(c.redeliveries), static_cast<unsigned long long>(redeliveries_));
    // The budget's daemon-wide count: this outbox is the only one that adds to it.
    FUZZ_CHECK(budget_.redeliveries.load() == redeliveries_, "budget redeliveries %llu, model %llu",
               static_cast<unsigned long long>(budget_.redeliveries.load()),
               static_cast<unsigned long long>(redeliveries_));
    FUZZ_CHECK(outbox_.size() == ready + in_flight);
    for (const ModelSubscriber& s : subs_) {
      if (s.live == nullptr) continue;
      const FuzzSubscriber& live = *s.live;
      FUZZ_CHECK(live.in_flight == s.held, "subscriber %d in_flight %u, model %u", IndexOf(s), live.in_flight,
                 s.held);
      FUZZ_CHECK(live.in_flight <= live.max_in_flight);
      if (!s.attached) {
        FUZZ_CHECK(live.in_flight == 0, "a removed subscriber still holds deliveries");
        continue;
      }
      if (s.observe) {
        FUZZ_CHECK(live.observed.size() == s.observed.size() && live.dropped == s.dropped);
        FUZZ_CHECK(!(live.idle && !live.observed.empty()) || live.woken, "observer idles unwoken");
      } else {
        const bool could_take = ready > 0 && live.in_flight < live.max_in_flight;
        FUZZ_CHECK(!(live.idle && could_take) || live.woken, "subscriber %d idles unwoken with work to take",
                   IndexOf(s));
      }
    }
  }

  // Ends every stream, then one new subscriber takes everything: exactly the unacked deliveries, once each.
  void Drain() {
    for (ModelSubscriber& s : subs_) {
      if (s.attached) Remove(s);
    }
    CheckInvariants();
    auto last = std::make_shared<FuzzSubscriber>(UINT32_MAX, false);
    outbox_.AddSubscriber(last);
    std::set<uint64_t> got;
    Delivery out;
    while (outbox_.Next(*last, now_ns_, &out)) {
      FUZZ_CHECK(got.insert(out.delivery_id).second, "delivery %llu handed out twice",
                 static_cast<unsigned long long>(out.delivery_id));
    }
    std::set<uint64_t> want;
    for (const auto& [id, d] : model_) {
      if (d.state != State::kAcked) want.insert(id);
    }
    FUZZ_CHECK(got == want, "drained %zu deliveries, %zu unacked", got.size(), want.size());
    std::vector<uint64_t> ids(got.begin(), got.end());
    std::vector<uint64_t> acked;
    outbox_.Ack(*last, ids.data(), ids.size(), &acked);
    FUZZ_CHECK(acked == ids && outbox_.size() == 0 && last->in_flight == 0 && outbox_.entries() == 0);
    outbox_.RemoveSubscriber(last.get());
  }

  FuzzedDataProvider in_;
  OutboxBudget budget_{UINT64_MAX};
  Outbox outbox_{"fuzz", kAckTimeoutNs, OutboxLimits{}, budget_};
  std::vector<ModelSubscriber> subs_;
  std::map<uint64_t, ModelDelivery> model_;
  uint64_t next_id_ = 0;
  uint64_t publish_seq_ = 0;
  uint64_t redeliveries_ = 0;
  uint64_t now_ns_ = 0;
};

}  // namespace
}  // namespace lawn

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  lawn::Harness(data, size).Run();
  return 0;
}
