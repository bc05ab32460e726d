// TimerPool: the slab that owns every pending timer record of one shard.
//
// Records are addressed by a 32-bit TimerRef instead of a pointer so the intrusive links of the Lawn buckets
// and the wheel slots cost 8 bytes per timer, and records live in fixed-size chunks so growing the pool never
// moves (or copies) a record. A record is one 64-byte cache line. A timer's id and payload are stored
// together: inside the record when they fit in kInlineBytes (no allocation, and a lookup's id comparison
// touches no other memory), else in one heap block. The id stored is what follows the id's group (see
// Shard): the group itself is a 16-bit code the owner gives.
//
// Invariants: a ref is either live (returned by Allocate, not yet Freed) or on the free list; only live refs
// may be passed to the accessors.
//
// Thread-safety: none; a pool belongs to one shard and is used by its worker thread only.
#pragma once

#include <cstdint>
#include <cstring>
#include <memory>
#include <string_view>
#include <vector>

namespace lawn {

// Index of a record in a TimerPool. kNoTimer marks the end of an intrusive list.
using TimerRef = uint32_t;
inline constexpr TimerRef kNoTimer = UINT32_MAX;

// Where a pending timer is filed; lets delete and reschedule find its container in O(1).
enum class Home : uint8_t { kNone, kLawn, kWheel, kHeld };

// alignas(64): records start on cache-line boundaries, so a lookup or a link update touches one line, not two.
struct alignas(64) TimerRecord {
  // 17: what is left of the cache line after the fields below. A 16-byte id fits with its group kept as a
  // 16-bit code (lawnd's `namespace \0 id` keys cost no allocation; BENCHMARKS.md section 5).
  static constexpr uint32_t kInlineBytes = 17;
  static constexpr uint32_t kMaxIdBytes = UINT16_MAX;  // Of the id after its group.

  uint64_t deadline_ns = 0;  // Absolute monotonic deadline; the timer fires at or after it.
  uint64_t ttl_ns = 0;       // Time from arming to deadline (Lawn bucket key); a re-armed timer's interval.
  uint64_t interval_ns = 0;  // Repeat interval; 0 for a one-shot timer.
  TimerRef prev = kNoTimer;  // Intrusive links of the Lawn bucket or wheel slot it is in.
  TimerRef next = kNoTimer;
  uint32_t payload_size = 0;
  uint32_t id_hash = 0;   // Cached hash of the whole id (group included): rehashing never touches the blob.
  uint16_t id_size = 0;   // Bytes of the id after its group.
  uint16_t group = 0;     // The id's group, as its owner (Shard) codes it; 0: none.
  uint16_t location = 0;  // Lawn: its bucket's number; wheel: level * 256 + slot; held: its group.
  Home home = Home::kNone;
  // id bytes (after the group) followed by payload bytes, here if they fit, else in a heap block whose
  // pointer is stored here (memcpy: the bytes are not aligned for a pointer).
  char storage[kInlineBytes] = {};

  bool is_inline() const { return id_size + payload_size <= kInlineBytes; }
  char* blob() const {
    char* p;
    std::memcpy(&p, storage, sizeof(p));
    return p;
  }
  void set_blob(char* p) { std::memcpy(storage, &p, sizeof(p)); }
  const char* bytes() const { return is_inline() ? storage : blob(); }
  std::string_view id() const { return {bytes(), id_size}; }
  std::string_view payload() const { return {bytes() + id_size, payload_size}; }
};
static_assert(sizeof(TimerRecord) == 64, "a timer record is one cache line: see the memory budget in README");

class TimerPool {
 public:
  TimerPool() = default;
  TimerPool(const TimerPool&) = delete;
  TimerPool& operator=(const TimerPool&) = delete;
  ~TimerPool();

  // Returns a live record holding copies of `id` and `payload`, all other fields default.
  // REQUIRES: id.size() <= TimerRecord::kMaxIdBytes.
  TimerRef Allocate(std::string_view id, std::string_view payload, uint32_t id_hash, uint16_t group = 0);

  // Replaces the payload of a live record.
  void SetPayload(TimerRef ref, std::string_view payload);

  // Returns `ref` to the free list and releases its blob. REQUIRES: ref is live and unlinked.
  void Free(TimerRef ref);

  TimerRecord& operator[](TimerRef ref) { return chunks_[ref >> kChunkBits][ref & kChunkMask]; }
  const TimerRecord& operator[](TimerRef ref) const { return chunks_[ref >> kChunkBits][ref & kChunkMask]; }

  size_t live() const { return live_; }
  // One past the highest ref ever handed out: every live ref is below it. A free record has home kNone.
  TimerRef used() const { return used_; }
  // Bytes held by the pool: record chunks plus out-of-line id/payload blocks (excluding allocator overhead).
  size_t MemoryBytes() const;

 private:
  static constexpr uint32_t kChunkBits = 16;
  static constexpr uint32_t kChunkSize = 1u << kChunkBits;
  static constexpr uint32_t kChunkMask = kChunkSize - 1;

  std::vector<std::unique_ptr<TimerRecord[]>> chunks_;
  TimerRef free_head_ = kNoTimer;  // Free records are chained through `next`.
  uint32_t used_ = 0;              // Records ever handed out (high-water mark).
  size_t live_ = 0;
  size_t blob_bytes_ = 0;
};

// A FIFO list of records through their prev/next links, by its first and last ref (kNoTimer when empty): a
// Lawn bucket's lane, a shard's hold group.
// Appends an unlinked `ref` behind `tail`.
inline void AppendToList(TimerPool& pool, TimerRef ref, TimerRef& head, TimerRef& tail) {
  TimerRecord& r = pool[ref];
  r.prev = tail;
  r.next = kNoTimer;
  if (tail != kNoTimer) {
    pool[tail].next = ref;
  } else {
    head = ref;
  }
  tail = ref;
}
// Unlinks `ref` from the list and clears its links.
inline void UnlinkFromList(TimerPool& pool, TimerRef ref, TimerRef& head, TimerRef& tail) {
  TimerRecord& r = pool[ref];
  if (r.prev != kNoTimer) {
    pool[r.prev].next = r.next;
  } else {
    head = r.next;
  }
  if (r.next != kNoTimer) {
    pool[r.next].prev = r.prev;
  } else {
    tail = r.prev;
  }
  r.prev = r.next = kNoTimer;
}

}  // namespace lawn
