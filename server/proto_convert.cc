#include "server/proto_convert.h"

#include "server/runtime.h"

namespace lawn {

void SetDuration(uint64_t ns, google::protobuf::Duration* out) {
  out->set_seconds(static_cast<int64_t>(ns / 1'000'000'000));
  out->set_nanos(static_cast<int32_t>(ns % 1'000'000'000));
}

void SetTimestamp(int64_t unix_ns, google::protobuf::Timestamp* out) {
  int64_t seconds = unix_ns / 1'000'000'000;
  int64_t nanos = unix_ns % 1'000'000'000;
  if (nanos < 0) {  // Timestamp nanos are always non-negative.
    nanos += 1'000'000'000;
    --seconds;
  }
  out->set_seconds(seconds);
  out->set_nanos(static_cast<int32_t>(nanos));
}

int64_t TimestampNs(const google::protobuf::Timestamp& t) { return t.seconds() * 1'000'000'000LL + t.nanos(); }

void FillTimer(std::string_view key, std::string_view payload, int64_t deadline_unix_ns, uint64_t ttl_ns,
               uint64_t interval_ns, v1::Timer* out) {
  const auto [ns, id] = Runtime::SplitKey(key);
  FillTimerParts(ns, id, payload, deadline_unix_ns, ttl_ns, interval_ns, out);
}

void FillTimerParts(std::string_view ns, std::string_view id, std::string_view payload, int64_t deadline_unix_ns,
                    uint64_t ttl_ns, uint64_t interval_ns, v1::Timer* out) {
  out->set_namespace_(ns.data(), ns.size());
  out->set_id(id.data(), id.size());
  SetDuration(ttl_ns, out->mutable_ttl());
  SetTimestamp(deadline_unix_ns, out->mutable_deadline());
  out->set_payload(payload.data(), payload.size());
  if (interval_ns != 0) {
    SetDuration(interval_ns, out->mutable_interval());
  } else {
    out->clear_interval();
  }
}

grpc::Status ToGrpcStatus(const absl::Status& status) {
  if (status.ok()) return grpc::Status::OK;
  // absl and gRPC share the canonical code numbering.
  return grpc::Status(static_cast<grpc::StatusCode>(status.code()), std::string(status.message()));
}

std::string PrintableId(std::string_view id) {
  constexpr size_t kMax = 64;
  std::string out;
  for (size_t i = 0; i < id.size() && i < kMax; ++i) {
    const unsigned char c = static_cast<unsigned char>(id[i]);
    if (c >= 0x20 && c < 0x7f && c != '\\' && c != '\'') {
      out.push_back(static_cast<char>(c));
    } else {
      static const char kHex[] = "0123456789abcdef";
      out += "\\x";
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 15]);
    }
  }
  if (id.size() > kMax) out += "...";
  return out;
}

std::string EncodePageToken(std::string_view id) {
  static const char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(id.size() * 2);
  for (unsigned char c : id) {
    out.push_back(kHex[c >> 4]);
    out.push_back(kHex[c & 15]);
  }
  return out;
}

bool DecodePageToken(std::string_view token, std::string* id) {
  if (token.size() % 2 != 0 || token.size() > 2 * 256) return false;
  auto nibble = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
  };
  id->clear();
  for (size_t i = 0; i < token.size(); i += 2) {
    const int hi = nibble(token[i]), lo = nibble(token[i + 1]);
    if (hi < 0 || lo < 0) return false;
    id->push_back(static_cast<char>(hi << 4 | lo));
  }
  return true;
}

}  // namespace lawn
