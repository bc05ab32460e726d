#include "storage/record_coding.h"

namespace lawn::internal {

namespace {

bool ConsumeBytes(std::string_view* in, std::string_view* out) {
  uint64_t n = 0;
  if (!ConsumeVarint(in, &n) || n > in->size()) return false;
  *out = in->substr(0, n);
  in->remove_prefix(n);
  return true;
}

bool ConsumeVersion(std::string_view* in) {
  if (in->empty() || static_cast<uint8_t>(in->front()) != kRecordVersion) return false;
  in->remove_prefix(1);
  return true;
}

}  // namespace

void AppendVarint(std::string* out, uint64_t v) {
  char buf[10];
  size_t n = 0;
  while (v >= 0x80) {
    buf[n++] = static_cast<char>(v | 0x80);
    v >>= 7;
  }
  buf[n++] = static_cast<char>(v);
  out->append(buf, n);
}

bool ConsumeVarint(std::string_view* in, uint64_t* v) {
  const auto* p = reinterpret_cast<const uint8_t*>(in->data());
  const size_t limit = in->size() < 10 ? in->size() : 10;
  // Fast path: most values here (ttl 0, small intervals, lengths) fit in one byte.
  if (limit > 0 && p[0] < 0x80) {
    *v = p[0];
    in->remove_prefix(1);
    return true;
  }
  uint64_t result = 0;
  for (size_t i = 0; i < limit; ++i) {
    const uint64_t b = p[i];
    // The 10th byte carries bit 63 only; anything more would overflow 64 bits.
    if (i == 9 && b > 1) return false;
    result |= (b & 0x7f) << (7 * i);
    if (b < 0x80) {
      *v = result;
      in->remove_prefix(i + 1);
      return true;
    }
  }
  return false;
}

void AppendOutboxKey(std::string* out, uint64_t delivery_id) { AppendFixed64BigEndian(out, delivery_id); }

bool DecodeOutboxKey(std::string_view key, uint64_t* delivery_id) {
  return DecodeFixed64BigEndian(key, delivery_id);
}

void AppendFixed64BigEndian(std::string* out, uint64_t v) {
  char buf[8];
  for (int i = 7; i >= 0; --i) {
    buf[i] = static_cast<char>(v & 0xff);
    v >>= 8;
  }
  out->append(buf, 8);
}

bool DecodeFixed64BigEndian(std::string_view in, uint64_t* v) {
  if (in.size() != 8) return false;
  uint64_t r = 0;
  for (char c : in) r = (r << 8) | static_cast<uint8_t>(c);
  *v = r;
  return true;
}

void AppendTimerValue(std::string* out, int64_t deadline_unix_ns, uint64_t ttl_ns, uint64_t interval_ns,
                      std::string_view payload) {
  out->push_back(static_cast<char>(kRecordVersion));
  AppendVarint(out, ZigZagEncode(deadline_unix_ns));
  AppendVarint(out, ttl_ns);
  AppendVarint(out, interval_ns);
  out->append(payload);
}

bool DecodeTimerValue(std::string_view value, StoredTimer* timer) {
  uint64_t deadline = 0;
  if (!ConsumeVersion(&value) || !ConsumeVarint(&value, &deadline) ||
      !ConsumeVarint(&value, &timer->ttl_ns) || !ConsumeVarint(&value, &timer->interval_ns)) {
    return false;
  }
  timer->deadline_unix_ns = ZigZagDecode(deadline);
  timer->payload = value;
  return true;
}

void AppendExpirationValue(std::string* out, std::string_view key, int64_t deadline_unix_ns, uint64_t ttl_ns,
                           uint64_t interval_ns, std::string_view payload, int64_t fired_at_unix_ns,
                           uint32_t attempt) {
  out->push_back(static_cast<char>(kRecordVersion));
  AppendVarint(out, key.size());
  out->append(key);
  AppendVarint(out, ZigZagEncode(deadline_unix_ns));
  AppendVarint(out, ttl_ns);
  AppendVarint(out, interval_ns);
  AppendVarint(out, payload.size());
  out->append(payload);
  AppendVarint(out, ZigZagEncode(fired_at_unix_ns));
  AppendVarint(out, attempt);
}

bool DecodeExpirationValue(std::string_view value, StoredExpiration* expiration) {
  StoredTimer& t = expiration->timer;
  uint64_t deadline = 0;
  uint64_t fired_at = 0;
  uint64_t attempt = 0;
  if (!ConsumeVersion(&value) || !ConsumeBytes(&value, &t.key) || !ConsumeVarint(&value, &deadline) ||
      !ConsumeVarint(&value, &t.ttl_ns) || !ConsumeVarint(&value, &t.interval_ns) ||
      !ConsumeBytes(&value, &t.payload) || !ConsumeVarint(&value, &fired_at) ||
      !ConsumeVarint(&value, &attempt) || attempt > UINT32_MAX || !value.empty()) {
    return false;
  }
  t.deadline_unix_ns = ZigZagDecode(deadline);
  expiration->fired_at_unix_ns = ZigZagDecode(fired_at);
  expiration->attempt = static_cast<uint32_t>(attempt);
  return true;
}

}  // namespace lawn::internal
