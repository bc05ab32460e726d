// DeliveryIds: the delivery ids one shard worker hands out, unique across shards, restarts and durability
// modes without a write per id.
//
// Layout, most significant bit first: 41 bits of slot (milliseconds since 2020-01-01 UTC, good to 2089),
// 8 bits of shard, 15 bits of counter. A worker takes a new slot, max(wall-clock ms, previous slot + 1), when
// its counter runs out, so its ids only grow. Two processes never share a slot for a shard as long as a
// worker does not run ahead of the wall clock (it would need more than 32,768 ids per millisecond, 30x the
// engine's rate) and the clock is not stepped back past the previous process's last slot; recovery also
// starts the slots after the largest id found in the stored outbox, which covers a backward step in durable
// modes. Ids sort by time of issue, so the outbox column family keeps firing order.
//
// Thread-safety: none; one per worker thread.
#pragma once

#include <algorithm>
#include <cstdint>

namespace lawn {

class DeliveryIds {
 public:
  static constexpr uint64_t kCounterBits = 15;
  static constexpr uint64_t kShardBits = 8;
  static constexpr int64_t kSlotEpochUnixMs = 1'577'836'800'000;  // 2020-01-01T00:00:00Z

  explicit DeliveryIds(uint32_t shard) : shard_(shard & ((1u << kShardBits) - 1)) {}

  // Ids issued from now on are greater than `id` (the largest recovered delivery id).
  void RaiseFloor(uint64_t id) { slot_ = std::max(slot_, SlotOf(id)); }

  // The next id; `wall_now_ms` is the wall clock in ms since the Unix epoch.
  uint64_t Next(int64_t wall_now_ms) {
    if (counter_ == 0) {  // Out of ids in this slot (or the first call): take the next slot.
      const uint64_t wall_slot =
          wall_now_ms > kSlotEpochUnixMs ? static_cast<uint64_t>(wall_now_ms - kSlotEpochUnixMs) : 0;
      slot_ = std::max(wall_slot, slot_ + 1);
    }
    const uint64_t id = (slot_ << (kShardBits + kCounterBits)) | (uint64_t{shard_} << kCounterBits) | counter_;
    counter_ = (counter_ + 1) & ((uint64_t{1} << kCounterBits) - 1);
    return id;
  }

  static uint64_t SlotOf(uint64_t id) { return id >> (kShardBits + kCounterBits); }

 private:
  const uint32_t shard_;
  uint64_t slot_ = 0;
  uint64_t counter_ = 0;  // Next counter value in slot_; 0 = take a new slot first.
};

}  // namespace lawn
