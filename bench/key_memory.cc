// lawn_key_memory: bytes per pending timer of one lawn::Shard configured as lawnd configures it, to account
// for lawnd's RSS per timer (BENCHMARKS.md section 5, issue 11). Starts --pending timers of a 1 h TTL whose
// ids are `--prefix-bytes` bytes of a namespace-like prefix ending in '\0' followed by 16 random bytes (lawnd
// keys are namespace \0 id; 0 gives lawn_bench's bare 16-byte ids), with or without the ordered id index
// (lawnd keeps it for ListTimers), and prints malloc bytes in use per timer (bench/memory_probe.h) next to
// Shard::MemoryBytes() per timer. Single-threaded; deterministic (fixed seed).
//
//   build-bench/bench/lawn_key_memory PENDING ORDERED(0|1) PREFIX_BYTES
//   e.g. 5000000 1 23: one shard of a 2-shard lawnd at 1e7 timers, namespace "load-<pid>-<unix seconds>".
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>

#include "bench/memory_probe.h"
#include "core/shard.h"

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: %s PENDING ORDERED(0|1) PREFIX_BYTES\n", argv[0]);
    return 2;
  }
  const size_t pending = std::strtoull(argv[1], nullptr, 10);
  const bool ordered = std::atoi(argv[2]) != 0;
  const size_t prefix = std::strtoull(argv[3], nullptr, 10);
  lawn::ShardOptions options;
  options.ordered_index = ordered;
  options.id_groups = prefix > 0;  // As lawnd, whose keys all have a namespace.
  std::mt19937_64 rng(1);
  lawn::TrimHeap();
  const size_t before = lawn::HeapBytesInUse();
  lawn::Shard shard(options);
  std::string key(prefix + 16, 'n');
  if (prefix > 0) key[prefix - 1] = '\0';
  for (size_t i = 0; i < pending; ++i) {
    for (size_t half = 0; half < 2; ++half) {
      const uint64_t r = rng();
      std::memcpy(&key[prefix + 8 * half], &r, sizeof(r));
    }
    lawn::StartSpec spec;
    spec.id = key;
    spec.when = lawn::When::After(uint64_t{3600} * 1'000'000'000);
    if (!shard.Start(spec, 0).ok()) std::abort();
  }
  // lawnd builds a namespace's ordered index when it is first listed: ORDERED=1 measures it built.
  size_t budget = SIZE_MAX;
  if (ordered && !shard.RequestOrder(key.substr(0, prefix), 0, &budget)) std::abort();
  const size_t after = lawn::HeapBytesInUse();
  std::printf("pending=%zu ordered_index=%d key_bytes=%zu heap_bytes_per_timer=%.1f memory_bytes_per_timer=%.1f\n",
              pending, ordered ? 1 : 0, key.size(), static_cast<double>(after - before) / pending,
              static_cast<double>(shard.MemoryBytes()) / pending);
  return 0;
}
