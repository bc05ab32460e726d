#include "storage/store_batch.h"

#include <cstdlib>

#include "storage/varint.h"

namespace lawn {

namespace {

using internal::AppendVarint;
using internal::ZigZagDecode;
using internal::ZigZagEncode;

// Sets `bad` instead of reading past the end; the caller checks it once per operation.
struct Reader {
  std::string_view in;
  bool bad = false;
  uint64_t Varint() {
    uint64_t v = 0;
    if (!internal::ConsumeVarint(&in, &v)) bad = true;
    return v;
  }
  std::string_view Bytes() {
    const uint64_t n = Varint();
    if (n > in.size()) {
      bad = true;
      return {};
    }
    std::string_view s = in.substr(0, n);
    in.remove_prefix(n);
    return s;
  }
};

}  // namespace

void StoreBatch::PutBytes(std::string_view s) {
  AppendVarint(&rep_, s.size());
  rep_.append(s);
}

void StoreBatch::PutTimer(std::string_view key, int64_t deadline_unix_ns, uint64_t ttl_ns,
                          uint64_t interval_ns, std::string_view payload) {
  rep_.push_back(static_cast<char>(Op::kPutTimer));
  PutBytes(key);
  AppendVarint(&rep_, ZigZagEncode(deadline_unix_ns));
  AppendVarint(&rep_, ttl_ns);
  AppendVarint(&rep_, interval_ns);
  PutBytes(payload);
  ++count_;
  needs_sync_ = true;
}

void StoreBatch::DeleteTimer(std::string_view key, int64_t deadline_unix_ns) {
  rep_.push_back(static_cast<char>(Op::kDeleteTimer));
  PutBytes(key);
  AppendVarint(&rep_, ZigZagEncode(deadline_unix_ns));
  ++count_;
  needs_sync_ = true;
}

void StoreBatch::PutRecord(Op op, uint64_t id, std::string_view key, int64_t deadline_unix_ns, uint64_t ttl_ns,
                           uint64_t interval_ns, std::string_view payload, int64_t fired_at_unix_ns,
                           uint32_t attempt) {
  rep_.push_back(static_cast<char>(op));
  AppendVarint(&rep_, id);
  PutBytes(key);
  AppendVarint(&rep_, ZigZagEncode(deadline_unix_ns));
  AppendVarint(&rep_, ttl_ns);
  AppendVarint(&rep_, interval_ns);
  PutBytes(payload);
  AppendVarint(&rep_, ZigZagEncode(fired_at_unix_ns));
  AppendVarint(&rep_, attempt);
  ++count_;
  needs_sync_ = true;
}

void StoreBatch::PutExpiration(uint64_t delivery_id, std::string_view key, int64_t deadline_unix_ns,
                               uint64_t ttl_ns, uint64_t interval_ns, std::string_view payload,
                               int64_t fired_at_unix_ns, uint32_t attempt) {
  PutRecord(Op::kPutExpiration, delivery_id, key, deadline_unix_ns, ttl_ns, interval_ns, payload,
            fired_at_unix_ns, attempt);
}

void StoreBatch::DeleteExpiration(uint64_t delivery_id) {
  rep_.push_back(static_cast<char>(Op::kDeleteExpiration));
  AppendVarint(&rep_, delivery_id);
  ++count_;
}

void StoreBatch::PutIncoming(uint64_t staging_id, std::string_view key, int64_t deadline_unix_ns, uint64_t ttl_ns,
                             uint64_t interval_ns, std::string_view payload, int64_t fired_at_unix_ns,
                             uint32_t attempt) {
  PutRecord(Op::kPutIncoming, staging_id, key, deadline_unix_ns, ttl_ns, interval_ns, payload, fired_at_unix_ns,
            attempt);
  has_incoming_ = true;
}

void StoreBatch::DeleteIncoming(uint64_t staging_id) {
  rep_.push_back(static_cast<char>(Op::kDeleteIncoming));
  AppendVarint(&rep_, staging_id);
  ++count_;
  needs_sync_ = true;  // Unlike an ack: a staged record that came back would be adopted a second time.
  has_incoming_ = true;
}

void StoreBatch::ForEach(absl::FunctionRef<void(const Entry&)> visit) const {
  // The buffer is written only by this class, so a malformed one is a bug, not bad input.
  if (!ForEachIn(rep_, visit)) std::abort();
}

bool StoreBatch::ForEachIn(std::string_view data, absl::FunctionRef<void(const Entry&)> visit) {
  while (!data.empty()) {
    Entry e;
    if (!DecodeNext(&data, &e)) return false;
    visit(e);
  }
  return true;
}

bool StoreBatch::DecodeNext(std::string_view* data, Entry* out) {
  if (data->empty()) return false;
  Reader r{*data};
  Entry e{};
  e.op = static_cast<Op>(r.in.front());
  r.in.remove_prefix(1);
  switch (e.op) {
    case Op::kPutTimer:
      e.key = r.Bytes();
      e.deadline_unix_ns = ZigZagDecode(r.Varint());
      e.ttl_ns = r.Varint();
      e.interval_ns = r.Varint();
      e.payload = r.Bytes();
      break;
    case Op::kDeleteTimer:
      e.key = r.Bytes();
      e.deadline_unix_ns = ZigZagDecode(r.Varint());
      break;
    case Op::kPutExpiration:
    case Op::kPutIncoming:
      e.delivery_id = r.Varint();
      e.key = r.Bytes();
      e.deadline_unix_ns = ZigZagDecode(r.Varint());
      e.ttl_ns = r.Varint();
      e.interval_ns = r.Varint();
      e.payload = r.Bytes();
      e.fired_at_unix_ns = ZigZagDecode(r.Varint());
      e.attempt = static_cast<uint32_t>(r.Varint());
      break;
    case Op::kDeleteExpiration:
    case Op::kDeleteIncoming:
      e.delivery_id = r.Varint();
      break;
    default:
      return false;
  }
  if (r.bad) return false;
  *data = r.in;
  *out = e;
  return true;
}

}  // namespace lawn
