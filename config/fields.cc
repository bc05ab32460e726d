// The table of config keys and the per-field parse / check / print (config/fields.h).
#include "config/fields.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <variant>

#include "absl/status/status.h"
#include "base/status_macros.h"
#include "config/config.h"

namespace lawn::internal {
namespace {

using std::chrono::nanoseconds;

constexpr uint64_t kUnbounded = std::numeric_limits<uint64_t>::max();
constexpr uint64_t kKiB = 1024;
constexpr uint64_t kMiB = 1024 * kKiB;

constexpr uint64_t Nanos(nanoseconds duration) { return static_cast<uint64_t>(duration.count()); }

constexpr std::string_view kLogLevels[] = {"trace", "debug", "info", "warn", "error", "critical", "off"};
constexpr std::string_view kLogFormats[] = {"text", "json"};
constexpr std::string_view kStorageEngines[] = {"auto", "rocksdb", "log"};

// Ranges: config/REFERENCE.md repeats them for users; keep both in step.
constexpr Field kFields[] = {
    {"listen", FieldKind::kAddress, &Options::listen},
    {"metrics_listen", FieldKind::kAddressOrEmpty, &Options::metrics_listen},
    {"health_listen", FieldKind::kAddressOrEmpty, &Options::health_listen},
    {"tls.cert_file", FieldKind::kPathOrEmpty, &Options::tls_cert_file},
    {"tls.key_file", FieldKind::kPathOrEmpty, &Options::tls_key_file},
    {"tls.client_ca_file", FieldKind::kPathOrEmpty, &Options::tls_client_ca_file},
    {"auth.tokens_file", FieldKind::kPathOrEmpty, &Options::auth_tokens_file},
    {"data_dir", FieldKind::kPath, &Options::data_dir},
    {"shards", FieldKind::kCount, &Options::shards, 0, 256, "(0 = one per CPU core)"},
    {"tick", FieldKind::kDuration, &Options::tick, Nanos(std::chrono::microseconds(1)),
     Nanos(std::chrono::seconds(1))},
    {"max_payload_bytes", FieldKind::kBytes, &Options::max_payload_bytes, 0, 4 * kMiB},
    {"max_pending_timers", FieldKind::kCount, &Options::max_pending_timers, 1, kUnbounded},
    {"max_pending_per_namespace", FieldKind::kCount, &Options::max_pending_per_namespace, 0, kUnbounded,
     "(0 = same as max_pending_timers)"},
    {"max_pending_bytes", FieldKind::kBytes, &Options::max_pending_bytes, kKiB, kUnbounded},
    {"max_pending_bytes_per_namespace", FieldKind::kBytes, &Options::max_pending_bytes_per_namespace, 0,
     kUnbounded, "(0 = same as max_pending_bytes)"},
    {"max_outbox_per_namespace", FieldKind::kCount, &Options::max_outbox_per_namespace, 1, 1'000'000'000},
    {"max_outbox_bytes_per_namespace", FieldKind::kBytes, &Options::max_outbox_bytes_per_namespace, kMiB,
     kUnbounded},
    {"max_outbox_bytes", FieldKind::kBytes, &Options::max_outbox_bytes, kMiB, kUnbounded},
    {"max_namespaces", FieldKind::kCount, &Options::max_namespaces, 1, 65'534},
    {"max_subscribers_per_namespace", FieldKind::kCount, &Options::max_subscribers_per_namespace, 1, 100'000},
    {"max_queued_commands", FieldKind::kCount, &Options::max_queued_commands, 1'000, 10'000'000},
    {"grpc_max_concurrent_streams", FieldKind::kCount, &Options::grpc_max_concurrent_streams, 1, 1'000'000},
    {"grpc_keepalive_min_time", FieldKind::kDuration, &Options::grpc_keepalive_min_time,
     Nanos(std::chrono::seconds(1)), Nanos(std::chrono::hours(1))},
    {"grpc_max_connection_idle", FieldKind::kDuration, &Options::grpc_max_connection_idle, 0,
     Nanos(std::chrono::hours(24)), "(0 = never)"},
    {"grpc_max_connection_age", FieldKind::kDuration, &Options::grpc_max_connection_age, 0,
     Nanos(std::chrono::hours(24 * 7)), "(0 = never)"},
    {"grpc_memory_quota_bytes", FieldKind::kBytes, &Options::grpc_memory_quota_bytes, 16 * kMiB,
     64 * 1024 * kMiB},
    {"checkpoint_retention", FieldKind::kCount, &Options::checkpoint_retention, 0, 1'000, "(0 = keep all)"},
    {"ack_timeout", FieldKind::kDuration, &Options::ack_timeout, Nanos(std::chrono::milliseconds(100)),
     Nanos(std::chrono::hours(1))},
    {"max_in_flight", FieldKind::kCount, &Options::max_in_flight, 1, 100'000},
    {"durability", FieldKind::kDurability, &Options::durability},
    {"sync_interval", FieldKind::kDuration, &Options::sync_interval, Nanos(std::chrono::milliseconds(1)),
     Nanos(std::chrono::seconds(10))},
    {"min_free_disk_bytes", FieldKind::kBytes, &Options::min_free_disk_bytes, 0, kUnbounded,
     "(0 = no check)"},
    {"storage.engine", FieldKind::kChoice, &Options::storage_engine, 0, 0, {}, kStorageEngines},
    {"write_buffer_bytes", FieldKind::kBytes, &Options::write_buffer_bytes, 16 * kMiB, 64 * 1024 * kMiB},
    {"max_message_bytes", FieldKind::kBytes, &Options::max_message_bytes, 64 * kKiB, 64 * kMiB},
    {"shutdown_timeout", FieldKind::kDuration, &Options::shutdown_timeout, 0,
     Nanos(std::chrono::minutes(10))},
    {"skip_corrupt_records", FieldKind::kBool, &Options::skip_corrupt_records},
    {"log_level", FieldKind::kChoice, &Options::log_level, 0, 0, {}, kLogLevels},
    {"log_format", FieldKind::kChoice, &Options::log_format, 0, 0, {}, kLogFormats},
    {"lawn_max_buckets", FieldKind::kCount, &Options::lawn_max_buckets, 1, 65'535},
    {"lawn_promote_after", FieldKind::kCount, &Options::lawn_promote_after, 1, 1'000},
    {"cluster.etcd_endpoints", FieldKind::kPathOrEmpty, &Options::cluster_etcd_endpoints},
    {"cluster.name", FieldKind::kPath, &Options::cluster_name},
    {"cluster.member", FieldKind::kPathOrEmpty, &Options::cluster_member},
    {"cluster.advertise", FieldKind::kAddressOrEmpty, &Options::cluster_advertise},
    {"cluster.partitions", FieldKind::kCount, &Options::cluster_partitions, 1, 65'536},
    {"cluster.lease_ttl", FieldKind::kDuration, &Options::cluster_lease_ttl, Nanos(std::chrono::seconds(2)),
     Nanos(std::chrono::minutes(10))},
    {"cluster.expect_members", FieldKind::kCount, &Options::cluster_expect_members, 1, 1'000},
    {"cluster.tls_ca_file", FieldKind::kPathOrEmpty, &Options::cluster_tls_ca_file},
    {"cluster.tls_server_name", FieldKind::kPathOrEmpty, &Options::cluster_tls_server_name},
    {"cluster.token_file", FieldKind::kPathOrEmpty, &Options::cluster_token_file},
};

std::string Quoted(std::string_view text) { return "\"" + std::string(text) + "\""; }

std::string JoinChoices(std::span<const std::string_view> choices) {
  std::string out;
  for (size_t i = 0; i < choices.size(); ++i) {
    if (i > 0) out += (i + 1 == choices.size()) ? " or " : ", ";
    out += choices[i];
  }
  return out;
}

// A number of `field` (count, size or nanoseconds) as the user would write it.
std::string NumberText(const Field& field, uint64_t value) {
  switch (field.kind) {
    case FieldKind::kBytes:
      return FormatBytes(value);
    case FieldKind::kDuration:
      return FormatDuration(nanoseconds(static_cast<int64_t>(value)));
    default:
      return std::to_string(value);
  }
}

// "1us..1s", "1 or more", with the field's note.
std::string AllowedRange(const Field& field) {
  std::string range = field.max == kUnbounded
                          ? NumberText(field, field.min) + " or more"
                          : NumberText(field, field.min) + ".." + NumberText(field, field.max);
  if (!field.note.empty()) range += " " + std::string(field.note);
  return range;
}

absl::Status OutOfRange(const Field& field, const std::string& value_text) {
  return absl::InvalidArgumentError(value_text + " is out of range; allowed " + AllowedRange(field));
}

// Stores `value` into the numeric member of `field`; a value the member's type cannot hold is out of range.
absl::Status StoreNumber(const Field& field, uint64_t value, const std::string& value_text,
                         Options& options) {
  return std::visit(
      [&](auto member) -> absl::Status {
        using T = std::remove_cvref_t<decltype(options.*member)>;
        if constexpr (std::is_same_v<T, uint32_t> || std::is_same_v<T, uint64_t>) {
          if (value > std::numeric_limits<T>::max()) return OutOfRange(field, value_text);
          options.*member = static_cast<T>(value);
          return absl::OkStatus();
        } else if constexpr (std::is_same_v<T, nanoseconds>) {
          options.*member =
              nanoseconds(static_cast<int64_t>(value));  // ParseDuration capped it at INT64_MAX.
          return absl::OkStatus();
        } else {
          return absl::InternalError("config field '" + std::string(field.key) + "' is not a number");
        }
      },
      field.member);
}

// The numeric member of `field` (nanoseconds for a duration); nullopt for a negative duration.
std::optional<uint64_t> LoadNumber(const Field& field, const Options& options) {
  return std::visit(
      [&](auto member) -> std::optional<uint64_t> {
        using T = std::remove_cvref_t<decltype(options.*member)>;
        if constexpr (std::is_same_v<T, uint32_t> || std::is_same_v<T, uint64_t>) {
          return options.*member;
        } else if constexpr (std::is_same_v<T, nanoseconds>) {
          if ((options.*member).count() < 0) return std::nullopt;
          return static_cast<uint64_t>((options.*member).count());
        } else {
          return 0;
        }
      },
      field.member);
}

// Digits only: YAML and flags both hand us text, and "1e6" or "0x10" are more likely typos than intent.
bool ParseCount(std::string_view text, uint64_t& value) {
  if (text.empty() || text.size() > 20) return false;
  value = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return false;
    const uint64_t digit = static_cast<uint64_t>(c - '0');
    if (value > (kUnbounded - digit) / 10) return false;
    value = value * 10 + digit;
  }
  return true;
}

bool IsAddress(std::string_view address) {
  const size_t colon = address.rfind(':');
  if (colon == std::string_view::npos || colon == 0) return false;
  std::string_view host = address.substr(0, colon);
  const std::string_view port = address.substr(colon + 1);
  if (host.front() == '[') {  // [IPv6]
    if (host.size() < 3 || host.back() != ']') return false;
    host = host.substr(1, host.size() - 2);
  } else if (host.find(':') != std::string_view::npos) {
    return false;  // An unbracketed IPv6 address: where would its port start?
  }
  if (host.find_first_of(" \t[]") != std::string_view::npos) return false;
  uint64_t port_number = 0;
  return port.size() <= 5 && ParseCount(port, port_number) && port_number <= 65'535;
}

}  // namespace

bool IsHostPort(std::string_view address) { return IsAddress(address); }

std::span<const Field> Fields() { return kFields; }

const Field* FindField(std::string_view key) {
  for (const Field& field : kFields) {
    if (field.key == key) return &field;
  }
  return nullptr;
}

absl::Status SetField(const Field& field, std::string_view text, Options& options) {
  switch (field.kind) {
    case FieldKind::kAddress:
    case FieldKind::kAddressOrEmpty:
    case FieldKind::kPath:
    case FieldKind::kPathOrEmpty:
    case FieldKind::kChoice:
      options.*std::get<std::string Options::*>(field.member) = std::string(text);
      break;
    case FieldKind::kCount: {
      uint64_t value = 0;
      if (!ParseCount(text, value)) {
        // All digits but no fit in 64 bits is a range problem, anything else is not a number at all.
        const bool digits_only =
            !text.empty() && text.find_first_not_of("0123456789") == std::string_view::npos;
        if (digits_only) return OutOfRange(field, std::string(text));
        return absl::InvalidArgumentError(Quoted(text) + " is not a whole number; allowed " +
                                          AllowedRange(field));
      }
      LAWN_RETURN_IF_ERROR(StoreNumber(field, value, std::string(text), options));
      break;
    }
    case FieldKind::kBytes: {
      LAWN_ASSIGN_OR_RETURN(const uint64_t value, ParseBytes(text));
      LAWN_RETURN_IF_ERROR(StoreNumber(field, value, std::string(text), options));
      break;
    }
    case FieldKind::kDuration: {
      LAWN_ASSIGN_OR_RETURN(const nanoseconds value, ParseDuration(text));
      LAWN_RETURN_IF_ERROR(
          StoreNumber(field, static_cast<uint64_t>(value.count()), std::string(text), options));
      break;
    }
    case FieldKind::kDurability: {
      Durability durability;
      if (text == "sync") {
        durability = Durability::kSync;
      } else if (text == "interval") {
        durability = Durability::kInterval;
      } else if (text == "memory") {
        durability = Durability::kMemory;
      } else {
        return absl::InvalidArgumentError(Quoted(text) +
                                          " is not a durability; use sync, interval or memory");
      }
      options.*std::get<Durability Options::*>(field.member) = durability;
      break;
    }
    case FieldKind::kBool: {
      if (text != "true" && text != "false") {
        return absl::InvalidArgumentError(Quoted(text) + " is not a boolean; use true or false");
      }
      options.*std::get<bool Options::*>(field.member) = text == "true";
      break;
    }
  }
  return CheckField(field, options);
}

absl::Status CheckField(const Field& field, const Options& options) {
  switch (field.kind) {
    case FieldKind::kAddress:
    case FieldKind::kAddressOrEmpty: {
      const std::string& address = options.*std::get<std::string Options::*>(field.member);
      if (address.empty() && field.kind == FieldKind::kAddressOrEmpty) return absl::OkStatus();
      if (IsAddress(address)) return absl::OkStatus();
      return absl::InvalidArgumentError(
          Quoted(address) +
          " is not a host:port address; use e.g. 127.0.0.1:7070 or [::]:7070 (port 0 = any free port)" +
          (field.kind == FieldKind::kAddressOrEmpty ? ", or \"\" to disable" : ""));
    }
    case FieldKind::kPath:
      if (!(options.*std::get<std::string Options::*>(field.member)).empty()) return absl::OkStatus();
      return absl::InvalidArgumentError("an empty path is not allowed; give a directory");
    case FieldKind::kPathOrEmpty:
      return absl::OkStatus();
    case FieldKind::kChoice: {
      const std::string& value = options.*std::get<std::string Options::*>(field.member);
      if (std::find(field.choices.begin(), field.choices.end(), value) != field.choices.end()) {
        return absl::OkStatus();
      }
      return absl::InvalidArgumentError(Quoted(value) + " is not allowed; use " + JoinChoices(field.choices));
    }
    case FieldKind::kCount:
    case FieldKind::kBytes:
    case FieldKind::kDuration: {
      const std::optional<uint64_t> value = LoadNumber(field, options);
      if (!value.has_value()) return OutOfRange(field, FieldValueText(field, options));
      if (*value < field.min || *value > field.max) return OutOfRange(field, NumberText(field, *value));
      return absl::OkStatus();
    }
    case FieldKind::kDurability: {
      const Durability durability = options.*std::get<Durability Options::*>(field.member);
      if (DurabilityName(durability) != "unknown") return absl::OkStatus();
      return absl::InvalidArgumentError(std::to_string(static_cast<int>(durability)) +
                                        " is not a durability; use sync, interval or memory");
    }
    case FieldKind::kBool:
      return absl::OkStatus();
  }
  return absl::InternalError("config field '" + std::string(field.key) + "' has an unknown kind");
}

std::string FieldValueText(const Field& field, const Options& options) {
  switch (field.kind) {
    case FieldKind::kAddress:
    case FieldKind::kAddressOrEmpty:
    case FieldKind::kPath:
    case FieldKind::kPathOrEmpty:
    case FieldKind::kChoice:
      return options.*std::get<std::string Options::*>(field.member);
    case FieldKind::kDurability:
      return std::string(DurabilityName(options.*std::get<Durability Options::*>(field.member)));
    case FieldKind::kBool:
      return options.*std::get<bool Options::*>(field.member) ? "true" : "false";
    case FieldKind::kDuration:
      return FormatDuration(options.*std::get<nanoseconds Options::*>(field.member));
    case FieldKind::kCount:
    case FieldKind::kBytes:
      return NumberText(field, LoadNumber(field, options).value_or(0));
  }
  return "";
}

absl::Status WithPrefix(const absl::Status& status, const std::string& prefix) {
  if (status.ok()) return status;
  return absl::Status(status.code(), prefix + std::string(status.message()));
}

}  // namespace lawn::internal
