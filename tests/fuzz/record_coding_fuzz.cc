// Fuzz target: the decoders of the records lawnd keeps on disk (storage/record_coding.h, storage/FORMAT.md).
//
// A data dir can be damaged or hand-edited, so every decoder runs on the raw input and must never crash or
// read outside it. Checked:
//   * decode -> encode -> decode gives the same fields, and the re-encoding is no longer than the input (the
//     encoder writes minimal varints; FORMAT.md lets a reader accept longer ones);
//   * every view a decoder returns points into its input;
//   * an expiration record decodes only if consumed exactly: its strict prefixes and the record with a byte
//     appended are refused;
//   * encode -> decode is exact for values taken from the input (FuzzedDataProvider), bit for bit.
#include <fuzzer/FuzzedDataProvider.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "storage/record_coding.h"
#include "storage/timer_store.h"
#include "tests/fuzz/fuzz_check.h"

namespace lawn::internal {
namespace {

bool Within(std::string_view part, std::string_view whole) {
  return part.empty() || (part.data() >= whole.data() && part.data() + part.size() <= whole.data() + whole.size());
}

bool SameTimer(const StoredTimer& a, const StoredTimer& b) {
  return a.key == b.key && a.deadline_unix_ns == b.deadline_unix_ns && a.ttl_ns == b.ttl_ns &&
         a.interval_ns == b.interval_ns && a.payload == b.payload;
}

bool SameExpiration(const StoredExpiration& a, const StoredExpiration& b) {
  return SameTimer(a.timer, b.timer) && a.fired_at_unix_ns == b.fired_at_unix_ns && a.attempt == b.attempt;
}

void DecodeRaw(std::string_view in) {
  {
    std::string_view rest = in;
    uint64_t v = 0;
    if (ConsumeVarint(&rest, &v)) {
      const size_t used = in.size() - rest.size();
      FUZZ_CHECK(used >= 1 && used <= 10);
      std::string enc;
      AppendVarint(&enc, v);
      FUZZ_CHECK(enc.size() <= used);
      std::string_view enc_view = enc;
      uint64_t back = 0;
      FUZZ_CHECK(ConsumeVarint(&enc_view, &back) && back == v && enc_view.empty());
    }
  }
  {
    uint64_t id = 0;
    const bool ok = DecodeOutboxKey(in, &id);
    FUZZ_CHECK(ok == (in.size() == kOutboxKeySize));
    if (ok) {
      std::string enc;
      AppendOutboxKey(&enc, id);
      FUZZ_CHECK(enc == in);
    }
  }
  {
    uint64_t v = 0;
    if (DecodeFixed64BigEndian(in, &v)) {
      std::string enc;
      AppendFixed64BigEndian(&enc, v);
      FUZZ_CHECK(enc == in);
    }
  }
  {
    int64_t deadline = 0;
    std::string_view key;
    const bool ok = DecodeTimerKey(in, &deadline, &key);
    FUZZ_CHECK(ok == (in.size() > kTimerKeyDeadlineSize));
    if (ok) {
      FUZZ_CHECK(Within(key, in) && key.size() == in.size() - kTimerKeyDeadlineSize);
      std::string enc;
      AppendTimerKey(&enc, deadline, key);
      FUZZ_CHECK(enc == in);
    }
  }
  {
    StoredTimer t;
    if (DecodeTimerValue(in, &t)) {
      FUZZ_CHECK(!in.empty() && static_cast<uint8_t>(in[0]) == kRecordVersion);
      FUZZ_CHECK(Within(t.payload, in));
      FUZZ_CHECK(t.payload.empty() || t.payload.data() + t.payload.size() == in.data() + in.size(),
                 "the payload runs to the end of the value");
      std::string enc;
      AppendTimerValue(&enc, t.deadline_unix_ns, t.ttl_ns, t.interval_ns, t.payload);
      FUZZ_CHECK(enc.size() <= in.size());
      StoredTimer back;
      FUZZ_CHECK(DecodeTimerValue(enc, &back) && SameTimer(t, back));
    }
  }
  {
    StoredExpiration e;
    if (DecodeExpirationValue(in, &e)) {
      FUZZ_CHECK(static_cast<uint8_t>(in[0]) == kRecordVersion);
      FUZZ_CHECK(Within(e.timer.key, in) && Within(e.timer.payload, in));
      std::string enc;
      AppendExpirationValue(&enc, e.timer.key, e.timer.deadline_unix_ns, e.timer.ttl_ns, e.timer.interval_ns,
                            e.timer.payload, e.fired_at_unix_ns, e.attempt);
      FUZZ_CHECK(enc.size() <= in.size());
      StoredExpiration back;
      FUZZ_CHECK(DecodeExpirationValue(enc, &back) && SameExpiration(e, back));
      StoredExpiration other;
      for (size_t n = 0; n < in.size(); ++n) {
        FUZZ_CHECK(!DecodeExpirationValue(in.substr(0, n), &other), "a %zu-byte prefix decoded", n);
      }
      FUZZ_CHECK(!DecodeExpirationValue(std::string(in) + '\0', &other), "trailing byte accepted");
    }
  }
}

void EncodeThenDecode(const uint8_t* data, size_t size) {
  FuzzedDataProvider in(data, size);
  const int64_t deadline = in.ConsumeIntegral<int64_t>();
  const uint64_t ttl = in.ConsumeIntegral<uint64_t>();
  const uint64_t interval = in.ConsumeIntegral<uint64_t>();
  const int64_t fired_at = in.ConsumeIntegral<int64_t>();
  const uint32_t attempt = in.ConsumeIntegral<uint32_t>();
  const std::string key = in.ConsumeRandomLengthString(300);
  const std::string payload = in.ConsumeRemainingBytesAsString();

  FUZZ_CHECK(ZigZagDecode(ZigZagEncode(deadline)) == deadline);

  std::string timer_value;
  AppendTimerValue(&timer_value, deadline, ttl, interval, payload);
  StoredTimer t;
  FUZZ_CHECK(DecodeTimerValue(timer_value, &t));
  FUZZ_CHECK(t.deadline_unix_ns == deadline && t.ttl_ns == ttl && t.interval_ns == interval && t.payload == payload);

  std::string expiration_value;
  AppendExpirationValue(&expiration_value, key, deadline, ttl, interval, payload, fired_at, attempt);
  StoredExpiration e;
  FUZZ_CHECK(DecodeExpirationValue(expiration_value, &e));
  FUZZ_CHECK(e.timer.key == key && e.timer.deadline_unix_ns == deadline && e.timer.ttl_ns == ttl &&
             e.timer.interval_ns == interval && e.timer.payload == payload && e.fired_at_unix_ns == fired_at &&
             e.attempt == attempt);
  // Canonical: decoding and encoding again gives the same bytes.
  std::string again;
  AppendExpirationValue(&again, e.timer.key, e.timer.deadline_unix_ns, e.timer.ttl_ns, e.timer.interval_ns,
                        e.timer.payload, e.fired_at_unix_ns, e.attempt);
  FUZZ_CHECK(again == expiration_value);

  std::string key_bytes;
  AppendOutboxKey(&key_bytes, ttl);
  uint64_t id = 0;
  FUZZ_CHECK(key_bytes.size() == kOutboxKeySize && DecodeOutboxKey(key_bytes, &id) && id == ttl);
}

}  // namespace
}  // namespace lawn::internal

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  lawn::internal::DecodeRaw(std::string_view(reinterpret_cast<const char*>(data), size));
  lawn::internal::EncodeThenDecode(data, size);
  return 0;
}
