#include "server/namespaces.h"

#include <algorithm>

#include "base/status_macros.h"

namespace lawn {

namespace {

// The next life word after one acquire (+1) or release (-1): users changed, generation bumped.
uint64_t Next(uint64_t life, int delta, uint64_t retired_bit, uint64_t users_mask, uint64_t generation_mask) {
  const uint64_t users = (life & users_mask) + static_cast<uint64_t>(static_cast<int64_t>(delta));
  const uint64_t generation = (((life >> 32) & generation_mask) + 1) & generation_mask;
  return (life & retired_bit) | (generation << 32) | (users & users_mask);
}

}  // namespace

bool NamespaceState::TryAcquire() {
  uint64_t life = life_.load(std::memory_order_acquire);
  while (true) {
    if (life & kRetired) return false;
    if (life_.compare_exchange_weak(life, Next(life, +1, kRetired, kUsersMask, kGenerationMask),
                                    std::memory_order_acq_rel)) {
      return true;
    }
  }
}

void NamespaceState::Release() {
  uint64_t life = life_.load(std::memory_order_acquire);
  while (!life_.compare_exchange_weak(life, Next(life, -1, kRetired, kUsersMask, kGenerationMask),
                                      std::memory_order_acq_rel)) {
  }
}

Namespaces::Namespaces(const NamespaceLimits& limits) : limits_(limits), budget_(limits.max_outbox_bytes) {}

NamespaceState* Namespaces::Find(std::string_view name) const {
  absl::ReaderMutexLock lock(&mu_);
  auto it = by_name_.find(absl::string_view(name.data(), name.size()));
  return it == by_name_.end() ? nullptr : it->second.get();
}

size_t Namespaces::Limit() const { return std::min<size_t>(limits_.max_namespaces, kMaxNamespaces); }

absl::Status Namespaces::MakeExistLocked(NamespaceState& ns) {
  if (existing_ >= Limit()) {
    return absl::ResourceExhaustedError("lawnd holds max_namespaces (" + std::to_string(Limit()) +
                                        ") namespaces; namespace '" + ns.name() +
                                        "' cannot be created (use fewer namespaces or raise the limit)");
  }
  uint16_t index;
  if (!free_indexes_.empty()) {
    index = free_indexes_.back();
    free_indexes_.pop_back();
  } else {
    index = static_cast<uint16_t>(next_index_++);
  }
  ++existing_;
  ns.index_.store(index, std::memory_order_release);
  return absl::OkStatus();
}

absl::StatusOr<NamespaceState*> Namespaces::FindOrAddLocked(std::string_view name, bool exist) {
  auto it = by_name_.find(absl::string_view(name.data(), name.size()));
  if (it != by_name_.end()) {
    NamespaceState* ns = it->second.get();
    if (exist && !ns->exists()) LAWN_RETURN_IF_ERROR(MakeExistLocked(*ns));
    return ns;
  }
  auto state = std::make_shared<NamespaceState>(std::string(name), limits_.ack_timeout_ns, limits_.outbox, budget_);
  if (exist) {
    LAWN_RETURN_IF_ERROR(MakeExistLocked(*state));
  } else if (by_name_.size() - existing_ >= Limit()) {
    return absl::ResourceExhaustedError("lawnd holds max_namespaces (" + std::to_string(Limit()) +
                                        ") subscriptions to names that hold no timer; namespace '" +
                                        std::string(name) + "' cannot be watched (start a timer in it first, "
                                        "use fewer namespaces or raise the limit)");
  }
  NamespaceState* raw = state.get();
  by_name_.emplace(std::string(name), std::move(state));
  return raw;
}

absl::StatusOr<NamespaceState*> Namespaces::GetOrCreate(std::string_view name) {
  if (NamespaceState* ns = Find(name); ns != nullptr && ns->exists()) return ns;
  absl::MutexLock lock(&mu_);
  return FindOrAddLocked(name, /*exist=*/true);
}

absl::StatusOr<NamespaceState*> Namespaces::Acquire(std::string_view name) {
  while (true) {
    absl::StatusOr<NamespaceState*> ns = GetOrCreate(name);
    if (!ns.ok()) return ns;
    // Retired between the lookup and here: TryRetire removed it from the map in the same critical section
    // that retired it, so the next lookup creates a fresh one.
    if ((*ns)->TryAcquire()) return ns;
  }
}

absl::StatusOr<NamespaceState*> Namespaces::AcquireToWatch(std::string_view name) {
  while (true) {
    NamespaceState* ns = Find(name);
    if (ns == nullptr) {
      absl::MutexLock lock(&mu_);
      absl::StatusOr<NamespaceState*> added = FindOrAddLocked(name, /*exist=*/false);
      if (!added.ok()) return added;
      ns = *added;
    }
    if (ns->TryAcquire()) return ns;  // Retired meanwhile: as in Acquire.
  }
}

std::shared_ptr<NamespaceState> Namespaces::TryRetire(NamespaceState* ns) {
  absl::MutexLock lock(&mu_);
  auto it = by_name_.find(ns->name());
  if (it == by_name_.end() || it->second.get() != ns) return nullptr;
  // Snapshot the life word first: if anyone acquires or releases while the counters are read, the
  // generation changes and the compare-and-swap below fails.
  uint64_t life = ns->life_.load(std::memory_order_acquire);
  if ((life & NamespaceState::kUsersMask) != 0 || (life & NamespaceState::kRetired) != 0) return nullptr;
  // Order matters: a firing reserves outbox room before it gives up its pending count, so reading pending
  // first and the outbox second never sees both at zero while an expiration is on its way.
  if (ns->pending.load() != 0 || ns->pending_bytes.load() != 0 || ns->holding.load() ||
      ns->outbox.entries() != 0 || ns->outbox.subscriber_count() != 0) {
    return nullptr;
  }
  if (!ns->life_.compare_exchange_strong(life, life | NamespaceState::kRetired, std::memory_order_acq_rel)) {
    return nullptr;
  }
  std::shared_ptr<NamespaceState> retired = std::move(it->second);
  by_name_.erase(it);
  if (retired->exists()) {
    free_indexes_.push_back(retired->index());
    --existing_;
  }
  return retired;
}

std::vector<std::shared_ptr<NamespaceState>> Namespaces::All() const {
  absl::ReaderMutexLock lock(&mu_);
  std::vector<std::shared_ptr<NamespaceState>> out;
  for (const auto& [name, state] : by_name_) out.push_back(state);
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a->name() < b->name(); });
  return out;
}

size_t Namespaces::size() const {
  absl::ReaderMutexLock lock(&mu_);
  return existing_;
}

}  // namespace lawn
