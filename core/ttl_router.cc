#include "core/ttl_router.h"

#include <cstddef>

namespace lawn {

TtlRouter::TtlRouter(uint32_t promote_after)
    : promote_after_(promote_after == 0 ? 1 : promote_after), table_(size_t{1} << kTableBits) {}

bool TtlRouter::Observe(uint64_t ttl_ns) {
  // Fibonacci hashing: TTLs are often round numbers (multiples of 1 ms), whose low bits carry little.
  const uint64_t slot = (ttl_ns * 0x9E3779B97F4A7C15ull) >> (64 - kTableBits);
  Entry& e = table_[slot];
  if (e.ttl_ns != ttl_ns || e.sightings == 0) {
    e.ttl_ns = ttl_ns;
    e.sightings = 0;
  }
  if (e.sightings < promote_after_) ++e.sightings;
  return e.sightings >= promote_after_;
}

}  // namespace lawn
