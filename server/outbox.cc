#include "server/outbox.h"

#include <algorithm>
#include <utility>

namespace lawn {

Outbox::Outbox(std::string name, uint64_t ack_timeout_ns)
    : name_(std::move(name)), ack_timeout_ns_(ack_timeout_ns) {}

void Outbox::CollectWakeable(std::vector<std::shared_ptr<Subscriber>>* out) {
  for (auto& s : subscribers_) {
    if (s->waiting && s->in_flight < s->max_in_flight && !ready_.empty()) {
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

void Outbox::Publish(std::vector<Delivery> deliveries) {
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

void Outbox::Requeue(InFlight& entry) {
  entry.holder->in_flight--;
  // To the front: it was due before anything still waiting behind it.
  ready_.push_front(std::move(entry.delivery));
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
    // Return what it held, oldest delivery id first so the ready queue keeps its order.
    std::vector<uint64_t> held;
    for (auto& [id, entry] : in_flight_) {
      if (entry.holder == subscriber) held.push_back(id);
    }
    std::sort(held.rbegin(), held.rend());
    for (uint64_t id : held) {
      auto it = in_flight_.find(id);
      Requeue(it->second);
      in_flight_.erase(it);
    }
    redeliveries_ += held.size();
    CollectWakeable(&wake);
  }
  for (auto& s : wake) s->Wake();
}

bool Outbox::Next(Subscriber& subscriber, uint64_t now_mono_ns, Delivery* out) {
  absl::MutexLock lock(&mu_);
  if (subscriber.observe) {
    if (subscriber.observed.empty()) {
      subscriber.waiting = true;
      return false;
    }
    *out = std::move(subscriber.observed.front());
    subscriber.observed.pop_front();
    out->attempt++;
    return true;
  }
  if (ready_.empty() || subscriber.in_flight >= subscriber.max_in_flight) {
    subscriber.waiting = true;
    return false;
  }
  Delivery d = std::move(ready_.front());
  ready_.pop_front();
  d.attempt++;
  *out = d;
  const uint64_t deadline = now_mono_ns + ack_timeout_ns_;
  timeouts_.emplace_back(deadline, d.delivery_id);
  subscriber.in_flight++;
  in_flight_.insert_or_assign(d.delivery_id, InFlight{std::move(d), &subscriber, deadline});
  return true;
}

void Outbox::Ack(const uint64_t* ids, size_t count, std::vector<uint64_t>* acked) {
  std::vector<std::shared_ptr<Subscriber>> wake;
  {
    absl::MutexLock lock(&mu_);
    for (size_t i = 0; i < count; ++i) {
      auto it = in_flight_.find(ids[i]);
      if (it == in_flight_.end()) continue;
      it->second.holder->in_flight--;
      in_flight_.erase(it);
      acked->push_back(ids[i]);
    }
    CollectWakeable(&wake);
  }
  for (auto& s : wake) s->Wake();
}

size_t Outbox::ExpireAcks(uint64_t now_mono_ns) {
  std::vector<std::shared_ptr<Subscriber>> wake;
  size_t expired = 0;
  {
    absl::MutexLock lock(&mu_);
    // Collect first, requeue newest-first, so the ready queue's front keeps delivery order.
    std::vector<uint64_t> due;
    while (!timeouts_.empty() && timeouts_.front().first <= now_mono_ns) {
      const auto [deadline, id] = timeouts_.front();
      timeouts_.pop_front();
      auto it = in_flight_.find(id);
      if (it != in_flight_.end() && it->second.ack_deadline_ns == deadline) due.push_back(id);
    }
    for (auto id = due.rbegin(); id != due.rend(); ++id) {
      auto it = in_flight_.find(*id);
      // Listed twice when it was requeued (its stream ended) and sent again with the same `now`: both
      // timeouts_ entries carry the current deadline. The first one requeued it.
      if (it == in_flight_.end()) continue;
      Requeue(it->second);
      in_flight_.erase(it);
      ++expired;
    }
    redeliveries_ += expired;
    CollectWakeable(&wake);
  }
  for (auto& s : wake) s->Wake();
  return expired;
}

OutboxCounters Outbox::Counters() const {
  absl::MutexLock lock(&mu_);
  return {ready_.size(), in_flight_.size(), subscribers_.size(), observers_.size(), redeliveries_};
}

size_t Outbox::size() const {
  absl::MutexLock lock(&mu_);
  return ready_.size() + in_flight_.size();
}

}  // namespace lawn
