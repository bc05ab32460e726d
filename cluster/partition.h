// A timer's partition (the function lives in base/partition.h, so that clients share it without etcd) and
// the etcd key layout of a cluster.
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "base/partition.h"

namespace lawn {

// etcd keys of a cluster named `cluster`: /<cluster>/members/<member>, /<cluster>/owners/<partition> and
// /<cluster>/leader.
std::string MemberKey(std::string_view cluster, std::string_view member);
std::string MembersPrefix(std::string_view cluster);
std::string OwnerKey(std::string_view cluster, uint32_t partition);
std::string OwnersPrefix(std::string_view cluster);
// /<cluster>/draining/<member>: the member is being drained (lawnctl cluster drain); no lease.
std::string DrainingKey(std::string_view cluster, std::string_view member);
std::string DrainingPrefix(std::string_view cluster);
// /<cluster>/leader: the member that hands out partitions, under its lease.
std::string LeaderKey(std::string_view cluster);

}  // namespace lawn
