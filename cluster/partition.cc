// etcd key layout (cluster/partition.h).
#include "cluster/partition.h"

namespace lawn {

// (Plain concatenation: Debian's Abseil takes no std::string_view in StrCat.)
std::string MembersPrefix(std::string_view cluster) { return "/" + std::string(cluster) + "/members/"; }
std::string MemberKey(std::string_view cluster, std::string_view member) {
  return MembersPrefix(cluster) + std::string(member);
}
std::string OwnersPrefix(std::string_view cluster) { return "/" + std::string(cluster) + "/owners/"; }
std::string OwnerKey(std::string_view cluster, uint32_t partition) {
  return OwnersPrefix(cluster) + std::to_string(partition);
}

std::string DrainingPrefix(std::string_view cluster) { return "/" + std::string(cluster) + "/draining/"; }
std::string DrainingKey(std::string_view cluster, std::string_view member) {
  return DrainingPrefix(cluster) + std::string(member);
}

std::string LeaderKey(std::string_view cluster) { return "/" + std::string(cluster) + "/leader"; }

}  // namespace lawn
