// Namespaces: the registry of namespaces lawnd has seen, each with its pending-timer count and its Outbox.
//
// Entries are created on first use and never removed while lawnd runs, so a NamespaceState* stays valid for
// the life of the registry; shard workers cache these pointers to keep the registry lock off their hot path.
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

struct NamespaceState {
  NamespaceState(std::string name, uint64_t ack_timeout_ns) : outbox(std::move(name), ack_timeout_ns) {}
  const std::string& name() const { return outbox.name(); }

  std::atomic<uint64_t> pending{0};  // Pending timers (reserved at start, released at delete / final expiry).
  Outbox outbox;
};

class Namespaces {
 public:
  // At most this many namespaces: each costs an Outbox, and a client must not grow that without bound.
  static constexpr size_t kMaxNamespaces = 65536;

  explicit Namespaces(uint64_t ack_timeout_ns) : ack_timeout_ns_(ack_timeout_ns) {}
  Namespaces(const Namespaces&) = delete;
  Namespaces& operator=(const Namespaces&) = delete;

  // Returns the namespace, creating it if needed. RESOURCE_EXHAUSTED beyond kMaxNamespaces.
  absl::StatusOr<NamespaceState*> GetOrCreate(std::string_view name);
  // nullptr if the namespace was never used.
  NamespaceState* Find(std::string_view name) const;
  std::vector<NamespaceState*> All() const;

 private:
  const uint64_t ack_timeout_ns_;
  mutable absl::Mutex mu_;
  absl::flat_hash_map<std::string, std::unique_ptr<NamespaceState>> by_name_ ABSL_GUARDED_BY(mu_);
};

}  // namespace lawn
