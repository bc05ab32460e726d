// StartLoad: drives StartTimer / StartTimers calls against lawnd with a fixed number of calls in flight,
// until a timer budget or a time cap is used up (closed loop: each slot issues its next call from the
// completion of the previous one; see ClientApi for the threads that do it).
//
// Thread-safety: RunStartLoad blocks the calling thread until every call has completed; the slots it runs
// are touched only by the completion of their own call, the shared budget is atomic.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "bench/load_options.h"
#include "lawn/v1/timer.grpc.pb.h"

namespace lawn {

struct StartLoadConfig {
  // Stubs to spread the slots over (slot i uses stubs[i % size]); not owned, must outlive the run.
  std::vector<v1::TimerService::Stub*> stubs;
  // One StartTimer per timer instead of StartTimers of `batch`.
  bool unary = false;
  uint32_t concurrency = 1;              // Calls in flight.
  uint32_t batch = 100;                  // Timers per StartTimers call.
  bool return_timers = false;            // StartTimersRequest.return_timers: lawnd echoes every timer.
  uint64_t count = 0;                    // Timers in total.
  std::chrono::nanoseconds duration{0};  // No call is issued after this much time.
  std::chrono::nanoseconds ttl{0};       // Every timer's TTL.
  std::string ns;
  uint32_t payload_bytes = 0;
  std::string token;  // Sent as `authorization: Bearer <token>` unless empty.
  uint64_t seed = 1;
  ClientApi api = ClientApi::kCompletionQueue;
  uint32_t cq_threads = 2;  // With kCompletionQueue.
};

struct StartLoadResult {
  uint64_t calls = 0;                // Calls completed.
  uint64_t call_errors = 0;          // Calls that ended with a non-OK gRPC status.
  uint64_t timers_ok = 0;            // Timers lawnd started.
  uint64_t timer_errors = 0;         // Timers refused (item code != 0, or in a failed call).
  double elapsed_s = 0;              // First call sent to last call completed.
  std::vector<double> latencies_us;  // One per completed call, send to completion.
  std::string first_error;           // The first error seen, for the report; empty if none.
};

StartLoadResult RunStartLoad(const StartLoadConfig& config);

}  // namespace lawn
