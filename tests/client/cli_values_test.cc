// lawnctl's value parsers: durations, deadlines, whole numbers (client/cli_values.h).
#include "client/cli_values.h"

#include <chrono>
#include <limits>
#include <string>

#include "gtest/gtest.h"
#include "tests/client/cli_testing.h"

namespace lawn {
namespace {

using cli_testing::UnixSeconds;
using std::chrono::hours;
using std::chrono::microseconds;
using std::chrono::milliseconds;
using std::chrono::minutes;
using std::chrono::nanoseconds;
using std::chrono::seconds;

// ---- Durations
// ---------------------------------------------------------------------------------------------

TEST(ParseDurationArgTest, ReadsEveryUnit) {
  EXPECT_EQ(*ParseDurationArg("7ns"), nanoseconds(7));
  EXPECT_EQ(*ParseDurationArg("250us"), microseconds(250));
  EXPECT_EQ(*ParseDurationArg("500ms"), milliseconds(500));
  EXPECT_EQ(*ParseDurationArg("3s"), seconds(3));
  EXPECT_EQ(*ParseDurationArg("2m"), minutes(2));
  EXPECT_EQ(*ParseDurationArg("1h"), hours(1));
  EXPECT_EQ(*ParseDurationArg("0s"), nanoseconds(0));
}

TEST(ParseDurationArgTest, ReadsFractionsExactly) {
  EXPECT_EQ(*ParseDurationArg("1.5s"), milliseconds(1500));
  EXPECT_EQ(*ParseDurationArg("0.1s"), milliseconds(100));
  EXPECT_EQ(*ParseDurationArg("1.000000001s"), nanoseconds(1'000'000'001));
  EXPECT_EQ(*ParseDurationArg("2.50ms"), microseconds(2500));
  EXPECT_EQ(*ParseDurationArg("0.5h"), minutes(30));
  EXPECT_EQ(*ParseDurationArg("1.5us"), nanoseconds(1500));
}

TEST(ParseDurationArgTest, AddsCombinedTerms) {
  EXPECT_EQ(*ParseDurationArg("1h30m"), minutes(90));
  EXPECT_EQ(*ParseDurationArg("1m0.5s"), milliseconds(60'500));
  EXPECT_EQ(*ParseDurationArg("2s300ms"), milliseconds(2300));
}

TEST(ParseDurationArgTest, RejectsTextThatIsNotADuration) {
  for (const char* bad :
       {"", "5", "s", "1x", "1.s", ".5s", "1 s", "1s ", "1sec", "1h30", "-1s", "+1s", "1e3s"}) {
    absl::StatusOr<nanoseconds> d = ParseDurationArg(bad);
    EXPECT_FALSE(d.ok()) << "'" << bad << "' parsed as " << d->count() << "ns";
    if (!d.ok()) {
      EXPECT_EQ(d.status().code(), absl::StatusCode::kInvalidArgument) << bad;
    }
  }
}

TEST(ParseDurationArgTest, ErrorsSayWhatIsWrong) {
  EXPECT_NE(ParseDurationArg("5").status().message().find("no unit"), std::string_view::npos);
  EXPECT_NE(ParseDurationArg("-5s").status().message().find("negative"), std::string_view::npos);
  EXPECT_NE(ParseDurationArg("1.0000000001s").status().message().find("finer than 1ns"),
            std::string_view::npos);
  EXPECT_NE(ParseDurationArg("3000000h").status().message().find("too long"), std::string_view::npos);
}

TEST(ParseDurationArgTest, RejectsOverflowInsteadOfWrapping) {
  EXPECT_FALSE(ParseDurationArg("99999999999999999999999s").ok());
  EXPECT_FALSE(ParseDurationArg("9223372036854775808ns").ok());
  EXPECT_TRUE(ParseDurationArg("9223372036854775807ns").ok());
  EXPECT_FALSE(ParseDurationArg("9223372036854775807ns1ns").ok());
}

TEST(FormatDurationArgTest, PrintsTheShortestExactForm) {
  EXPECT_EQ(FormatDurationArg(nanoseconds(0)), "0s");
  EXPECT_EQ(FormatDurationArg(nanoseconds(7)), "7ns");
  EXPECT_EQ(FormatDurationArg(microseconds(250)), "250us");
  EXPECT_EQ(FormatDurationArg(nanoseconds(1500)), "1.5us");
  EXPECT_EQ(FormatDurationArg(milliseconds(500)), "500ms");
  EXPECT_EQ(FormatDurationArg(milliseconds(1500)), "1.5s");
  EXPECT_EQ(FormatDurationArg(seconds(90)), "1m30s");
  EXPECT_EQ(FormatDurationArg(hours(1)), "1h");
  EXPECT_EQ(FormatDurationArg(hours(1) + seconds(1)), "1h1s");
  EXPECT_EQ(FormatDurationArg(-seconds(2)), "-2s");
  EXPECT_EQ(FormatDurationArg(nanoseconds::min()), "-2562047h47m16.854775808s");
}

TEST(FormatDurationArgTest, RoundTripsThroughParse) {
  for (int64_t ns : {int64_t{1}, int64_t{999}, int64_t{1'001}, int64_t{123'456'789}, int64_t{1'000'000'001},
                     int64_t{59'999'999'999}, int64_t{3'600'000'000'001}, int64_t{86'400'000'000'000},
                     std::numeric_limits<int64_t>::max()}) {
    const std::string text = FormatDurationArg(nanoseconds(ns));
    absl::StatusOr<nanoseconds> back = ParseDurationArg(text);
    ASSERT_TRUE(back.ok()) << text << ": " << back.status();
    EXPECT_EQ(back->count(), ns) << text;
  }
}

// ---- Deadlines
// ---------------------------------------------------------------------------------------------

TEST(ParseDeadlineArgTest, ReadsUtcAndOffsets) {
  EXPECT_EQ(*ParseDeadlineArg("2025-01-31T12:00:00Z"), UnixSeconds(1738324800));
  EXPECT_EQ(*ParseDeadlineArg("2025-01-31T13:00:00+01:00"), UnixSeconds(1738324800));
  EXPECT_EQ(*ParseDeadlineArg("2025-01-31T12:00:00.25Z"), UnixSeconds(1738324800) + milliseconds(250));
}

TEST(ParseDeadlineArgTest, RejectsTimesWithoutDateTimeOrZone) {
  for (const char* bad : {"", "2025-01-31", "2025-01-31T12:00:00", "12:00:00Z", "tomorrow", "1738324800"}) {
    absl::StatusOr<std::chrono::system_clock::time_point> t = ParseDeadlineArg(bad);
    EXPECT_FALSE(t.ok()) << "'" << bad << "'";
    if (!t.ok()) {
      EXPECT_NE(t.status().message().find("RFC 3339"), std::string_view::npos) << t.status();
    }
  }
}

// ---- Whole numbers ----------------------------------------------------------------------------------------

TEST(ParseCountArgTest, ReadsPlainDigitsUpToTheMaximum) {
  EXPECT_EQ(*ParseCountArg("0", 10), 0u);
  EXPECT_EQ(*ParseCountArg("10", 10), 10u);
  EXPECT_EQ(*ParseCountArg("18446744073709551615", std::numeric_limits<uint64_t>::max()),
            std::numeric_limits<uint64_t>::max());
  for (const char* bad : {"", "11", "-1", "+1", " 1", "1 ", "1.0", "0x1", "18446744073709551616"}) {
    absl::StatusOr<uint64_t> n = ParseCountArg(bad, 10);
    EXPECT_FALSE(n.ok()) << "'" << bad << "'";
    if (!n.ok()) {
      EXPECT_NE(n.status().message().find("not a whole number in 0..10"), std::string_view::npos);
    }
  }
}

}  // namespace
}  // namespace lawn
