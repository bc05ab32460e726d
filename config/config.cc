// YAML loading, Validate() and DescribeOptions() (config/config.h). The only file of lawn that sees yaml-cpp:
// every yaml-cpp exception is caught in ApplyYaml and becomes a Status.
#include "config/config.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cerrno>
#include <cstdint>
#include <exception>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_split.h"
#include "base/namespace_pattern.h"
#include "base/status_macros.h"
#include "config/fields.h"
#include "config/options.h"

namespace lawn {
namespace {

using internal::Field;
using internal::Fields;
using internal::WithPrefix;

constexpr uint32_t kMaxShards = 256;

std::string KeyPrefix(std::string_view key) { return "config key '" + std::string(key) + "': "; }

std::string ShapeName(const YAML::Node& node) {
  if (node.IsMap()) return "a map";
  if (node.IsSequence()) return "a list";
  if (node.IsNull()) return "nothing";
  return "a single value";
}

std::string KnownKeys() {
  std::string keys;
  for (const Field& field : Fields()) {
    if (!keys.empty()) keys += ", ";
    keys += field.key;
  }
  return keys;
}

// True if some key of the table is "<section>.<name>".
bool IsSection(std::string_view section) {
  for (const Field& field : Fields()) {
    if (field.key.size() > section.size() && field.key.substr(0, section.size()) == section &&
        field.key[section.size()] == '.') {
      return true;
    }
  }
  return false;
}

std::string LineOf(const YAML::Node& node) { return std::to_string(node.Mark().line + 1); }

// Parses the `rate_limits:` list (Options::rate_limits documents it).
absl::Status ApplyRateLimits(const YAML::Node& list, Options& options) {
  const std::string example =
      "; write e.g.\n  rate_limits:\n    - namespaces: [\"billing-*\"]\n      starts_per_second: 1000\n"
      "      burst: 2000";
  if (!list.IsSequence()) {
    return absl::InvalidArgumentError(KeyPrefix("rate_limits") + "expected a list, got " + ShapeName(list) +
                                      example);
  }
  options.rate_limits.clear();
  for (size_t i = 0; i < list.size(); ++i) {
    const YAML::Node& item = list[i];
    const std::string where = KeyPrefix("rate_limits") + "entry " + std::to_string(i + 1) + " (line " +
                              LineOf(item) + "): ";
    if (!item.IsMap()) return absl::InvalidArgumentError(where + "expected a map, got " + ShapeName(item) + example);
    RateLimit limit;
    bool has_rate = false;
    for (const auto& entry : item) {
      const std::string key = entry.first.IsScalar() ? entry.first.Scalar() : "";
      const YAML::Node& value = entry.second;
      if (key == "namespaces") {
        if (!value.IsSequence() || value.size() == 0) {
          return absl::InvalidArgumentError(where + "namespaces: expected a non-empty list of patterns");
        }
        for (const auto& pattern : value) {
          const std::string text = pattern.IsScalar() ? pattern.Scalar() : "";
          if (std::string error = NamespacePatternError(text); !error.empty()) {
            return absl::InvalidArgumentError(where + "namespaces: " + error);
          }
          limit.namespaces.push_back(text);
        }
      } else if (key == "starts_per_second") {
        char* end = nullptr;
        const std::string text = value.IsScalar() ? value.Scalar() : "";
        const double rate = std::strtod(text.c_str(), &end);
        if (text.empty() || end != text.c_str() + text.size() || !(rate >= 0.001 && rate <= 1e9)) {
          return absl::InvalidArgumentError(where + "starts_per_second: \"" + text +
                                            "\" is not allowed; use a number in 0.001..1000000000");
        }
        limit.starts_per_second = rate;
        has_rate = true;
      } else if (key == "burst") {
        const std::string text = value.IsScalar() ? value.Scalar() : "";
        const bool digits = !text.empty() && text.size() <= 10 &&
                            text.find_first_not_of("0123456789") == std::string::npos;
        const uint64_t burst = digits ? std::stoull(text) : 0;  // At most 10 digits: no overflow.
        if (burst < 1 || burst > 1'000'000'000) {
          return absl::InvalidArgumentError(where + "burst: \"" + text +
                                            "\" is not allowed; use a whole number in 1..1000000000");
        }
        limit.burst = burst;
      } else {
        return absl::InvalidArgumentError(where + "unknown key '" + key +
                                          "'; known keys: namespaces, starts_per_second, burst");
      }
    }
    if (limit.namespaces.empty() || !has_rate) {
      return absl::InvalidArgumentError(where + "namespaces and starts_per_second are required" + example);
    }
    if (limit.burst == 0) limit.burst = std::max<uint64_t>(1, static_cast<uint64_t>(std::ceil(limit.starts_per_second)));
    options.rate_limits.push_back(std::move(limit));
  }
  return absl::OkStatus();
}

// Applies one `key: value` of the YAML document (key may be "section.name"); `seen` marks keys already set.
absl::Status ApplyKey(const std::string& key, const YAML::Node& value, std::vector<bool>& seen, Options& options) {
  const Field* field = internal::FindField(key);
  if (field == nullptr) {
    return absl::InvalidArgumentError("config key '" + key + "' is unknown; known keys: " + KnownKeys());
  }
  const size_t index = static_cast<size_t>(field - Fields().data());
  if (seen[index]) return absl::InvalidArgumentError("config key '" + key + "' appears twice; keep one");
  seen[index] = true;
  if (!value.IsScalar()) {
    const Options defaults;
    return absl::InvalidArgumentError(KeyPrefix(key) + "expected one value, got " + ShapeName(value) +
                                      "; write e.g. `" + key + ": " + internal::FieldValueText(*field, defaults) +
                                      "` (the default)");
  }
  return WithPrefix(internal::SetField(*field, value.Scalar(), options), KeyPrefix(key));
}

// Applies every key of the YAML document `text` over `options`, without Validate(). May throw yaml-cpp's
// exceptions; ApplyYaml catches them.
absl::Status ApplyYamlOrThrow(std::string_view text, Options& options) {
  const YAML::Node root = YAML::Load(std::string(text));
  if (root.IsNull()) return absl::OkStatus();  // An empty document (or one of comments only): the defaults.
  if (!root.IsMap()) {
    return absl::InvalidArgumentError("config must be a map of `key: value` lines, not " + ShapeName(root));
  }
  // yaml-cpp keeps both entries of a repeated key; which one wins would be an accident, so refuse.
  std::vector<bool> seen(Fields().size(), false);
  bool seen_rate_limits = false;
  for (const auto& entry : root) {
    if (!entry.first.IsScalar()) {
      return absl::InvalidArgumentError("config keys are plain names, but line " + LineOf(entry.first) +
                                        " has " + ShapeName(entry.first) + " as a key");
    }
    const std::string& key = entry.first.Scalar();
    if (key == "rate_limits") {
      if (seen_rate_limits) return absl::InvalidArgumentError("config key 'rate_limits' appears twice; keep one");
      seen_rate_limits = true;
      LAWN_RETURN_IF_ERROR(ApplyRateLimits(entry.second, options));
      continue;
    }
    if (IsSection(key)) {  // tls:, auth:: a map of the section's keys.
      if (!entry.second.IsMap()) {
        return absl::InvalidArgumentError("config section '" + key + "' must be a map of `key: value` lines, not " +
                                          ShapeName(entry.second));
      }
      for (const auto& inner : entry.second) {
        const std::string inner_key = inner.first.IsScalar() ? inner.first.Scalar() : "?";
        if (key == "cluster" && inner_key == "etcd_endpoints" && inner.second.IsSequence()) {
          // The one list-valued key of a section: kept as the comma-separated string a flag gives.
          std::string joined;
          for (const auto& endpoint : inner.second) {
            if (!endpoint.IsScalar() || endpoint.Scalar().empty() || endpoint.Scalar().find(',') != std::string::npos) {
              return absl::InvalidArgumentError(KeyPrefix("cluster.etcd_endpoints") +
                                                "expected a list of host:port strings, e.g. [\"127.0.0.1:2379\"]");
            }
            joined += (joined.empty() ? "" : ",") + endpoint.Scalar();
          }
          LAWN_RETURN_IF_ERROR(ApplyKey(key + "." + inner_key, YAML::Node(joined), seen, options));
          continue;
        }
        LAWN_RETURN_IF_ERROR(ApplyKey(key + "." + inner_key, inner.second, seen, options));
      }
      continue;
    }
    LAWN_RETURN_IF_ERROR(ApplyKey(key, entry.second, seen, options));
  }
  return absl::OkStatus();
}

absl::Status ApplyYaml(std::string_view text, Options& options) {
  try {
    return ApplyYamlOrThrow(text, options);
  } catch (const YAML::ParserException& e) {
    std::string where;
    if (!e.mark.is_null()) {
      where = " at line " + std::to_string(e.mark.line + 1) + ", column " + std::to_string(e.mark.column + 1);
    }
    return absl::InvalidArgumentError("YAML syntax error" + where + ": " + e.msg);
  } catch (const std::exception& e) {
    return absl::InvalidArgumentError(std::string("cannot read the YAML config: ") + e.what());
  } catch (...) {
    return absl::InternalError("cannot read the YAML config: unknown exception");
  }
}

absl::StatusOr<std::string> ReadFile(const std::string& path) {
  std::error_code error;
  const std::filesystem::file_status status = std::filesystem::status(path, error);
  if (status.type() == std::filesystem::file_type::not_found) {
    return absl::NotFoundError("config file '" + path + "' does not exist");
  }
  if (status.type() == std::filesystem::file_type::directory) {
    return absl::InvalidArgumentError("config file '" + path + "' is a directory");
  }
  errno = 0;
  std::ifstream in(path, std::ios::binary);
  const auto failure = [&path](std::string_view what) {
    const std::string message = "cannot " + std::string(what) + " config file '" + path + "'";
    return errno != 0 ? absl::ErrnoToStatus(errno, message) : absl::UnknownError(message);
  };
  if (!in.is_open()) return failure("open");
  std::string text{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  if (in.bad()) return failure("read");
  return text;
}

}  // namespace

namespace internal {

absl::Status ApplyYamlFile(const std::string& path, Options& options) {
  LAWN_ASSIGN_OR_RETURN(const std::string text, ReadFile(path));
  return WithPrefix(ApplyYaml(text, options), path + ": ");
}

}  // namespace internal

std::string_view DurabilityName(Durability durability) {
  switch (durability) {
    case Durability::kSync:
      return "sync";
    case Durability::kInterval:
      return "interval";
    case Durability::kMemory:
      return "memory";
  }
  return "unknown";
}

// A cluster or member name: it becomes part of etcd keys, so a plain word.
bool IsClusterName(std::string_view name) {
  if (name.empty() || name.size() > 63) return false;
  for (char c : name) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-')) return false;
  }
  return true;
}

// Cross-field rules of the `cluster:` section; without etcd endpoints the section is ignored.
absl::Status ValidateCluster(const Options& options) {
  if (options.cluster_etcd_endpoints.empty()) return absl::OkStatus();
  for (absl::string_view piece : absl::StrSplit(options.cluster_etcd_endpoints, ',')) {
    const std::string_view endpoint(piece.data(), piece.size());
    if (!internal::IsHostPort(endpoint)) {
      return absl::InvalidArgumentError(KeyPrefix("cluster.etcd_endpoints") + "\"" + std::string(endpoint) +
                                        "\" is not host:port; write e.g. 127.0.0.1:2379");
    }
  }
  if (!IsClusterName(options.cluster_name)) {
    return absl::InvalidArgumentError(KeyPrefix("cluster.name") + "\"" + options.cluster_name +
                                      "\" is not allowed; use 1..63 of [a-z0-9._-]");
  }
  if (!IsClusterName(options.cluster_member)) {
    return absl::InvalidArgumentError(KeyPrefix("cluster.member") + "\"" + options.cluster_member +
                                      "\" is not allowed; cluster mode needs this member's stable name, 1..63 of "
                                      "[a-z0-9._-] (the pod name in a StatefulSet)");
  }
  if (options.cluster_advertise.empty()) {
    return absl::InvalidArgumentError(KeyPrefix("cluster.advertise") +
                                      "cluster mode needs the host:port the other members reach this one at");
  }
  if (options.cluster_lease_ttl % std::chrono::seconds(1) != std::chrono::nanoseconds(0)) {
    return absl::InvalidArgumentError(KeyPrefix("cluster.lease_ttl") + "etcd leases are whole seconds; write e.g. 10s");
  }
  if (!options.tls_cert_file.empty() && options.cluster_tls_ca_file.empty()) {
    return absl::InvalidArgumentError(
        "config key 'cluster.tls_ca_file': with tls on, members forward calls to each other over TLS and need the "
        "CA certificate(s) that the other members' certificates chain to");
  }
  if (options.durability == Durability::kMemory) {
    return absl::InvalidArgumentError(
        "config section 'cluster': cluster mode needs a durable store (durability sync or interval), since a "
        "member that restarts keeps its partitions");
  }
  return absl::OkStatus();
}

absl::Status Validate(Options& options) {
  for (const Field& field : Fields()) {
    LAWN_RETURN_IF_ERROR(WithPrefix(internal::CheckField(field, options), KeyPrefix(field.key)));
  }
  if (options.shards == 0) {
    // hardware_concurrency() may be 0 ("unknown"); a machine past 256 cores still gets the maximum.
    options.shards = std::clamp<uint32_t>(std::thread::hardware_concurrency(), 1, kMaxShards);
  }
  if (options.max_pending_per_namespace == 0) {
    options.max_pending_per_namespace = options.max_pending_timers;
  } else if (options.max_pending_per_namespace > options.max_pending_timers) {
    return absl::InvalidArgumentError(
        KeyPrefix("max_pending_per_namespace") + std::to_string(options.max_pending_per_namespace) +
        " is more than max_pending_timers (" + std::to_string(options.max_pending_timers) +
        "); allowed 1..max_pending_timers, or 0 = same as max_pending_timers");
  }
  if (options.max_pending_bytes_per_namespace == 0) {
    options.max_pending_bytes_per_namespace = options.max_pending_bytes;
  } else if (options.max_pending_bytes_per_namespace > options.max_pending_bytes) {
    return absl::InvalidArgumentError(
        KeyPrefix("max_pending_bytes_per_namespace") + FormatBytes(options.max_pending_bytes_per_namespace) +
        " is more than max_pending_bytes (" + FormatBytes(options.max_pending_bytes) +
        "); allowed up to max_pending_bytes, or 0 = same as max_pending_bytes");
  }
  if (options.max_outbox_bytes < options.max_outbox_bytes_per_namespace) {
    return absl::InvalidArgumentError(
        KeyPrefix("max_outbox_bytes") + FormatBytes(options.max_outbox_bytes) +
        " is less than max_outbox_bytes_per_namespace (" + FormatBytes(options.max_outbox_bytes_per_namespace) +
        "); the total must hold at least one full namespace");
  }
  // One expiration of the largest payload must fit, or a namespace with such timers could never fire.
  if (options.max_outbox_bytes_per_namespace < uint64_t{options.max_payload_bytes} + 64 * 1024) {
    return absl::InvalidArgumentError(
        KeyPrefix("max_outbox_bytes_per_namespace") + FormatBytes(options.max_outbox_bytes_per_namespace) +
        " cannot hold one expiration of max_payload_bytes (" + FormatBytes(options.max_payload_bytes) +
        ") plus 64KiB; raise it or lower max_payload_bytes");
  }
  if (options.tls_cert_file.empty() != options.tls_key_file.empty()) {
    return absl::InvalidArgumentError(
        "config keys 'tls.cert_file' and 'tls.key_file': set both (TLS) or neither (plaintext)");
  }
  if (!options.tls_client_ca_file.empty() && options.tls_cert_file.empty()) {
    return absl::InvalidArgumentError(
        "config key 'tls.client_ca_file': client certificates need TLS; set tls.cert_file and tls.key_file too");
  }
  LAWN_RETURN_IF_ERROR(ValidateCluster(options));
  const bool any_port = options.listen.size() >= 2 && options.listen.compare(options.listen.size() - 2, 2, ":0") == 0;
  if (!options.health_listen.empty() && options.health_listen == options.listen && !any_port) {
    return absl::InvalidArgumentError("config key 'health_listen': must differ from listen (" + options.listen + ")");
  }
  // A payload travels inside a gRPC message with its envelope, so it must be smaller than the message limit.
  if (options.max_payload_bytes >= options.max_message_bytes) {
    return absl::InvalidArgumentError(
        KeyPrefix("max_payload_bytes") + FormatBytes(options.max_payload_bytes) +
        " must be smaller than max_message_bytes (" + FormatBytes(options.max_message_bytes) +
        "); lower it or raise max_message_bytes");
  }
  return absl::OkStatus();
}

absl::StatusOr<Options> LoadOptionsFromYaml(std::string_view yaml_text) {
  Options options;
  LAWN_RETURN_IF_ERROR(ApplyYaml(yaml_text, options));
  LAWN_RETURN_IF_ERROR(Validate(options));
  return options;
}

absl::StatusOr<Options> LoadOptionsFromFile(const std::string& path) {
  Options options;
  LAWN_RETURN_IF_ERROR(internal::ApplyYamlFile(path, options));
  LAWN_RETURN_IF_ERROR(WithPrefix(Validate(options), path + ": "));
  return options;
}

std::string DescribeOptions(const Options& options) {
  std::string line;
  for (const Field& field : Fields()) {
    if (!line.empty()) line += ' ';
    std::string value = internal::FieldValueText(field, options);
    if (value.empty() || value.find_first_of(" \t\"=") != std::string::npos) {
      std::string quoted = "\"";
      for (char c : value) {
        if (c == '"' || c == '\\') quoted += '\\';
        quoted += c;
      }
      value = quoted + "\"";
    }
    line += std::string(field.key) + "=" + value;
  }
  line += " rate_limits=" + std::to_string(options.rate_limits.size());
  return line;
}

}  // namespace lawn
