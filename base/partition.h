// The partition of a timer in a lawn cluster: a stable function of (namespace, id) and the cluster's fixed
// partition count, the same on every member, in every version and in every client that routes directly
// (lawnd's cluster/, the C++ client's direct routing; docs/cluster.md and proto/lawn/v1/cluster.proto give
// it to other clients).
//
//   partition = FNV-1a-64(namespace || 0x00 || id) mod partitions
//
// FNV-1a 64 (offset basis 0xcbf29ce484222325, prime 0x100000001b3) over the namespace's bytes, one zero
// byte, and the id's bytes; an empty namespace is "default", as in the API. The zero byte keeps ("ab", "c")
// and ("a", "bc") apart (a namespace never holds a zero byte). tests/cluster/partition_test.cc pins vectors.
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <string_view>

namespace lawn {

namespace partition_internal {

inline uint64_t Fnv1a(uint64_t hash, std::string_view bytes) {
  for (unsigned char c : bytes) {
    hash ^= c;
    hash *= 0x100000001b3ULL;
  }
  return hash;
}

}  // namespace partition_internal

inline uint64_t PartitionHash(std::string_view ns, std::string_view id) {
  uint64_t hash = partition_internal::Fnv1a(0xcbf29ce484222325ULL, ns.empty() ? std::string_view("default") : ns);
  hash = partition_internal::Fnv1a(hash, std::string_view("\0", 1));
  return partition_internal::Fnv1a(hash, id);
}

// REQUIRES: partitions >= 1.
inline uint32_t PartitionOf(std::string_view ns, std::string_view id, uint32_t partitions) {
  return static_cast<uint32_t>(PartitionHash(ns, id) % partitions);
}

}  // namespace lawn
