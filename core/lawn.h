// Lawn: TTL buckets (Lev-Libfeld, "Timer Lawn", Algorithm 3), improved so finding the next due timer does
// not scan every bucket, and so taking a bucket's due timers does not wait on one cache miss per timer.
//
// Each bucket holds timers sharing one TTL. Timers with one TTL started at non-decreasing times have
// non-decreasing deadlines, so arrival order is expiry order: start appends, expiry takes from the front,
// delete unlinks in O(1) through the intrusive links in TimerRecord. The buckets are kept in an indexed
// binary min-heap keyed by their earliest deadline, so the earliest timer is in heap[0]:
//   push to a bucket: O(1) (it is due no earlier than every timer there);  new bucket: O(log B);
//   taking a bucket's due timers, deleting a front timer: O(log B) (the key grows: sift down);
//   delete elsewhere: O(1);
// where B is the number of buckets, itself bounded (max_buckets). An emptied bucket is removed at once.
//
// Lanes: a bucket is kLanes FIFO lists, a timer's chosen by the low bits of its ref (so it needs no record
// field), as the timing wheel's slots are. One list could be walked only one record at a time: the next
// record's address is in the one being read, a cache miss each at a million timers (about 220 ns on the
// project's machine). TakeDue walks the lanes side by side, starting the load of each lane's next record
// before reading the others', so up to kLanes misses are under way at once. Each subsequence of a FIFO
// ordered by deadline is itself ordered, so each lane is; timers of one bucket with equal deadlines leave in
// no particular order (the shard orders a tick's timers itself). The bucket keeps its lanes' front deadlines,
// so the heap's keys are read without touching a record. Lanes cost a bucket 160 bytes in place of 24
// (at most max_buckets of them; not per timer).
//
// Invariants (CheckInvariants): every bucket is non-empty; each lane's list is deadline-ordered and holds
// only timers of its lane; the bucket's count is the sum of its lanes' lengths; each lane's front deadline is
// its first timer's (UINT64_MAX when empty) and the bucket's key is their minimum; last_deadline is the
// latest deadline held; heap_[i] is a bucket whose heap_pos is i; each heap node's key <= its children's;
// the ttl map and the bucket table agree; size() is the sum of the counts.
//
// Thread-safety: none; owned by one Shard.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "core/timer_pool.h"

namespace lawn {

class Lawn {
 public:
  static constexpr uint32_t kLanes = 8;  // Lists per bucket (see "Lanes").

  Lawn(TimerPool& pool, uint32_t max_buckets);
  Lawn(const Lawn&) = delete;
  Lawn& operator=(const Lawn&) = delete;

  // Appends `ref` (deadline_ns and ttl_ns set) to the bucket of its TTL, creating the bucket if there is
  // room. Returns false, changing nothing, when the bucket would lose its order (a timer in it is due later
  // than `ref`) or when a new bucket is needed and max_buckets exist. REQUIRES: ref is live and unfiled.
  bool TryPush(TimerRef ref);

  // Unlinks a timer filed here. REQUIRES: pool[ref].home == Home::kLawn.
  void Remove(TimerRef ref);

  // The earliest deadline held, from the buckets' keys (no record is read). REQUIRES: !empty().
  uint64_t FrontDeadline() const { return buckets_[heap_[0]].key; }

  // A timer with the earliest deadline, or kNoTimer when empty. O(kLanes).
  TimerRef Front() const;

  // Unlinks and returns Front(). REQUIRES: !empty().
  TimerRef PopFront();

  // Unlinks every timer due at or before `limit_ns`, appending them to `out` in no particular order.
  void TakeDue(uint64_t limit_ns, std::vector<TimerRef>& out);

  bool HasBucket(uint64_t ttl_ns) const { return by_ttl_.contains(ttl_ns); }
  bool empty() const { return size_ == 0; }
  size_t size() const { return size_; }
  size_t bucket_count() const { return heap_.size(); }
  size_t MemoryBytes() const;
  void CheckInvariants() const;

 private:
  struct Lane {
    TimerRef head = kNoTimer;
    TimerRef tail = kNoTimer;
  };
  struct Bucket {
    Bucket() { front.fill(UINT64_MAX); }
    uint64_t ttl_ns = 0;
    uint64_t key = UINT64_MAX;   // The earliest of `front`: the bucket's heap key.
    uint64_t last_deadline = 0;  // The latest deadline held.
    uint32_t count = 0;
    uint32_t heap_pos = 0;
    std::array<Lane, kLanes> lanes;
    std::array<uint64_t, kLanes> front;  // Each lane's first deadline; UINT64_MAX when the lane is empty.
  };

  static uint32_t LaneOf(TimerRef ref) { return ref & (kLanes - 1); }
  static uint64_t EarliestFront(const Bucket& b);
  uint64_t LatestTail(const Bucket& b) const;  // Reads up to kLanes records: only when the latest one leaves.
  uint64_t Key(uint32_t bucket) const { return buckets_[bucket].key; }
  // Unlinks bucket b's due timers (see "Lanes"); leaves its key and heap position for the caller to fix.
  void TakeDueFrom(Bucket& b, uint64_t limit_ns, std::vector<TimerRef>& out);
  void SiftUp(uint32_t pos);
  void SiftDown(uint32_t pos);
  void Place(uint32_t pos, uint32_t bucket);
  void DropBucket(uint32_t bucket);

  TimerPool& pool_;
  uint32_t max_buckets_;
  size_t size_ = 0;
  std::vector<Bucket> buckets_;                   // Indexed by bucket number (TimerRecord::location).
  std::vector<uint32_t> free_buckets_;            // Reusable bucket numbers.
  std::vector<uint32_t> heap_;                    // Bucket numbers, min-heap on key.
  absl::flat_hash_map<uint64_t, uint32_t> by_ttl_;  // ttl_ns -> bucket number.
};

}  // namespace lawn
