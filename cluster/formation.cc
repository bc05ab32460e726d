// Formation (cluster/formation.h): partition count, leadership, the ownership table in etcd.
#include "cluster/formation.h"

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "cluster/partition.h"

namespace lawn {
namespace {

std::string PartitionsKey(const std::string& cluster) { return "/" + cluster + "/config/partitions"; }

}  // namespace

absl::Status AgreePartitions(EtcdClient& etcd, const std::string& cluster, uint32_t partitions) {
  if (partitions < 1 || partitions > 65536) {
    return absl::InvalidArgumentError(absl::StrCat("cluster.partitions ", partitions, " is outside 1..65536"));
  }
  const std::string wanted = std::to_string(partitions);
  for (int attempt = 0; attempt < 3; ++attempt) {
    absl::StatusOr<std::optional<EtcdKeyValue>> stored = etcd.Get(PartitionsKey(cluster));
    if (!stored.ok()) return stored.status();
    if (stored->has_value()) {
      if ((*stored)->value == wanted) return absl::OkStatus();
      return absl::FailedPreconditionError(
          absl::StrCat("cluster '", cluster, "' was formed with ", (*stored)->value, " partitions; this member is configured for ",
                       partitions, " (cluster.partitions cannot change once the cluster exists)"));
    }
    absl::StatusOr<std::optional<int64_t>> created = etcd.PutIfModRevision(PartitionsKey(cluster), wanted, 0);
    if (!created.ok()) return created.status();
    if (created->has_value()) return absl::OkStatus();
    // Another member stored it between the read and the write: read again.
  }
  return absl::AbortedError("cluster.partitions: etcd kept changing under this member; try again");
}

absl::StatusOr<bool> TryLead(EtcdClient& etcd, const std::string& cluster, const std::string& member, int64_t lease) {
  absl::StatusOr<std::optional<int64_t>> won = etcd.PutIfModRevision(LeaderKey(cluster), member, 0, lease);
  if (!won.ok()) return won.status();
  if (won->has_value()) return true;
  absl::StatusOr<std::optional<EtcdKeyValue>> leader = etcd.Get(LeaderKey(cluster));
  if (!leader.ok()) return leader.status();
  // The key may have expired between the two calls: then nobody leads until the next try.
  return leader->has_value() && (*leader)->value == member && (*leader)->lease == lease;
}

absl::StatusOr<OwnerTable> ReadOwners(EtcdClient& etcd, const std::string& cluster, uint32_t partitions) {
  absl::StatusOr<EtcdClient::Range> range = etcd.GetPrefix(OwnersPrefix(cluster));
  if (!range.ok()) return range.status();
  return ParseOwners(*range, cluster, partitions);
}

absl::StatusOr<OwnerTable> ParseOwners(const EtcdClient::Range& range, const std::string& cluster,
                                       uint32_t partitions) {
  OwnerTable table{std::vector<std::string>(partitions), std::vector<int64_t>(partitions, 0)};
  const size_t prefix = OwnersPrefix(cluster).size();
  for (const EtcdKeyValue& kv : range.kvs) {
    uint32_t p = 0;
    if (!absl::SimpleAtoi(kv.key.substr(prefix), &p) || p >= partitions) {
      return absl::DataLossError(absl::StrCat("etcd key ", kv.key, " names no partition of 0..", partitions - 1));
    }
    table.owners[p] = kv.value;
    table.epochs[p] = kv.mod_revision;
  }
  return table;
}

absl::StatusOr<std::set<std::string>> ReadLiveMembers(EtcdClient& etcd, const std::string& cluster) {
  absl::StatusOr<EtcdClient::Range> range = etcd.GetPrefix(MembersPrefix(cluster));
  if (!range.ok()) return range.status();
  std::set<std::string> live;
  const size_t prefix = MembersPrefix(cluster).size();
  for (const EtcdKeyValue& kv : range->kvs) live.insert(kv.key.substr(prefix));
  return live;
}

absl::StatusOr<int> ClaimUnowned(EtcdClient& etcd, const std::string& cluster, const Assignment& target) {
  int claimed = 0;
  for (const Move& move : target.moves) {
    if (!move.from.empty()) continue;  // An owned partition moves only by hand-over.
    absl::StatusOr<std::optional<int64_t>> won = etcd.PutIfModRevision(OwnerKey(cluster, move.partition), move.to, 0);
    if (!won.ok()) return won.status();
    if (won->has_value()) ++claimed;
  }
  return claimed;
}

}  // namespace lawn
