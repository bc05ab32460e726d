// Unit tests of the YAML loaders, Validate and DescribeOptions; the sample config/lawn.yaml and
// config/REFERENCE.md are checked against Options too.
#include "config/config.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "config/options.h"
#include "gtest/gtest.h"
#include "tests/config/config_testing.h"

namespace lawn {
namespace {

using config_testing::IsInvalid;
using config_testing::kKiB;
using config_testing::kMiB;
using config_testing::ResolvedDefaults;
using std::chrono::microseconds;
using std::chrono::milliseconds;
using std::chrono::minutes;
using std::chrono::seconds;

// The keys in DescribeOptions order, which is Options declaration order.
std::vector<std::string> AllKeys() {
  std::vector<std::string> keys;
  std::istringstream line(DescribeOptions(Options{}));
  std::string pair;
  while (line >> pair) keys.push_back(pair.substr(0, pair.find('=')));
  return keys;
}

std::string ReadAll(const char* path) {
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in.is_open()) << path;
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

TEST(ConfigTest, DefaultsAreTheDocumentedValues) {
  const Options options;
  EXPECT_EQ(options.listen, "127.0.0.1:7070");
  EXPECT_EQ(options.metrics_listen, "127.0.0.1:9464");
  EXPECT_EQ(options.data_dir, "./lawn-data");
  EXPECT_EQ(options.shards, 0u);
  EXPECT_EQ(options.tick, milliseconds(1));
  EXPECT_EQ(options.max_payload_bytes, 65536u);
  EXPECT_EQ(options.max_pending_timers, 10'000'000u);
  EXPECT_EQ(options.max_pending_per_namespace, 0u);
  EXPECT_EQ(options.ack_timeout, seconds(30));
  EXPECT_EQ(options.max_in_flight, 1000u);
  EXPECT_EQ(options.durability, Durability::kSync);
  EXPECT_EQ(options.sync_interval, milliseconds(50));
  EXPECT_EQ(options.min_free_disk_bytes, 256 * kMiB);
  EXPECT_EQ(options.max_message_bytes, 4 * kMiB);
  EXPECT_EQ(options.shutdown_timeout, seconds(10));
  EXPECT_EQ(options.log_level, "info");
  EXPECT_EQ(options.log_format, "text");
  EXPECT_EQ(options.lawn_max_buckets, 1024u);
  EXPECT_EQ(options.lawn_promote_after, 2u);
}

TEST(ConfigTest, ValidateResolvesZeroShardsToTheCpuCount) {
  Options options;
  ASSERT_TRUE(Validate(options).ok());
  EXPECT_EQ(options.shards, std::clamp(std::thread::hardware_concurrency(), 1u, 256u));
}

TEST(ConfigTest, ValidateKeepsExplicitShards) {
  Options options;
  options.shards = 3;
  ASSERT_TRUE(Validate(options).ok());
  EXPECT_EQ(options.shards, 3u);
}

TEST(ConfigTest, ValidateResolvesZeroPerNamespaceLimitToTheGlobalLimit) {
  Options options;
  options.max_pending_timers = 500;
  ASSERT_TRUE(Validate(options).ok());
  EXPECT_EQ(options.max_pending_per_namespace, 500u);
}

TEST(ConfigTest, ValidateIsIdempotent) {
  Options once = ResolvedDefaults();
  Options twice = once;
  ASSERT_TRUE(Validate(twice).ok());
  EXPECT_EQ(twice, once);
}

TEST(ConfigTest, ValidateRejectsANegativeDurationSetInCode) {
  Options options;
  options.shutdown_timeout = seconds(-1);
  EXPECT_TRUE(
      IsInvalid(Validate(options), "config key 'shutdown_timeout': -1s is out of range; allowed 0s..10m"));
}

TEST(ConfigTest, EmptyYamlGivesTheDefaults) {
  EXPECT_EQ(LoadOptionsFromYaml("").value(), ResolvedDefaults());
}

TEST(ConfigTest, EmptyMapGivesTheDefaults) {
  EXPECT_EQ(LoadOptionsFromYaml("{}").value(), ResolvedDefaults());
}

TEST(ConfigTest, CommentsOnlyGiveTheDefaults) {
  EXPECT_EQ(LoadOptionsFromYaml("# nothing\n\n# here\n").value(), ResolvedDefaults());
}

TEST(ConfigTest, EveryKeyIsParsed) {
  const Options options = LoadOptionsFromYaml(R"(
listen: "0.0.0.0:0"
metrics_listen: ""
data_dir: /var/lib/lawn
shards: 8
tick: 250us
max_payload_bytes: 1KiB
max_pending_timers: 5000
max_pending_per_namespace: 100
ack_timeout: 1.5s
max_in_flight: 64
durability: interval
sync_interval: 5ms
min_free_disk_bytes: 1GiB
max_message_bytes: 8MiB
shutdown_timeout: 2m
log_level: debug
log_format: json
lawn_max_buckets: 77
lawn_promote_after: 5
)")
                              .value();
  EXPECT_EQ(options.listen, "0.0.0.0:0");
  EXPECT_EQ(options.metrics_listen, "");
  EXPECT_EQ(options.data_dir, "/var/lib/lawn");
  EXPECT_EQ(options.shards, 8u);
  EXPECT_EQ(options.tick, microseconds(250));
  EXPECT_EQ(options.max_payload_bytes, kKiB);
  EXPECT_EQ(options.max_pending_timers, 5000u);
  EXPECT_EQ(options.max_pending_per_namespace, 100u);
  EXPECT_EQ(options.ack_timeout, milliseconds(1500));
  EXPECT_EQ(options.max_in_flight, 64u);
  EXPECT_EQ(options.durability, Durability::kInterval);
  EXPECT_EQ(options.sync_interval, milliseconds(5));
  EXPECT_EQ(options.min_free_disk_bytes, kKiB * kMiB);
  EXPECT_EQ(options.max_message_bytes, 8 * kMiB);
  EXPECT_EQ(options.shutdown_timeout, minutes(2));
  EXPECT_EQ(options.log_level, "debug");
  EXPECT_EQ(options.log_format, "json");
  EXPECT_EQ(options.lawn_max_buckets, 77u);
  EXPECT_EQ(options.lawn_promote_after, 5u);
}

TEST(ConfigTest, EveryDurabilityNameIsParsed) {
  EXPECT_EQ(LoadOptionsFromYaml("durability: sync").value().durability, Durability::kSync);
  EXPECT_EQ(LoadOptionsFromYaml("durability: interval").value().durability, Durability::kInterval);
  EXPECT_EQ(LoadOptionsFromYaml("durability: memory").value().durability, Durability::kMemory);
}

TEST(ConfigTest, EveryLogLevelIsAccepted) {
  for (const char* level : {"trace", "debug", "info", "warn", "error", "critical", "off"}) {
    EXPECT_EQ(LoadOptionsFromYaml(std::string("log_level: ") + level).value().log_level, level);
  }
}

TEST(ConfigTest, ByteSizeKeysAcceptPlainIntegersAndUnits) {
  EXPECT_EQ(LoadOptionsFromYaml("min_free_disk_bytes: 1048576").value().min_free_disk_bytes, kMiB);
  EXPECT_EQ(LoadOptionsFromYaml("min_free_disk_bytes: 64KiB").value().min_free_disk_bytes, 64 * kKiB);
  EXPECT_EQ(LoadOptionsFromYaml("max_message_bytes: 100000").value().max_message_bytes, 100'000u);
}

TEST(ConfigTest, BadDurationMessageNamesTheKeyAndTheUnits) {
  EXPECT_EQ(
      LoadOptionsFromYaml("tick: 5 parsecs").status(),
      absl::InvalidArgumentError("config key 'tick': \"5 parsecs\" is not a duration; use a number with a "
                                 "unit: ns, us, ms, s, m, h"));
}

TEST(ConfigTest, DurationWithoutUnitIsRejectedByName) {
  EXPECT_TRUE(IsInvalid(LoadOptionsFromYaml("ack_timeout: 30").status(),
                        "config key 'ack_timeout': \"30\" has no unit"));
}

TEST(ConfigTest, UnknownKeyIsRejectedByName) {
  const absl::Status status = LoadOptionsFromYaml("tik: 1ms").status();
  EXPECT_TRUE(IsInvalid(status, "config key 'tik' is unknown"));
  EXPECT_TRUE(IsInvalid(status, "known keys: listen, metrics_listen,"));
}

TEST(ConfigTest, RepeatedKeyIsRejected) {
  EXPECT_TRUE(
      IsInvalid(LoadOptionsFromYaml("tick: 1ms\ntick: 2ms\n").status(), "config key 'tick' appears twice"));
}

TEST(ConfigTest, ListValueIsRejectedAsTheWrongType) {
  EXPECT_TRUE(IsInvalid(LoadOptionsFromYaml("listen: [a, b]").status(),
                        "config key 'listen': expected one value, got a list"));
}

TEST(ConfigTest, MapValueIsRejectedAsTheWrongType) {
  EXPECT_TRUE(IsInvalid(LoadOptionsFromYaml("shards: {n: 1}").status(),
                        "config key 'shards': expected one value, got a map"));
}

TEST(ConfigTest, MissingValueIsRejected) {
  EXPECT_TRUE(IsInvalid(LoadOptionsFromYaml("data_dir:\n").status(),
                        "config key 'data_dir': expected one value, got nothing"));
}

TEST(ConfigTest, TextForANumberIsRejectedAsTheWrongType) {
  EXPECT_TRUE(IsInvalid(LoadOptionsFromYaml("shards: eight").status(),
                        "config key 'shards': \"eight\" is not a whole number; allowed 0..256"));
}

TEST(ConfigTest, BadDurabilityIsRejectedWithTheChoices) {
  EXPECT_TRUE(
      IsInvalid(LoadOptionsFromYaml("durability: fast").status(),
                "config key 'durability': \"fast\" is not a durability; use sync, interval or memory"));
}

TEST(ConfigTest, TopLevelListIsRejected) {
  EXPECT_TRUE(IsInvalid(LoadOptionsFromYaml("- tick: 1ms\n").status(), "config must be a map"));
}

TEST(ConfigTest, YamlSyntaxErrorNamesTheLine) {
  EXPECT_TRUE(IsInvalid(LoadOptionsFromYaml("tick: 1ms\nlisten: [unclosed\nshards: 2\n").status(),
                        "YAML syntax error at line 3"));
  EXPECT_TRUE(
      IsInvalid(LoadOptionsFromYaml("tick: 1ms\n\tshards: 2\n").status(), "YAML syntax error at line 2"));
}

TEST(ConfigTest, PerNamespaceLimitAboveTheGlobalLimitIsRejected) {
  EXPECT_TRUE(IsInvalid(LoadOptionsFromYaml("max_pending_timers: 10\nmax_pending_per_namespace: 11").status(),
                        "config key 'max_pending_per_namespace': 11 is more than max_pending_timers (10)"));
}

TEST(ConfigTest, PayloadLimitNotBelowTheMessageLimitIsRejected) {
  EXPECT_TRUE(
      IsInvalid(LoadOptionsFromYaml("max_payload_bytes: 4MiB").status(),
                "config key 'max_payload_bytes': 4MiB must be smaller than max_message_bytes (4MiB)"));
  EXPECT_TRUE(LoadOptionsFromYaml("max_payload_bytes: 4MiB\nmax_message_bytes: 5MiB").ok());
}

TEST(ConfigTest, LoadOptionsFromFileReadsTheFile) {
  const std::string path = config_testing::WriteTestFile(".yaml", "shards: 5\ntick: 2ms\n");
  const Options options = LoadOptionsFromFile(path).value();
  EXPECT_EQ(options.shards, 5u);
  EXPECT_EQ(options.tick, milliseconds(2));
}

TEST(ConfigTest, FileErrorsStartWithThePath) {
  const std::string path = config_testing::WriteTestFile(".yaml", "tick: 5s\n");
  EXPECT_TRUE(
      IsInvalid(LoadOptionsFromFile(path).status(), path + ": config key 'tick': 5s is out of range"));
}

TEST(ConfigTest, MissingFileIsNotFound) {
  EXPECT_TRUE(config_testing::HasError(LoadOptionsFromFile("/nonexistent/lawn.yaml").status(),
                                       absl::StatusCode::kNotFound,
                                       "'/nonexistent/lawn.yaml' does not exist"));
}

TEST(ConfigTest, DirectoryIsRejected) {
  EXPECT_TRUE(IsInvalid(LoadOptionsFromFile(::testing::TempDir()).status(), "is a directory"));
}

TEST(ConfigTest, DescribeOptionsListsEveryFieldOnOneLine) {
  const std::string line = DescribeOptions(ResolvedDefaults());
  EXPECT_EQ(line.find('\n'), std::string::npos);
  const std::vector<std::string> keys = AllKeys();
  EXPECT_EQ(keys.size(), 52u);  // One per Options field; update with options.h.
  EXPECT_EQ(keys.front(), "listen");
  EXPECT_EQ(keys.back(), "rate_limits");
}

TEST(ConfigTest, DescribeOptionsShowsValuesInConfigSyntax) {
  const std::string line = DescribeOptions(Options{});
  for (const char* pair : {"listen=127.0.0.1:7070 ", "tick=1ms ", "max_payload_bytes=64KiB ",
                           "ack_timeout=30s ", "durability=sync ", "min_free_disk_bytes=256MiB ",
                           "storage.engine=auto ", "write_buffer_bytes=256MiB ", "log_level=info "}) {
    EXPECT_NE(line.find(pair), std::string::npos) << pair << " in " << line;
  }
}

TEST(ConfigTest, DescribeOptionsQuotesEmptyAndBlankStrings) {
  Options options;
  options.metrics_listen = "";
  options.data_dir = "/my data";
  const std::string line = DescribeOptions(options);
  EXPECT_NE(line.find("metrics_listen=\"\" "), std::string::npos) << line;
  EXPECT_NE(line.find("data_dir=\"/my data\" "), std::string::npos) << line;
}

TEST(ConfigTest, DurabilityNameIsTheConfigSpelling) {
  EXPECT_EQ(DurabilityName(Durability::kSync), "sync");
  EXPECT_EQ(DurabilityName(Durability::kInterval), "interval");
  EXPECT_EQ(DurabilityName(Durability::kMemory), "memory");
}

TEST(ConfigTest, SampleConfigLoadsAndEqualsTheDefaults) {
  absl::StatusOr<Options> sample = LoadOptionsFromFile(LAWN_SAMPLE_CONFIG);
  ASSERT_TRUE(sample.ok()) << sample.status();
  EXPECT_EQ(*sample, ResolvedDefaults());
}

TEST(ConfigTest, SampleConfigSetsEveryKey) {
  const std::string sample = "\n" + ReadAll(LAWN_SAMPLE_CONFIG);
  for (const std::string& key : AllKeys()) {
    const size_t dot = key.find('.');
    if (dot == std::string::npos) {
      EXPECT_NE(sample.find("\n" + key + ": "), std::string::npos)
          << key << " is missing from " << LAWN_SAMPLE_CONFIG;
      continue;
    }
    // "tls.cert_file" is `cert_file:` indented under `tls:`.
    const size_t section = sample.find("\n" + key.substr(0, dot) + ":\n");
    ASSERT_NE(section, std::string::npos) << key << ": no section in " << LAWN_SAMPLE_CONFIG;
    EXPECT_NE(sample.find("\n  " + key.substr(dot + 1) + ": ", section), std::string::npos)
        << key << " is missing from " << LAWN_SAMPLE_CONFIG;
  }
  EXPECT_NE(sample.find("\nrate_limits: "), std::string::npos);
}

TEST(ConfigTest, ReferenceDocumentsEveryKey) {
  const std::string reference = ReadAll(LAWN_CONFIG_REFERENCE);
  for (const std::string& key : AllKeys()) {
    EXPECT_NE(reference.find("| `" + key + "` |"), std::string::npos)
        << key << " is missing from " << LAWN_CONFIG_REFERENCE;
  }
}


TEST(ConfigTest, SectionsSetDottedKeys) {
  absl::StatusOr<Options> options = LoadOptionsFromYaml(
      "tls:\n  cert_file: /c.pem\n  key_file: /k.pem\n  client_ca_file: /ca.pem\n"
      "auth:\n  tokens_file: /t.yaml\nhealth_listen: 127.0.0.1:0\n");
  ASSERT_TRUE(options.ok()) << options.status();
  EXPECT_EQ(options->tls_cert_file, "/c.pem");
  EXPECT_EQ(options->tls_key_file, "/k.pem");
  EXPECT_EQ(options->tls_client_ca_file, "/ca.pem");
  EXPECT_EQ(options->auth_tokens_file, "/t.yaml");
  EXPECT_EQ(options->health_listen, "127.0.0.1:0");
}

TEST(ConfigTest, SectionErrorsNameTheDottedKey) {
  EXPECT_TRUE(IsInvalid(LoadOptionsFromYaml("tls:\n  cert: /c.pem\n").status(), "config key 'tls.cert' is unknown"));
  EXPECT_TRUE(IsInvalid(LoadOptionsFromYaml("tls: /c.pem\n").status(), "config section 'tls' must be a map"));
  EXPECT_TRUE(IsInvalid(LoadOptionsFromYaml("tls:\n  cert_file: /c.pem\n").status(),
                        "config keys 'tls.cert_file' and 'tls.key_file': set both"));
  EXPECT_TRUE(IsInvalid(LoadOptionsFromYaml("tls:\n  client_ca_file: /ca.pem\n").status(),
                        "config key 'tls.client_ca_file': client certificates need TLS"));
  EXPECT_TRUE(IsInvalid(LoadOptionsFromYaml("tls:\n  cert_file: /a\n  key_file: /b\n  cert_file: /c\n").status(),
                        "config key 'tls.cert_file' appears twice"));
}

TEST(ConfigTest, RateLimitsParse) {
  absl::StatusOr<Options> options = LoadOptionsFromYaml(
      "rate_limits:\n  - namespaces: [billing, \"billing-*\"]\n    starts_per_second: 1000\n    burst: 2000\n"
      "  - namespaces: [\"*\"]\n    starts_per_second: 2.5\n");
  ASSERT_TRUE(options.ok()) << options.status();
  ASSERT_EQ(options->rate_limits.size(), 2u);
  EXPECT_EQ(options->rate_limits[0].namespaces, (std::vector<std::string>{"billing", "billing-*"}));
  EXPECT_EQ(options->rate_limits[0].starts_per_second, 1000);
  EXPECT_EQ(options->rate_limits[0].burst, 2000u);
  EXPECT_EQ(options->rate_limits[1].starts_per_second, 2.5);
  EXPECT_EQ(options->rate_limits[1].burst, 3u);  // The rate rounded up.
}

TEST(ConfigTest, RateLimitErrorsSayWhatIsAllowed) {
  EXPECT_TRUE(IsInvalid(LoadOptionsFromYaml("rate_limits: 5\n").status(), "config key 'rate_limits': expected a list"));
  EXPECT_TRUE(IsInvalid(LoadOptionsFromYaml("rate_limits:\n  - namespaces: [a]\n").status(),
                        "namespaces and starts_per_second are required"));
  EXPECT_TRUE(IsInvalid(LoadOptionsFromYaml("rate_limits:\n  - namespaces: [a]\n    starts_per_second: 0\n").status(),
                        "starts_per_second: \"0\" is not allowed; use a number in 0.001..1000000000"));
  EXPECT_TRUE(IsInvalid(LoadOptionsFromYaml("rate_limits:\n  - namespaces: [\"a*b\"]\n    starts_per_second: 1\n").status(),
                        "namespace pattern 'a*b'"));
  EXPECT_TRUE(IsInvalid(
      LoadOptionsFromYaml("rate_limits:\n  - namespaces: [a]\n    starts_per_second: 1\n    bursts: 2\n").status(),
      "unknown key 'bursts'"));
}

}  // namespace
}  // namespace lawn
