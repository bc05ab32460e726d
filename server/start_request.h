// ParseStart: what TimerService.StartTimer and StartTimers do with each StartTimerRequest before handing it
// to a shard (validate every field, build the timer key). Declared here so tests and the fuzz target
// tests/fuzz/start_timer_fuzz.cc run the very function the service runs; defined in server/timer_service.cc.
//
// Thread-safety: a pure function of its arguments.
#pragma once

#include <string>

#include "absl/status/status.h"
#include "config/options.h"
#include "lawn/v1/timer.pb.h"
#include "server/timer_commands.h"

namespace lawn {

// Validates `r` against the rules of server/validation.h and `options` (max_payload_bytes; an interval of at
// least one tick) and fills `op`'s key, payload (a view into `r`: `r` must outlive `op`), ttl or deadline,
// interval and replace; `op->status` and `op->out` are left alone. `prefix` names the item in messages
// ("timers[3]." or ""). Errors: INVALID_ARGUMENT whose message starts with `prefix` and names the field.
absl::Status ParseStart(const v1::StartTimerRequest& r, const Options& options, const std::string& prefix,
                        StartOp* op);

}  // namespace lawn
