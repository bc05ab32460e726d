// Assign (cluster/assignment.h): balanced, minimal-movement partition assignment.
#include "cluster/assignment.h"

#include <algorithm>
#include <map>

namespace lawn {

Assignment Assign(const AssignmentInput& input) {
  Assignment out{input.owners, {}};
  std::vector<std::string> eligible;
  for (const std::string& m : input.live) {
    if (!input.draining.contains(m)) eligible.push_back(m);  // std::set: sorted by name.
  }
  if (eligible.empty()) return out;

  // Partitions per eligible member now, and the pool of those that must find a member.
  std::map<std::string, std::vector<uint32_t>> held;
  for (const std::string& m : eligible) held[m];
  std::vector<uint32_t> pool;
  uint32_t absent_held = 0;  // Held by members that are gone: they stay put (rule 1).
  for (uint32_t p = 0; p < input.owners.size(); ++p) {
    const std::string& owner = input.owners[p];
    if (owner.empty() || input.draining.contains(owner)) {
      pool.push_back(p);
    } else if (auto it = held.find(owner); it != held.end()) {
      it->second.push_back(p);
    } else {
      ++absent_held;
    }
  }

  // Quotas: floor for everyone, +1 for the `extra` members holding the most (ties by name).
  const uint32_t total = static_cast<uint32_t>(input.owners.size()) - absent_held;
  const uint32_t base = total / eligible.size();
  uint32_t extra = total % eligible.size();
  std::vector<std::string> by_load = eligible;
  std::stable_sort(by_load.begin(), by_load.end(),
                   [&](const std::string& a, const std::string& b) { return held[a].size() > held[b].size(); });
  std::map<std::string, uint32_t> quota;
  for (const std::string& m : by_load) quota[m] = base + (extra > 0 ? (--extra, 1u) : 0u);

  // Members above quota give up their highest-numbered partitions.
  for (const std::string& m : eligible) {
    std::vector<uint32_t>& mine = held[m];
    while (mine.size() > quota[m]) {
      pool.push_back(mine.back());
      mine.pop_back();
    }
  }
  // The pool goes, lowest partition first, to members below quota, in name order.
  std::sort(pool.begin(), pool.end());
  size_t next = 0;
  for (const std::string& m : eligible) {
    while (held[m].size() < quota[m] && next < pool.size()) {
      const uint32_t p = pool[next++];
      held[m].push_back(p);
      out.owners[p] = m;
    }
  }
  for (uint32_t p = 0; p < out.owners.size(); ++p) {
    if (out.owners[p] != input.owners[p]) out.moves.push_back({p, input.owners[p], out.owners[p]});
  }
  return out;
}

}  // namespace lawn
