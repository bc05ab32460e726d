// Partition function and etcd key layout (cluster/partition.h).
#include "cluster/partition.h"


namespace lawn {
namespace {

constexpr uint64_t kFnvOffset = 0xcbf29ce484222325ULL;
constexpr uint64_t kFnvPrime = 0x100000001b3ULL;

uint64_t Mix(uint64_t hash, std::string_view bytes) {
  for (unsigned char c : bytes) {
    hash ^= c;
    hash *= kFnvPrime;
  }
  return hash;
}

}  // namespace

uint64_t PartitionHash(std::string_view ns, std::string_view id) {
  uint64_t hash = Mix(kFnvOffset, ns.empty() ? std::string_view("default") : ns);
  hash = Mix(hash, std::string_view("\0", 1));
  return Mix(hash, id);
}

uint32_t PartitionOf(std::string_view ns, std::string_view id, uint32_t partitions) {
  return static_cast<uint32_t>(PartitionHash(ns, id) % partitions);
}

// (Plain concatenation: Debian's Abseil takes no std::string_view in StrCat.)
std::string MembersPrefix(std::string_view cluster) { return "/" + std::string(cluster) + "/members/"; }
std::string MemberKey(std::string_view cluster, std::string_view member) {
  return MembersPrefix(cluster) + std::string(member);
}
std::string OwnersPrefix(std::string_view cluster) { return "/" + std::string(cluster) + "/owners/"; }
std::string OwnerKey(std::string_view cluster, uint32_t partition) {
  return OwnersPrefix(cluster) + std::to_string(partition);
}

}  // namespace lawn
