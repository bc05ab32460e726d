// TtlRouter: decides whether a TTL is regular enough for a Lawn bucket.
//
// Lawn pays off when few distinct TTLs carry many timers ("unique TTL count << timer count"). The router
// keeps a small direct-mapped table of recent TTL sightings; a TTL becomes regular once it has been seen
// `promote_after` times while it held its table entry. A collision evicts the older TTL, so a stream of
// one-off TTLs never looks regular, and the table costs a fixed 64 KiB whatever the workload. The bound on
// the number of buckets is enforced by Lawn itself (a regular TTL without room goes to the wheel).
//
// Thread-safety: none; owned by one Shard.
#pragma once

#include <cstdint>
#include <vector>

namespace lawn {

class TtlRouter {
 public:
  explicit TtlRouter(uint32_t promote_after);

  // Records one sighting of `ttl_ns`; returns true if the TTL is now regular.
  bool Observe(uint64_t ttl_ns);

 private:
  struct Entry {
    uint64_t ttl_ns = 0;
    uint64_t sightings = 0;
  };
  static constexpr uint32_t kTableBits = 12;

  uint32_t promote_after_;
  std::vector<Entry> table_;
};

}  // namespace lawn
