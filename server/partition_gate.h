// PartitionGate: which partitions a cluster member may write and fire now, as the shard workers check it.
//
// The handlers route by the ownership map (ClusterNode::Place), but a call they found local reaches its
// shard worker later; a partition may have started moving meanwhile. So the worker checks again, in Apply,
// on the thread that writes the shard: a partition is open only while the last map names this member as
// its owner and no hand-over has blocked it (moving out, or still arriving). A move blocks its partitions
// and then waits for one round of every worker (a barrier): from then on nothing writes or fires them, so
// what it exports is final.
//
// Due timers of a closed partition are held (Shard holding, group kHoldGroup) and offered again when a
// partition opens (Runtime::ReleaseGated): late by the hand-over, never early.
//
// Thread-safety: every method may be called from any thread; reads are single atomic loads.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "base/partition.h"

namespace lawn {

class PartitionGate {
 public:
  // The hold group of due timers whose partition is closed: above every namespace index (max_namespaces is
  // at most 65,000) and below the group of timers of unknown namespaces (UINT16_MAX).
  static constexpr uint16_t kHoldGroup = UINT16_MAX - 1;

  PartitionGate(std::string member, uint32_t partitions);
  PartitionGate(const PartitionGate&) = delete;
  PartitionGate& operator=(const PartitionGate&) = delete;

  uint32_t partitions() const { return partitions_; }
  // The partition of a timer key (namespace \0 id).
  uint32_t PartitionOfKey(std::string_view key) const;

  // From the ownership map: owned[p] says whether this member owns p. Returns whether a partition opened.
  bool SetOwned(const std::vector<bool>& owned);
  // Clears `partition`'s owned bit ahead of the map (a hand-over flipped it away).
  void Disown(uint32_t partition);
  // A hand-over's hold on `partition` (counted: blocked until every Block has its Unblock). Unblock returns
  // whether the partition opened.
  void Block(uint32_t partition);
  bool Unblock(uint32_t partition);

  bool Owned(uint32_t partition) const;
  bool Open(uint32_t partition) const;
  bool OpenKey(std::string_view key) const { return Open(PartitionOfKey(key)); }
  bool Open(std::string_view ns, std::string_view id) const { return Open(PartitionOf(ns, id, partitions_)); }
  // OK if writes to the timer with this key may be applied here now; UNAVAILABLE saying why otherwise.
  absl::Status CheckWrite(std::string_view key) const;

 private:
  const std::string member_;
  const uint32_t partitions_;
  // Per partition: bit 0 owned; the rest counts blocks (2 per Block).
  std::unique_ptr<std::atomic<uint32_t>[]> state_;
};

}  // namespace lawn
