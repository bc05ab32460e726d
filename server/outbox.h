// Outbox: the fired-but-unacked expirations of one namespace and the streams that consume them.
//
// Work sharing: each expiration goes to one work-sharing subscriber at a time; unacked after ack_timeout (or
// its stream gone) it returns to the front of the ready queue and is sent again, to any subscriber, with
// attempt + 1. With no subscriber it waits. A subscriber never holds more than its max_in_flight unacked.
// Observers get a best-effort copy of every expiration as it is published, without acks.
//
// Ownership of acks: an ack counts only when it comes from the subscriber that holds the delivery (the one
// it was last sent to). Observers hold nothing, so their acks never count. An ack for a delivery that timed
// out and waits in the ready queue, not yet resent, still counts if it comes from the subscriber it was last
// sent to: the client did process it, so resending it would be a needless duplicate.
//
// Bounds: the outbox counts its entries and their bytes (Delivery::Charge) against its own limits and a
// budget shared by all namespaces. Workers reserve room before they fire a timer into it (TryReserve), so a
// full outbox makes them hold timers back instead of growing; recovery publishes without reserving (what is
// on disk must come back) and may leave an outbox above its bound until it drains.
//
// The outbox holds what is in memory; persistence (the outbox column family) is the runtime's job: an
// expiration is published here only after its storage write, and acked ids are handed back for deletion.
//
// Thread-safety: all methods are thread-safe (one absl::Mutex per namespace; the counters are atomics, read
// without it). Subscriber::Wake is always called after the mutex is released. Lock order: a stream's own
// lock, then the outbox mutex.
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/btree_set.h"
#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/functional/function_ref.h"
#include "absl/synchronization/mutex.h"
#include "absl/types/span.h"
#include "server/delivery.h"

namespace lawn {

// Bytes held by every outbox together, against one limit, and the daemon's redeliveries. Shared by all
// outboxes; outlives them.
struct OutboxBudget {
  explicit OutboxBudget(uint64_t max) : max_bytes(max) {}
  const uint64_t max_bytes;
  std::atomic<uint64_t> bytes{0};
  // Every outbox's redeliveries since start. Kept here, not only per outbox, because a namespace that holds
  // nothing is forgotten with its outbox, and the daemon's total must not shrink when it is.
  std::atomic<uint64_t> redeliveries{0};
};

struct OutboxLimits {
  uint64_t max_entries = UINT64_MAX;
  uint64_t max_bytes = UINT64_MAX;
};

struct OutboxCounters {
  uint64_t ready = 0;
  uint64_t in_flight = 0;
  uint64_t subscribers = 0;  // Work-sharing streams of clients (relays excluded).
  uint64_t observers = 0;    // Observe streams of clients (relays excluded).
  uint64_t relays = 0;       // Cluster mode: streams of other members relaying to their subscribers.
  uint64_t redeliveries = 0;  // This outbox's, since it was created.
  uint64_t entries = 0;  // Reserved + published, not yet acked: what the bounds count.
  uint64_t bytes = 0;
};

// What an Ack call did with the ids it was given.
struct AckResult {
  uint64_t acked = 0;
  uint64_t unknown = 0;  // Not in this outbox: already acked, never sent, or from an earlier process.
  uint64_t foreign = 0;  // Held by another subscriber, or sent by an observer: ignored.
};

class Outbox {
 public:
  // `budget` is shared by all outboxes and must outlive this one.
  Outbox(std::string name, uint64_t ack_timeout_ns, OutboxLimits limits, OutboxBudget& budget);
  Outbox(const Outbox&) = delete;
  Outbox& operator=(const Outbox&) = delete;

  const std::string& name() const { return name_; }

  // Reserves room for one entry of `bytes` (Delivery::Charge). False, reserving nothing, when this outbox is
  // at max_entries or would pass max_bytes, or the shared budget would pass its limit.
  bool TryReserve(uint64_t bytes);
  // Returns reservations that will not be published (their write failed).
  void Unreserve(uint64_t entries, uint64_t bytes);
  // True while TryReserve of an empty-payload entry would fail: new timers are refused then.
  bool full() const;
  // Which bound is reached, for error messages ("" when none).
  std::string FullReason() const;

  // Adds persisted expirations to the ready queue (and a copy to each observer), waking idle subscribers.
  // `reserved`: room was reserved with TryReserve (workers); false for recovery, which charges them now.
  // The deliveries are moved from.
  void Publish(absl::Span<Delivery> deliveries, bool reserved);
  void Publish(std::vector<Delivery> deliveries, bool reserved) {
    Publish(absl::MakeSpan(deliveries), reserved);
  }

  void AddSubscriber(std::shared_ptr<Subscriber> subscriber);
  // Detaches a subscriber; whatever it held unacked becomes ready again at once. Idempotent.
  void RemoveSubscriber(const Subscriber* subscriber);

