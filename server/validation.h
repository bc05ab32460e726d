// Validation of client requests: every rule in one place, each failure an INVALID_ARGUMENT whose message
// names the field, says what was wrong and what is allowed.
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "google/protobuf/duration.pb.h"
#include "google/protobuf/timestamp.pb.h"

namespace lawn {

inline constexpr size_t kMaxIdBytes = 256;
inline constexpr size_t kMaxNamespaceBytes = 64;
inline constexpr std::string_view kDefaultNamespace = "default";

// Returns the namespace to use ("default" for empty) or INVALID_ARGUMENT.
absl::StatusOr<std::string_view> ValidateNamespace(std::string_view ns);
absl::Status ValidateId(std::string_view id);
// A Duration used as a ttl or interval: positive, normalized, at least `min_ns`, at most 100 years.
absl::StatusOr<uint64_t> ValidateDuration(std::string_view field, int64_t seconds, int32_t nanos,
                                          uint64_t min_ns);
inline absl::StatusOr<uint64_t> ValidateDuration(std::string_view field, const google::protobuf::Duration& d,
                                                 uint64_t min_ns) {
  return ValidateDuration(field, d.seconds(), d.nanos(), min_ns);
}
// A Timestamp deadline as Unix ns; must be representable as int64 ns (before 2262-04-11).
absl::StatusOr<int64_t> ValidateDeadline(std::string_view field, int64_t seconds, int32_t nanos);
inline absl::StatusOr<int64_t> ValidateDeadline(std::string_view field,
                                                const google::protobuf::Timestamp& t) {
  return ValidateDeadline(field, t.seconds(), t.nanos());
}

}  // namespace lawn
