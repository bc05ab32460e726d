// ParseStart: what TimerService.StartTimer and StartTimers do with each StartTimerRequest before handing it
// to a shard (validate every field, build the timer key). Declared here so tests and the fuzz target
// tests/fuzz/start_timer_fuzz.cc run the very function the service runs; defined in server/timer_service.cc.
//
// Thread-safety: a pure function of its arguments.
#pragma once

#include <string>

#include "absl/status/status.h"
#include "config/options.h"
#include "google/protobuf/arena.h"
#include "server/start_wire.h"
#include "server/timer_commands.h"

namespace lawn {

// Validates `r` against the rules of server/validation.h and `options` (max_payload_bytes; an interval of at
// least one tick) and fills `op`'s key (its bytes allocated on `arena`, which must outlive `op`), payload (a
// view into `r`: what `r` views must outlive `op`), ttl or deadline, interval and replace; `op->status` and
// `op->out` are left alone. `item` is the item's index in a StartTimers request, or -1 for a StartTimer
// request. Errors: INVALID_ARGUMENT whose message starts with "timers[<item>]." (nothing for -1) and names
// the field.
absl::Status ParseStart(const StartItem& r, const Options& options, int item, google::protobuf::Arena* arena,
                        StartOp* op);

}  // namespace lawn
