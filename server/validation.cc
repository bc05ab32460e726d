#include "server/validation.h"

namespace lawn {

namespace {

constexpr int64_t kMaxDurationSeconds = 36525LL * 24 * 3600;  // 100 Julian years: the longest any 100 years are.

std::string S(std::string_view v) { return std::string(v); }

}  // namespace

absl::StatusOr<std::string_view> ValidateNamespace(std::string_view ns) {
  if (ns.empty()) return kDefaultNamespace;
  if (ns.size() > kMaxNamespaceBytes) {
    return absl::InvalidArgumentError("namespace: " + std::to_string(ns.size()) + " characters; allowed 1.." +
                                      std::to_string(kMaxNamespaceBytes) + " of [a-z0-9._-] (empty = default)");
  }
  for (char c : ns) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
    if (!ok) {
      return absl::InvalidArgumentError("namespace: character '" + std::string(1, c) +
                                        "' is not allowed; use 1..64 of [a-z0-9._-] (empty = default)");
    }
  }
  return ns;
}

absl::Status ValidateId(std::string_view id) {
  if (id.empty()) return absl::InvalidArgumentError("id: must not be empty; allowed 1..256 bytes");
  if (id.size() > kMaxIdBytes) {
    return absl::InvalidArgumentError("id: " + std::to_string(id.size()) + " bytes; allowed 1..256 bytes");
  }
  return absl::OkStatus();
}

absl::StatusOr<uint64_t> ValidateDuration(std::string_view field, int64_t seconds, int32_t nanos,
                                          uint64_t min_ns) {
  const int64_t s = seconds;
  const int32_t n = nanos;
  if (n < -999'999'999 || n > 999'999'999 || (s > 0 && n < 0) || (s < 0 && n > 0)) {
    return absl::InvalidArgumentError(S(field) + ": malformed Duration (nanos out of range or sign mismatch)");
  }
  if (s < 0 || (s == 0 && n <= 0)) return absl::InvalidArgumentError(S(field) + ": must be > 0");
  if (s > kMaxDurationSeconds) return absl::InvalidArgumentError(S(field) + ": must be at most 100 years");
  const uint64_t ns = static_cast<uint64_t>(s) * 1'000'000'000ull + static_cast<uint64_t>(n);
  if (ns < min_ns) {
    return absl::InvalidArgumentError(S(field) + ": " + std::to_string(ns) + " ns is shorter than one tick (" +
                                      std::to_string(min_ns) + " ns)");
  }
  return ns;
}

absl::StatusOr<int64_t> ValidateDeadline(std::string_view field, int64_t seconds, int32_t nanos) {
  // Every instant representable as int64 ns since the epoch (1677-09-21T00:12:43.145224192Z ..
  // 2262-04-11T23:47:16.854775807Z) is accepted; pre-1970 deadlines are simply past.
  if (nanos < 0 || nanos > 999'999'999) {
    return absl::InvalidArgumentError(S(field) + ": nanos must be in 0..999999999");
  }
  const __int128 ns = static_cast<__int128>(seconds) * 1'000'000'000 + nanos;
  if (ns > INT64_MAX || ns < INT64_MIN) {
    return absl::InvalidArgumentError(S(field) + ": must be between 1678 and 2262 (int64 ns since the epoch)");
  }
  return static_cast<int64_t>(ns);
}

}  // namespace lawn
