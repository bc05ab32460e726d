// EngineTimers: lawn::Shard behind the small interface lawn_bench drives all three structures through
// (Start by TTL, Delete, Advance, Compact), so one benchmark template serves the engine and the baselines.
//
// Thread-safety: none, like the Shard.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "core/prefetch_run.h"
#include "core/shard.h"

namespace lawn {

class EngineTimers {
 public:
  EngineTimers() = default;
  EngineTimers(const EngineTimers&) = delete;
  EngineTimers& operator=(const EngineTimers&) = delete;

  // Starts a one-shot timer due at now_ns + ttl_ns (When::After: the TTL path, eligible for a Lawn bucket).
  bool Start(std::string_view id, std::string_view payload, uint64_t ttl_ns, uint64_t now_ns) {
    StartSpec spec;
    spec.id = id;
    spec.payload = payload;
    spec.when = When::After(ttl_ns);
    return shard_.Start(spec, now_ns).ok();
  }
  bool Delete(std::string_view id) { return shard_.Delete(id).ok(); }

  // Runs of starts and deletes with their cache misses overlapped (core/prefetch_run.h), as lawnd's shard
  // worker applies a batch: ids[i] for i < n. True if every one succeeded.
  template <typename Ids>
  bool StartRun(const Ids& ids, const uint64_t* ttl_ns, size_t n, uint64_t now_ns) {
    bool ok = true;
    RunPrefetched(
        shard_, n, [&](size_t i) { return TimerIdHash(ids[i]); },
        [&](size_t i) { ok &= Start(ids[i], {}, ttl_ns[i], now_ns); });
    return ok;
  }
  template <typename Ids>
  bool DeleteRun(const Ids& ids, size_t n) {
    bool ok = true;
    RunPrefetched(
        shard_, n, [&](size_t i) { return TimerIdHash(ids[i]); }, [&](size_t i) { ok &= Delete(ids[i]); });
    return ok;
  }
  size_t Advance(uint64_t now_ns, FiredSink sink) { return shard_.Advance(now_ns, sink); }
  void Compact() {}

  size_t pending() const { return shard_.pending(); }
  const Shard& shard() const { return shard_; }

 private:
  Shard shard_;  // Default options: 1 ms tick, as the workloads assume.
};

}  // namespace lawn
