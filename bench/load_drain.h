// Drain run of lawn_load: how fast one subscriber empties an outbox, i.e. Subscribe throughput without any
// start or firing load beside it.
//
//   1. Start `count` timers of `ttl` (1 ms unless given) in StartTimers of `batch`, `concurrency` calls in
//      flight, with nobody subscribed: they fire into the outbox and wait there.
//   2. Wait (GetStats) until none is pending and the namespace's outbox holds them all.
//   3. Open one Subscribe stream (max_in_flight, max_batch; bench/expiry_probe.h, acking each expiration as
//      it is read) and time it from open until all `count` acks are written, then until lawnd's outbox is
//      empty (GetStats).
//
// Reports expirations/s over step 3, responses and ack messages, and with --server-pid lawnd's CPU
// microseconds per expiration over step 3 (open to empty outbox).
//
// Thread-safety: RunDrain blocks the calling thread; the stream runs on gRPC's callback threads.
#pragma once

#include <vector>

#include "bench/load_options.h"
#include "bench/load_report.h"
#include "lawn/v1/timer.grpc.pb.h"

namespace lawn {

// Runs the three steps above, the stream on `stub`, the starts on `start_stubs`; fills `report`. Returns
// false when the run was not clean (a start failed, the outbox never filled or never emptied, an
// expiration is missing or was redelivered).
bool RunDrain(const LoadOptions& options, v1::TimerService::Stub* stub,
              const std::vector<v1::TimerService::Stub*>& start_stubs, Report* report);

}  // namespace lawn
