#include "client/proto_time.h"

#include <cstdint>

namespace lawn {

google::protobuf::Duration ToProtoDuration(std::chrono::nanoseconds d) {
  // duration_cast truncates toward zero, so the remainder has the sign of the seconds.
  const auto seconds = std::chrono::duration_cast<std::chrono::seconds>(d);
  google::protobuf::Duration out;
  out.set_seconds(seconds.count());
  out.set_nanos(static_cast<int32_t>((d - seconds).count()));
  return out;
}

std::chrono::nanoseconds FromProtoDuration(const google::protobuf::Duration& d) {
  return std::chrono::seconds(d.seconds()) + std::chrono::nanoseconds(d.nanos());
}

google::protobuf::Timestamp ToProtoTimestamp(std::chrono::system_clock::time_point t) {
  const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch());
  const auto seconds = std::chrono::floor<std::chrono::seconds>(ns);  // Floor: nanos are never negative.
  google::protobuf::Timestamp out;
  out.set_seconds(seconds.count());
  out.set_nanos(static_cast<int32_t>((ns - seconds).count()));
  return out;
}

std::chrono::system_clock::time_point FromProtoTimestamp(const google::protobuf::Timestamp& t) {
  return std::chrono::system_clock::time_point(
      std::chrono::duration_cast<std::chrono::system_clock::duration>(std::chrono::seconds(t.seconds()) +
                                                                      std::chrono::nanoseconds(t.nanos())));
}

}  // namespace lawn
