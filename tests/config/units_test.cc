// Unit tests of ParseDuration, ParseBytes and their inverses FormatDuration, FormatBytes.
#include <chrono>
#include <cstdint>
#include <limits>
#include <string>

#include "config/config.h"
#include "gtest/gtest.h"
#include "tests/config/config_testing.h"

namespace lawn {
namespace {

using config_testing::IsInvalid;
using config_testing::kKiB;
using std::chrono::hours;
using std::chrono::microseconds;
using std::chrono::milliseconds;
using std::chrono::minutes;
using std::chrono::nanoseconds;
using std::chrono::seconds;

TEST(ParseDurationTest, AcceptsEveryUnit) {
  EXPECT_EQ(ParseDuration("100ns").value(), nanoseconds(100));
  EXPECT_EQ(ParseDuration("250us").value(), microseconds(250));
  EXPECT_EQ(ParseDuration("1ms").value(), milliseconds(1));
  EXPECT_EQ(ParseDuration("30s").value(), seconds(30));
  EXPECT_EQ(ParseDuration("2m").value(), minutes(2));
  EXPECT_EQ(ParseDuration("1h").value(), hours(1));
}

TEST(ParseDurationTest, AcceptsZero) { EXPECT_EQ(ParseDuration("0s").value(), nanoseconds(0)); }

TEST(ParseDurationTest, DecimalFractionIsExact) {
  EXPECT_EQ(ParseDuration("1.5s").value(), milliseconds(1500));
  EXPECT_EQ(ParseDuration("0.1s").value(), milliseconds(100));
  EXPECT_EQ(ParseDuration("2.25ms").value(), microseconds(2250));
  EXPECT_EQ(ParseDuration("1.5h").value(), minutes(90));
  EXPECT_EQ(ParseDuration("0.000000001s").value(), nanoseconds(1));
}

TEST(ParseDurationTest, TrailingZerosOfTheFractionAreIgnored) {
  EXPECT_EQ(ParseDuration("1.000ns").value(), nanoseconds(1));
}

TEST(ParseDurationTest, BlanksAroundTheTextAndBeforeTheUnitAreIgnored) {
  EXPECT_EQ(ParseDuration("  1 ms\t").value(), milliseconds(1));
}

TEST(ParseDurationTest, PlainNumberIsRejectedForLackOfUnit) {
  const absl::Status status = ParseDuration("30").status();
  EXPECT_TRUE(IsInvalid(status, "\"30\" has no unit"));
  EXPECT_TRUE(IsInvalid(status, "ns, us, ms, s, m, h"));
}

TEST(ParseDurationTest, NegativeIsRejected) {
  EXPECT_TRUE(IsInvalid(ParseDuration("-1s").status(), "negative"));
}

TEST(ParseDurationTest, UnknownUnitIsRejectedSayingWhatIsAllowed) {
  EXPECT_EQ(ParseDuration("5 parsecs").status(),
            absl::InvalidArgumentError(
                "\"5 parsecs\" is not a duration; use a number with a unit: ns, us, ms, s, m, h"));
}

TEST(ParseDurationTest, UnitsAreCaseSensitive) {
  EXPECT_TRUE(IsInvalid(ParseDuration("1MS").status(), "is not a duration"));
  EXPECT_TRUE(IsInvalid(ParseDuration("1S").status(), "is not a duration"));
}

TEST(ParseDurationTest, MalformedTextIsRejected) {
  for (const char* text : {"", "ms", "1.s", ".5s", "1e3ms", "1ms2", "1h30m", "+1s", "1,5s", "s1"}) {
    EXPECT_FALSE(ParseDuration(text).ok()) << text;
  }
}

TEST(ParseDurationTest, FractionFinerThanANanosecondIsRejected) {
  EXPECT_TRUE(IsInvalid(ParseDuration("1.5ns").status(), "finer than 1ns"));
  EXPECT_TRUE(IsInvalid(ParseDuration("0.0000000001s").status(), "finer than 1ns"));
}

TEST(ParseDurationTest, DurationPastInt64NanosecondsIsRejected) {
  EXPECT_TRUE(IsInvalid(ParseDuration("2562048h").status(), "too long"));
  EXPECT_TRUE(IsInvalid(ParseDuration("99999999999999999999999s").status(), "too long"));
  EXPECT_TRUE(ParseDuration("2562047h").ok());
}

TEST(FormatDurationTest, UsesTheLargestUnitThatDividesExactly) {
  EXPECT_EQ(FormatDuration(milliseconds(1)), "1ms");
  EXPECT_EQ(FormatDuration(milliseconds(1500)), "1500ms");
  EXPECT_EQ(FormatDuration(seconds(30)), "30s");
  EXPECT_EQ(FormatDuration(minutes(10)), "10m");
  EXPECT_EQ(FormatDuration(hours(1)), "1h");
  EXPECT_EQ(FormatDuration(nanoseconds(1001)), "1001ns");
  EXPECT_EQ(FormatDuration(nanoseconds(0)), "0s");
}

TEST(FormatDurationTest, ParseDurationReadsItBack) {
  for (int64_t ns : {int64_t{1}, int64_t{999}, int64_t{1'000}, int64_t{61'000'000'000},
                     int64_t{3'600'000'000'000}, std::numeric_limits<int64_t>::max()}) {
    EXPECT_EQ(ParseDuration(FormatDuration(nanoseconds(ns))).value(), nanoseconds(ns)) << ns;
  }
}

TEST(ParseBytesTest, PlainIntegerIsBytes) {
  EXPECT_EQ(ParseBytes("0").value(), 0u);
  EXPECT_EQ(ParseBytes("268435456").value(), 268435456u);
  EXPECT_EQ(ParseBytes("18446744073709551615").value(), std::numeric_limits<uint64_t>::max());
}

TEST(ParseBytesTest, BinaryUnitsArePowersOf1024) {
  EXPECT_EQ(ParseBytes("10B").value(), 10u);
  EXPECT_EQ(ParseBytes("64KiB").value(), 64 * kKiB);
  EXPECT_EQ(ParseBytes("256MiB").value(), 256 * kKiB * kKiB);
  EXPECT_EQ(ParseBytes("1GiB").value(), kKiB * kKiB * kKiB);
  EXPECT_EQ(ParseBytes("2TiB").value(), 2 * kKiB * kKiB * kKiB * kKiB);
}

TEST(ParseBytesTest, DecimalUnitsArePowersOf1000) {
  EXPECT_EQ(ParseBytes("1KB").value(), 1'000u);
  EXPECT_EQ(ParseBytes("5MB").value(), 5'000'000u);
  EXPECT_EQ(ParseBytes("2GB").value(), 2'000'000'000u);
  EXPECT_EQ(ParseBytes("1TB").value(), 1'000'000'000'000u);
}

TEST(ParseBytesTest, BlanksBeforeTheUnitAreIgnored) { EXPECT_EQ(ParseBytes(" 64 KiB ").value(), 64 * kKiB); }

TEST(ParseBytesTest, UnknownUnitIsRejectedSayingWhatIsAllowed) {
  const absl::Status status = ParseBytes("1mib").status();
  EXPECT_TRUE(IsInvalid(status, "\"1mib\" is not a byte size"));
  EXPECT_TRUE(IsInvalid(status, "KiB, MiB, GiB"));
}

TEST(ParseBytesTest, MalformedTextIsRejected) {
  for (const char* text : {"", "-1", "1.5MiB", "KiB", "0x10", "1e6", "12 parsecs"}) {
    EXPECT_FALSE(ParseBytes(text).ok()) << text;
  }
}

TEST(ParseBytesTest, SizePastUint64IsRejected) {
  EXPECT_TRUE(IsInvalid(ParseBytes("18446744073709551616").status(), "too large"));
  EXPECT_TRUE(IsInvalid(ParseBytes("16777216TiB").status(), "too large"));
}

TEST(FormatBytesTest, UsesTheLargestBinaryUnitThatDividesExactly) {
  EXPECT_EQ(FormatBytes(0), "0");
  EXPECT_EQ(FormatBytes(1000), "1000");
  EXPECT_EQ(FormatBytes(65536), "64KiB");
  EXPECT_EQ(FormatBytes(256 * kKiB * kKiB), "256MiB");
  EXPECT_EQ(FormatBytes(3 * kKiB * kKiB * kKiB), "3GiB");
}

TEST(FormatBytesTest, ParseBytesReadsItBack) {
  for (uint64_t bytes :
       {uint64_t{0}, uint64_t{1}, uint64_t{1536}, 64 * kKiB, std::numeric_limits<uint64_t>::max()}) {
    EXPECT_EQ(ParseBytes(FormatBytes(bytes)).value(), bytes) << bytes;
  }
}

}  // namespace
}  // namespace lawn