  // Takes the next expiration for `subscriber` into `*out` (in flight until acked, for a work-sharing
  // subscriber). Returns false, and marks the subscriber waiting, when there is nothing it may take.
  bool Next(Subscriber& subscriber, uint64_t now_mono_ns, Delivery* out);
  // Next for a batch, under one lock: appends to `*out` what `subscriber` may take now, in the order Next
  // would hand it out, up to `max_count` deliveries and, after the first, until their WireBytes would pass
  // `max_bytes` (a first delivery larger than that is taken alone). Each one taken is in flight as with
  // Next, so the subscriber's max_in_flight bounds the batch too. Never waits for more. Returns how many it
  // appended; 0 marks the subscriber waiting, like Next returning false. REQUIRES: max_count >= 1.
  size_t NextBatch(Subscriber& subscriber, uint64_t now_mono_ns, size_t max_count, uint64_t max_bytes,
                   std::vector<Delivery>* out);
  // As above, but shows each delivery taken to `take` instead of copying it out: under the outbox's lock, so
  // `take` must be quick and must not call back into this outbox (a stream fills its response message
  // with it, sparing a copy of each key and payload).
  size_t NextBatch(Subscriber& subscriber, uint64_t now_mono_ns, size_t max_count, uint64_t max_bytes,
                   absl::FunctionRef<void(const Delivery&)> take);

  // Acknowledges delivery ids on behalf of `from`; appends those it removed to `acked` (to delete from
  // storage). Ids `from` does not hold change nothing and are counted in the result.
  AckResult Ack(const Subscriber& from, const uint64_t* ids, size_t count, std::vector<uint64_t>* acked);

  // Partition hand-over: removes every entry (ready or in flight) whose key `match`es and appends it to
  // `*out` (in flight ones with the attempts made so far, so the new owner redelivers them as unacked).
  // Their charges are released; acks for them count as unknown from now on. Returns how many.
  size_t Extract(absl::FunctionRef<bool(std::string_view key)> match, std::vector<Delivery>* out);

  // Makes every delivery whose ack deadline passed ready again. Returns how many.
  size_t ExpireAcks(uint64_t now_mono_ns);

  OutboxCounters Counters() const;
  size_t size() const;  // ready + in flight
  uint64_t entries() const { return entries_.load(std::memory_order_relaxed); }
  // Subscribers (work-sharing and observers) attached now.
  size_t subscriber_count() const;
  // Ack deadlines held (one per in-flight delivery, released on ack, timeout or detach): what the ack-timeout
  // bookkeeping costs in memory. Never more than Counters().in_flight.
  size_t ack_timeouts() const;

 private:
  struct InFlight {
    Delivery delivery;
    uint64_t holder_id;  // Subscriber::id
    Subscriber* holder;  // Valid while attached: RemoveSubscriber requeues everything it holds first.
    uint64_t ack_deadline_ns;
  };

  // Subscribers that are waiting and may take work; clears their waiting flag.
  void CollectWakeable(std::vector<std::shared_ptr<Subscriber>>* out) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Moves an in-flight entry back to the ready queue's front. `ackable_by`: a subscriber whose ack still
  // counts while it waits there (0: none).
  void Requeue(uint64_t id, uint64_t ackable_by) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Drops an entry's charge from the counters.
  void Release(const Delivery& d);

  const std::string name_;
  const uint64_t ack_timeout_ns_;
  const OutboxLimits limits_;
  OutboxBudget& budget_;
  std::atomic<uint64_t> entries_{0};
  std::atomic<uint64_t> bytes_{0};

  mutable absl::Mutex mu_;
  std::deque<Delivery> ready_ ABSL_GUARDED_BY(mu_);
  // Ready entries that timed out, by delivery id: the subscriber whose late ack still counts, and the charge.
  struct Ackable {
    uint64_t subscriber_id;
    uint64_t charge;
  };
  absl::flat_hash_map<uint64_t, Ackable> ackable_ready_ ABSL_GUARDED_BY(mu_);
  // Ready entries acked while waiting (ids): already released from the counters; Next skips and forgets them.
  absl::flat_hash_set<uint64_t> acked_ready_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<uint64_t, InFlight> in_flight_ ABSL_GUARDED_BY(mu_);
  // (ack deadline, delivery id) of every in-flight entry; erased on ack, so it is as large as in_flight_.
  absl::btree_set<std::pair<uint64_t, uint64_t>> timeouts_ ABSL_GUARDED_BY(mu_);
  std::vector<std::shared_ptr<Subscriber>> subscribers_ ABSL_GUARDED_BY(mu_);
  std::vector<std::shared_ptr<Subscriber>> observers_ ABSL_GUARDED_BY(mu_);
  uint64_t redeliveries_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace lawn
