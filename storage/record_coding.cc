#include "storage/record_coding.h"

#include <cstdint>
#include <string>
#include <string_view>

#include "storage/varint.h"

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

void AppendOutboxKey(std::string* out, uint64_t delivery_id) { AppendFixed64BigEndian(out, delivery_id); }

bool DecodeOutboxKey(std::string_view key, uint64_t* delivery_id) {
  return DecodeFixed64BigEndian(key, delivery_id);
}

void AppendTimerKey(std::string* out, int64_t deadline_unix_ns, std::string_view key) {
  AppendFixed64BigEndian(out, static_cast<uint64_t>(deadline_unix_ns) ^ (uint64_t{1} << 63));
  out->append(key);
}

bool DecodeTimerKey(std::string_view stored, int64_t* deadline_unix_ns, std::string_view* key) {
  uint64_t flipped = 0;
  if (stored.size() <= kTimerKeyDeadlineSize ||
      !DecodeFixed64BigEndian(stored.substr(0, kTimerKeyDeadlineSize), &flipped)) {
    return false;
  }
  *deadline_unix_ns = static_cast<int64_t>(flipped ^ (uint64_t{1} << 63));
  *key = stored.substr(kTimerKeyDeadlineSize);
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
