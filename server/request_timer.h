// RequestTimer: measures one RPC from its arrival to its answer for lawn_request_duration_seconds, and
// counts it as in flight meanwhile (the drain waits for that count to reach zero).
//
// Thread-safety: a value; Observe may run on any thread (prometheus-cpp histograms are thread-safe).
#pragma once

#include <atomic>

#include "server/metrics.h"
#include "server/time_base.h"

namespace lawn {

struct RequestTimer {
  Metrics* metrics = nullptr;
  Rpc rpc = Rpc::kGetTimer;
  uint64_t start_mono_ns = 0;
  std::atomic<int64_t>* in_flight = nullptr;

  static RequestTimer Start(Metrics* metrics, Rpc rpc, std::atomic<int64_t>* in_flight) {
    if (in_flight != nullptr) in_flight->fetch_add(1, std::memory_order_relaxed);
    return {metrics, rpc, TimeBase::MonoNowNs(), in_flight};
  }
  // Called exactly once, when the RPC is answered.
  void Observe() const {
    if (in_flight != nullptr) in_flight->fetch_sub(1, std::memory_order_release);
    if (metrics == nullptr) return;
    metrics->request_duration(rpc).Observe(static_cast<double>(TimeBase::MonoNowNs() - start_mono_ns) * 1e-9);
  }
};

}  // namespace lawn
