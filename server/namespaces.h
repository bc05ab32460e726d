// Namespaces: the registry of live namespaces, each with its pending-timer counters and its Outbox.
//
// Lifetime. A namespace is created by its first start (or recovered timer) and retired when it holds nothing:
// no pending timer, no outbox entry, no subscriber, no operation in progress. Everything that may add state to
// a namespace (a start, a subscription) first acquires it (TryAcquire) and releases it when done; a retired
// namespace cannot be acquired, so the caller looks it up again and gets a fresh one. Retirement (TryRetire,
// from the runtime's background thread) succeeds only if no acquisition or release happened while it checked
// the counters (a generation in the same atomic word as the user count), so a start or subscription can
// never slip into a namespace as it is retired. The registry owns states through shared_ptr: shard workers
// cache raw pointers (keeping the registry lock off their hot path) and the runtime keeps a retired state
// alive until every worker has dropped it from its cache.
//
// A subscription does not create a namespace: it waits in a watch-only state (its outbox carries the
// subscriber list, nothing else) that takes no namespace slot and no index, and becomes a namespace in place
// when the first timer is started into it, so the subscriber stays attached. GetStats and the metrics still
// show its subscribers (an operator needs to see who is connected); it goes, with them, when they leave.
// Watch-only states have their own bound (max_namespaces of them), so subscriptions to made-up names cannot
// exhaust the namespaces that timers need, nor grow without bound.
//
// Each namespace has a small index (0..max_namespaces-1, reused after retirement): the hold group of its
// timers in the shards' engines (core::Shard::ReleaseHeld). A watch-only state has none until it becomes a
// namespace. A retired namespace holds no timers.
//
// Thread-safety: thread-safe. Lookups take a reader lock; creation and retirement a writer lock.
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
  uint32_t max_namespaces = 65534;         // At most 65534: indexes are 16-bit hold groups below 2 reserved.
};

class NamespaceState {
 public:
  NamespaceState(std::string name, uint64_t ack_timeout_ns, OutboxLimits limits, OutboxBudget& budget)
      : outbox(std::move(name), ack_timeout_ns, limits, budget) {}
  const std::string& name() const { return outbox.name(); }

  // False while the state only carries subscribers (see the file comment).
  bool exists() const { return index_.load(std::memory_order_acquire) != kNoIndex; }
  // The hold group of its timers. Only for a namespace that exists (it has, or had, a timer).
  uint16_t index() const { return static_cast<uint16_t>(index_.load(std::memory_order_acquire)); }

  // Marks one more operation in progress. False once the namespace is retired: look it up again.
  bool TryAcquire();
  void Release();
  bool retired() const { return (life_.load(std::memory_order_acquire) & kRetired) != 0; }

  std::atomic<uint64_t> pending{0};        // Pending timers (reserved at start, released at delete / expiry).
  std::atomic<uint64_t> pending_bytes{0};  // Their id + payload bytes.
  // Some shard holds due timers of this namespace because its outbox was full: release them when it has room.
  std::atomic<bool> holding{false};
  Outbox outbox;

 private:
  friend class Namespaces;
  static constexpr uint32_t kNoIndex = UINT32_MAX;
  static constexpr uint64_t kRetired = uint64_t{1} << 63;
  static constexpr uint64_t kUsersMask = 0xFFFF'FFFF;       // Bits 0..31: operations in progress.
  static constexpr uint64_t kGenerationMask = 0x7FFF'FFFF;  // Bits 32..62: bumped by every acquire/release.
  // (retired, generation, users), changed by compare-and-swap only.
  std::atomic<uint64_t> life_{0};
  std::atomic<uint32_t> index_{kNoIndex};  // Set once, under Namespaces::mu_, when the namespace comes to exist.
};

class Namespaces {
 public:
  static constexpr size_t kMaxNamespaces = 65534;

  explicit Namespaces(const NamespaceLimits& limits);
  Namespaces(const Namespaces&) = delete;
  Namespaces& operator=(const Namespaces&) = delete;

  // Returns the live namespace, creating it if needed, acquired (TryAcquire): the caller must Release it.
  // RESOURCE_EXHAUSTED beyond max_namespaces.
  absl::StatusOr<NamespaceState*> Acquire(std::string_view name);
  // As Acquire, for a subscription: a name that is not a namespace gets a watch-only state (see above).
  // RESOURCE_EXHAUSTED beyond max_namespaces watch-only states.
  absl::StatusOr<NamespaceState*> AcquireToWatch(std::string_view name);
  // Returns the live namespace, creating it if needed, not acquired. For callers whose namespace cannot be
  // retired meanwhile (it holds the timer they act on) and for recovery (nothing is retired before it ends).
  absl::StatusOr<NamespaceState*> GetOrCreate(std::string_view name);
  // nullptr if there is no live state of that name (namespace or watch-only).
  NamespaceState* Find(std::string_view name) const;
  // Every live state, namespaces and watch-only, by name; the pointers keep them alive.
  std::vector<std::shared_ptr<NamespaceState>> All() const;
  // Namespaces (not watch-only states).
  size_t size() const;
  // Bytes held by all outboxes together.
  uint64_t outbox_bytes() const { return budget_.bytes.load(std::memory_order_relaxed); }
  // Redeliveries of every outbox since start, those of forgotten namespaces included.
  uint64_t redeliveries() const { return budget_.redeliveries.load(std::memory_order_relaxed); }

  // Retires `ns` if it holds nothing and nobody uses it; returns it (to keep alive until every cache dropped
  // it), or nullptr if it is in use.
  std::shared_ptr<NamespaceState> TryRetire(NamespaceState* ns);

 private:
  const NamespaceLimits limits_;
  OutboxBudget budget_;
  mutable absl::Mutex mu_;
  absl::flat_hash_map<std::string, std::shared_ptr<NamespaceState>> by_name_ ABSL_GUARDED_BY(mu_);
  std::vector<uint16_t> free_indexes_ ABSL_GUARDED_BY(mu_);
  uint32_t next_index_ ABSL_GUARDED_BY(mu_) = 0;
  size_t existing_ ABSL_GUARDED_BY(mu_) = 0;  // States that are namespaces; the rest are watch-only.

  size_t Limit() const;
  // Makes `ns` a namespace (gives it an index). RESOURCE_EXHAUSTED beyond max_namespaces.
  absl::Status MakeExistLocked(NamespaceState& ns) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Finds or creates the state of `name` (a namespace if `exist`, else watch-only if new).
  absl::StatusOr<NamespaceState*> FindOrAddLocked(std::string_view name, bool exist)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
};

}  // namespace lawn
