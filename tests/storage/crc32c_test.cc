// CRC-32C (storage/crc32c.h): the published check values, and the hardware and table versions agreeing on
// every length and alignment, also when continued over pieces.
#include "storage/crc32c.h"

#include <cstdint>
#include <random>
#include <string>
#include <string_view>

#include "gtest/gtest.h"

namespace lawn::internal {
namespace {

TEST(Crc32cTest, GivesThePublishedCheckValues) {
  EXPECT_EQ(Crc32c(""), 0u);
  EXPECT_EQ(Crc32c("123456789"), 0xE3069283u);              // The CRC catalogue's check value.
  EXPECT_EQ(Crc32c(std::string(32, '\0')), 0x8A9136AAu);    // RFC 3720, B.4: 32 bytes of zeros.
  EXPECT_EQ(Crc32c(std::string(32, '\xff')), 0x62A8AB43u);  // RFC 3720, B.4: 32 bytes of ones.
  EXPECT_EQ(Crc32cPortable("123456789"), 0xE3069283u);
}

TEST(Crc32cTest, HardwareAndTableAgreeOnEveryLengthAndAlignment) {
  std::mt19937_64 rng(11);
  std::string buffer(300, '\0');
  for (char& c : buffer) c = static_cast<char>(rng());
  for (size_t start = 0; start < 8; ++start) {
    for (size_t length = 0; length + start <= buffer.size(); ++length) {
      const std::string_view piece(buffer.data() + start, length);
      ASSERT_EQ(Crc32c(piece), Crc32cPortable(piece)) << "start " << start << " length " << length;
    }
  }
}

// Past 1.5 KiB the hardware version runs three lanes of 512 bytes and joins them: every length around
// those blocks (and their tails) agrees with the table, from any alignment, and from a non-zero start.
TEST(Crc32cTest, HardwareAndTableAgreeAcrossTheThreeLaneBlocks) {
  std::mt19937_64 rng(12);
  std::string buffer(3 * 1536 + 600, '\0');
  for (char& c : buffer) c = static_cast<char>(rng());
  for (size_t start : {0, 1, 5}) {
    for (size_t length = 1400; length + start <= buffer.size(); ++length) {
      const std::string_view piece(buffer.data() + start, length);
      ASSERT_EQ(Crc32c(piece), Crc32cPortable(piece)) << "start " << start << " length " << length;
      ASSERT_EQ(Crc32c(piece, 0x12345678u), Crc32cPortable(piece, 0x12345678u)) << "length " << length;
    }
  }
  EXPECT_EQ(Crc32c(std::string(4096, '\0')), Crc32cPortable(std::string(4096, '\0')));
}

TEST(Crc32cTest, ContinuingOverPiecesEqualsTheWhole) {
  const std::string data = "the round log checks every record with this";
  for (size_t cut = 0; cut <= data.size(); ++cut) {
    const std::string_view a(data.data(), cut);
    const std::string_view b(data.data() + cut, data.size() - cut);
    EXPECT_EQ(Crc32c(b, Crc32c(a)), Crc32c(data));
    EXPECT_EQ(Crc32cPortable(b, Crc32cPortable(a)), Crc32c(data));
  }
}

}  // namespace
}  // namespace lawn::internal
