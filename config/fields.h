// The table of config keys, internal to config/: one row per Options field, shared by the YAML loader, the
// command-line flags, Validate() and DescribeOptions(), so a key is parsed, checked and printed one way.
//
// Invariant: the table lists every Options field exactly once, in declaration order (config_test checks the
// keys against config/lawn.yaml and config/REFERENCE.md).
//
// Thread-safety: the table is constant; every function is pure.
#pragma once

#include <chrono>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <variant>

#include "absl/status/status.h"
#include "config/options.h"

namespace lawn::internal {

enum class FieldKind {
  kAddress,         // host:port, port 0..65535.
  kAddressOrEmpty,  // host:port, or "" (disabled).
  kPath,            // Any non-empty string.
  kPathOrEmpty,     // Any string; "" = not set.
  kChoice,          // One of `choices`.
  kCount,           // Unsigned integer in min..max.
  kBytes,           // Byte size (ParseBytes) in min..max.
  kDuration,        // Duration (ParseDuration) in min..max nanoseconds.
  kDurability,      // "sync" | "interval" | "memory".
  kBool,            // "true" | "false".
};

struct Field {
  // The YAML key; its flag, where there is one, spells '_' and '.' as '-'. "section.key" is `key` inside the
  // YAML map `section:` (e.g. tls.cert_file).
  std::string_view key;
  FieldKind kind;
  std::variant<std::string Options::*, uint32_t Options::*, uint64_t Options::*,
               std::chrono::nanoseconds Options::*, Durability Options::*, bool Options::*>
      member;
  uint64_t min = 0;  // kCount, kBytes, kDuration: allowed range, inclusive (nanoseconds for kDuration).
  uint64_t max = 0;
  std::string_view note = {};  // Said after the allowed range, e.g. "(0 = one per CPU core)".
  std::span<const std::string_view> choices = {};  // kChoice: the allowed strings.
};

// host:port (or [IPv6]:port), port 0..65535: what kAddress fields accept.
bool IsHostPort(std::string_view address);

// Every field, in Options declaration order.
std::span<const Field> Fields();

// The field whose key is `key`, or nullptr.
const Field* FindField(std::string_view key);

// Parses `text` as the value of `field`, stores it in `options` and checks it on its own (CheckField).
// Errors: INVALID_ARGUMENT whose message does not name the key: the caller adds "config key 'k': " or
// "flag --k: ", whichever the user wrote.
absl::Status SetField(const Field& field, std::string_view text, Options& options);

// Checks the value of `field` in `options` against its kind and range, alone (cross-field rules are in
// Validate). Errors: INVALID_ARGUMENT not naming the key, e.g. `5s is out of range; allowed 1us..1s`.
absl::Status CheckField(const Field& field, const Options& options);

// The value of `field` in `options` as config text that SetField reads back (unquoted).
std::string FieldValueText(const Field& field, const Options& options);

// `status` with `prefix` put in front of its message; OK stays OK.
absl::Status WithPrefix(const absl::Status& status, const std::string& prefix);

// Reads the YAML file at `path` and applies its keys over `options`, without Validate(). Error messages start
// with "<path>: ". Errors: as LoadOptionsFromFile (config/config.h).
absl::Status ApplyYamlFile(const std::string& path, Options& options);

}  // namespace lawn::internal
