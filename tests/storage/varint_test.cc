// The integer encodings of storage/varint.h: LEB128 varints (exact layout, every length boundary, refusal of
// truncated and over-long input), zigzag, and big-endian fixed64 (round trips, bytewise order = numeric
// order).
#include "storage/varint.h"

#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "gtest/gtest.h"

namespace lawn::internal {
namespace {

constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
constexpr uint64_t kUMax = std::numeric_limits<uint64_t>::max();

std::string Varint(uint64_t v) {
  std::string out;
  AppendVarint(&out, v);
  return out;
}

TEST(VarintTest, LayoutIsLeb128LeastSignificantGroupFirst) {
  EXPECT_EQ(Varint(0), std::string("\x00", 1));
  EXPECT_EQ(Varint(1), "\x01");
  EXPECT_EQ(Varint(127), "\x7f");
  EXPECT_EQ(Varint(128), "\x80\x01");
  EXPECT_EQ(Varint(300), "\xac\x02");
  EXPECT_EQ(Varint(kUMax), "\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01");
}

TEST(VarintTest, EveryLengthBoundaryRoundTripsInTheShortestForm) {
  // 2^(7k) - 1 is the largest value of k bytes, 2^(7k) the smallest of k + 1.
  for (size_t bytes = 1; bytes < kMaxVarintBytes; ++bytes) {
    const uint64_t first_of_next = uint64_t{1} << (7 * bytes);
    for (uint64_t v : {first_of_next - 1, first_of_next}) {
      const std::string encoded = Varint(v);
      EXPECT_EQ(encoded.size(), v < first_of_next ? bytes : bytes + 1) << v;
      std::string_view in = encoded;
      uint64_t back = 0;
      ASSERT_TRUE(ConsumeVarint(&in, &back)) << v;
      EXPECT_EQ(back, v);
      EXPECT_TRUE(in.empty());
    }
  }
  EXPECT_EQ(Varint(kUMax).size(), kMaxVarintBytes);
}

TEST(VarintTest, RandomValuesRoundTripOneAfterAnother) {
  std::mt19937_64 rng(7);
  std::vector<uint64_t> values;
  for (int i = 0; i < 1000; ++i) values.push_back(rng() >> (rng() % 64));  // Every length, often.
  std::string buffer;
  for (uint64_t v : values) AppendVarint(&buffer, v);
  std::string_view in = buffer;
  for (uint64_t v : values) {
    uint64_t back = 0;
    ASSERT_TRUE(ConsumeVarint(&in, &back));
    ASSERT_EQ(back, v);
  }
  EXPECT_TRUE(in.empty());
}

TEST(VarintTest, TruncatedVarintIsRejectedAndLeavesTheInputAlone) {
  const std::string encoded = Varint(kUMax);
  for (size_t n = 0; n < encoded.size(); ++n) {
    std::string_view in = std::string_view(encoded).substr(0, n);
    uint64_t v = 42;
    EXPECT_FALSE(ConsumeVarint(&in, &v)) << "prefix of " << n << " bytes";
    EXPECT_EQ(in.size(), n);
    EXPECT_EQ(v, 42u);
  }
}

TEST(VarintTest, OverlongVarintIsRejected) {
  uint64_t x = 0;
  std::string_view eleven("\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01", 11);
  EXPECT_FALSE(ConsumeVarint(&eleven, &x));
  std::string_view overflow("\xff\xff\xff\xff\xff\xff\xff\xff\xff\x02", 10);
  EXPECT_FALSE(ConsumeVarint(&overflow, &x));
  std::string_view max("\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01", 10);
  ASSERT_TRUE(ConsumeVarint(&max, &x));
  EXPECT_EQ(x, kUMax);
  EXPECT_TRUE(max.empty());
}

TEST(ZigZagTest, SmallMagnitudesMapToSmallValues) {
  EXPECT_EQ(ZigZagEncode(0), 0u);
  EXPECT_EQ(ZigZagEncode(-1), 1u);
  EXPECT_EQ(ZigZagEncode(1), 2u);
  EXPECT_EQ(ZigZagEncode(-2), 3u);
  EXPECT_EQ(ZigZagEncode(kMax), kUMax - 1);
  EXPECT_EQ(ZigZagEncode(kMin), kUMax);
}

TEST(ZigZagTest, RoundTripsExtremesAndRandomValues) {
  std::mt19937_64 rng(11);
  std::vector<int64_t> values = {kMin, kMin + 1, -1, 0, 1, kMax - 1, kMax};
  for (int i = 0; i < 1000; ++i) values.push_back(static_cast<int64_t>(rng()) >> (rng() % 64));
  for (int64_t v : values) EXPECT_EQ(ZigZagDecode(ZigZagEncode(v)), v);
}

TEST(Fixed64BigEndianTest, LayoutIsMostSignificantByteFirst) {
  std::string out;
  AppendFixed64BigEndian(&out, 0x0102030405060708);
  EXPECT_EQ(out, "\x01\x02\x03\x04\x05\x06\x07\x08");
  uint64_t v = 0;
  ASSERT_TRUE(DecodeFixed64BigEndian(out, &v));
  EXPECT_EQ(v, 0x0102030405060708u);
}

TEST(Fixed64BigEndianTest, BytewiseOrderIsNumericOrder) {
  std::mt19937_64 rng(3);
  for (int i = 0; i < 1000; ++i) {
    const uint64_t a = rng() >> (rng() % 64), b = rng() >> (rng() % 64);
    std::string ka, kb;
    AppendFixed64BigEndian(&ka, a);
    AppendFixed64BigEndian(&kb, b);
    // std::string compares bytes as unsigned, like RocksDB's bytewise comparator.
    EXPECT_EQ(ka < kb, a < b) << a << " " << b;
  }
}

TEST(Fixed64BigEndianTest, AnyOtherSizeIsRejected) {
  uint64_t v = 0;
  EXPECT_FALSE(DecodeFixed64BigEndian("", &v));
  EXPECT_FALSE(DecodeFixed64BigEndian("1234567", &v));
  EXPECT_FALSE(DecodeFixed64BigEndian("123456789", &v));
}

}  // namespace
}  // namespace lawn::internal
