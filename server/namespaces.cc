#include "server/namespaces.h"

#include <algorithm>

namespace lawn {

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
  if (by_name_.size() >= kMaxNamespaces) {
    return absl::ResourceExhaustedError("too many namespaces: at most " + std::to_string(kMaxNamespaces));
  }
  auto state = std::make_unique<NamespaceState>(std::string(name), ack_timeout_ns_);
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

}  // namespace lawn
