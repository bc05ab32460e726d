// Loading lawnd's Options from YAML (a file or text) and from the command line; the unit parsers they share.
//
// Every loader starts from the defaults of Options, applies what it is given, then calls Validate() once, so
// an Options it returns is complete, in range and resolved (shards and max_pending_per_namespace are never
// 0). Every error is INVALID_ARGUMENT unless said otherwise, and its message names the config key (or flag)
// and says what is allowed, e.g.
//   config key 'tick': "5 parsecs" is not a duration; use a number with a unit: ns, us, ms, s, m, h
// yaml-cpp is an implementation detail: no yaml-cpp type or exception leaves this module.
//
// Thread-safety: every function is a pure function of its arguments (LoadOptionsFromFile also reads the
// file; Validate also reads the CPU count), safe to call from any thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "config/options.h"

namespace lawn {

// Parses a duration: a non-negative number, optionally with a decimal fraction, and a unit: ns, us, ms, s,
// m, h (e.g. "100ns", "250us", "1ms", "1.5s", "2m", "1h"; blanks around the text and before the unit are
// ignored). A unit is required: "30" is rejected rather than guessed. The fraction may not reach below 1ns.
// Errors: INVALID_ARGUMENT for anything else, for a negative duration and for one past ~292 years.
absl::StatusOr<std::chrono::nanoseconds> ParseDuration(std::string_view text);

// Parses a byte size: a non-negative integer, either plain (bytes) or with a unit: B; KiB, MiB, GiB, TiB
// (powers of 1024); KB, MB, GB, TB (powers of 1000). Units are case-sensitive ("256MiB", "1GiB", "64KiB",
// "1000000"). Errors: INVALID_ARGUMENT for anything else and for a size past 2^64 - 1.
absl::StatusOr<uint64_t> ParseBytes(std::string_view text);

// Formats a duration so that ParseDuration reads it back: the largest unit that divides it exactly, e.g.
// "1ms", "1500ms", "30s", "0s". REQUIRES: duration >= 0 (a negative one is formatted as "-" + ...).
std::string FormatDuration(std::chrono::nanoseconds duration);

// Formats a byte size so that ParseBytes reads it back: the largest binary unit that divides it exactly,
// else plain bytes, e.g. "64KiB", "256MiB", "1000".
std::string FormatBytes(uint64_t bytes);

// "sync", "interval" or "memory" (the YAML and flag spelling); "unknown" for a value outside the enum.
std::string_view DurabilityName(Durability durability);

// Checks every field against its allowed range (the table in config/REFERENCE.md) and resolves the derived
// defaults: shards = 0 becomes std::thread::hardware_concurrency() clamped to 1..256, and
// max_pending_per_namespace = 0 becomes max_pending_timers. Idempotent. On error `options` may already be
// partly resolved. Errors: INVALID_ARGUMENT naming the first bad key and its allowed values.
absl::Status Validate(Options& options);

// Parses a YAML mapping of config keys (see config/lawn.yaml) over the defaults, then Validate()s. An empty
// document or `{}` gives the defaults. Errors: INVALID_ARGUMENT for a YAML syntax error (with its line and
// column), a top level that is not a mapping, an unknown or repeated key, a value of the wrong shape (a list
// or a map, or no value at all) and a bad or out-of-range value.
absl::StatusOr<Options> LoadOptionsFromYaml(std::string_view yaml_text);

// Reads the file at `path` and does what LoadOptionsFromYaml does; error messages start with "<path>: ".
// Errors: NOT_FOUND if the file does not exist; INVALID_ARGUMENT if it is a directory; the errno-derived code
// (e.g. PERMISSION_DENIED) if it cannot be read; otherwise as LoadOptionsFromYaml.
absl::StatusOr<Options> LoadOptionsFromFile(const std::string& path);

// Parses lawnd's command line (argv[0] is the program name and is skipped): `--config PATH` loads a YAML
// file, then the override flags (--listen, --metrics-listen, --data-dir, --shards, --log-level,
// --log-format, --durability, --tick) replace its values, wherever they stand relative to --config. Each flag
// takes `--flag value` or `--flag=value`; a repeated flag keeps its last value. --help and -h are ignored
// here (see WantsHelp). The result is Validate()d once, after all overrides.
// Errors: INVALID_ARGUMENT for an unknown flag, a positional argument, a missing or bad value (naming the
// flag); a bad value that reached Validate names the config key; file errors as LoadOptionsFromFile.
absl::StatusOr<Options> ParseCommandLine(int argc, const char* const* argv);

// True if the command line asks for help (--help or -h, not as the value of another flag). main() checks it
// before ParseCommandLine, prints UsageText() and exits 0.
bool WantsHelp(int argc, const char* const* argv);

// The --help text: a usage line and every flag with its argument, meaning and default. Ends with "\n".
std::string UsageText();

// One line of `key=value` pairs, every field of `options` in declaration order, for the startup log, e.g.
// `listen=127.0.0.1:7070 metrics_listen=127.0.0.1:9464 ... tick=1ms ... durability=sync ...`. Durations and
// sizes use FormatDuration / FormatBytes; a string that is empty or holds a blank, '"' or '=' is quoted.
std::string DescribeOptions(const Options& options);

}  // namespace lawn
