#include "bench/heap_timers.h"

#include <algorithm>

namespace lawn {

bool HeapTimers::Start(std::string_view id, std::string_view payload, uint64_t ttl_ns, uint64_t now_ns) {
  auto [it, inserted] = index_.try_emplace(id);
  Entry& entry = it->second;
  if (!inserted && entry.live) return false;  // Duplicate id. (A dead node is revived below.)
  entry.payload.assign(payload);
  entry.deadline_ns = now_ns + ttl_ns;
  entry.ttl_ns = ttl_ns;
  entry.seq = next_seq_++;
  entry.live = true;
  ++entry.heap_refs;
  ++live_;
  heap_.push_back({entry.deadline_ns, entry.seq, &*it});
  std::push_heap(heap_.begin(), heap_.end(), Later());
  return true;
}

bool HeapTimers::Delete(std::string_view id) {
  auto it = index_.find(id);
  if (it == index_.end() || !it->second.live) return false;
  it->second.live = false;  // Lazy: the heap item is dropped when it surfaces (or by Compact).
  --live_;
  // Stale items come from deletes, so deletes pay for removing them: compacting once they outnumber the live
  // ones costs O(1) amortized per delete.
  if (heap_.size() > 2 * live_ + kCompactSlack) Compact();
  return true;
}

size_t HeapTimers::Advance(uint64_t now_ns, FiredSink sink) {
  size_t fired = 0;
  while (!heap_.empty() && heap_.front().deadline_ns <= now_ns) {
    std::pop_heap(heap_.begin(), heap_.end(), Later());
    const Item item = heap_.back();
    heap_.pop_back();
    Entry& entry = item.node->second;
    if (entry.live && entry.seq == item.seq) {
      entry.live = false;
      --live_;
      sink(Fired{TimerView{item.node->first, entry.payload, entry.deadline_ns, entry.ttl_ns, 0, {}}, 0});
      ++fired;
    }
    Release(item.node);
  }
  return fired;
}

void HeapTimers::Compact() {
  if (heap_.size() == live_) return;  // Nothing stale.
  size_t kept = 0;
  for (const Item& item : heap_) {
    const Entry& entry = item.node->second;
    if (entry.live && entry.seq == item.seq) {
      heap_[kept++] = item;
    } else {
      // A node is erased only with its last reference, so no later item of this loop points at it.
      Release(item.node);
    }
  }
  heap_.resize(kept);
  std::make_heap(heap_.begin(), heap_.end(), Later());
}

void HeapTimers::Release(Node* node) {
  Entry& entry = node->second;
  if (--entry.heap_refs == 0 && !entry.live) index_.erase(std::string_view(node->first));
}

}  // namespace lawn
