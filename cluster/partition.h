// The partition of a timer in a lawn cluster: a stable function of (namespace, id) and the cluster's fixed
// partition count, the same on every member, in every version and in every client that routes directly.
//
//   partition = FNV-1a-64(namespace || 0x00 || id) mod partitions
//
// FNV-1a 64 (offset basis 0xcbf29ce484222325, prime 0x100000001b3) over the namespace's bytes, one zero
// byte, and the id's bytes; an empty namespace is "default", as in the API. The zero byte keeps ("ab", "c")
// and ("a", "bc") apart (a namespace never holds a zero byte). Written down here and in docs/cluster.md so
// that other clients can compute it; tests/cluster/partition_test.cc pins test vectors.
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace lawn {

uint64_t PartitionHash(std::string_view ns, std::string_view id);

// REQUIRES: partitions >= 1.
uint32_t PartitionOf(std::string_view ns, std::string_view id, uint32_t partitions);

// etcd keys of a cluster named `cluster`: /<cluster>/members/<member> and /<cluster>/owners/<partition>.
std::string MemberKey(std::string_view cluster, std::string_view member);
std::string MembersPrefix(std::string_view cluster);
std::string OwnerKey(std::string_view cluster, uint32_t partition);
std::string OwnersPrefix(std::string_view cluster);

}  // namespace lawn
