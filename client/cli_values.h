// Values on lawnctl's command line: durations ("1.5s"), RFC 3339 deadlines and whole numbers, parsed exactly
// and with errors that say what is allowed; and durations printed back in the same form.
//
// Thread-safety: pure functions.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace lawn {

// A duration: one or more <number><unit> terms, the number optionally with a fraction, unit ns, us, ms, s, m
// or h ("250us", "1.5s", "1h30m"). Exact to the nanosecond; negative, unit-less, finer than 1ns or beyond
// ~292 years is INVALID_ARGUMENT.
absl::StatusOr<std::chrono::nanoseconds> ParseDurationArg(std::string_view text);

// The shortest text ParseDurationArg reads back as `d`: "0s", "250us", "1.5s", "1h30m" ("-2s" for a negative
// `d`, which ParseDurationArg refuses).
std::string FormatDurationArg(std::chrono::nanoseconds d);

// An RFC 3339 instant with a zone ("2025-01-31T12:00:00Z", "2025-01-31T13:00:00.25+01:00").
absl::StatusOr<std::chrono::system_clock::time_point> ParseDeadlineArg(std::string_view text);

// A whole number 0..max in plain decimal digits (no sign, no blanks); INVALID_ARGUMENT otherwise.
absl::StatusOr<uint64_t> ParseCountArg(std::string_view text, uint64_t max);

}  // namespace lawn
