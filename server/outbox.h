// Outbox: the fired-but-unacked expirations of one namespace and the streams that consume them.
//
// Work sharing: each expiration goes to one work-sharing subscriber at a time; unacked after ack_timeout (or
// its stream gone) it returns to the front of the ready queue and is sent again, to any subscriber, with
// attempt + 1. With no subscriber it waits. A subscriber never holds more than its max_in_flight unacked.
// Observers get a best-effort copy of every expiration as it is published, without acks.
//
// The outbox holds what is in memory; persistence (the outbox column family) is the runtime's job: an
// expiration is published here only after its storage write, and acked ids are handed back for deletion.
//
// Thread-safety: all methods are thread-safe (one absl::Mutex per namespace). Subscriber::Wake is always
// called after the mutex is released. Lock order: a stream's own lock, then the outbox mutex.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "server/delivery.h"

namespace lawn {

struct OutboxCounters {
  uint64_t ready = 0;
  uint64_t in_flight = 0;
  uint64_t subscribers = 0;
  uint64_t observers = 0;
  uint64_t redeliveries = 0;
};

class Outbox {
 public:
  Outbox(std::string name, uint64_t ack_timeout_ns);
  Outbox(const Outbox&) = delete;
  Outbox& operator=(const Outbox&) = delete;

  const std::string& name() const { return name_; }

  // Adds persisted expirations to the ready queue (and a copy to each observer), waking idle subscribers.
  void Publish(std::vector<Delivery> deliveries);

  void AddSubscriber(std::shared_ptr<Subscriber> subscriber);
  // Detaches a subscriber; whatever it held unacked becomes ready again at once. Idempotent.
  void RemoveSubscriber(const Subscriber* subscriber);

  // Takes the next expiration for `subscriber` into `*out` (in flight until acked, for a work-sharing
  // subscriber). Returns false, and marks the subscriber waiting, when there is nothing it may take.
  bool Next(Subscriber& subscriber, uint64_t now_mono_ns, Delivery* out);

  // Acknowledges delivery ids; appends the ones that were in flight to `acked` (to delete from storage).
  // Unknown ids (already acked, or from an earlier process) are ignored.
  void Ack(const uint64_t* ids, size_t count, std::vector<uint64_t>* acked);

  // Makes every delivery whose ack deadline passed ready again. Returns how many.
  size_t ExpireAcks(uint64_t now_mono_ns);

  OutboxCounters Counters() const;
  size_t size() const;  // ready + in flight

 private:
  struct InFlight {
    Delivery delivery;
    Subscriber* holder;
    uint64_t ack_deadline_ns;
  };

  // Subscribers that are waiting and may take work; clears their waiting flag.
  void CollectWakeable(std::vector<std::shared_ptr<Subscriber>>* out) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Requeue(InFlight& entry) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const std::string name_;
  const uint64_t ack_timeout_ns_;
  mutable absl::Mutex mu_;
  std::deque<Delivery> ready_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<uint64_t, InFlight> in_flight_ ABSL_GUARDED_BY(mu_);
  // (ack deadline, delivery id) in send order = deadline order; stale entries are skipped lazily.
  std::deque<std::pair<uint64_t, uint64_t>> timeouts_ ABSL_GUARDED_BY(mu_);
  std::vector<std::shared_ptr<Subscriber>> subscribers_ ABSL_GUARDED_BY(mu_);
  std::vector<std::shared_ptr<Subscriber>> observers_ ABSL_GUARDED_BY(mu_);
  uint64_t redeliveries_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace lawn
