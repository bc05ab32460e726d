// std::chrono <-> google.protobuf.Duration / Timestamp, for the client and lawnctl.
//
// Thread-safety: pure functions.
#pragma once

#include <chrono>

#include "google/protobuf/duration.pb.h"
#include "google/protobuf/timestamp.pb.h"

namespace lawn {

// Exact (nanosecond) conversions; a negative duration gets seconds and nanos of the same sign, as
// google.protobuf.Duration requires.
google::protobuf::Duration ToProtoDuration(std::chrono::nanoseconds d);
std::chrono::nanoseconds FromProtoDuration(const google::protobuf::Duration& d);

// Wall-clock instants; before 1970 the nanos stay in 0..999'999'999, as google.protobuf.Timestamp requires.
google::protobuf::Timestamp ToProtoTimestamp(std::chrono::system_clock::time_point t);
std::chrono::system_clock::time_point FromProtoTimestamp(const google::protobuf::Timestamp& t);

}  // namespace lawn
