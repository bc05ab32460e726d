// MultimapTimers: baseline (b) of lawn_bench, the ordered-tree timer queue: a std::multimap from deadline to
// timer, plus a hash index from id to the multimap iterator.
//
// The multimap node owns the id and payload; the index's key is a string_view of the id inside that node
// (multimap nodes never move), so the id is stored once. Delete erases both at once (no lazy deletion);
// Advance takes timers from begin() while they are due.
//
// Invariants: index_ and queue_ hold the same timers; every index key views the id of the node its iterator
// points at.
//
// Work per operation, as the engine does it: Start checks for a duplicate id and copies id and payload;
// Delete looks the id up; Advance reports each due timer (id, payload, deadline, ttl) and removes it from the
// index.
//
// Thread-safety: none.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>

#include "absl/container/flat_hash_map.h"
#include "bench/id_hash.h"
#include "core/shard.h"

namespace lawn {

class MultimapTimers {
 public:
  MultimapTimers() = default;
  MultimapTimers(const MultimapTimers&) = delete;
  MultimapTimers& operator=(const MultimapTimers&) = delete;

  // Starts a one-shot timer due at now_ns + ttl_ns. False (changing nothing) if `id` is pending.
  bool Start(std::string_view id, std::string_view payload, uint64_t ttl_ns, uint64_t now_ns);
  // Cancels a pending timer. False if there is none.
  bool Delete(std::string_view id);
  // Fires every timer with deadline <= now_ns, in (deadline, start order) order; returns the count.
  size_t Advance(uint64_t now_ns, FiredSink sink);
  void Compact() {}

  size_t pending() const { return index_.size(); }

 private:
  struct Timer {
    Timer(std::string_view id_in, std::string_view payload_in, uint64_t ttl_ns_in)
        : id(id_in), payload(payload_in), ttl_ns(ttl_ns_in) {}
    std::string id;
    std::string payload;
    uint64_t ttl_ns;
  };
  using Queue = std::multimap<uint64_t, Timer>;  // Deadline (ns) -> timer; equal deadlines in start order.

  Queue queue_;
  // Keys view Timer::id inside queue_'s nodes.
  absl::flat_hash_map<std::string_view, Queue::iterator, IdHash, IdEq> index_;
};

}  // namespace lawn
