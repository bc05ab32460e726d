// Helpers shared by lawnctl's unit tests (cli_args_test.cc, cli_values_test.cc).
#pragma once

#include <chrono>
#include <cstdint>

namespace lawn::cli_testing {

// The system_clock time `s` whole seconds after the Unix epoch.
inline std::chrono::system_clock::time_point UnixSeconds(int64_t s) {
  return std::chrono::system_clock::time_point(std::chrono::seconds(s));
}

}  // namespace lawn::cli_testing
