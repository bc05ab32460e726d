// Unit tests of ParseCommandLine, WantsHelp and UsageText.
#include <chrono>
#include <string>
#include <vector>

#include "config/config.h"
#include "gtest/gtest.h"
#include "tests/config/config_testing.h"

namespace lawn {
namespace {

using config_testing::IsInvalid;
using config_testing::ResolvedDefaults;
using std::chrono::microseconds;
using std::chrono::milliseconds;

// Runs ParseCommandLine over {"lawnd", args...}.
absl::StatusOr<Options> Parse(const std::vector<std::string>& args) {
  std::vector<const char*> argv = {"lawnd"};
  for (const std::string& arg : args) argv.push_back(arg.c_str());
  return ParseCommandLine(static_cast<int>(argv.size()), argv.data());
}

bool Help(const std::vector<std::string>& args) {
  std::vector<const char*> argv = {"lawnd"};
  for (const std::string& arg : args) argv.push_back(arg.c_str());
  return WantsHelp(static_cast<int>(argv.size()), argv.data());
}

TEST(CommandLineTest, NoFlagsGiveTheDefaults) { EXPECT_EQ(Parse({}).value(), ResolvedDefaults()); }

TEST(CommandLineTest, ConfigFlagLoadsTheFile) {
  const std::string path = config_testing::WriteTestFile(".yaml", "shards: 3\nlog_format: json\n");
  const Options options = Parse({"--config", path}).value();
  EXPECT_EQ(options.shards, 3u);
  EXPECT_EQ(options.log_format, "json");
}

TEST(CommandLineTest, FlagAfterConfigOverridesTheFile) {
  const std::string path = config_testing::WriteTestFile(".yaml", "tick: 5ms\nshards: 3\n");
  const Options options = Parse({"--config", path, "--tick", "2ms"}).value();
  EXPECT_EQ(options.tick, milliseconds(2));
  EXPECT_EQ(options.shards, 3u);
}

TEST(CommandLineTest, FlagBeforeConfigStillOverridesTheFile) {
  const std::string path = config_testing::WriteTestFile(".yaml", "tick: 5ms\nshards: 3\n");
  const Options options = Parse({"--tick=2ms", "--shards", "7", "--config=" + path}).value();
  EXPECT_EQ(options.tick, milliseconds(2));
  EXPECT_EQ(options.shards, 7u);
}

TEST(CommandLineTest, SpaceFormAndEqualsFormAreEquivalent) {
  EXPECT_EQ(Parse({"--listen", "0.0.0.0:0", "--tick", "250us"}).value(),
            Parse({"--listen=0.0.0.0:0", "--tick=250us"}).value());
}

TEST(CommandLineTest, EveryOverrideFlagSetsItsKey) {
  const Options options =
      Parse({"--listen", "0.0.0.0:7000", "--metrics-listen", "0.0.0.0:0", "--data-dir", "/d", "--shards", "2",
             "--log-level", "warn", "--log-format", "json", "--durability", "memory", "--tick", "100us"})
          .value();
  EXPECT_EQ(options.listen, "0.0.0.0:7000");
  EXPECT_EQ(options.metrics_listen, "0.0.0.0:0");
  EXPECT_EQ(options.data_dir, "/d");
  EXPECT_EQ(options.shards, 2u);
  EXPECT_EQ(options.log_level, "warn");
  EXPECT_EQ(options.log_format, "json");
  EXPECT_EQ(options.durability, Durability::kMemory);
  EXPECT_EQ(options.tick, microseconds(100));
}

TEST(CommandLineTest, EmptyMetricsListenDisablesMetrics) {
  EXPECT_EQ(Parse({"--metrics-listen="}).value().metrics_listen, "");
  EXPECT_EQ(Parse({"--metrics-listen", ""}).value().metrics_listen, "");
}

TEST(CommandLineTest, RepeatedFlagKeepsItsLastValue) {
  EXPECT_EQ(Parse({"--shards", "2", "--shards=5"}).value().shards, 5u);
}

TEST(CommandLineTest, UnknownFlagIsRejectedByName) {
  EXPECT_TRUE(IsInvalid(Parse({"--tick", "1ms", "--max-pending=5"}).status(), "unknown flag --max-pending"));
}

TEST(CommandLineTest, SingleDashFlagIsRejected) {
  EXPECT_TRUE(IsInvalid(Parse({"-tick", "1ms"}).status(), "unexpected argument '-tick'"));
}

TEST(CommandLineTest, PositionalArgumentIsRejected) {
  EXPECT_TRUE(IsInvalid(Parse({"lawn.yaml"}).status(), "unexpected argument 'lawn.yaml'"));
}

TEST(CommandLineTest, FlagAtTheEndWithoutValueIsRejected) {
  EXPECT_TRUE(IsInvalid(Parse({"--listen"}).status(), "flag --listen needs a value"));
}

TEST(CommandLineTest, FlagFollowedByAnotherFlagIsMissingItsValue) {
  EXPECT_TRUE(IsInvalid(Parse({"--data-dir", "--tick", "1ms"}).status(), "flag --data-dir needs a value"));
}

TEST(CommandLineTest, BadFlagValueNamesTheFlag) {
  EXPECT_TRUE(
      IsInvalid(Parse({"--tick", "5 parsecs"}).status(), "flag --tick: \"5 parsecs\" is not a duration"));
  EXPECT_TRUE(
      IsInvalid(Parse({"--shards=300"}).status(), "flag --shards: 300 is out of range; allowed 0..256"));
  EXPECT_TRUE(
      IsInvalid(Parse({"--log-level", "loud"}).status(), "flag --log-level: \"loud\" is not allowed"));
}

TEST(CommandLineTest, BadValueInTheFileNamesThePathAndKey) {
  const std::string path = config_testing::WriteTestFile(".yaml", "tik: 1ms\n");
  EXPECT_TRUE(IsInvalid(Parse({"--config", path}).status(), path + ": config key 'tik' is unknown"));
}

TEST(CommandLineTest, MissingConfigFileIsNotFound) {
  EXPECT_TRUE(config_testing::HasError(Parse({"--config", "/nonexistent/lawn.yaml"}).status(),
                                       absl::StatusCode::kNotFound, "/nonexistent/lawn.yaml"));
}

TEST(CommandLineTest, EmptyConfigPathIsRejected) {
  EXPECT_TRUE(IsInvalid(Parse({"--config="}).status(), "flag --config needs a path"));
}

TEST(CommandLineTest, CrossKeyRulesApplyAfterTheOverrides) {
  const std::string path =
      config_testing::WriteTestFile(".yaml", "max_pending_timers: 10\nmax_pending_per_namespace: 5\n");
  EXPECT_TRUE(Parse({"--config", path}).ok());
}

TEST(CommandLineTest, HelpIsIgnoredByParseCommandLine) {
  EXPECT_TRUE(Parse({"--help", "--shards", "2"}).ok());
}

TEST(CommandLineTest, WantsHelpSeesBothSpellings) {
  EXPECT_TRUE(Help({"--help"}));
  EXPECT_TRUE(Help({"--shards", "2", "-h"}));
  EXPECT_TRUE(Help({"--bogus", "--help"}));
}

TEST(CommandLineTest, WantsHelpIsFalseWithoutHelp) {
  EXPECT_FALSE(Help({}));
  EXPECT_FALSE(Help({"--tick", "1ms"}));
}

TEST(CommandLineTest, WantsHelpIgnoresHelpAsAFlagValue) { EXPECT_FALSE(Help({"--data-dir", "-h"})); }

TEST(CommandLineTest, UsageTextListsEveryFlag) {
  const std::string usage = UsageText();
  for (const char* flag : {"--config PATH", "--listen ADDR", "--metrics-listen ADDR", "--data-dir DIR",
                           "--shards N", "--log-level LEVEL", "--log-format FORMAT", "--durability MODE",
                           "--storage-engine ENGINE", "--tick DURATION", "--help, -h"}) {
    EXPECT_NE(usage.find(flag), std::string::npos) << flag << " missing from:\n" << usage;
  }
}

TEST(CommandLineTest, UsageTextShowsTheDefaults) {
  const std::string usage = UsageText();
  EXPECT_NE(usage.find("(default 127.0.0.1:7070)"), std::string::npos) << usage;
  EXPECT_NE(usage.find("(default 1ms)"), std::string::npos) << usage;
}

TEST(CommandLineTest, EveryFlagInTheUsageIsAccepted) {
  for (const auto& [flag, value] :
       std::vector<std::pair<std::string, std::string>>{{"--listen", "127.0.0.1:1"},
                                                        {"--metrics-listen", ""},
                                                        {"--data-dir", "x"},
                                                        {"--shards", "1"},
                                                        {"--log-level", "off"},
                                                        {"--log-format", "text"},
                                                        {"--durability", "sync"},
                                                        {"--storage-engine", "log"},
                                                        {"--tick", "1ms"}}) {
    EXPECT_TRUE(Parse({flag, value}).ok()) << flag;
  }
}

}  // namespace
}  // namespace lawn
