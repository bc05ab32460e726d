// TimingWheel: a hierarchical timing wheel over 64-bit tick numbers (Varghese & Lauck scheme 7; the Volt
// runtime's bitmap variant), for timers whose TTLs are irregular.
//
// Level L has 256 slots of 256^L ticks each. A timer with deadline tick d is filed at the level of the most
// significant bit in which d differs from `elapsed`, (63 - clz((elapsed ^ d) | 255)) / 8, in slot
// (d >> 8L) & 255. Eight levels cover the 64 bits, so every 64-bit deadline has a level: no overflow list and
// no maximum TTL. With the default 1 ms tick:
//
//   level  slot width        range of the level
//     0    1 ms              256 ms
//     1    256 ms            65.5 s
//     2    65.5 s            4.7 h
//     3    4.7 h             49.7 days
//     4    49.7 days         34.8 years
//     5..7 ...               up to 2^64 ticks (5.8e8 years)
//
// 256 slots rather than the 64 of a machine word: a timer is walked once per level it cascades through, a
// cache miss each (half of lawn_bench's Expire with TTLs up to a minute), and with 256 slots a TTL up to
// 65 s cascades at most once instead of twice (BENCHMARKS.md section 24).
//
// Lanes: a slot is eight lists, a timer's chosen by the low bits of its ref (so it needs no record field and
// no search). Walking a slot (a cascade, a take) reads one record per timer, each a cache miss at a million
// timers, and in one list each miss waits for the one before (the next link is in the record). The eight
// lists are walked side by side, so eight misses are under way at once: lawn_bench's Expire with random TTLs
// at 1e6 took 0.3x the time with eight lanes, 0.4x with four (BENCHMARKS.md section 39). The heads cost
// 8 KiB per level.
//
// Each level keeps a 256-bit occupancy bitmap; the next occupied slot is a ctz over at most four words, and
// a mask of non-empty levels skips empty ones, so NextTick is O(levels in use) and insert/remove are O(1). As
// time passes, the earliest occupied slot of a level > 0 is cascaded: its timers are re-filed relative to the
// new `elapsed`, landing at lower levels. Each timer cascades at most once per level.
//
// Invariants (CheckInvariants): every filed timer has deadline tick >= elapsed (a past-due timer is filed at
// elapsed); it sits at the level and slot
// computed from elapsed at the time it was filed, which shares all bits above that level with the current
// elapsed and has a slot digit >= elapsed's digit; bitmaps mark exactly the non-empty slots; the level mask
// marks exactly the non-empty levels.
//
// Thread-safety: none; owned by one Shard.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <vector>

#include "core/timer_pool.h"

namespace lawn {

class TimingWheel {
 public:
  static constexpr int kSlotBits = 8;
  static constexpr int kSlots = 1 << kSlotBits;
  static constexpr int kLevels = (64 + kSlotBits - 1) / kSlotBits;  // Enough digits for any 64-bit tick.
  static constexpr int kLanes = 8;                                  // Lists per slot (see "Lanes").

  TimingWheel(TimerPool& pool, uint64_t tick_ns);
  TimingWheel(const TimingWheel&) = delete;
  TimingWheel& operator=(const TimingWheel&) = delete;

  // ceil(deadline_ns / tick): the first tick at whose start the deadline has passed.
  uint64_t DeadlineTick(uint64_t deadline_ns) const {
    return deadline_ns / tick_ns_ + (deadline_ns % tick_ns_ != 0);
  }

  // Files `ref` by its deadline_ns. A deadline tick before `elapsed` is filed at `elapsed`: due at the next
  // TakeDue, which is exactly when its own tick would have been due. REQUIRES: ref is live and unfiled.
  void Insert(TimerRef ref);

  // Unlinks a filed timer. REQUIRES: pool[ref].home == Home::kWheel.
  void Remove(TimerRef ref);

  // The earliest tick at which TakeDue may return timers or cascade; nullopt when empty.
  std::optional<uint64_t> NextTick() const;

  // Cascades every higher-level slot that starts at or before `limit_tick` and is earlier than the first
  // level-0 slot; then, if the earliest level-0 slot's tick is <= limit_tick, unlinks its timers, appends
  // them to `out` (in no particular order), sets `*tick` to their tick and returns true. Returns false when
  // no timer is due at limit_tick.
  bool TakeDue(uint64_t limit_tick, std::vector<TimerRef>& out, uint64_t* tick);

  // Records that every tick <= now_tick has been processed (elapsed becomes now_tick: the last processed
  // tick). REQUIRES: NextTick() > now_tick (or empty).
  void AdvanceTo(uint64_t now_tick);

  // Re-files every timer under a new tick length. Deadlines are in ns, so nothing becomes due earlier.
  void SetTick(uint64_t tick_ns);

  uint64_t elapsed() const { return elapsed_; }
  size_t size() const { return size_; }
  size_t MemoryBytes() const { return sizeof(*this); }
  void CheckInvariants() const;

 private:
  struct Level {
    static constexpr int kWords = (kSlots + 63) / 64;
    std::array<uint64_t, kWords> occupied{};                // Bit s: some lane of slot s is not empty.
    std::array<std::array<TimerRef, kLanes>, kSlots> head;  // Slot, lane: the first timer of that list.

    void Mark(int slot) { occupied[slot >> 6] |= uint64_t{1} << (slot & 63); }
    void Unmark(int slot) { occupied[slot >> 6] &= ~(uint64_t{1} << (slot & 63)); }
    bool Marked(int slot) const { return (occupied[slot >> 6] >> (slot & 63)) & 1; }
    bool Empty() const {
      for (uint64_t word : occupied) {
        if (word != 0) return false;
      }
      return true;
    }
    // The first marked slot >= `from`, or -1.
    int FirstMarkedFrom(int from) const {
      for (int w = from >> 6; w < kWords; ++w) {
        const uint64_t word = w == (from >> 6) ? occupied[w] & (~uint64_t{0} << (from & 63)) : occupied[w];
        if (word != 0) return w * 64 + __builtin_ctzll(word);
      }
      return -1;
    }
  };

  // Slot of the earliest occupied slot at `level` and its start tick.
  bool NextInLevel(int level, int* slot, uint64_t* start) const;
  static int LaneOf(TimerRef ref) { return static_cast<int>(ref & (kLanes - 1)); }
  void Link(TimerRef ref, uint64_t deadline_tick);
  // Empties a slot; returns the heads of its lanes.
  std::array<TimerRef, kLanes> TakeSlot(int level, int slot);
  // Calls visit(ref) for every timer of the lists that start at `heads`, the lists interleaved. Reads a
  // timer's next link before `visit` sees it, so `visit` may relink it.
  template <typename Visit>
  void WalkLanes(std::array<TimerRef, kLanes> heads, Visit&& visit);

  TimerPool& pool_;
  uint64_t tick_ns_;
  // The last tick processed: every tick before it is done; timers filed at elapsed_ itself (past-due inserts)
  // are due at the next TakeDue. Every filed deadline tick is >= elapsed_.
  uint64_t elapsed_ = 0;
  size_t size_ = 0;
  uint16_t levels_in_use_ = 0;
  std::array<Level, kLevels> levels_;
};

}  // namespace lawn
