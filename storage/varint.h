// The integer encodings of storage/: LEB128 varints, zigzag for signed values, and big-endian fixed 64-bit
// values, as storage/FORMAT.md specifies them. The one implementation behind the on-disk records
// (record_coding.cc, rocksdb_timer_store.cc) and StoreBatch's in-memory buffer (store_batch.cc).
//
// Encoders append to a caller-owned buffer; decoders never allocate and return false for any input an encoder
// could not have produced (truncated, over-long or overflowing varint, wrong fixed size). Inline: these run
// for every field of every stored record and batched operation.
//
// Thread-safety: stateless functions.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

namespace lawn::internal {

// A varint takes at most this many bytes (ceil(64 / 7)).
inline constexpr size_t kMaxVarintBytes = 10;

// Maps a signed value to an unsigned one so that small magnitudes stay short: 0, -1, 1, -2 ... -> 0, 1, 2, 3.
inline uint64_t ZigZagEncode(int64_t v) {
  return (static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63);
}
inline int64_t ZigZagDecode(uint64_t v) {
  return static_cast<int64_t>(v >> 1) ^ -static_cast<int64_t>(v & 1);
}

// Appends `v` as an unsigned LEB128 varint: 7 bits per byte, least significant group first, the high bit set
// on every byte but the last; 1 to 10 bytes.
inline void AppendVarint(std::string* out, uint64_t v) {
  char buf[kMaxVarintBytes];
  size_t n = 0;
  while (v >= 0x80) {
    buf[n++] = static_cast<char>(v | 0x80);
    v >>= 7;
  }
  buf[n++] = static_cast<char>(v);
  out->append(buf, n);
}

// Reads one varint from the front of `in` into `*v` and removes it from `in`. False (and `in`, `*v`
// untouched) if `in` ends inside the varint, if it runs past 10 bytes, or if its 10th byte is above 0x01
// (more than 64 bits).
inline bool ConsumeVarint(std::string_view* in, uint64_t* v) {
  const auto* p = reinterpret_cast<const uint8_t*>(in->data());
  const size_t limit = in->size() < kMaxVarintBytes ? in->size() : kMaxVarintBytes;
  // Fast path: most values stored here (ttl 0, small intervals, lengths, ops) fit in one byte.
  if (limit > 0 && p[0] < 0x80) {
    *v = p[0];
    in->remove_prefix(1);
    return true;
  }
  uint64_t result = 0;
  for (size_t i = 0; i < limit; ++i) {
    const uint64_t b = p[i];
    // The 10th byte carries bit 63 only; anything more would overflow 64 bits.
    if (i == kMaxVarintBytes - 1 && b > 1) return false;
    result |= (b & 0x7f) << (7 * i);
    if (b < 0x80) {
      *v = result;
      in->remove_prefix(i + 1);
      return true;
    }
  }
  return false;
}

// Appends `v` as 8 bytes, most significant first, so that bytewise order is numeric order.
inline void AppendFixed64BigEndian(std::string* out, uint64_t v) {
  char buf[8];
  for (int i = 7; i >= 0; --i) {
    buf[i] = static_cast<char>(v & 0xff);
    v >>= 8;
  }
  out->append(buf, 8);
}

// Reads `in`, which must be exactly 8 bytes, as a big-endian value. False for any other size.
inline bool DecodeFixed64BigEndian(std::string_view in, uint64_t* v) {
  if (in.size() != 8) return false;
  uint64_t r = 0;
  for (char c : in) r = (r << 8) | static_cast<uint8_t>(c);
  *v = r;
  return true;
}

// The 8 bytes at `p` as a big-endian value (no bounds: the caller has checked there are 8).
inline uint64_t LoadFixed64BigEndian(const char* p) {
  uint64_t v;
  std::memcpy(&v, p, sizeof v);
  if constexpr (std::endian::native == std::endian::little) v = __builtin_bswap64(v);
  return v;
}

}  // namespace lawn::internal
