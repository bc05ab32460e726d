// Precision run of lawn_load: how late lawnd delivers expirations under a steady expiry rate, with a large
// population pending.
//
//   1. Preload `pending` timers of the long `ttl` (they never fire during the run), StartTimers of
//      `preload_batch`.
//   2. Open one Subscribe stream on the namespace (max_in_flight, max_batch, acking every delivery at once;
//      bench/expiry_probe.h).
//   3. For `duration`, start `rate` timers per second with TTLs uniform in [ttl_min, ttl_max] (whole ms), in
//      StartTimers calls of `batch` every batch/rate seconds, paced on absolute times (no drift).
//   4. Wait until every started short timer has been delivered (at most ttl_max + grace after the last
//      start), close the stream.
//
// Per first delivery it records receive wall time minus Expiration.timer.deadline (lateness; the wall clock
// of this process against the deadline lawnd reports), and fired_at minus deadline (lawnd's own firing
// lateness). A receive before the deadline is counted as `early`: lawnd promises never to fire early. With
// --server-pid, lawnd's CPU over steps 3-4 per expiration received (start + fire + deliver + ack).
//
// Thread-safety: RunPrecision blocks the calling thread; the stream and the start calls run on gRPC's
// callback threads and share counters under a mutex.
#pragma once

#include "bench/load_options.h"
#include "bench/load_report.h"
#include "lawn/v1/timer.grpc.pb.h"

namespace lawn {

// Runs the four steps above on `stub` (and `preload_stubs` for step 1); fills `report`. Returns false when
// the run could not be measured (preload or stream failure; the report says why) or was not clean: a start
// failed, an expiration is missing, or one arrived before its deadline.
bool RunPrecision(const LoadOptions& options, v1::TimerService::Stub* stub,
                  const std::vector<v1::TimerService::Stub*>& preload_stubs, Report* report);

}  // namespace lawn
