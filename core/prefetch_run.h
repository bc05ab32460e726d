// RunPrefetched: runs a batch of operations on one shard in order, each id's cache misses started ahead of
// its operation (Shard::Prefetch), so that at a million timers the misses of several operations overlap
// instead of following one another.
//
// An operation i is preceded by three steps for its id, each a few operations before the next needs it:
// the index chunk kIndexAhead operations early, the record kRecordAhead early, its list neighbours
// kLinksAhead early. The distances were measured with a probe beside lawn_bench (BENCHMARKS.md section 39):
// far enough that a load (~220 ns on the project's machine) finishes before the next step reads it, near
// enough that the lines are still cached.
//
// Thread-safety: that of the shard (one thread).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#include "core/shard.h"

namespace lawn {

// Calls op(i) for i = 0 .. n-1, in order. `hash_at(i)` is TimerIdHash of operation i's id (whole, group
// included); it is called once per operation, before op(i). `op` may mutate the shard.
template <typename HashAt, typename Op>
void RunPrefetched(const Shard& shard, size_t n, HashAt&& hash_at, Op&& op) {
  constexpr size_t kIndexAhead = 8;
  constexpr size_t kRecordAhead = 4;
  constexpr size_t kLinksAhead = 2;
  // Hashes of operations lead - kIndexAhead .. lead: at most kIndexAhead + 1 live at once.
  constexpr size_t kRing = 16;
  static_assert(kIndexAhead < kRing && kLinksAhead < kRecordAhead && kRecordAhead < kIndexAhead);
  std::array<uint32_t, kRing> hashes;
  for (size_t lead = 0; lead < n + kIndexAhead; ++lead) {
    if (lead < n) {
      hashes[lead % kRing] = hash_at(lead);
      shard.Prefetch(hashes[lead % kRing], Shard::PrefetchStep::kIndex);
    }
    if (const size_t i = lead - (kIndexAhead - kRecordAhead); lead >= kIndexAhead - kRecordAhead && i < n) {
      shard.Prefetch(hashes[i % kRing], Shard::PrefetchStep::kRecord);
    }
    if (const size_t i = lead - (kIndexAhead - kLinksAhead); lead >= kIndexAhead - kLinksAhead && i < n) {
      shard.Prefetch(hashes[i % kRing], Shard::PrefetchStep::kLinks);
    }
    if (lead >= kIndexAhead) op(lead - kIndexAhead);
  }
}

}  // namespace lawn
