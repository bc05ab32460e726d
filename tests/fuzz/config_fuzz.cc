// Fuzz target: the YAML config loader (config/config.h) on arbitrary text.
//
// lawnd reads its config from a file an operator wrote, so a typo must come back as a Status naming the key,
// never as a crash or a yaml-cpp exception leaving config/ (an exception escaping here reaches
// std::terminate, which libFuzzer reports as a crash). Checked, besides:
//   * an Options the loader returns passes Validate() again, unchanged (Validate is idempotent);
//   * it round-trips: writing every key back as YAML (FieldValueText, the form DescribeOptions prints) and
//     loading that gives the same Options (skipped when a string value holds bytes outside printable ASCII,
//     whose YAML quoting is yaml-cpp's business);
//   * ParseDuration / ParseBytes on the raw text: what they accept, FormatDuration / FormatBytes print back
//     to the same value.
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "config/config.h"
#include "config/fields.h"
#include "config/options.h"
#include "tests/fuzz/fuzz_check.h"

namespace lawn {
namespace {

bool PrintableAscii(std::string_view s) {
  for (char c : s) {
    if (c < 0x20 || c > 0x7e) return false;
  }
  return true;
}

// `text` as a YAML double-quoted scalar. REQUIRES: PrintableAscii(text).
std::string YamlQuoted(std::string_view text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\') out.push_back('\\');
    out.push_back(c);
  }
  return out + "\"";
}

void CheckRoundTrip(const Options& options) {
  std::string yaml;
  for (const internal::Field& field : internal::Fields()) {
    const std::string value = internal::FieldValueText(field, options);
    if (!PrintableAscii(value)) return;
    yaml += std::string(field.key) + ": " + YamlQuoted(value) + "\n";
  }
  absl::StatusOr<Options> again = LoadOptionsFromYaml(yaml);
  FUZZ_CHECK(again.ok(), "%s\nfrom:\n%s", again.status().ToString().c_str(), yaml.c_str());
  FUZZ_CHECK(DescribeOptions(*again) == DescribeOptions(options), "%s\nvs\n%s", DescribeOptions(*again).c_str(),
             DescribeOptions(options).c_str());
}

void CheckYaml(std::string_view text) {
  absl::StatusOr<Options> options = LoadOptionsFromYaml(text);
  if (!options.ok()) {
    FUZZ_CHECK(!options.status().message().empty());
    FUZZ_CHECK(options.status().code() == absl::StatusCode::kInvalidArgument, "%s",
               options.status().ToString().c_str());
    return;
  }
  Options copy = *options;
  const absl::Status again = Validate(copy);
  FUZZ_CHECK(again.ok(), "%s", again.ToString().c_str());
  const std::string described = DescribeOptions(*options);
  FUZZ_CHECK(DescribeOptions(copy) == described);
  FUZZ_CHECK(options->shards >= 1 && options->max_pending_per_namespace >= 1, "derived defaults resolved");
  CheckRoundTrip(*options);
}

void CheckUnits(std::string_view text) {
  absl::StatusOr<std::chrono::nanoseconds> duration = ParseDuration(text);
  if (duration.ok()) {
    FUZZ_CHECK(duration->count() >= 0);
    const std::string printed = FormatDuration(*duration);
    absl::StatusOr<std::chrono::nanoseconds> back = ParseDuration(printed);
    FUZZ_CHECK(back.ok() && *back == *duration, "%s -> %s", std::string(text).c_str(), printed.c_str());
  }
  absl::StatusOr<uint64_t> bytes = ParseBytes(text);
  if (bytes.ok()) {
    const std::string printed = FormatBytes(*bytes);
    absl::StatusOr<uint64_t> back = ParseBytes(printed);
    FUZZ_CHECK(back.ok() && *back == *bytes, "%s -> %s", std::string(text).c_str(), printed.c_str());
  }
}

}  // namespace
}  // namespace lawn

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  lawn::CheckYaml(text);
  if (size <= 64) lawn::CheckUnits(text);  // Values are short; longer text only slows the search down.
  return 0;
}
