// Conversions between lawn's internal values and lawn.v1 protobuf messages, and absl::Status -> grpc::Status.
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "grpcpp/support/status.h"
#include "lawn/v1/timer.pb.h"

namespace lawn {

void SetDuration(uint64_t ns, google::protobuf::Duration* out);
void SetTimestamp(int64_t unix_ns, google::protobuf::Timestamp* out);
int64_t TimestampNs(const google::protobuf::Timestamp& t);

// Fills a Timer from a key (namespace \0 id) and its fields; interval 0 leaves `interval` unset.
void FillTimer(std::string_view key, std::string_view payload, int64_t deadline_unix_ns, uint64_t ttl_ns,
               uint64_t interval_ns, v1::Timer* out);
// The same from the key's two parts.
void FillTimerParts(std::string_view ns, std::string_view id, std::string_view payload, int64_t deadline_unix_ns,
                    uint64_t ttl_ns, uint64_t interval_ns, v1::Timer* out);

grpc::Status ToGrpcStatus(const absl::Status& status);

// Printable form of an id (bytes) for error messages: C escapes, truncated.
std::string PrintableId(std::string_view id);

// Page tokens: the last id of a page, hex-encoded.
std::string EncodePageToken(std::string_view id);
bool DecodePageToken(std::string_view token, std::string* id);

}  // namespace lawn
