#include "core/timing_wheel.h"

#include <algorithm>

#include "core/invariant.h"
#include "core/prefetch.h"

namespace lawn {

namespace {

// Level at which deadline tick `t` is filed relative to `elapsed`: the kSlotBits-bit digit holding the most
// significant differing bit. `| (kSlots - 1)` makes equal values (and differences only in digit 0) level 0.
int LevelFor(uint64_t elapsed, uint64_t t) {
  return (63 - __builtin_clzll((elapsed ^ t) | uint64_t{TimingWheel::kSlots - 1})) / TimingWheel::kSlotBits;
}

// Bits of `t` above the digit of `level` (all zero for the top level, whose digit reaches bit 63).
uint64_t HighBits(uint64_t t, int level) {
  const int shift = (level + 1) * TimingWheel::kSlotBits;
  return shift >= 64 ? 0 : t & ~((uint64_t{1} << shift) - 1);
}

}  // namespace

TimingWheel::TimingWheel(TimerPool& pool, uint64_t tick_ns) : pool_(pool), tick_ns_(tick_ns) {
  for (Level& level : levels_) {
    for (auto& lanes : level.head) lanes.fill(kNoTimer);
  }
}

void TimingWheel::Insert(TimerRef ref) {
  Link(ref, std::max(DeadlineTick(pool_[ref].deadline_ns), elapsed_));
  ++size_;
}

void TimingWheel::Link(TimerRef ref, uint64_t deadline_tick) {
  const int level = LevelFor(elapsed_, deadline_tick);
  const int slot = static_cast<int>((deadline_tick >> (level * kSlotBits)) & (kSlots - 1));
  Level& l = levels_[level];
  TimerRecord& r = pool_[ref];
  TimerRef& head = l.head[slot][LaneOf(ref)];
  r.prev = kNoTimer;
  r.next = head;
  if (r.next != kNoTimer) pool_[r.next].prev = ref;
  head = ref;
  l.Mark(slot);
  levels_in_use_ |= static_cast<uint16_t>(1u << level);
  r.home = Home::kWheel;
  r.location = static_cast<uint16_t>(level * kSlots + slot);
}

void TimingWheel::Remove(TimerRef ref) {
  TimerRecord& r = pool_[ref];
  const int level = r.location / kSlots;
  const int slot = r.location % kSlots;
  Level& l = levels_[level];
  std::array<TimerRef, kLanes>& lanes = l.head[slot];
  if (r.prev != kNoTimer) {
    pool_[r.prev].next = r.next;
  } else {
    lanes[LaneOf(ref)] = r.next;
  }
  if (r.next != kNoTimer) pool_[r.next].prev = r.prev;
  if (std::all_of(lanes.begin(), lanes.end(), [](TimerRef head) { return head == kNoTimer; })) {
    l.Unmark(slot);
    if (l.Empty()) levels_in_use_ &= static_cast<uint16_t>(~(1u << level));
  }
  r.prev = r.next = kNoTimer;
  r.home = Home::kNone;
  --size_;
}

std::array<TimerRef, TimingWheel::kLanes> TimingWheel::TakeSlot(int level, int slot) {
  Level& l = levels_[level];
  const std::array<TimerRef, kLanes> heads = l.head[slot];
  l.head[slot].fill(kNoTimer);
  l.Unmark(slot);
  if (l.Empty()) levels_in_use_ &= static_cast<uint16_t>(~(1u << level));
  return heads;
}

template <typename Visit>
void TimingWheel::WalkLanes(std::array<TimerRef, kLanes> at, Visit&& visit) {
  for (bool any = true; any;) {
    any = false;
    for (TimerRef& ref : at) {
      if (ref == kNoTimer) continue;
      const TimerRef current = ref;
      ref = pool_[current].next;
      // Started now, read one round of the lanes later: the lanes' misses overlap.
      if (ref != kNoTimer) PrefetchLine(&pool_[ref]);
      visit(current);
      any = true;
    }
  }
}

bool TimingWheel::NextInLevel(int level, int* slot, uint64_t* start) const {
  const Level& l = levels_[level];
  if (l.Empty()) return false;
  const int shift = level * kSlotBits;
  const int digit = static_cast<int>((elapsed_ >> shift) & (kSlots - 1));
  // Every occupied slot has a digit >= elapsed's (see the invariants), so no wrap-around search is needed.
  *slot = l.FirstMarkedFrom(digit);
  if (*slot < 0) InvariantBroken("TimingWheel", "occupied slot behind elapsed");
  // A slot at elapsed's own digit started in the past (a higher-level one waits for its cascade): due now.
  *start = *slot == digit ? elapsed_ : HighBits(elapsed_, level) | (uint64_t(*slot) << shift);
  return true;
}

std::optional<uint64_t> TimingWheel::NextTick() const {
  std::optional<uint64_t> best;
  for (uint32_t mask = levels_in_use_; mask != 0; mask &= mask - 1) {
    int slot;
    uint64_t start;
    if (NextInLevel(__builtin_ctz(mask), &slot, &start) && (!best || start < *best)) best = start;
  }
  return best;
}

bool TimingWheel::TakeDue(uint64_t limit_tick, std::vector<TimerRef>& out, uint64_t* tick) {
  while (levels_in_use_ != 0) {
    // The earliest slot; on a tie the higher level wins, because cascading it may add timers to the
    // level-0 slot of the same tick, which must then be taken together.
    int best_level = -1, best_slot = 0;
    uint64_t best_start = 0;
    for (uint32_t mask = levels_in_use_; mask != 0; mask &= mask - 1) {
      const int level = __builtin_ctz(mask);
      int slot;
      uint64_t start;
      if (NextInLevel(level, &slot, &start) && (best_level < 0 || start <= best_start)) {
        best_level = level;
        best_slot = slot;
        best_start = start;
      }
    }
    if (best_start > limit_tick) return false;
    elapsed_ = std::max(elapsed_, best_start);
    const std::array<TimerRef, kLanes> heads = TakeSlot(best_level, best_slot);
    if (best_level == 0) {
      WalkLanes(heads, [&](TimerRef ref) {
        out.push_back(ref);
        pool_[ref].home = Home::kNone;
        --size_;
      });
      *tick = best_start;
      return true;
    }
    // Cascade: every timer of the slot shares the slot's digits above `best_level` with elapsed now, so it
    // is re-filed at a lower level.
    WalkLanes(heads,
              [&](TimerRef ref) { Link(ref, std::max(DeadlineTick(pool_[ref].deadline_ns), elapsed_)); });
  }
  return false;
}

void TimingWheel::AdvanceTo(uint64_t now_tick) { elapsed_ = std::max(elapsed_, now_tick); }

void TimingWheel::SetTick(uint64_t tick_ns) {
  std::vector<TimerRef> all;
  all.reserve(size_);
  for (int level = 0; level < kLevels; ++level) {
    for (int slot = 0; slot < kSlots; ++slot) {
      WalkLanes(TakeSlot(level, slot), [&](TimerRef ref) { all.push_back(ref); });
    }
  }
  // elapsed_ * old tick <= the last `now` seen, so the new elapsed is <= the new tick of that `now`: a timer
  // clamped up to it is due at the next TakeDue, exactly as its own (earlier) tick would be.
  const unsigned __int128 processed_ns = static_cast<unsigned __int128>(elapsed_) * tick_ns_;
  elapsed_ = static_cast<uint64_t>(processed_ns / tick_ns);
  tick_ns_ = tick_ns;
  for (TimerRef ref : all) Link(ref, std::max(DeadlineTick(pool_[ref].deadline_ns), elapsed_));
}

void TimingWheel::CheckInvariants() const {
  size_t total = 0;
  for (int level = 0; level < kLevels; ++level) {
    const Level& l = levels_[level];
    if (((levels_in_use_ >> level) & 1) != !l.Empty()) InvariantBroken("TimingWheel", "level mask");
    const int digit = static_cast<int>((elapsed_ >> (level * kSlotBits)) & (kSlots - 1));
    for (int slot = 0; slot < kSlots; ++slot) {
      const bool occupied = std::any_of(l.head[slot].begin(), l.head[slot].end(),
                                        [](TimerRef head) { return head != kNoTimer; });
      if (l.Marked(slot) != occupied) InvariantBroken("TimingWheel", "occupancy bitmap");
      if (occupied && slot < digit) InvariantBroken("TimingWheel", "occupied slot behind elapsed");
      for (int lane = 0; lane < kLanes; ++lane) {
        TimerRef prev = kNoTimer;
        for (TimerRef ref = l.head[slot][lane]; ref != kNoTimer; ref = pool_[ref].next) {
          const TimerRecord& r = pool_[ref];
          if (r.prev != prev) InvariantBroken("TimingWheel", "broken back link");
          if (LaneOf(ref) != lane) InvariantBroken("TimingWheel", "timer in another lane");
          if (r.home != Home::kWheel || r.location != level * kSlots + slot) {
            InvariantBroken("TimingWheel", "record location");
          }
          const uint64_t t = std::max(DeadlineTick(r.deadline_ns), elapsed_);
          if (HighBits(t, level) != HighBits(elapsed_, level)) {
            InvariantBroken("TimingWheel", "timer outside its level's span");
          }
          if (static_cast<int>((t >> (level * kSlotBits)) & (kSlots - 1)) != slot) {
            InvariantBroken("TimingWheel", "wrong slot");
          }
          prev = ref;
          ++total;
        }
      }
    }
  }
  if (total != size_) InvariantBroken("TimingWheel", "size");
}

}  // namespace lawn
