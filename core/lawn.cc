#include "core/lawn.h"

#include <cstdio>
#include <cstdlib>

namespace lawn {

namespace {

[[noreturn]] void InvariantBroken(const char* what) {
  std::fprintf(stderr, "lawn: Lawn invariant broken: %s\n", what);
  std::abort();
}

}  // namespace

Lawn::Lawn(TimerPool& pool, uint32_t max_buckets)
    // location is 16 bits wide: more than 65535 buckets could not be addressed (and would defeat Lawn).
    : pool_(pool), max_buckets_(max_buckets > 65535 ? 65535 : max_buckets) {}

bool Lawn::TryPush(TimerRef ref) {
  TimerRecord& r = pool_[ref];
  auto it = by_ttl_.find(r.ttl_ns);
  if (it != by_ttl_.end()) {
    Bucket& b = buckets_[it->second];
    TimerRecord& tail = pool_[b.tail];
    if (tail.deadline_ns > r.deadline_ns) return false;  // Appending would break FIFO == deadline order.
    // Appending behind the tail leaves the head, and so the heap, unchanged: O(1).
    tail.next = ref;
    r.prev = b.tail;
    r.next = kNoTimer;
    b.tail = ref;
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
  b = Bucket{r.ttl_ns, ref, ref, 1, 0};
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
  Bucket& b = buckets_[number];
  const bool was_head = b.head == ref;
  if (r.prev != kNoTimer) pool_[r.prev].next = r.next; else b.head = r.next;
  if (r.next != kNoTimer) pool_[r.next].prev = r.prev; else b.tail = r.prev;
  r.prev = r.next = kNoTimer;
  r.home = Home::kNone;
  --b.count;
  --size_;
  if (b.count == 0) {
    DropBucket(number);
  } else if (was_head) {
    SiftDown(b.heap_pos);  // The new head is due no earlier than the old one: the key only grew.
  }
}

TimerRef Lawn::PopFront() {
  const TimerRef ref = Front();
  Remove(ref);
  return ref;
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
  if (heap_.size() != by_ttl_.size()) InvariantBroken("heap and ttl map sizes differ");
  for (uint32_t pos = 0; pos < heap_.size(); ++pos) {
    const uint32_t number = heap_[pos];
    const Bucket& b = buckets_[number];
    if (b.heap_pos != pos) InvariantBroken("heap_pos does not point back");
    if (pos > 0 && Key(heap_[(pos - 1) / 2]) > Key(number)) InvariantBroken("heap order");
    auto it = by_ttl_.find(b.ttl_ns);
    if (it == by_ttl_.end() || it->second != number) InvariantBroken("ttl map disagrees with bucket");
    if (b.count == 0 || b.head == kNoTimer) InvariantBroken("empty bucket kept");
    uint32_t count = 0;
    TimerRef prev = kNoTimer;
    for (TimerRef t = b.head; t != kNoTimer; t = pool_[t].next) {
      const TimerRecord& r = pool_[t];
      if (r.prev != prev) InvariantBroken("broken back link");
      if (r.home != Home::kLawn || r.location != number) InvariantBroken("record not homed in its bucket");
      if (r.ttl_ns != b.ttl_ns) InvariantBroken("record ttl differs from bucket ttl");
      if (prev != kNoTimer && pool_[prev].deadline_ns > r.deadline_ns) InvariantBroken("bucket not FIFO");
      prev = t;
      ++count;
    }
    if (prev != b.tail) InvariantBroken("tail is not the last record");
    if (count != b.count) InvariantBroken("bucket count");
    total += count;
  }
  if (total != size_) InvariantBroken("size is not the sum of bucket counts");
}

}  // namespace lawn
