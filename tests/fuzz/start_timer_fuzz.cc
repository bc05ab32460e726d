// Fuzz target: StartTimer / StartTimers request parsing and validation, as TimerService does it before it
// hands a timer to a shard (server/start_request.h, server/validation.h).
//
// The input is read both as a lawn.v1.StartTimersRequest and as a lawn.v1.StartTimerRequest, by lawnd's own
// wire reader (server/start_wire.h) as the service reads them (bytes that are not a valid message are
// dropped, as lawnd refuses them), and every item goes through ParseStart under two configurations: the
// defaults (tick 1ms, payload up to 64 KiB) and a tight one (tick 1s, payload up to 16 bytes). The oracle
// judges the same bytes as parsed by protobuf. Checked for each item:
//   * ParseStart accepts exactly what an independent oracle of the documented rules (README "Validation")
//     accepts;
//   * an accepted item yields the key, payload, ttl / deadline, interval and replace the request asked for,
//     in range;
//   * a refused item is INVALID_ARGUMENT with a message that starts with the item's prefix ("timers[i].").
// A StartTimers call of more than 10,000 items is refused whole before any item is parsed (as
// TimerServiceImpl::StartTimers does), so only the count is checked for those.
// On every input the wire reader must also accept what protobuf accepts and read the same values
// (tests/server/start_wire_compare.h), so the oracle's reading is the reader's.
#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "config/options.h"
#include "google/protobuf/arena.h"
#include "google/protobuf/stubs/logging.h"
#include "lawn/v1/timer.pb.h"
#include "server/start_request.h"
#include "server/start_wire.h"
#include "server/validation.h"
#include "tests/fuzz/fuzz_check.h"
#include "tests/server/start_wire_compare.h"

