#include "storage/crc32c.h"

#include <array>
#include <cstring>

namespace lawn::internal {
namespace {

constexpr uint32_t kPolynomial = 0x82F63B78;  // 0x1EDC6F41 bit-reversed: CRC-32C is computed LSB first.

constexpr std::array<uint32_t, 256> MakeTable() {
  std::array<uint32_t, 256> table{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ kPolynomial : c >> 1;
    table[i] = c;
  }
  return table;
}

constexpr std::array<uint32_t, 256> kTable = MakeTable();

// The CRC register after `zeros` zero bytes, as a linear map of the register before: four tables of 256
// values, one per byte of the register (the register is a GF(2) vector and a CRC update is linear in it).
struct ZeroShift {
  std::array<std::array<uint32_t, 256>, 4> table;

  explicit ZeroShift(size_t zeros) {
    std::array<uint32_t, 32> basis;  // The image of each bit of the register.
    for (int bit = 0; bit < 32; ++bit) {
      uint32_t c = uint32_t{1} << bit;
      for (size_t i = 0; i < zeros; ++i) c = kTable[c & 0xFF] ^ (c >> 8);
      basis[bit] = c;
    }
    for (int k = 0; k < 4; ++k) {
      for (uint32_t b = 0; b < 256; ++b) {
        uint32_t image = 0;
        for (int j = 0; j < 8; ++j) {
          if (b & (1u << j)) image ^= basis[8 * k + j];
        }
        table[k][b] = image;
      }
    }
  }

  uint32_t operator()(uint32_t c) const {
    return table[0][c & 0xFF] ^ table[1][(c >> 8) & 0xFF] ^ table[2][(c >> 16) & 0xFF] ^ table[3][c >> 24];
  }
};

#if defined(__x86_64__)
// The crc32 instruction has a latency of 3 cycles and issues one per cycle, so one dependent chain of them
// runs at a third of what the unit does. Buffers of 3 * kLane bytes or more are taken 3 lanes at a time,
// three independent chains, joined by shifting the first two lanes' registers over the bytes after them
// (register(B0 B1 B2) = shift_2L(r0) ^ shift_L(r1) ^ r2 for lanes started from r0's start and from zero).
// The round log's records are a few KiB (a shard round), checked by every fold and recovery.
constexpr size_t kLane = 512;

__attribute__((target("sse4.2"))) uint32_t Crc32cSse42(std::string_view data, uint32_t crc) {
  static const ZeroShift shift_lane(kLane);
  static const ZeroShift shift_two_lanes(2 * kLane);
  uint64_t c = ~crc;
  const char* p = data.data();
  size_t n = data.size();
  for (; n >= 3 * kLane; p += 3 * kLane, n -= 3 * kLane) {
    uint64_t c1 = 0, c2 = 0;
    for (size_t i = 0; i < kLane; i += 8) {
      uint64_t w0, w1, w2;
      std::memcpy(&w0, p + i, 8);
      std::memcpy(&w1, p + kLane + i, 8);
      std::memcpy(&w2, p + 2 * kLane + i, 8);
      c = __builtin_ia32_crc32di(c, w0);
      c1 = __builtin_ia32_crc32di(c1, w1);
      c2 = __builtin_ia32_crc32di(c2, w2);
    }
    c = shift_two_lanes(static_cast<uint32_t>(c)) ^ shift_lane(static_cast<uint32_t>(c1)) ^
        static_cast<uint32_t>(c2);
  }
  for (; n >= 8; p += 8, n -= 8) {
    uint64_t word;
    std::memcpy(&word, p, 8);
    c = __builtin_ia32_crc32di(c, word);
  }
  uint32_t c32 = static_cast<uint32_t>(c);
  for (; n > 0; ++p, --n) c32 = __builtin_ia32_crc32qi(c32, static_cast<unsigned char>(*p));
  return ~c32;
}

bool HasSse42() {
  static const bool has = __builtin_cpu_supports("sse4.2");
  return has;
}
#endif

}  // namespace

uint32_t Crc32cPortable(std::string_view data, uint32_t crc) {
  uint32_t c = ~crc;
  for (unsigned char byte : data) c = kTable[(c ^ byte) & 0xFF] ^ (c >> 8);
  return ~c;
}

uint32_t Crc32c(std::string_view data, uint32_t crc) {
#if defined(__x86_64__)
  if (HasSse42()) return Crc32cSse42(data, crc);
#endif
  return Crc32cPortable(data, crc);
}

}  // namespace lawn::internal
