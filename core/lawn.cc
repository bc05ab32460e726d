#include "core/lawn.h"

#include "core/invariant.h"
#include "core/prefetch.h"

namespace lawn {

Lawn::Lawn(TimerPool& pool, uint32_t max_buckets)
    // location is 16 bits wide: more than 65535 buckets could not be addressed (and would defeat Lawn).
    : pool_(pool), max_buckets_(max_buckets > 65535 ? 65535 : max_buckets) {}

uint64_t Lawn::EarliestFront(const Bucket& b) {
  uint64_t earliest = UINT64_MAX;
  for (uint64_t d : b.front) earliest = d < earliest ? d : earliest;
  return earliest;
}

uint64_t Lawn::LatestTail(const Bucket& b) const {
  uint64_t latest = 0;
  for (const Lane& lane : b.lanes) {
    if (lane.tail != kNoTimer && pool_[lane.tail].deadline_ns > latest) latest = pool_[lane.tail].deadline_ns;
  }
  return latest;
}

bool Lawn::TryPush(TimerRef ref) {
  TimerRecord& r = pool_[ref];
  const uint32_t lane_number = LaneOf(ref);
  auto it = by_ttl_.find(r.ttl_ns);
  if (it != by_ttl_.end()) {
    Bucket& b = buckets_[it->second];
    // No timer in the bucket is due after last_deadline, so appending behind any lane's last keeps that lane
    // ordered; and the bucket's key, its earliest deadline, is unchanged: O(1).
    if (r.deadline_ns < b.last_deadline) return false;
    b.last_deadline = r.deadline_ns;
    Lane& lane = b.lanes[lane_number];
    if (lane.tail == kNoTimer) b.front[lane_number] = r.deadline_ns;
    AppendToList(pool_, ref, lane.head, lane.tail);
    ++b.count;
    r.home = Home::kLawn;
    r.location = static_cast<uint16_t>(it->second);
    ++size_;
    return true;
  }
  if (heap_.size() >= max_buckets_) return false;
  uint32_t number;
  if (!free_buckets_.empty()) {
    number = free_buckets_.back();
    free_buckets_.pop_back();
  } else {
    number = static_cast<uint32_t>(buckets_.size());
    buckets_.emplace_back();
  }
  Bucket& b = buckets_[number];
  b = Bucket{};
  b.ttl_ns = r.ttl_ns;
  b.key = b.last_deadline = b.front[lane_number] = r.deadline_ns;
  b.count = 1;
  b.lanes[lane_number] = Lane{ref, ref};
  r.prev = r.next = kNoTimer;
  r.home = Home::kLawn;
  r.location = static_cast<uint16_t>(number);
  by_ttl_.emplace(r.ttl_ns, number);
  heap_.push_back(number);
  b.heap_pos = static_cast<uint32_t>(heap_.size() - 1);
  SiftUp(b.heap_pos);
  ++size_;
  return true;
}

void Lawn::Remove(TimerRef ref) {
  TimerRecord& r = pool_[ref];
  const uint32_t number = r.location;
  const uint32_t lane_number = LaneOf(ref);
  Bucket& b = buckets_[number];
  Lane& lane = b.lanes[lane_number];
  const bool was_first = r.prev == kNoTimer;
  const bool was_last = r.next == kNoTimer;
  const TimerRef next = r.next;
  UnlinkFromList(pool_, ref, lane.head, lane.tail);
  if (was_first) b.front[lane_number] = next != kNoTimer ? pool_[next].deadline_ns : UINT64_MAX;
  r.home = Home::kNone;
  --b.count;
  --size_;
  if (b.count == 0) {
    DropBucket(number);
    return;
  }
  // The latest timer left: the next push is ordered against the timers still here, as with one list.
  if (was_last && r.deadline_ns == b.last_deadline) b.last_deadline = LatestTail(b);
  if (was_first) {
    const uint64_t key = EarliestFront(b);
    if (key != b.key) {
      b.key = key;
      SiftDown(b.heap_pos);  // The lane's new first is due no earlier than the old one: the key only grew.
    }
  }
}

TimerRef Lawn::Front() const {
  if (heap_.empty()) return kNoTimer;
  const Bucket& b = buckets_[heap_[0]];
  for (uint32_t l = 0; l < kLanes; ++l) {
    if (b.lanes[l].head != kNoTimer && b.front[l] == b.key) return b.lanes[l].head;
  }
  InvariantBroken("Lawn", "bucket key is no lane's front");
}

TimerRef Lawn::PopFront() {
  const TimerRef ref = Front();
  Remove(ref);
  return ref;
}

void Lawn::TakeDue(uint64_t limit_ns, std::vector<TimerRef>& out) {
  while (!heap_.empty()) {
    const uint32_t number = heap_[0];
    Bucket& b = buckets_[number];
    if (b.key > limit_ns) return;
    TakeDueFrom(b, limit_ns, out);
    if (b.count == 0) {
      DropBucket(number);
    } else {
      b.key = EarliestFront(b);
      SiftDown(0);
    }
  }
}

void Lawn::TakeDueFrom(Bucket& b, uint64_t limit_ns, std::vector<TimerRef>& out) {
  // Rounds over the lanes: the first pass unlinks each due lane's first timer and starts loading its
  // successor; the second reads those successors' deadlines, by then (mostly) loaded side by side.
  uint32_t due = 0;  // Bit l: lane l's first timer is due.
  for (uint32_t l = 0; l < kLanes; ++l) due |= static_cast<uint32_t>(b.front[l] <= limit_ns) << l;
  while (due != 0) {
    uint32_t loading = 0;  // Bit l: lane l has a new first timer, being loaded.
    for (uint32_t bits = due; bits != 0; bits &= bits - 1) {
      const uint32_t l = static_cast<uint32_t>(__builtin_ctz(bits));
      Lane& lane = b.lanes[l];
      const TimerRef ref = lane.head;
      TimerRecord& r = pool_[ref];
      lane.head = r.next;
      r.prev = r.next = kNoTimer;
      r.home = Home::kNone;
      out.push_back(ref);
      if (lane.head == kNoTimer) {
        lane.tail = kNoTimer;
        b.front[l] = UINT64_MAX;
      } else {
        PrefetchLine(&pool_[lane.head]);
        loading |= 1u << l;
      }
      --b.count;
      --size_;
    }
    due = 0;
    for (uint32_t bits = loading; bits != 0; bits &= bits - 1) {
      const uint32_t l = static_cast<uint32_t>(__builtin_ctz(bits));
      TimerRecord& first = pool_[b.lanes[l].head];
      first.prev = kNoTimer;
      b.front[l] = first.deadline_ns;
      due |= static_cast<uint32_t>(first.deadline_ns <= limit_ns) << l;
    }
  }
}

void Lawn::DropBucket(uint32_t number) {
  Bucket& b = buckets_[number];
  const uint32_t pos = b.heap_pos;
  const uint32_t last = heap_.back();
  heap_.pop_back();
  if (last != number) {
    // Move the last heap entry into the hole, then restore order in whichever direction it is off.
    Place(pos, last);
    SiftUp(pos);
    SiftDown(buckets_[last].heap_pos);
  }
  by_ttl_.erase(b.ttl_ns);
  b = Bucket{};
  free_buckets_.push_back(number);
}

void Lawn::Place(uint32_t pos, uint32_t bucket) {
  heap_[pos] = bucket;
  buckets_[bucket].heap_pos = pos;
}

void Lawn::SiftUp(uint32_t pos) {
  const uint32_t moving = heap_[pos];
  const uint64_t key = Key(moving);
  while (pos > 0) {
    const uint32_t parent = (pos - 1) / 2;
    if (Key(heap_[parent]) <= key) break;
    Place(pos, heap_[parent]);
    pos = parent;
  }
  Place(pos, moving);
}

void Lawn::SiftDown(uint32_t pos) {
  const uint32_t n = static_cast<uint32_t>(heap_.size());
  const uint32_t moving = heap_[pos];
  const uint64_t key = Key(moving);
  while (true) {
    uint32_t child = 2 * pos + 1;
    if (child >= n) break;
    if (child + 1 < n && Key(heap_[child + 1]) < Key(heap_[child])) ++child;
    if (key <= Key(heap_[child])) break;
    Place(pos, heap_[child]);
    pos = child;
  }
  Place(pos, moving);
}

size_t Lawn::MemoryBytes() const {
  return buckets_.capacity() * sizeof(Bucket) + free_buckets_.capacity() * sizeof(uint32_t) +
         heap_.capacity() * sizeof(uint32_t) + by_ttl_.capacity() * (sizeof(uint64_t) + sizeof(uint32_t) + 1);
}

void Lawn::CheckInvariants() const {
  size_t total = 0;
  if (heap_.size() != by_ttl_.size()) InvariantBroken("Lawn", "heap and ttl map sizes differ");
  for (uint32_t pos = 0; pos < heap_.size(); ++pos) {
    const uint32_t number = heap_[pos];
    const Bucket& b = buckets_[number];
    if (b.heap_pos != pos) InvariantBroken("Lawn", "heap_pos does not point back");
    if (pos > 0 && Key(heap_[(pos - 1) / 2]) > Key(number)) InvariantBroken("Lawn", "heap order");
    auto it = by_ttl_.find(b.ttl_ns);
    if (it == by_ttl_.end() || it->second != number) InvariantBroken("Lawn", "ttl map disagrees with bucket");
    if (b.count == 0) InvariantBroken("Lawn", "empty bucket kept");
    if (b.key != EarliestFront(b)) InvariantBroken("Lawn", "bucket key is not its lanes' earliest front");
    uint32_t count = 0;
    uint64_t latest = 0;
    for (uint32_t l = 0; l < kLanes; ++l) {
      const Lane& lane = b.lanes[l];
      const uint64_t front = lane.head != kNoTimer ? pool_[lane.head].deadline_ns : UINT64_MAX;
      if (b.front[l] != front) InvariantBroken("Lawn", "lane front deadline is stale");
      TimerRef prev = kNoTimer;
      for (TimerRef t = lane.head; t != kNoTimer; t = pool_[t].next) {
        const TimerRecord& r = pool_[t];
        if (r.prev != prev) InvariantBroken("Lawn", "broken back link");
        if (LaneOf(t) != l) InvariantBroken("Lawn", "timer in another lane");
        if (r.home != Home::kLawn || r.location != number) {
          InvariantBroken("Lawn", "record not homed in its bucket");
        }
        if (r.ttl_ns != b.ttl_ns) InvariantBroken("Lawn", "record ttl differs from bucket ttl");
        if (prev != kNoTimer && pool_[prev].deadline_ns > r.deadline_ns) {
          InvariantBroken("Lawn", "lane not FIFO");
        }
        if (r.deadline_ns > b.last_deadline) {
          InvariantBroken("Lawn", "timer due after the bucket's last deadline");
        }
        latest = r.deadline_ns > latest ? r.deadline_ns : latest;
        prev = t;
        ++count;
      }
      if (prev != lane.tail) InvariantBroken("Lawn", "tail is not the last record");
    }
    if (count != b.count) InvariantBroken("Lawn", "bucket count");
    if (latest != b.last_deadline) InvariantBroken("Lawn", "last_deadline is not the latest deadline held");
    total += count;
  }
  if (total != size_) InvariantBroken("Lawn", "size is not the sum of bucket counts");
}

}  // namespace lawn
