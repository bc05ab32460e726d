#include "storage/store_batch.h"

#include <cstdlib>

namespace lawn {

namespace {

uint64_t ZigZag(int64_t v) { return (static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63); }
int64_t UnZigZag(uint64_t v) { return static_cast<int64_t>(v >> 1) ^ -static_cast<int64_t>(v & 1); }

// The buffer is written only by this class, so a malformed one is a bug, not bad input.
struct Reader {
  std::string_view in;
  uint64_t Varint() {
    uint64_t v = 0;
    for (int shift = 0; shift < 64 && !in.empty(); shift += 7) {
      const uint8_t b = static_cast<uint8_t>(in.front());
      in.remove_prefix(1);
      v |= uint64_t(b & 0x7f) << shift;
      if ((b & 0x80) == 0) return v;
    }
    std::abort();
  }
  std::string_view Bytes() {
    const uint64_t n = Varint();
    if (n > in.size()) std::abort();
    std::string_view s = in.substr(0, n);
    in.remove_prefix(n);
    return s;
  }
};

}  // namespace

void StoreBatch::PutVarint(uint64_t v) {
  while (v >= 0x80) {
    rep_.push_back(static_cast<char>(v | 0x80));
    v >>= 7;
  }
  rep_.push_back(static_cast<char>(v));
}

void StoreBatch::PutBytes(std::string_view s) {
  PutVarint(s.size());
  rep_.append(s);
}

void StoreBatch::PutTimer(std::string_view key, int64_t deadline_unix_ns, uint64_t ttl_ns,
                          uint64_t interval_ns, std::string_view payload) {
  rep_.push_back(static_cast<char>(Op::kPutTimer));
  PutBytes(key);
  PutVarint(ZigZag(deadline_unix_ns));
  PutVarint(ttl_ns);
  PutVarint(interval_ns);
  PutBytes(payload);
  ++count_;
}

void StoreBatch::DeleteTimer(std::string_view key) {
  rep_.push_back(static_cast<char>(Op::kDeleteTimer));
  PutBytes(key);
  ++count_;
}

void StoreBatch::PutExpiration(uint64_t delivery_id, std::string_view key, int64_t deadline_unix_ns,
                               uint64_t ttl_ns, uint64_t interval_ns, std::string_view payload,
                               int64_t fired_at_unix_ns, uint32_t attempt) {
  rep_.push_back(static_cast<char>(Op::kPutExpiration));
  PutVarint(delivery_id);
  PutBytes(key);
  PutVarint(ZigZag(deadline_unix_ns));
  PutVarint(ttl_ns);
  PutVarint(interval_ns);
  PutBytes(payload);
  PutVarint(ZigZag(fired_at_unix_ns));
  PutVarint(attempt);
  ++count_;
}

void StoreBatch::DeleteExpiration(uint64_t delivery_id) {
  rep_.push_back(static_cast<char>(Op::kDeleteExpiration));
  PutVarint(delivery_id);
  ++count_;
}

void StoreBatch::ForEach(absl::FunctionRef<void(const Entry&)> visit) const {
  Reader r{rep_};
  while (!r.in.empty()) {
    Entry e{};
    e.op = static_cast<Op>(r.in.front());
    r.in.remove_prefix(1);
    switch (e.op) {
      case Op::kPutTimer:
        e.key = r.Bytes();
        e.deadline_unix_ns = UnZigZag(r.Varint());
        e.ttl_ns = r.Varint();
        e.interval_ns = r.Varint();
        e.payload = r.Bytes();
        break;
      case Op::kDeleteTimer:
        e.key = r.Bytes();
        break;
      case Op::kPutExpiration:
        e.delivery_id = r.Varint();
        e.key = r.Bytes();
        e.deadline_unix_ns = UnZigZag(r.Varint());
        e.ttl_ns = r.Varint();
        e.interval_ns = r.Varint();
        e.payload = r.Bytes();
        e.fired_at_unix_ns = UnZigZag(r.Varint());
        e.attempt = static_cast<uint32_t>(r.Varint());
        break;
      case Op::kDeleteExpiration:
        e.delivery_id = r.Varint();
        break;
      default:
        std::abort();
    }
    visit(e);
  }
}

}  // namespace lawn
