#include "bench/multimap_timers.h"

#include <tuple>
#include <utility>

namespace lawn {

bool MultimapTimers::Start(std::string_view id, std::string_view payload, uint64_t ttl_ns, uint64_t now_ns) {
  // One probe: the node is created only if the id is absent, and the index key then views the node's copy of
  // the id (equal to `id`, so its hash is the one the probe used).
  bool inserted = false;
  index_.lazy_emplace(id, [&](const auto& construct) {
    Queue::iterator it = queue_.emplace(std::piecewise_construct, std::forward_as_tuple(now_ns + ttl_ns),
                                        std::forward_as_tuple(id, payload, ttl_ns));
    construct(std::string_view(it->second.id), it);
    inserted = true;
  });
  return inserted;
}

bool MultimapTimers::Delete(std::string_view id) {
  auto found = index_.find(id);
  if (found == index_.end()) return false;
  const Queue::iterator it = found->second;
  index_.erase(found);  // Before the node its key views is freed.
  queue_.erase(it);
  return true;
}

size_t MultimapTimers::Advance(uint64_t now_ns, FiredSink sink) {
  size_t fired = 0;
  while (!queue_.empty() && queue_.begin()->first <= now_ns) {
    const Queue::iterator it = queue_.begin();
    const Timer& timer = it->second;
    sink(Fired{TimerView{timer.id, timer.payload, it->first, timer.ttl_ns, 0, {}}, 0});
    index_.erase(std::string_view(timer.id));
    queue_.erase(it);
    ++fired;
  }
  return fired;
}

}  // namespace lawn
