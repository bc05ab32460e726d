#include "client/cli_values.h"

#include <charconv>
#include <limits>

#include "absl/time/time.h"
#include "client/cat.h"

namespace lawn {
namespace {

using internal::Cat;

constexpr uint64_t kMaxNanos = static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
constexpr uint64_t kNanosPerUs = 1'000;
constexpr uint64_t kNanosPerMs = 1'000'000;
constexpr uint64_t kNanosPerSecond = 1'000'000'000;
constexpr uint64_t kNanosPerMinute = 60 * kNanosPerSecond;
constexpr uint64_t kNanosPerHour = 60 * kNanosPerMinute;

struct DurationUnit {
  std::string_view name;
  uint64_t nanos;
};
// Two-letter names first, so "ms" is not read as "m" followed by garbage.
constexpr DurationUnit kDurationUnits[] = {
    {"ns", 1},
    {"us", kNanosPerUs},
    {"ms", kNanosPerMs},
    {"h", kNanosPerHour},
    {"m", kNanosPerMinute},
    {"s", kNanosPerSecond},
};
constexpr std::string_view kDurationHint =
    "use a number and a unit (ns, us, ms, s, m, h), e.g. 500ms, 1.5s, 1h30m";

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

// `text` as a uint64_t: plain decimal digits only (no sign, no blanks); false if empty, not digits, or too
// big.
bool ParseDigits(std::string_view text, uint64_t& out) {
  const char* end = text.data() + text.size();
  const auto [ptr, error] = std::from_chars(text.data(), end, out);
  return !text.empty() && error == std::errc() && ptr == end;
}

// "<whole>.<fraction>" of `value` nanos in units of `unit` nanos (a power of ten), trailing zeros dropped.
std::string Decimal(uint64_t value, uint64_t unit) {
  std::string text = std::to_string(value / unit);
  uint64_t rest = value % unit;
  if (rest == 0) return text;
  std::string fraction;
  for (uint64_t place = unit / 10; place > 0; place /= 10) {
    fraction.push_back(static_cast<char>('0' + rest / place));
    rest %= place;
  }
  while (fraction.back() == '0') fraction.pop_back();
  return text + "." + fraction;
}

}  // namespace

absl::StatusOr<std::chrono::nanoseconds> ParseDurationArg(std::string_view text) {
  const std::string quoted = Cat("\"", text, "\"");
  if (text.empty()) return absl::InvalidArgumentError(Cat("an empty duration; ", kDurationHint));
  if (text.front() == '-') {
    return absl::InvalidArgumentError(Cat(quoted, " is negative; ", kDurationHint));
  }
  const auto not_a_duration = [&] {
    return absl::InvalidArgumentError(Cat(quoted, " is not a duration; ", kDurationHint));
  };
  const auto too_long = [&] {
    return absl::InvalidArgumentError(
        Cat(quoted, " is too long; the longest duration is ", kMaxNanos / kNanosPerHour, "h (292 years)"));
  };
  std::string_view rest = text;
  uint64_t total = 0;
  while (!rest.empty()) {
    // <whole>[.<fraction>]<unit>
    size_t n = 0;
    while (n < rest.size() && IsDigit(rest[n])) ++n;
    const std::string_view whole_digits = rest.substr(0, n);
    rest.remove_prefix(n);
    std::string_view fraction;
    if (!rest.empty() && rest.front() == '.') {
      rest.remove_prefix(1);
      n = 0;
      while (n < rest.size() && IsDigit(rest[n])) ++n;
      fraction = rest.substr(0, n);
      rest.remove_prefix(n);
      if (fraction.empty()) return not_a_duration();
    }
    if (whole_digits.empty()) return not_a_duration();
    const DurationUnit* unit = nullptr;
    for (const DurationUnit& u : kDurationUnits) {
      if (rest.starts_with(u.name)) {
        unit = &u;
        break;
      }
    }
    if (unit == nullptr) {
      if (rest.empty()) return absl::InvalidArgumentError(Cat(quoted, " has no unit; ", kDurationHint));
      return not_a_duration();
    }
    rest.remove_prefix(unit->name.size());

    uint64_t whole = 0;
    if (!ParseDigits(whole_digits, whole)) return too_long();  // Digits only: fails on overflow alone.
    // fraction_nanos = 0.<fraction> * unit, exact while each digit still names whole nanoseconds.
    while (!fraction.empty() && fraction.back() == '0') fraction.remove_suffix(1);
    uint64_t place = unit->nanos;
    uint64_t fraction_nanos = 0;
    for (char c : fraction) {
      if (place < 10) {
        return absl::InvalidArgumentError(Cat(quoted, " is finer than 1ns; use fewer decimals"));
      }
      place /= 10;
      fraction_nanos += static_cast<uint64_t>(c - '0') * place;
    }
    if (whole > (kMaxNanos - fraction_nanos) / unit->nanos) return too_long();
    const uint64_t term = whole * unit->nanos + fraction_nanos;
    if (term > kMaxNanos - total) return too_long();
    total += term;
  }
  return std::chrono::nanoseconds(static_cast<int64_t>(total));
}

std::string FormatDurationArg(std::chrono::nanoseconds d) {
  const int64_t count = d.count();
  if (count == 0) return "0s";
  // Unsigned magnitude: -INT64_MIN does not fit in int64_t.
  const uint64_t nanos = count < 0 ? 0 - static_cast<uint64_t>(count) : static_cast<uint64_t>(count);
  const std::string sign = count < 0 ? "-" : "";
  if (nanos < kNanosPerUs) return sign + std::to_string(nanos) + "ns";
  if (nanos < kNanosPerMs) return sign + Decimal(nanos, kNanosPerUs) + "us";
  if (nanos < kNanosPerSecond) return sign + Decimal(nanos, kNanosPerMs) + "ms";
  std::string text = sign;
  const uint64_t hours = nanos / kNanosPerHour;
  const uint64_t minutes = nanos % kNanosPerHour / kNanosPerMinute;
  const uint64_t second_nanos = nanos % kNanosPerMinute;
  if (hours > 0) text += Cat(hours, "h");
  if (minutes > 0) text += Cat(minutes, "m");
  if (second_nanos > 0) text += Decimal(second_nanos, kNanosPerSecond) + "s";
  return text;
}

absl::StatusOr<std::chrono::system_clock::time_point> ParseDeadlineArg(std::string_view text) {
  absl::Time t;
  std::string error;
  if (!absl::ParseTime(absl::RFC3339_full, std::string(text), &t, &error)) {
    return absl::InvalidArgumentError(Cat("\"", text, "\" is not an RFC 3339 time (", error,
                                          "); e.g. 2025-01-31T12:00:00Z or 2025-01-31T13:00:00.5+01:00"));
  }
  return absl::ToChronoTime(t);
}

absl::StatusOr<uint64_t> ParseCountArg(std::string_view text, uint64_t max) {
  uint64_t n = 0;
  if (!ParseDigits(text, n) || n > max) {
    return absl::InvalidArgumentError(Cat("\"", text, "\" is not a whole number in 0..", max));
  }
  return n;
}

}  // namespace lawn
