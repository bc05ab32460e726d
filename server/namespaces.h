// Namespaces: the registry of namespaces lawnd has seen, each with its pending-timer counters and its Outbox.
//
// Entries are created on first use and never removed while lawnd runs, so a NamespaceState* stays valid for
// the life of the registry; shard workers cache these pointers to keep the registry lock off their hot path.
// Each namespace has a small index (0..max_namespaces-1, in creation order): the hold group of its timers in
// the shards' engines (core::Shard::ReleaseHeld).
//
// Thread-safety: thread-safe. Get takes a reader lock; creation a writer lock.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "server/outbox.h"

namespace lawn {

struct NamespaceLimits {
  uint64_t ack_timeout_ns = 30'000'000'000;
  OutboxLimits outbox;
  uint64_t max_outbox_bytes = UINT64_MAX;  // All outboxes together.
  uint32_t max_namespaces = 65536;         // At most 65536: indexes are 16-bit hold groups.
};

struct NamespaceState {
  NamespaceState(std::string name, uint16_t index, uint64_t ack_timeout_ns, OutboxLimits limits,
                 OutboxBudget& budget)
      : index(index), outbox(std::move(name), ack_timeout_ns, limits, budget) {}
  const std::string& name() const { return outbox.name(); }

  const uint16_t index;
  std::atomic<uint64_t> pending{0};        // Pending timers (reserved at start, released at delete / expiry).
  std::atomic<uint64_t> pending_bytes{0};  // Their id + payload bytes.
  // Some shard holds due timers of this namespace because its outbox was full: release them when it has room.
  std::atomic<bool> holding{false};
  Outbox outbox;
};

class Namespaces {
 public:
  static constexpr size_t kMaxNamespaces = 65536;

  explicit Namespaces(const NamespaceLimits& limits);
  Namespaces(const Namespaces&) = delete;
  Namespaces& operator=(const Namespaces&) = delete;

  // Returns the namespace, creating it if needed. RESOURCE_EXHAUSTED beyond max_namespaces.
  absl::StatusOr<NamespaceState*> GetOrCreate(std::string_view name);
  // nullptr if the namespace was never used.
  NamespaceState* Find(std::string_view name) const;
  std::vector<NamespaceState*> All() const;
  size_t size() const;
  // Bytes held by all outboxes together.
  uint64_t outbox_bytes() const { return budget_.bytes.load(std::memory_order_relaxed); }

 private:
  const NamespaceLimits limits_;
  OutboxBudget budget_;
  mutable absl::Mutex mu_;
  absl::flat_hash_map<std::string, std::unique_ptr<NamespaceState>> by_name_ ABSL_GUARDED_BY(mu_);
};

}  // namespace lawn
