// PartitionGate (server/partition_gate.h).
#include "server/partition_gate.h"

#include "absl/strings/str_cat.h"
#include "base/partition.h"

namespace lawn {

namespace {

constexpr uint32_t kOwned = 1;
constexpr uint32_t kBlock = 2;

}  // namespace

PartitionGate::PartitionGate(std::string member, uint32_t partitions)
    : member_(std::move(member)), partitions_(partitions), state_(new std::atomic<uint32_t>[partitions]) {
  for (uint32_t p = 0; p < partitions_; ++p) state_[p].store(0, std::memory_order_relaxed);
}

uint32_t PartitionGate::PartitionOfKey(std::string_view key) const {
  const size_t zero = key.find('\0');
  if (zero == std::string_view::npos) return PartitionOf(std::string_view(), key, partitions_);
  return PartitionOf(key.substr(0, zero), key.substr(zero + 1), partitions_);
}

bool PartitionGate::SetOwned(const std::vector<bool>& owned) {
  bool opened = false;
  for (uint32_t p = 0; p < partitions_ && p < owned.size(); ++p) {
    const uint32_t before = owned[p] ? state_[p].fetch_or(kOwned, std::memory_order_acq_rel)
                                     : state_[p].fetch_and(~kOwned, std::memory_order_acq_rel);
    opened |= owned[p] && before == 0;
  }
  return opened;
}

void PartitionGate::Disown(uint32_t partition) { state_[partition].fetch_and(~kOwned, std::memory_order_acq_rel); }

void PartitionGate::Block(uint32_t partition) { state_[partition].fetch_add(kBlock, std::memory_order_acq_rel); }

bool PartitionGate::Unblock(uint32_t partition) {
  return state_[partition].fetch_sub(kBlock, std::memory_order_acq_rel) - kBlock == kOwned;
}

bool PartitionGate::Owned(uint32_t partition) const {
  return (state_[partition].load(std::memory_order_acquire) & kOwned) != 0;
}

bool PartitionGate::Open(uint32_t partition) const {
  return state_[partition].load(std::memory_order_acquire) == kOwned;
}

absl::Status PartitionGate::CheckWrite(std::string_view key) const {
  const uint32_t p = PartitionOfKey(key);
  const uint32_t state = state_[p].load(std::memory_order_acquire);
  if (state == kOwned) return absl::OkStatus();
  if ((state & kOwned) == 0) {
    return absl::UnavailableError(absl::StrCat("member ", member_, " does not own partition ", p,
                                               " (it moved, or the map is being read); retry shortly"));
  }
  return absl::UnavailableError(
      absl::StrCat("partition ", p, " is being handed over between members; retry in a moment"));
}

}  // namespace lawn