namespace lawn {
namespace {

// timer_service.cc's kMaxBatch: more items than this fail the whole StartTimers call.
constexpr int kMaxStartBatch = 10000;
constexpr int64_t kNanosPerSecond = 1'000'000'000;
constexpr int64_t kMaxDurationSeconds = 36525LL * 24 * 3600;  // "at most 100 years": 100 Julian years.

struct Expected {
  bool ok = false;
  std::string key;
  uint64_t ttl_ns = 0;
  int64_t deadline_unix_ns = 0;
  uint64_t interval_ns = 0;
};

// A Duration the API takes: normalized (nanos in range, same sign as seconds), > 0, at most 100 years, at
// least `min_ns`. Computed in 128 bits so that the oracle itself cannot overflow.
bool DurationOk(const google::protobuf::Duration& d, uint64_t min_ns, uint64_t* ns) {
  const int64_t s = d.seconds();
  const int32_t n = d.nanos();
  if (n <= -kNanosPerSecond || n >= kNanosPerSecond) return false;
  if ((s > 0 && n < 0) || (s < 0 && n > 0)) return false;
  const __int128 total = static_cast<__int128>(s) * kNanosPerSecond + n;
  if (total <= 0 || s > kMaxDurationSeconds) return false;
  if (total < static_cast<__int128>(min_ns)) return false;
  *ns = static_cast<uint64_t>(total);
  return true;
}

// The README's validation rules, written independently of server/validation.cc.
Expected Oracle(const v1::StartTimerRequest& r, const Options& options) {
  Expected e;
  std::string_view ns = r.namespace_();
  if (ns.empty()) ns = "default";
  if (ns.size() > 64) return e;
  for (char c : ns) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-')) return e;
  }
  if (r.id().empty() || r.id().size() > 256) return e;
  if (r.payload().size() > options.max_payload_bytes) return e;
  if (r.has_ttl()) {
    if (!DurationOk(r.ttl(), 1, &e.ttl_ns)) return e;
  } else if (r.has_deadline()) {
    const int64_t s = r.deadline().seconds();
    const int32_t n = r.deadline().nanos();
    if (n < 0 || n >= kNanosPerSecond) return e;
    // Representable as int64 ns since the epoch (1677-09-21..2262-04-11), to the nanosecond.
    const __int128 ns_total = static_cast<__int128>(s) * kNanosPerSecond + n;
    if (ns_total > INT64_MAX || ns_total < INT64_MIN) return e;
    e.deadline_unix_ns = static_cast<int64_t>(ns_total);
  } else {
    return e;
  }
  if (r.has_interval()) {
    if (!DurationOk(r.interval(), static_cast<uint64_t>(options.tick.count()), &e.interval_ns)) return e;
  }
  e.key = std::string(ns);
  e.key.push_back('\0');
  e.key.append(r.id());
  e.ok = true;
  return e;
}

// `wire` is what lawnd's reader read of the item, `r` what protobuf parsed of the same bytes.
void CheckItem(const StartItem& wire, const v1::StartTimerRequest& r, const Options& options, int item) {
  const std::string prefix = item < 0 ? "" : "timers[" + std::to_string(item) + "].";
  google::protobuf::Arena arena;  // Holds op.key, as the call's arena does in lawnd.
  StartOp op;
  const absl::Status status = ParseStart(wire, options, item, &arena, &op);
  const Expected want = Oracle(r, options);
  FUZZ_CHECK(status.ok() == want.ok, "ParseStart says %s, the oracle says %s", status.ToString().c_str(),
             want.ok ? "OK" : "refuse");
  if (!status.ok()) {
    FUZZ_CHECK(status.code() == absl::StatusCode::kInvalidArgument, "%s", status.ToString().c_str());
    FUZZ_CHECK(status.message().substr(0, prefix.size()) == prefix, "%s", status.ToString().c_str());
    FUZZ_CHECK(status.message().size() > prefix.size());
    return;
  }
  FUZZ_CHECK(op.key == want.key);
  FUZZ_CHECK(op.payload == r.payload());
  FUZZ_CHECK(op.payload.size() <= options.max_payload_bytes);
  FUZZ_CHECK(op.replace == r.replace());
  FUZZ_CHECK(op.by_ttl == r.has_ttl());
  if (op.by_ttl) {
    FUZZ_CHECK(op.ttl_ns == want.ttl_ns && op.ttl_ns > 0);
  } else {
    FUZZ_CHECK(op.deadline_unix_ns == want.deadline_unix_ns);
  }
  FUZZ_CHECK(op.interval_ns == want.interval_ns);
  FUZZ_CHECK(op.interval_ns == 0 || op.interval_ns >= static_cast<uint64_t>(options.tick.count()));
  FUZZ_CHECK(op.status.ok() && op.out == nullptr);  // Left for the shard.
}

// Reads `bytes` as lawnd does and checks every item it would parse. The wire reader and protobuf agree on
// every input (checked in LLVMFuzzerTestOneInput), so a message protobuf cannot parse is not read either.
void CheckAll(std::string_view bytes) {
  static const std::array<Options, 2> kConfigs = [] {
    std::array<Options, 2> configs;  // [0]: the defaults.
    configs[1].tick = std::chrono::seconds(1);
    configs[1].max_payload_bytes = 16;
    return configs;
  }();
  StartItem single;
  v1::StartTimerRequest single_pb;
  const bool single_ok = ReadStartTimer(bytes, &single) &&
                         single_pb.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()));
  std::vector<StartItem> items;
  size_t count = 0;
  bool return_timers = false;
  v1::StartTimersRequest batch_pb;
  const bool batch_ok = ReadStartTimers(bytes, kMaxStartBatch, &items, &count, &return_timers) &&
                        batch_pb.ParseFromArray(bytes.data(), static_cast<int>(bytes.size())) &&
                        count <= static_cast<size_t>(kMaxStartBatch);
  if (batch_ok) FUZZ_CHECK(items.size() == count && static_cast<int>(count) == batch_pb.timers_size());
  for (const Options& options : kConfigs) {
    if (single_ok) CheckItem(single, single_pb, options, -1);
    if (batch_ok) {
      for (size_t i = 0; i < items.size(); ++i) {
        CheckItem(items[i], batch_pb.timers(static_cast<int>(i)), options, static_cast<int>(i));
      }
    }
  }
}

}  // namespace
}  // namespace lawn

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  // Bytes that are not a valid message (e.g. a string field that is not UTF-8) are logged by protobuf at
  // ERROR; they are expected here by the million.
  google::protobuf::SetLogHandler(nullptr);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  const std::string wire = lawn::testing::DiffWireAndProtobuf(bytes);
  FUZZ_CHECK(wire.empty(), "server/start_wire.h and protobuf differ: %s", wire.c_str());
  lawn::CheckAll(bytes);
  return 0;
}
