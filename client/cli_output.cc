#include "client/cli_output.h"

#include <algorithm>
#include <cstdio>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/time/time.h"
#include "client/cat.h"
#include "client/cli_args.h"
#include "client/proto_time.h"
#include "google/protobuf/util/json_util.h"

namespace lawn {
namespace {

using internal::Cat;

using Row = std::vector<std::string>;

// Left-aligned columns two spaces apart, no trailing blanks; one line per row, header first.
std::string Table(const Row& header, const std::vector<Row>& rows) {
  std::vector<size_t> widths(header.size(), 0);
  const auto measure = [&](const Row& row) {
    for (size_t i = 0; i < row.size(); ++i) widths[i] = std::max(widths[i], row[i].size());
  };
  measure(header);
  for (const Row& row : rows) measure(row);
  std::string text;
  const auto append = [&](const Row& row) {
    for (size_t i = 0; i < row.size(); ++i) {
      text += row[i];
      if (i + 1 < row.size()) text.append(widths[i] - row[i].size() + 2, ' ');
    }
    text += '\n';
  };
  append(header);
  for (const Row& row : rows) append(row);
  return text;
}

std::string DurationText(const v1::Timer& timer, bool interval) {
  if (interval && !timer.has_interval()) return "-";
  return FormatDurationArg(FromProtoDuration(interval ? timer.interval() : timer.ttl()));
}

std::string PayloadText(std::string_view payload) { return payload.empty() ? "-" : PrintableBytes(payload); }

}  // namespace

std::string PrintableBytes(std::string_view bytes) {
  const bool plain = !bytes.empty() && std::all_of(bytes.begin(), bytes.end(), [](char c) {
    return c > ' ' && c < 0x7f && c != '"' && c != '\\';
  });
  if (plain) return std::string(bytes);
  return Cat("\"", absl::CHexEscape(absl::string_view(bytes.data(), bytes.size())), "\"");
}

std::string FormatTimestamp(const google::protobuf::Timestamp& t) {
  const absl::Time time = absl::FromUnixSeconds(t.seconds()) + absl::Nanoseconds(t.nanos());
  // RFC3339_full would print "+00:00"; "Z" is the usual spelling of UTC.
  return absl::FormatTime("%Y-%m-%d%ET%H:%M:%E*SZ", time, absl::UTCTimeZone());
}

double LatenessMs(const v1::Expiration& e) {
  // From seconds and nanos, in double: the difference of two int64 ns timestamps can overflow int64 (a
  // deadline in 1678 fired today).
  const double seconds = static_cast<double>(e.fired_at().seconds()) - static_cast<double>(e.timer().deadline().seconds());
  const double nanos = static_cast<double>(e.fired_at().nanos()) - static_cast<double>(e.timer().deadline().nanos());
  return seconds * 1e3 + nanos / 1e6;
}

absl::StatusOr<std::string> ToJson(const google::protobuf::Message& message) {
  google::protobuf::util::JsonPrintOptions options;
  options.always_print_primitive_fields = true;
  std::string json;
  const auto status = google::protobuf::util::MessageToJsonString(message, &json, options);
  if (!status.ok()) {
    return absl::InternalError(
        Cat("cannot print ", message.GetTypeName(), " as JSON: ", std::string(status.message())));
  }
  return json;
}

std::string ExpirationLine(const v1::Expiration& e) {
  char lateness[32];
  std::snprintf(lateness, sizeof(lateness), "%.3f", LatenessMs(e));
  return Cat(PrintableBytes(e.timer().id()), " deadline=", FormatTimestamp(e.timer().deadline()),
             " fired_at=", FormatTimestamp(e.fired_at()), " lateness_ms=", lateness, " attempt=", e.attempt(),
             " payload=", PrintableBytes(e.timer().payload()));
}

absl::StatusOr<std::string> ExpirationJson(const v1::Expiration& e) {
  absl::StatusOr<std::string> json = ToJson(e);
  if (!json.ok()) return json.status();
  // Splice the computed field in front of the message's own: `{"latenessMs":1.5,"timer":...}`.
  char lateness[48];
  std::snprintf(lateness, sizeof(lateness), "{\"latenessMs\":%.3f", LatenessMs(e));
  const std::string_view rest = std::string_view(*json).substr(1);  // After '{'.
  return Cat(lateness, rest == "}" ? "" : ",", rest);
}

std::string TimerSummary(std::string_view verb, const v1::Timer& timer) {
  std::string text =
      Cat(verb, " ", PrintableBytes(timer.id()), " in namespace ", timer.namespace_(), ": deadline ",
          FormatTimestamp(timer.deadline()), " (ttl ", DurationText(timer, false));
  if (timer.has_interval()) text += Cat(", every ", DurationText(timer, true));
  return text + ")";
}

std::string TimerDetails(const v1::Timer& timer) {
  return Table({"namespace", timer.namespace_()}, {
                                                      {"id", PrintableBytes(timer.id())},
                                                      {"deadline", FormatTimestamp(timer.deadline())},
                                                      {"ttl", DurationText(timer, false)},
                                                      {"interval", DurationText(timer, true)},
                                                      {"payload", PayloadText(timer.payload())},
                                                  });
}

std::string TimerTable(const v1::ListTimersResponse& page) {
  std::vector<Row> rows;
  rows.reserve(static_cast<size_t>(page.timers_size()));
  for (const v1::Timer& timer : page.timers()) {
    rows.push_back({PrintableBytes(timer.id()), FormatTimestamp(timer.deadline()), DurationText(timer, false),
                    DurationText(timer, true), PayloadText(timer.payload())});
  }
  return Table({"ID", "DEADLINE", "TTL", "INTERVAL", "PAYLOAD"}, rows);
}

std::string StatsText(const v1::GetStatsResponse& stats) {
  std::string text = Table({"pending timers", Cat(stats.pending_timers())},
                           {{"outbox", Cat(stats.outbox())}, {"redeliveries", Cat(stats.redeliveries())}});
  std::vector<Row> shards;
  for (const v1::ShardStats& s : stats.shards()) {
    shards.push_back({Cat(s.shard()), Cat(s.pending_timers()), Cat(s.lawn_timers()), Cat(s.wheel_timers()),
                      Cat(s.lawn_buckets())});
  }
  text += Cat("\n", Table({"SHARD", "PENDING", "LAWN", "WHEEL", "BUCKETS"}, shards));
  std::vector<Row> namespaces;
  for (const v1::NamespaceStats& n : stats.namespaces()) {
    namespaces.push_back({n.namespace_(), Cat(n.pending_timers()), Cat(n.outbox()), Cat(n.subscribers())});
  }
  text += Cat("\n", Table({"NAMESPACE", "PENDING", "OUTBOX", "SUBSCRIBERS"}, namespaces));
  return text;
}

}  // namespace lawn
