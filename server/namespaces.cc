#include "server/namespaces.h"

#include <algorithm>

namespace lawn {

Namespaces::Namespaces(const NamespaceLimits& limits) : limits_(limits), budget_(limits.max_outbox_bytes) {}

NamespaceState* Namespaces::Find(std::string_view name) const {
  absl::ReaderMutexLock lock(&mu_);
  auto it = by_name_.find(absl::string_view(name.data(), name.size()));
  return it == by_name_.end() ? nullptr : it->second.get();
}

absl::StatusOr<NamespaceState*> Namespaces::GetOrCreate(std::string_view name) {
  if (NamespaceState* ns = Find(name)) return ns;
  absl::MutexLock lock(&mu_);
  auto it = by_name_.find(absl::string_view(name.data(), name.size()));
  if (it != by_name_.end()) return it->second.get();
  const size_t limit = std::min<size_t>(limits_.max_namespaces, kMaxNamespaces);
  if (by_name_.size() >= limit) {
    return absl::ResourceExhaustedError("lawnd holds max_namespaces (" + std::to_string(limit) +
                                        ") namespaces; namespace '" + std::string(name) +
                                        "' cannot be created (use fewer namespaces or raise the limit)");
  }
  auto state = std::make_unique<NamespaceState>(std::string(name), static_cast<uint16_t>(by_name_.size()),
                                                limits_.ack_timeout_ns, limits_.outbox, budget_);
  NamespaceState* raw = state.get();
  by_name_.emplace(std::string(name), std::move(state));
  return raw;
}

std::vector<NamespaceState*> Namespaces::All() const {
  absl::ReaderMutexLock lock(&mu_);
  std::vector<NamespaceState*> out;
  for (const auto& [name, state] : by_name_) out.push_back(state.get());
  std::sort(out.begin(), out.end(), [](auto* a, auto* b) { return a->name() < b->name(); });
  return out;
}

size_t Namespaces::size() const {
  absl::ReaderMutexLock lock(&mu_);
  return by_name_.size();
}

}  // namespace lawn
