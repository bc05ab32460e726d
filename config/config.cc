// YAML loading, Validate() and DescribeOptions() (config/config.h). The only file of lawn that sees yaml-cpp:
// every yaml-cpp exception is caught in ApplyYaml and becomes a Status.
#include "config/config.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
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
  for (const auto& entry : root) {
    if (!entry.first.IsScalar()) {
      return absl::InvalidArgumentError("config keys are plain names, but line " +
                                        std::to_string(entry.first.Mark().line + 1) + " has " +
                                        ShapeName(entry.first) + " as a key");
    }
    const std::string& key = entry.first.Scalar();
    const Field* field = internal::FindField(key);
    if (field == nullptr) {
      return absl::InvalidArgumentError("config key '" + key + "' is unknown; known keys: " + KnownKeys());
    }
    const size_t index = static_cast<size_t>(field - Fields().data());
    if (seen[index]) return absl::InvalidArgumentError("config key '" + key + "' appears twice; keep one");
    seen[index] = true;
    const YAML::Node& value = entry.second;
    if (!value.IsScalar()) {
      const Options defaults;
      return absl::InvalidArgumentError(KeyPrefix(key) + "expected one value, got " + ShapeName(value) +
                                        "; write e.g. `" + key + ": " +
                                        internal::FieldValueText(*field, defaults) + "` (the default)");
    }
    LAWN_RETURN_IF_ERROR(WithPrefix(internal::SetField(*field, value.Scalar(), options), KeyPrefix(key)));
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
  return line;
}

}  // namespace lawn
