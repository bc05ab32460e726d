// Formation: what the members of a lawn cluster agree on in etcd before any partition is served: the
// partition count, which member leads (computes the assignment and drives moves), and the ownership table
// with each partition's epoch. ClaimUnowned gives partitions that have no owner to their target, the step
// that forms a new cluster; owned partitions move only by a hand-over (docs/cluster.md, "Moves";
// server/partition_mover.h, which flips them with ClusterNode::Transfer).
//
// Keys (cluster/partition.h): /<cluster>/config/partitions, /<cluster>/leader, /<cluster>/owners/<p>,
// /<cluster>/draining/<member>.
// Every write is an etcd transaction on the key's mod revision, so concurrent members cannot both win.
//
// Thread-safety: free functions over a thread-safe EtcdClient.
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "cluster/assignment.h"
#include "cluster/etcd_client.h"

namespace lawn {

// Stores `partitions` as the cluster's partition count if none is stored yet; otherwise checks it.
// FAILED_PRECONDITION naming both counts if they differ (a member configured for another cluster shape);
// INVALID_ARGUMENT outside 1..65536.
absl::Status AgreePartitions(EtcdClient& etcd, const std::string& cluster, uint32_t partitions);

// Makes `member` the leader if no member leads: /<cluster>/leader = member, attached to `lease` (the
// member's LeaseKeeper lease), so leadership ends with the member's lease. Returns whether `member` leads
// now (also when it already did under this lease).
absl::StatusOr<bool> TryLead(EtcdClient& etcd, const std::string& cluster, const std::string& member,
                             int64_t lease);

// The ownership table: owners[p] ("" for none) and epochs[p] (the owner key's mod revision, 0 for none).
struct OwnerTable {
  std::vector<std::string> owners;
  std::vector<int64_t> epochs;
};
absl::StatusOr<OwnerTable> ReadOwners(EtcdClient& etcd, const std::string& cluster, uint32_t partitions);
// The table from a range already read over OwnersPrefix(cluster). DATA_LOSS for a key that names no partition.
absl::StatusOr<OwnerTable> ParseOwners(const EtcdClient::Range& range, const std::string& cluster,
                                       uint32_t partitions);

// Live members: the names under /<cluster>/members/ (each kept there by its member's lease).
absl::StatusOr<std::set<std::string>> ReadLiveMembers(EtcdClient& etcd, const std::string& cluster);

// Writes the target owner of every partition that has no owner in `table` (moves with from == ""), each
// by a transaction on epoch 0, and returns how many it claimed. A partition someone else claimed meanwhile
// is skipped (its transaction fails); moves of owned partitions are left for the hand-over protocol.
absl::StatusOr<int> ClaimUnowned(EtcdClient& etcd, const std::string& cluster, const Assignment& target);

}  // namespace lawn
