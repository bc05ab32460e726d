#include "server/outbox.h"

#include <algorithm>
#include <utility>

namespace lawn {

Outbox::Outbox(std::string name, uint64_t ack_timeout_ns, OutboxLimits limits, OutboxBudget& budget)
    : name_(std::move(name)), ack_timeout_ns_(ack_timeout_ns), limits_(limits), budget_(budget) {}

bool Outbox::TryReserve(uint64_t bytes) {
  // Optimistic add, then roll back: the same pattern as the pending-timer quotas; a concurrent reserver that
  // sees the transient excess is refused, never admitted beyond the bound.
  if (entries_.fetch_add(1, std::memory_order_relaxed) >= limits_.max_entries) {
    entries_.fetch_sub(1, std::memory_order_relaxed);
    return false;
  }
  if (bytes_.fetch_add(bytes, std::memory_order_relaxed) + bytes > limits_.max_bytes) {
    bytes_.fetch_sub(bytes, std::memory_order_relaxed);
    entries_.fetch_sub(1, std::memory_order_relaxed);
    return false;
  }
  if (budget_.bytes.fetch_add(bytes, std::memory_order_relaxed) + bytes > budget_.max_bytes) {
    budget_.bytes.fetch_sub(bytes, std::memory_order_relaxed);
    bytes_.fetch_sub(bytes, std::memory_order_relaxed);
    entries_.fetch_sub(1, std::memory_order_relaxed);
    return false;
  }
  return true;
}

void Outbox::Unreserve(uint64_t entries, uint64_t bytes) {
  entries_.fetch_sub(entries, std::memory_order_relaxed);
  bytes_.fetch_sub(bytes, std::memory_order_relaxed);
  budget_.bytes.fetch_sub(bytes, std::memory_order_relaxed);
}

void Outbox::Release(const Delivery& d) { Unreserve(1, d.Charge()); }

bool Outbox::full() const { return !FullReason().empty(); }

std::string Outbox::FullReason() const {
  const uint64_t smallest = kOutboxEntryOverheadBytes;
  if (entries_.load(std::memory_order_relaxed) >= limits_.max_entries) {
    return "max_outbox_per_namespace (" + std::to_string(limits_.max_entries) + " expirations)";
  }
  if (bytes_.load(std::memory_order_relaxed) + smallest > limits_.max_bytes) {
    return "max_outbox_bytes_per_namespace (" + std::to_string(limits_.max_bytes) + " bytes)";
  }
  if (budget_.bytes.load(std::memory_order_relaxed) + smallest > budget_.max_bytes) {
    return "max_outbox_bytes (" + std::to_string(budget_.max_bytes) + " bytes over all namespaces)";
  }
  return "";
}

void Outbox::CollectWakeable(std::vector<std::shared_ptr<Subscriber>>* out) {
  const bool work = ready_.size() > acked_ready_.size();
  for (auto& s : subscribers_) {
    if (s->waiting && s->in_flight < s->max_in_flight && work) {
      s->waiting = false;
      out->push_back(s);
    }
  }
  for (auto& s : observers_) {
    if (s->waiting && !s->observed.empty()) {
      s->waiting = false;
      out->push_back(s);
    }
  }
}

void Outbox::Publish(absl::Span<Delivery> deliveries, bool reserved) {
  if (!reserved) {
    uint64_t bytes = 0;
    for (const Delivery& d : deliveries) bytes += d.Charge();
    entries_.fetch_add(deliveries.size(), std::memory_order_relaxed);
    bytes_.fetch_add(bytes, std::memory_order_relaxed);
    budget_.bytes.fetch_add(bytes, std::memory_order_relaxed);
  }
  std::vector<std::shared_ptr<Subscriber>> wake;
  {
    absl::MutexLock lock(&mu_);
    for (Delivery& d : deliveries) {
      for (auto& o : observers_) {
        if (o->observed.size() < o->max_in_flight) {
          o->observed.push_back(d);
        } else {
          ++o->dropped;
        }
      }
      ready_.push_back(std::move(d));
    }
    CollectWakeable(&wake);
  }
  for (auto& s : wake) s->Wake();
}

void Outbox::AddSubscriber(std::shared_ptr<Subscriber> subscriber) {
  {
    absl::MutexLock lock(&mu_);
    subscriber->waiting = true;
    (subscriber->observe ? observers_ : subscribers_).push_back(subscriber);
  }
  subscriber->Wake();
}

void Outbox::Requeue(uint64_t id, uint64_t ackable_by) {
  auto it = in_flight_.find(id);
  InFlight& entry = it->second;
  entry.holder->in_flight--;
  timeouts_.erase({entry.ack_deadline_ns, id});
  if (ackable_by != 0) ackable_ready_[id] = Ackable{ackable_by, entry.delivery.Charge()};
  // To the front: it was due before anything still waiting behind it.
  ready_.push_front(std::move(entry.delivery));
  in_flight_.erase(it);
}

void Outbox::RemoveSubscriber(const Subscriber* subscriber) {
  std::vector<std::shared_ptr<Subscriber>> wake;
  {
    absl::MutexLock lock(&mu_);
    auto drop = [subscriber](std::vector<std::shared_ptr<Subscriber>>& list) {
      list.erase(std::remove_if(list.begin(), list.end(),
                                [subscriber](const auto& s) { return s.get() == subscriber; }),
                 list.end());
    };
    drop(subscribers_);
    drop(observers_);
    // Return what it held, newest first to the front, so the ready queue keeps delivery-id order. Its acks
    // can no longer arrive (the stream is gone), so none of these stays ackable.
    std::vector<uint64_t> held;
    for (auto& [id, entry] : in_flight_) {
      if (entry.holder == subscriber) held.push_back(id);
    }
    std::sort(held.rbegin(), held.rend());
    for (uint64_t id : held) Requeue(id, 0);
    redeliveries_ += held.size();
    budget_.redeliveries.fetch_add(held.size(), std::memory_order_relaxed);
    CollectWakeable(&wake);
  }
  for (auto& s : wake) s->Wake();
}

bool Outbox::Next(Subscriber& subscriber, uint64_t now_mono_ns, Delivery* out) {
  std::vector<Delivery> one;
  if (NextBatch(subscriber, now_mono_ns, 1, UINT64_MAX, &one) == 0) return false;
  *out = std::move(one.front());
  return true;
}

size_t Outbox::NextBatch(Subscriber& subscriber, uint64_t now_mono_ns, size_t max_count, uint64_t max_bytes,
                         std::vector<Delivery>* out) {
  return NextBatch(subscriber, now_mono_ns, max_count, max_bytes,
                   [out](const Delivery& d) { out->push_back(d); });
}

size_t Outbox::NextBatch(Subscriber& subscriber, uint64_t now_mono_ns, size_t max_count, uint64_t max_bytes,
                         absl::FunctionRef<void(const Delivery&)> take) {
  absl::MutexLock lock(&mu_);
  size_t taken = 0;
  uint64_t bytes = 0;
  // Whether `d` still fits: the first always does, so an oversized delivery is never stuck.
  const auto fits = [&](const Delivery& d) { return taken == 0 || bytes + d.WireBytes() <= max_bytes; };
  if (subscriber.observe) {
    while (taken < max_count && !subscriber.observed.empty() && fits(subscriber.observed.front())) {
      Delivery& d = subscriber.observed.front();
      d.attempt++;
      take(d);
      bytes += d.WireBytes();
      ++taken;
      subscriber.observed.pop_front();
    }
    if (taken == 0) subscriber.waiting = true;
    return taken;
  }
  // One ack deadline for the whole batch: it is sent as one message.
  const uint64_t deadline = now_mono_ns + ack_timeout_ns_;
  while (taken < max_count && !ready_.empty() && subscriber.in_flight < subscriber.max_in_flight) {
    if (acked_ready_.erase(ready_.front().delivery_id) > 0) {  // Acked late by its last holder: done.
      ready_.pop_front();
      continue;
    }
    if (!fits(ready_.front())) break;
    Delivery d = std::move(ready_.front());
    ready_.pop_front();
    ackable_ready_.erase(d.delivery_id);  // Resent: only the new holder's ack counts now.
    d.attempt++;
    take(d);
    bytes += d.WireBytes();
    ++taken;
    timeouts_.emplace(deadline, d.delivery_id);
    subscriber.in_flight++;
    in_flight_.insert_or_assign(d.delivery_id, InFlight{std::move(d), subscriber.id, &subscriber, deadline});
  }
  if (taken == 0) subscriber.waiting = true;
  return taken;
}

AckResult Outbox::Ack(const Subscriber& from, const uint64_t* ids, size_t count, std::vector<uint64_t>* acked) {
  AckResult result;
  std::vector<std::shared_ptr<Subscriber>> wake;
  {
    absl::MutexLock lock(&mu_);
    for (size_t i = 0; i < count; ++i) {
      const uint64_t id = ids[i];
      if (auto it = in_flight_.find(id); it != in_flight_.end()) {
        InFlight& entry = it->second;
        if (from.observe || entry.holder_id != from.id) {
          ++result.foreign;
          continue;
        }
        entry.holder->in_flight--;
        timeouts_.erase({entry.ack_deadline_ns, id});
        Release(entry.delivery);
        in_flight_.erase(it);
      } else if (auto r = ackable_ready_.find(id); r != ackable_ready_.end()) {
        if (from.observe || r->second.subscriber_id != from.id) {
          ++result.foreign;
          continue;
        }
        Unreserve(1, r->second.charge);
        ackable_ready_.erase(r);
        acked_ready_.insert(id);
      } else {
        ++result.unknown;
        continue;
      }
      ++result.acked;
      acked->push_back(id);
    }
    if (result.acked > 0) CollectWakeable(&wake);
  }
  for (auto& s : wake) s->Wake();
  return result;
}

size_t Outbox::Extract(absl::FunctionRef<bool(std::string_view key)> match, std::vector<Delivery>* out) {
  absl::MutexLock lock(&mu_);
  const size_t before = out->size();
  std::deque<Delivery> keep;
  for (Delivery& d : ready_) {
    if (acked_ready_.contains(d.delivery_id) || !match(d.key)) {
      keep.push_back(std::move(d));
      continue;
    }
    // A timed-out entry whose holder may still ack it: that holder's charge was kept in ackable_ready_.
    ackable_ready_.erase(d.delivery_id);
    Release(d);
    out->push_back(std::move(d));
  }
  ready_.swap(keep);
  for (auto it = in_flight_.begin(); it != in_flight_.end();) {
    if (!match(it->second.delivery.key)) {
      ++it;
      continue;
    }
    InFlight& entry = it->second;
    entry.holder->in_flight--;
    timeouts_.erase({entry.ack_deadline_ns, it->first});
    Release(entry.delivery);
    out->push_back(std::move(entry.delivery));
    in_flight_.erase(it++);
  }
  return out->size() - before;
}

size_t Outbox::ExpireAcks(uint64_t now_mono_ns) {
  std::vector<std::shared_ptr<Subscriber>> wake;
  size_t expired = 0;
  {
    absl::MutexLock lock(&mu_);
    // Collect first, requeue newest-first, so the ready queue's front keeps delivery order.
    std::vector<std::pair<uint64_t, uint64_t>> due;  // (delivery id, holder id)
    for (auto it = timeouts_.begin(); it != timeouts_.end() && it->first <= now_mono_ns; ++it) {
      due.emplace_back(it->second, in_flight_.at(it->second).holder_id);
    }
    for (auto d = due.rbegin(); d != due.rend(); ++d) Requeue(d->first, d->second);
    expired = due.size();
    redeliveries_ += expired;
    budget_.redeliveries.fetch_add(expired, std::memory_order_relaxed);
    CollectWakeable(&wake);
  }
  for (auto& s : wake) s->Wake();
  return expired;
}

OutboxCounters Outbox::Counters() const {
  absl::MutexLock lock(&mu_);
  auto relays_in = [](const std::vector<std::shared_ptr<Subscriber>>& list) {
    return static_cast<uint64_t>(std::count_if(list.begin(), list.end(), [](const auto& s) { return s->relay; }));
  };
  const uint64_t relays = relays_in(subscribers_);
  const uint64_t relayed_observers = relays_in(observers_);
  OutboxCounters c;
  c.ready = ready_.size() - acked_ready_.size();
  c.in_flight = in_flight_.size();
  c.subscribers = subscribers_.size() - relays;
  c.observers = observers_.size() - relayed_observers;
  c.relays = relays + relayed_observers;
  c.redeliveries = redeliveries_;
  c.entries = entries_.load(std::memory_order_relaxed);
  c.bytes = bytes_.load(std::memory_order_relaxed);
  return c;
}

size_t Outbox::size() const {
  absl::MutexLock lock(&mu_);
  return ready_.size() - acked_ready_.size() + in_flight_.size();
}

size_t Outbox::ack_timeouts() const {
  absl::MutexLock lock(&mu_);
  return timeouts_.size();
}

size_t Outbox::subscriber_count() const {
  absl::MutexLock lock(&mu_);
  return subscribers_.size() + observers_.size();
}

}  // namespace lawn
