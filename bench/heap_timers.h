// HeapTimers: baseline (a) of lawn_bench, the textbook timer queue: a binary min-heap of
// (deadline, seq, node) with lazy deletion, plus a hash index from id to the timer.
//
// The heap is std::priority_queue's algorithm (std::push_heap / std::pop_heap over a std::vector, ordered by
// deadline then start sequence); it is kept as a plain vector so that Compact can filter it, which
// std::priority_queue does not allow. The index is an absl::node_hash_map, whose nodes never move, so a heap
// item can point at its timer's node: the id and payload are stored once, in the node.
//
// Lazy deletion: Delete only marks the node dead; the heap item stays until it reaches the top (or Compact
// drops it). A node is erased from the index once it is dead and no heap item points at it (heap_refs == 0).
// Restarting a dead id revives its node with a new seq; heap items with an older seq are stale and skipped.
// Delete runs Compact when stale items outnumber live ones, so the heap stays within about 2x the live count
// and the cleanup is billed to the deletes that caused it (amortized O(1) each; a measurement shorter than
// `pending` deletes may see none of it).
//
// Invariants: a node is live iff exactly one heap item has its seq (its deadline); heap_refs counts the heap
// items pointing at the node; live_ is the number of live nodes.
//
// Work per operation, as the engine does it: Start checks for a duplicate id and copies id and payload;
// Delete looks the id up; Advance reports each due timer (id, payload, deadline, ttl) and removes it from the
// index.
//
// Thread-safety: none.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/node_hash_map.h"
#include "bench/id_hash.h"
#include "core/shard.h"

namespace lawn {

class HeapTimers {
 public:
  HeapTimers() = default;
  HeapTimers(const HeapTimers&) = delete;
  HeapTimers& operator=(const HeapTimers&) = delete;

  // Starts a one-shot timer due at now_ns + ttl_ns. False (changing nothing) if `id` is pending.
  bool Start(std::string_view id, std::string_view payload, uint64_t ttl_ns, uint64_t now_ns);
  // Cancels a pending timer. False if there is none.
  bool Delete(std::string_view id);
  // Fires every timer with deadline <= now_ns, in (deadline, start order) order; returns the count.
  size_t Advance(uint64_t now_ns, FiredSink sink);
  // Drops every stale heap item and every node only they kept alive.
  void Compact();

  size_t pending() const { return live_; }
  size_t heap_size() const { return heap_.size(); }

 private:
  struct Entry {
    std::string payload;
    uint64_t deadline_ns = 0;
    uint64_t ttl_ns = 0;
    uint64_t seq = 0;        // Seq of the heap item holding the current deadline.
    uint32_t heap_refs = 0;  // Heap items (current and stale) pointing at this node.
    bool live = false;
  };
  using Index = absl::node_hash_map<std::string, Entry, IdHash, IdEq>;
  using Node = Index::value_type;
  struct Item {
    uint64_t deadline_ns;
    uint64_t seq;
    Node* node;
  };
  // Comparator for a min-heap on (deadline, seq) with the std:: heap functions (which build max-heaps).
  struct Later {
    bool operator()(const Item& a, const Item& b) const {
      return a.deadline_ns != b.deadline_ns ? a.deadline_ns > b.deadline_ns : a.seq > b.seq;
    }
  };
  static constexpr size_t kCompactSlack = 1024;

  // Drops one heap reference to `node`; erases the node if it is dead and unreferenced.
  void Release(Node* node);

  Index index_;
  std::vector<Item> heap_;
  uint64_t next_seq_ = 0;
  size_t live_ = 0;
};

}  // namespace lawn
