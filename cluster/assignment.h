// Assign: which member should own each partition, from who owns it now and which members are live. A pure
// function: the one member that drives moves (the leader) calls it whenever membership changes, and moves
// the partitions whose target differs from their owner, one hand-over each.
//
// The rules, in order (docs/cluster.md says why):
//   1. A partition whose owner is not live and not draining stays with it: replication factor 1 means its
//      timers are on that member's volume, so they wait for it to come back (calls get UNAVAILABLE).
//   2. Partitions of draining members, and partitions with no owner, go to eligible members (live, not
//      draining).
//   3. Balanced: eligible members end with floor or ceil of (partitions not held by absent members) /
//      (eligible members); the ceil goes to those holding the most now, so fewer partitions move.
//   4. Minimal movement: a partition moves only off a member above its quota or off a draining member, and
//      only onto a member below its quota. Deterministic: the same input gives the same output everywhere.
//
// Thread-safety: a pure function.
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <vector>

namespace lawn {

struct AssignmentInput {
  // owners[p]: the member that owns partition p now ("" for none). Its size is the partition count.
  std::vector<std::string> owners;
  // Members whose lease is alive (their /members/ key exists).
  std::set<std::string> live;
  // Live members being drained (lawnctl cluster drain): they must end with no partition.
  std::set<std::string> draining;
};

struct Move {
  uint32_t partition;
  std::string from;  // "" for a partition that had no owner
  std::string to;
};

struct Assignment {
  std::vector<std::string> owners;  // The target owner of every partition.
  std::vector<Move> moves;          // The partitions whose target differs from their owner, by partition.
};

// With no eligible member (none live, or all draining) the owners stay as they are.
Assignment Assign(const AssignmentInput& input);

}  // namespace lawn
