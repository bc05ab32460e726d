// Delivery: one fired expiration on its way to a subscriber, and the Subscriber interface the outbox uses
// to reach a stream.
//
// Thread-safety: Delivery is a value. Subscriber's bookkeeping fields are guarded by the mutex of the one
// Outbox the subscriber is attached to (documented per field); Wake is called without any outbox lock held.
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <string>

namespace lawn {

// An expiration this much later than its deadline is marked late (e.g. it was due while lawnd was down).
inline constexpr uint64_t kLateAfterNs = 1'000'000'000;

// What one outbox entry is charged against the outbox byte bounds beyond its key and payload: the Delivery
// itself, its ready-queue slot and, while in flight, its map entry and ack-deadline entry.
inline constexpr uint64_t kOutboxEntryOverheadBytes = 192;

// Upper bound on an Expiration's encoding beyond its namespace, id and payload bytes: Timer (ttl, deadline,
// interval: 3 x 13; tags and lengths of namespace, id, payload: 3 x 6), fired_at 13, delivery_id 11,
// attempt 6, late 2, and the Expiration's own tag and length 6.
inline constexpr uint64_t kExpirationWireOverheadBytes = 96;

struct Delivery {
  uint64_t delivery_id = 0;
  std::string key;  // namespace \0 id
  std::string payload;
  int64_t deadline_unix_ns = 0;  // The deadline that fired.
  int64_t fired_at_unix_ns = 0;
  uint64_t ttl_ns = 0;
  uint64_t interval_ns = 0;
  uint32_t attempt = 0;  // Deliveries made so far; the next send carries attempt + 1.
  bool late = false;

  // Bytes this entry counts against max_outbox_bytes_per_namespace / max_outbox_bytes.
  uint64_t Charge() const { return ChargeFor(key.size(), payload.size()); }
  // About what it takes as an Expiration on the wire: key and payload, plus a bound on the fixed fields
  // (timestamps, durations, ids, tags and lengths), for sizing batches without serializing them.
  uint64_t WireBytes() const { return key.size() + payload.size() + kExpirationWireOverheadBytes; }
  static uint64_t ChargeFor(size_t key_bytes, size_t payload_bytes) {
    return key_bytes + payload_bytes + kOutboxEntryOverheadBytes;
  }
};

class Subscriber {
 public:
  Subscriber(uint32_t max_in_flight, bool observe, bool relay = false)
      : id(next_id_.fetch_add(1, std::memory_order_relaxed)),
        max_in_flight(max_in_flight),
        observe(observe),
        relay(relay) {}
  Subscriber(const Subscriber&) = delete;
  Subscriber& operator=(const Subscriber&) = delete;
  virtual ~Subscriber() = default;

  // The outbox has something this subscriber may send. Called from any thread, never under an outbox lock;
  // must not block.
  virtual void Wake() = 0;

  // Unique in the process, never reused: what an in-flight delivery remembers as its holder, so an ack can be
  // checked against the stream that holds it even after that stream is gone.
  const uint64_t id;
  const uint32_t max_in_flight;
  const bool observe;  // A copy of every expiration, best effort, no acks.
  // Cluster mode: another member's stream, relaying to a subscriber of its own (SubscriptionRelay). Counted
  // apart in OutboxCounters, so stats summed over the members count each subscriber once.
  const bool relay;

  // Guarded by the outbox's mutex.
  uint32_t in_flight = 0;      // Sent and not yet acked (work-sharing subscribers).
  bool waiting = false;        // Asked for work and found none: wake it when work arrives.
  std::deque<Delivery> observed;  // Copies queued for an observer (bounded by max_in_flight).
  uint64_t dropped = 0;        // Copies an observer missed because its queue was full.

 private:
  static inline std::atomic<uint64_t> next_id_{1};
};

}  // namespace lawn
