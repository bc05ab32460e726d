// EngineTimers: lawn::Shard behind the small interface lawn_bench drives all three structures through
// (Start by TTL, Delete, Advance, Compact), so one benchmark template serves the engine and the baselines.
//
// Thread-safety: none, like the Shard.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

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
  size_t Advance(uint64_t now_ns, FiredSink sink) { return shard_.Advance(now_ns, sink); }
  void Compact() {}

  size_t pending() const { return shard_.pending(); }
  const Shard& shard() const { return shard_; }

 private:
  Shard shard_;  // Default options: 1 ms tick, as the workloads assume.
};

}  // namespace lawn
