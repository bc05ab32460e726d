// Helpers shared by the config tests: a status assertion and a per-test temporary file.
#pragma once

#include <cstdint>
#include <fstream>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "config/config.h"
#include "config/options.h"
#include "gtest/gtest.h"

namespace lawn::config_testing {

inline constexpr uint64_t kKiB = 1024;
inline constexpr uint64_t kMiB = 1024 * kKiB;

// The default Options, checked to validate (as Validate leaves them).
inline Options ResolvedDefaults() {
  Options options;
  EXPECT_TRUE(Validate(options).ok());
  return options;
}

// Success if `status` has `code` and its message contains `needle`; else says what it got.
inline ::testing::AssertionResult HasError(const absl::Status& status, absl::StatusCode code,
                                           std::string_view needle) {
  const std::string message(status.message());
  if (status.code() == code && message.find(needle) != std::string::npos)
    return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << "got " << status << "; wanted code " << absl::StatusCodeToString(code)
         << " and a message containing \"" << needle << "\"";
}

inline ::testing::AssertionResult IsInvalid(const absl::Status& status, std::string_view needle) {
  return HasError(status, absl::StatusCode::kInvalidArgument, needle);
}

// Writes `text` to a file named after the running test (so parallel tests do not collide); returns its path.
inline std::string WriteTestFile(std::string_view suffix, std::string_view text) {
  const ::testing::TestInfo* test = ::testing::UnitTest::GetInstance()->current_test_info();
  std::string name =
      std::string("lawn_config_") + test->test_suite_name() + "_" + test->name() + std::string(suffix);
  for (char& c : name) {
    if (c == '/') c = '_';  // Parameterized tests are named "Prefix/Suite.Test/0".
  }
  const std::string path = ::testing::TempDir() + name;
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  out.close();
  EXPECT_TRUE(out.good()) << "cannot write " << path;
  return path;
}

}  // namespace lawn::config_testing
