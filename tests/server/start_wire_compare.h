// What server/start_wire.h read against what protobuf parsed from the same bytes: shared by the unit test
// (tests/server/start_wire_test.cc) and the fuzz target (tests/fuzz/start_timer_fuzz.cc).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "lawn/v1/timer.pb.h"
#include "server/start_wire.h"

namespace lawn::testing {

// "" if `w` holds the field values of `p`, else the first difference.
inline std::string DiffStartItem(const StartItem& w, const v1::StartTimerRequest& p) {
  if (w.ns != p.namespace_()) return "namespace";
  if (w.id != p.id()) return "id";
  if (w.payload != p.payload()) return "payload";
  if (w.replace != p.replace()) return "replace";
  auto same_time = [](const WireTime& t, int64_t seconds, int32_t nanos) {
    return t.seconds == seconds && t.nanos == nanos;
  };
  switch (p.when_case()) {
    case v1::StartTimerRequest::kTtl:
      if (w.when != StartItem::When::kTtl || !same_time(w.when_time, p.ttl().seconds(), p.ttl().nanos())) {
        return "ttl";
      }
      break;
    case v1::StartTimerRequest::kDeadline:
      if (w.when != StartItem::When::kDeadline ||
          !same_time(w.when_time, p.deadline().seconds(), p.deadline().nanos())) {
        return "deadline";
      }
      break;
    default:
      if (w.when != StartItem::When::kNone) return "when (protobuf has neither ttl nor deadline)";
  }
  if (w.has_interval != p.has_interval()) return "has_interval";
  if (w.has_interval && !same_time(w.interval, p.interval().seconds(), p.interval().nanos()))
    return "interval";
  return "";
}

// "" if ReadStartTimer and ReadStartTimers agree with protobuf on `bytes` (accepted or not, and every value;
// each item's `encoded` bytes read alone again give that item, and a request rebuilt from them with
// AppendStartItem parses to the same items), else what differs.
inline std::string DiffWireAndProtobuf(std::string_view bytes) {
  v1::StartTimerRequest single;
  const bool single_ok = single.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()));
  StartItem item;
  if (ReadStartTimer(bytes, &item) != single_ok)
    return single_ok ? "StartTimer: refused" : "StartTimer: accepted";
  if (single_ok) {
    if (std::string d = DiffStartItem(item, single); !d.empty()) return "StartTimer: " + d;
  }
  v1::StartTimersRequest batch;
  const bool batch_ok = batch.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()));
  std::vector<StartItem> items;
  size_t count = 0;
  bool return_timers = false;
  if (ReadStartTimers(bytes, SIZE_MAX, &items, &count, &return_timers) != batch_ok) {
    return batch_ok ? "StartTimers: refused" : "StartTimers: accepted";
  }
  if (!batch_ok) return "";
  if (items.size() != static_cast<size_t>(batch.timers_size()) || count != items.size()) {
    return "StartTimers: item count";
  }
  if (return_timers != batch.return_timers()) return "StartTimers: return_timers";
  std::string rebuilt;
  for (size_t i = 0; i < items.size(); ++i) {
    const v1::StartTimerRequest& p = batch.timers(static_cast<int>(i));
    if (std::string d = DiffStartItem(items[i], p); !d.empty())
      return "timers[" + std::to_string(i) + "]: " + d;
    StartItem again;
    if (!ReadStartTimer(items[i].encoded, &again))
      return "timers[" + std::to_string(i) + "]: encoded not read";
    if (std::string d = DiffStartItem(again, p); !d.empty())
      return "timers[" + std::to_string(i) + "] encoded: " + d;
    AppendStartItem(items[i].encoded, &rebuilt);
  }
  v1::StartTimersRequest reparsed;
  if (!reparsed.ParseFromString(rebuilt) || reparsed.timers_size() != batch.timers_size())
    return "rebuilt request";
  for (int i = 0; i < reparsed.timers_size(); ++i) {
    if (reparsed.timers(i).SerializeAsString() != batch.timers(i).SerializeAsString()) return "rebuilt item";
  }
  return "";
}

}  // namespace lawn::testing
