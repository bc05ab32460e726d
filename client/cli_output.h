// lawnctl's output: the human-readable text and the JSON of each command's answer. Pure formatting, so it is
// unit tested without a server.
//
// Human text prints ids and payloads verbatim when they are plain printable ASCII, quoted and C-escaped
// otherwise; times as RFC 3339 UTC; durations as DUR flags are written (1.5s). JSON is the proto3 JSON
// mapping with every field present (bytes as base64), one line per message.
//
// Thread-safety: pure functions.
#pragma once

#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "google/protobuf/message.h"
#include "google/protobuf/timestamp.pb.h"
#include "lawn/v1/timer.pb.h"

namespace lawn {

// `bytes` verbatim if every byte is printable ASCII other than space, '"' and '\'; else in double quotes with
// C escapes ("a b", "\x00\x01"). Empty: "".
std::string PrintableBytes(std::string_view bytes);

// RFC 3339 in UTC with only the fraction digits needed: 2025-01-31T12:00:00.25Z.
std::string FormatTimestamp(const google::protobuf::Timestamp& t);

// fired_at - deadline, in milliseconds (negative would mean early, which lawnd never does).
double LatenessMs(const v1::Expiration& e);

// One line of proto3 JSON, every field present. INTERNAL if protobuf refuses the message.
absl::StatusOr<std::string> ToJson(const google::protobuf::Message& message);

// subscribe: one line (no newline), human or JSON. The JSON is the Expiration's plus "latenessMs".
std::string ExpirationLine(const v1::Expiration& e);
absl::StatusOr<std::string> ExpirationJson(const v1::Expiration& e);

// start / reschedule / delete: one line saying what happened to `timer` ("started", ...).
std::string TimerSummary(std::string_view verb, const v1::Timer& timer);
// get: one "field  value" line per field.
std::string TimerDetails(const v1::Timer& timer);
// list: a table of timers with a header (the header alone when there are none).
std::string TimerTable(const v1::ListTimersResponse& page);
// stats: the totals, then a table of shards and a table of namespaces.
std::string StatsText(const v1::GetStatsResponse& stats);

}  // namespace lawn
