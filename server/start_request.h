// StartOp and ParseStart: what TimerService.StartTimer and StartTimers do with each StartTimerRequest before
// handing it to a shard (validate every field, build the timer key). Apart from the service, so tests and the
// fuzz target tests/fuzz/start_timer_fuzz.cc run the very function the service runs, and link it without the
// service (lawn::server_base).
//
// Thread-safety: ParseStart is a pure function of its arguments.
#pragma once

#include <cstdint>
#include <string_view>

#include "absl/status/status.h"
#include "config/options.h"
#include "google/protobuf/arena.h"
#include "lawn/v1/timer.pb.h"
#include "server/start_wire.h"

namespace lawn {

// One timer to start, parsed and validated.
struct StartOp {
  std::string_view key;      // namespace \0 id, on the call's arena (no heap block per timer)
  std::string_view payload;  // Into the call's request, which lives until the call is answered.
  bool by_ttl = true;
  uint64_t ttl_ns = 0;
  int64_t deadline_unix_ns = 0;
  uint64_t interval_ns = 0;
  bool replace = false;
  absl::Status status;       // Result; OK until something fails.
  v1::Timer* out = nullptr;  // Where the stored timer goes; nullptr: nowhere (StartTimers codes only).
};

// Validates `r` against the rules of server/validation.h and `options` (max_payload_bytes; an interval of at
// least one tick) and fills `op`'s key (its bytes allocated on `arena`, which must outlive `op`), payload (a
// view into `r`: what `r` views must outlive `op`), ttl or deadline, interval and replace; `op->status` and
// `op->out` are left alone. `item` is the item's index in a StartTimers request, or -1 for a StartTimer
// request. Errors: INVALID_ARGUMENT whose message starts with "timers[<item>]." (nothing for -1) and names
// the field.
absl::Status ParseStart(const StartItem& r, const Options& options, int item, google::protobuf::Arena* arena,
                        StartOp* op);

}  // namespace lawn
