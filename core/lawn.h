// Lawn: TTL buckets (Lev-Libfeld, "Timer Lawn", Algorithm 3), improved so finding the next due timer does
// not scan every bucket.
//
// Each bucket is a FIFO of timers sharing one TTL. Timers with one TTL started at non-decreasing times have
// non-decreasing deadlines, so arrival order is expiry order: start appends at the tail, expiry pops the head,
// delete unlinks in O(1) through the intrusive links in TimerRecord. The bucket heads are kept in an indexed
// binary min-heap keyed by the head's deadline, so the earliest timer is heap[0]'s head:
//   push to a non-empty bucket: O(1) (its head is unchanged);  push to a new bucket: O(log B);
//   pop / delete of a head: O(log B) (the head's key grows: sift down);  delete elsewhere: O(1);
// where B is the number of buckets, itself bounded (max_buckets). An emptied bucket is removed at once.
//
// Invariants (CheckInvariants): every bucket is non-empty, its list is deadline-ordered and its count is its
// length; heap_[i] is a bucket whose heap_pos is i; each heap node's head deadline <= its children's; the
// ttl map and the bucket table agree; size() is the sum of the counts.
//
// Thread-safety: none; owned by one Shard.
#pragma once

#include <cstdint>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "core/timer_pool.h"

namespace lawn {

class Lawn {
 public:
  Lawn(TimerPool& pool, uint32_t max_buckets);
  Lawn(const Lawn&) = delete;
  Lawn& operator=(const Lawn&) = delete;

  // Appends `ref` (deadline_ns and ttl_ns set) to the bucket of its TTL, creating the bucket if there is
  // room. Returns false, changing nothing, when the bucket would lose its FIFO order (the tail is due later
  // than `ref`) or when a new bucket is needed and max_buckets exist. REQUIRES: ref is live and unfiled.
  bool TryPush(TimerRef ref);

  // Unlinks a timer filed here. REQUIRES: pool[ref].home == Home::kLawn.
  void Remove(TimerRef ref);

  // The timer with the earliest deadline, or kNoTimer when empty.
  TimerRef Front() const { return heap_.empty() ? kNoTimer : buckets_[heap_[0]].head; }

  // Unlinks and returns Front(). REQUIRES: !empty().
  TimerRef PopFront();

  bool HasBucket(uint64_t ttl_ns) const { return by_ttl_.contains(ttl_ns); }
  bool empty() const { return size_ == 0; }
  size_t size() const { return size_; }
  size_t bucket_count() const { return heap_.size(); }
  size_t MemoryBytes() const;
  void CheckInvariants() const;

 private:
  struct Bucket {
    uint64_t ttl_ns = 0;
    TimerRef head = kNoTimer;
    TimerRef tail = kNoTimer;
    uint32_t count = 0;
    uint32_t heap_pos = 0;
  };

  uint64_t Key(uint32_t bucket) const { return pool_[buckets_[bucket].head].deadline_ns; }
  void SiftUp(uint32_t pos);
  void SiftDown(uint32_t pos);
  void Place(uint32_t pos, uint32_t bucket);
  void DropBucket(uint32_t bucket);

  TimerPool& pool_;
  uint32_t max_buckets_;
  size_t size_ = 0;
  std::vector<Bucket> buckets_;                   // Indexed by bucket number (TimerRecord::location).
  std::vector<uint32_t> free_buckets_;            // Reusable bucket numbers.
  std::vector<uint32_t> heap_;                    // Bucket numbers, min-heap on head deadline.
  absl::flat_hash_map<uint64_t, uint32_t> by_ttl_;  // ttl_ns -> bucket number.
};

}  // namespace lawn
