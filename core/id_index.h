// IdIndex: a shard's id index, the set of its pending records' 32-bit refs, found by each record's 32-bit id
// hash, laid out so that a lookup misses the cache once before it reaches the record.
//
// Why not absl::flat_hash_set<TimerRef>: its control bytes and its slots are two arrays, so at a million
// timers a lookup misses twice before the record's own miss (the two loads were 28% and 46% of Shard::Find's
// samples in lawn_bench's Delete profile; BENCHMARKS.md section 24), and a firing's erase pays the same two.
// Here one 64-byte chunk holds 12 refs beside their 12 tag bytes (7 hash bits each, the layout of Facebook's
// F14 tables), so the tags and the ref they select share a cache line.
//
// Probing: a hash's home chunk comes from its top bits; a ref whose home chunk is full goes to the next chunk
// with room (linearly), and each chunk it passes counts it in `overflow`, so a lookup stops at the first chunk
// that no ref passed. A count that reaches 255 stays there (lookups then probe on past that chunk: correct,
// slower) until the table grows. At most 10 of a chunk's 12 slots are filled on average: past that the table
// doubles, rehashing every ref through `hash_of`. It never shrinks, as absl's tables do not.
//
// The hashes come from absl::Hash, whose low bits also pick lawnd's shard, so a shard's hashes share their
// low bits: chunk and tag are taken from two multiplicative mixes of all 32 bits.
//
// Thread-safety: none; an index belongs to one shard.
#pragma once

#include <cstddef>
#include <cstdint>

#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include "absl/functional/function_ref.h"
#include "core/prefetch.h"
#include "core/timer_pool.h"

namespace lawn {

class IdIndex {
 public:
  IdIndex() = default;
  IdIndex(const IdIndex&) = delete;
  IdIndex& operator=(const IdIndex&) = delete;
  ~IdIndex();

  using HashOf = absl::FunctionRef<uint32_t(TimerRef)>;

  // The ref with this hash for which `eq(ref)` is true, or kNoTimer. `eq` is asked only about refs whose tag
  // matches (1 in 128 of the others).
  template <typename Eq>
  TimerRef Find(uint32_t hash, Eq&& eq) const;
  // Adds `ref`, whose id hashes to `hash`. `hash_of` gives the hash of any ref already in (for growth).
  // REQUIRES: no ref with an equal id is in the index.
  void Insert(TimerRef ref, uint32_t hash, HashOf hash_of);
  // Removes `ref`, inserted with `hash`; false if it is not in the index. Reads no record.
  bool Erase(TimerRef ref, uint32_t hash);
  // Whether `ref` is in the index under `hash`. Reads no record.
  bool Contains(TimerRef ref, uint32_t hash) const;
  // Starts loading the chunk a lookup of `hash` reads first (an empty index loads nothing useful, harmlessly:
  // core/prefetch.h).
  void Prefetch(uint32_t hash) const { PrefetchLine(chunks_ + HomeOf(hash)); }
  // Calls `visit(ref)` for each ref of the home chunk of `hash` whose tag matches: the refs a lookup would
  // ask `eq` about first, for a caller that loads their records ahead. Reads that one chunk and no other
  // (a ref that overflowed to a later chunk is not visited: a missed prefetch, not a wrong answer).
  template <typename Visit>
  void ForEachCandidate(uint32_t hash, Visit&& visit) const {
    if (size_ == 0) return;
    const Chunk& c = chunks_[HomeOf(hash)];
    for (uint32_t match = Match(c, TagOf(hash)); match != 0; match &= match - 1) {
      visit(c.refs[__builtin_ctz(match)]);
    }
  }

  // Calls `visit(ref)` for every ref, in no particular order. `visit` must not change the index.
  void ForEach(absl::FunctionRef<void(TimerRef)> visit) const;

  size_t size() const { return size_; }
  size_t capacity() const { return chunk_count_ * kSlots; }
  size_t MemoryBytes() const { return chunk_count_ * sizeof(Chunk); }

 private:
  static constexpr int kSlots = 12;
  static constexpr uint32_t kSlotMask = (1u << kSlots) - 1;
  static constexpr int kMaxFilledPerChunk = 10;
  static constexpr uint8_t kOverflowSaturated = 255;

  struct alignas(64) Chunk {
    uint8_t tags[kSlots];  // 0: empty; else 0x80 | 7 bits of the ref's hash.
    uint8_t overflow;      // Refs whose probe passed this chunk full (saturating).
    uint8_t unused[3];
    TimerRef refs[kSlots];
  };
  static_assert(sizeof(Chunk) == 64, "a chunk is one cache line");

  static uint8_t TagOf(uint32_t hash) { return static_cast<uint8_t>(0x80 | ((hash * 0x85EBCA6Bu) >> 25)); }
  size_t HomeOf(uint32_t hash) const {
    // Top bits of a 64-bit product: each depends on all 32 hash bits.
    return static_cast<size_t>(((uint64_t{hash} * 0x9E3779B97F4A7C15ULL) >> 32) >> (32 - chunk_bits_));
  }
  size_t Next(size_t chunk) const { return (chunk + 1) & (chunk_count_ - 1); }
  // Bit i set when tags[i] == tag (tag 0 matches the empty slots).
  static uint32_t Match(const Chunk& chunk, uint8_t tag) {
#ifdef __SSE2__
    // The chunk is 64-byte aligned: its first 16 bytes (12 tags, overflow, padding) load in one aligned read.
    const __m128i tags = _mm_load_si128(reinterpret_cast<const __m128i*>(chunk.tags));
    const __m128i wanted = _mm_set1_epi8(static_cast<char>(tag));
    return static_cast<uint32_t>(_mm_movemask_epi8(_mm_cmpeq_epi8(tags, wanted))) & kSlotMask;
#else
    uint32_t match = 0;
    for (int i = 0; i < kSlots; ++i) match |= uint32_t{chunk.tags[i] == tag} << i;
    return match;
#endif
  }
  // Where the probe for `hash` finds a ref with `eq(ref)`: sets *chunk and *slot and returns true, or
  // returns false. The one probe loop of Find, Contains and Erase.
  template <typename Eq>
  bool Locate(uint32_t hash, Eq&& eq, size_t* chunk, int* slot) const;
  // Places a ref with no growth check.
  void Place(TimerRef ref, uint32_t hash);
  void Grow(HashOf hash_of);

  Chunk* chunks_ = nullptr;
  size_t chunk_count_ = 0;  // 0 or a power of two.
  int chunk_bits_ = 0;      // log2(chunk_count_).
  size_t size_ = 0;
};

template <typename Eq>
bool IdIndex::Locate(uint32_t hash, Eq&& eq, size_t* chunk, int* slot) const {
  if (size_ == 0) return false;
  const uint8_t tag = TagOf(hash);
  size_t at = HomeOf(hash);
  for (size_t probed = 0; probed < chunk_count_; ++probed, at = Next(at)) {
    const Chunk& c = chunks_[at];
    for (uint32_t match = Match(c, tag); match != 0; match &= match - 1) {
      const int s = __builtin_ctz(match);
      if (eq(c.refs[s])) {
        *chunk = at;
        *slot = s;
        return true;
      }
    }
    if (c.overflow == 0) return false;
  }
  return false;
}

template <typename Eq>
TimerRef IdIndex::Find(uint32_t hash, Eq&& eq) const {
  size_t chunk;
  int slot;
  return Locate(hash, eq, &chunk, &slot) ? chunks_[chunk].refs[slot] : kNoTimer;
}

}  // namespace lawn
