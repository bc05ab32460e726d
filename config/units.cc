// Durations and byte sizes as config text: ParseDuration, ParseBytes and their inverses (config/config.h).
//
// Integer arithmetic only, so "0.1s" is exactly 100'000'000ns and every overflow is caught, not rounded.
#include <chrono>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "config/config.h"

namespace lawn {
namespace {

constexpr uint64_t kMaxNanos = static_cast<uint64_t>(std::numeric_limits<int64_t>::max());

struct DurationUnit {
  std::string_view name;
  uint64_t nanos;
  // Fraction digits that still name whole nanoseconds: the power of ten in `nanos` (6e10 = 6 * 10^10).
  int max_decimals;
};
// Largest first: FormatDuration picks the first unit that divides exactly.
constexpr DurationUnit kDurationUnits[] = {
    {"h", 3'600'000'000'000, 11}, {"m", 60'000'000'000, 10}, {"s", 1'000'000'000, 9},
    {"ms", 1'000'000, 6},         {"us", 1'000, 3},          {"ns", 1, 0},
};

struct ByteUnit {
  std::string_view name;
  uint64_t bytes;
};
constexpr uint64_t kKiB = 1024;
constexpr ByteUnit kBinaryUnitsLargestFirst[] = {
    {"TiB", kKiB* kKiB* kKiB* kKiB},
    {"GiB", kKiB* kKiB* kKiB},
    {"MiB", kKiB* kKiB},
    {"KiB", kKiB},
};
constexpr ByteUnit kOtherUnits[] = {
    {"B", 1}, {"KB", 1'000}, {"MB", 1'000'000}, {"GB", 1'000'000'000}, {"TB", 1'000'000'000'000},
};

const ByteUnit* FindByteUnit(std::string_view name) {
  for (const ByteUnit& unit : kBinaryUnitsLargestFirst) {
    if (unit.name == name) return &unit;
  }
  for (const ByteUnit& unit : kOtherUnits) {
    if (unit.name == name) return &unit;
  }
  return nullptr;
}

constexpr std::string_view kDurationHint = "use a number with a unit: ns, us, ms, s, m, h";
constexpr std::string_view kBytesHint =
    "use a whole number of bytes, optionally with a unit: B, KiB, MiB, GiB, TiB, KB, MB, GB, TB";

bool IsBlank(char c) { return c == ' ' || c == '\t'; }
bool IsDigit(char c) { return c >= '0' && c <= '9'; }

std::string_view Trim(std::string_view text) {
  while (!text.empty() && IsBlank(text.front())) text.remove_prefix(1);
  while (!text.empty() && IsBlank(text.back())) text.remove_suffix(1);
  return text;
}

std::string Quoted(std::string_view text) { return "\"" + std::string(text) + "\""; }

// Consumes the leading digits of `text` into `value`; false on overflow. Leaves `text` at the first
// non-digit.
bool ConsumeDigits(std::string_view& text, uint64_t& value, int& count) {
  value = 0;
  count = 0;
  while (!text.empty() && IsDigit(text.front())) {
    const uint64_t digit = static_cast<uint64_t>(text.front() - '0');
    if (value > (std::numeric_limits<uint64_t>::max() - digit) / 10) return false;
    value = value * 10 + digit;
    ++count;
    text.remove_prefix(1);
  }
  return true;
}

}  // namespace

absl::StatusOr<std::chrono::nanoseconds> ParseDuration(std::string_view text) {
  const std::string_view original = Trim(text);
  std::string_view rest = original;
  if (rest.empty())
    return absl::InvalidArgumentError("an empty value is not a duration; " + std::string(kDurationHint));
  if (rest.front() == '-') {
    return absl::InvalidArgumentError(Quoted(original) + " is negative; a duration is 0 or more, " +
                                      std::string(kDurationHint));
  }
  const auto not_a_duration = [&] {
    return absl::InvalidArgumentError(Quoted(original) + " is not a duration; " + std::string(kDurationHint));
  };
  const auto too_long = [&] {
    return absl::InvalidArgumentError(Quoted(original) + " is too long; the longest duration is " +
                                      std::to_string(kMaxNanos / kDurationUnits[0].nanos) + "h (292 years)");
  };

  uint64_t whole = 0;
  int whole_digits = 0;
  if (!ConsumeDigits(rest, whole, whole_digits)) return too_long();
  if (whole_digits == 0) return not_a_duration();
  std::string_view fraction;
  if (!rest.empty() && rest.front() == '.') {
    rest.remove_prefix(1);
    size_t n = 0;
    while (n < rest.size() && IsDigit(rest[n])) ++n;
    if (n == 0) return not_a_duration();
    fraction = rest.substr(0, n);
    rest.remove_prefix(n);
  }
  const std::string_view unit_name = Trim(rest);
  if (unit_name.empty()) {
    return absl::InvalidArgumentError(Quoted(original) + " has no unit; " + std::string(kDurationHint));
  }
  const DurationUnit* unit = nullptr;
  for (const DurationUnit& candidate : kDurationUnits) {
    if (candidate.name == unit_name) unit = &candidate;
  }
  if (unit == nullptr) return not_a_duration();

  // Trailing zeros of the fraction are free; past that, max_decimals digits keep the result whole in ns.
  while (!fraction.empty() && fraction.back() == '0') fraction.remove_suffix(1);
  if (static_cast<int>(fraction.size()) > unit->max_decimals) {
    return absl::InvalidArgumentError(Quoted(original) +
                                      " is finer than 1ns, the resolution; use fewer decimals");
  }
  // fraction_nanos = 0.<fraction> * unit = fraction_digits * (unit / 10^len): exact because len <=
  // max_decimals, and below one unit, so it cannot overflow on its own.
  uint64_t place = unit->nanos;
  uint64_t fraction_nanos = 0;
  for (char c : fraction) {
    place /= 10;
    fraction_nanos += static_cast<uint64_t>(c - '0') * place;
  }
  if (whole > (kMaxNanos - fraction_nanos) / unit->nanos) return too_long();
  return std::chrono::nanoseconds(static_cast<int64_t>(whole * unit->nanos + fraction_nanos));
}

absl::StatusOr<uint64_t> ParseBytes(std::string_view text) {
  const std::string_view original = Trim(text);
  std::string_view rest = original;
  if (rest.empty())
    return absl::InvalidArgumentError("an empty value is not a byte size; " + std::string(kBytesHint));
  const auto not_a_size = [&] {
    return absl::InvalidArgumentError(Quoted(original) + " is not a byte size; " + std::string(kBytesHint));
  };
  const auto too_large = [&] {
    return absl::InvalidArgumentError(Quoted(original) + " is too large; the largest byte size is " +
                                      std::to_string(std::numeric_limits<uint64_t>::max()));
  };
  uint64_t value = 0;
  int digits = 0;
  if (!ConsumeDigits(rest, value, digits)) return too_large();
  if (digits == 0) return not_a_size();
  const std::string_view unit_name = Trim(rest);
  if (unit_name.empty()) return value;
  const ByteUnit* unit = FindByteUnit(unit_name);
  if (unit == nullptr) return not_a_size();
  if (value > std::numeric_limits<uint64_t>::max() / unit->bytes) return too_large();
  return value * unit->bytes;
}

std::string FormatDuration(std::chrono::nanoseconds duration) {
  if (duration.count() == 0) return "0s";
  if (duration.count() < 0) {
    // -(INT64_MIN) does not exist; INT64_MIN ns is a whole number of nanoseconds only.
    if (duration == std::chrono::nanoseconds::min()) return std::to_string(duration.count()) + "ns";
    return "-" + FormatDuration(-duration);
  }
  const uint64_t nanos = static_cast<uint64_t>(duration.count());
  for (const DurationUnit& unit : kDurationUnits) {
    if (nanos % unit.nanos == 0) return std::to_string(nanos / unit.nanos) + std::string(unit.name);
  }
  return std::to_string(nanos) + "ns";  // Not reached: every count is a multiple of 1ns.
}

std::string FormatBytes(uint64_t bytes) {
  if (bytes == 0) return "0";
  // Binary units only: sizes in this config are powers of two far more often than powers of ten.
  for (const ByteUnit& unit : kBinaryUnitsLargestFirst) {
    if (bytes % unit.bytes == 0) return std::to_string(bytes / unit.bytes) + std::string(unit.name);
  }
  return std::to_string(bytes);
}

}  // namespace lawn
