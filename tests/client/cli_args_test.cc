// lawnctl's argument parsing: commands, flags, usage text, exit codes (client/cli_args.h).
#include "client/cli_args.h"

#include <chrono>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tests/client/cli_testing.h"

namespace lawn {
namespace {

using cli_testing::UnixSeconds;
using std::chrono::milliseconds;
using std::chrono::minutes;
using std::chrono::seconds;

constexpr std::string_view kAddr = "default.example:7070";

absl::StatusOr<CliArgs> Parse(std::vector<std::string> args) { return ParseCliArgs(args, kAddr); }

// The message of a parse that must fail with INVALID_ARGUMENT.
std::string ParseError(std::vector<std::string> args) {
  absl::StatusOr<CliArgs> parsed = Parse(std::move(args));
  EXPECT_FALSE(parsed.ok());
  if (parsed.ok()) return "";
  EXPECT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument);
  return std::string(parsed.status().message());
}

// ---- Commands and flags
// ------------------------------------------------------------------------------------

TEST(ParseCliArgsTest, StartTakesAnIdAndATtl) {
  absl::StatusOr<CliArgs> a = Parse({"start", "job-1", "--ttl", "5s"});
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->command, CliCommand::kStart);
  EXPECT_EQ(a->id, "job-1");
  EXPECT_EQ(a->ttl, seconds(5));
  EXPECT_FALSE(a->deadline.has_value());
  EXPECT_EQ(a->ns, "");
  EXPECT_EQ(a->addr, kAddr);
  EXPECT_FALSE(a->json);
  EXPECT_EQ(a->timeout, seconds(10));
  EXPECT_FALSE(a->replace);
  EXPECT_FALSE(a->interval.has_value());
}

TEST(ParseCliArgsTest, StartReadsEveryOption) {
  absl::StatusOr<CliArgs> a =
      Parse({"--addr", "h:1", "--json", "--timeout=2s", "start", "--deadline", "2025-01-31T12:00:00Z", "-n",
             "billing", "--payload=hello world", "--interval", "1m", "--replace", "job-2"});
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->addr, "h:1");
  EXPECT_TRUE(a->json);
  EXPECT_EQ(a->timeout, seconds(2));
  EXPECT_EQ(a->id, "job-2");
  EXPECT_EQ(a->deadline, UnixSeconds(1738324800));
  EXPECT_FALSE(a->ttl.has_value());
  EXPECT_EQ(a->ns, "billing");
  EXPECT_EQ(a->payload, "hello world");
  EXPECT_EQ(a->interval, minutes(1));
  EXPECT_TRUE(a->replace);
}

TEST(ParseCliArgsTest, GlobalFlagsAreAcceptedAfterTheCommand) {
  absl::StatusOr<CliArgs> a = Parse({"get", "x", "--json", "--addr=other:1", "--namespace", "ns"});
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->command, CliCommand::kGet);
  EXPECT_TRUE(a->json);
  EXPECT_EQ(a->addr, "other:1");
  EXPECT_EQ(a->ns, "ns");
}

TEST(ParseCliArgsTest, StartAndRescheduleNeedExactlyOneOfTtlAndDeadline) {
  EXPECT_NE(ParseError({"start", "x"}).find("exactly one of --ttl"), std::string::npos);
  EXPECT_NE(ParseError({"reschedule", "x", "--ttl", "1s", "--deadline", "2025-01-31T12:00:00Z"})
                .find("exactly one of --ttl"),
            std::string::npos);
  absl::StatusOr<CliArgs> a = Parse({"reschedule", "x", "--ttl", "250ms"});
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->command, CliCommand::kReschedule);
  EXPECT_EQ(a->ttl, milliseconds(250));
}

TEST(ParseCliArgsTest, IdCommandsNeedExactlyOneId) {
  EXPECT_NE(ParseError({"delete"}).find("needs a timer <id>"), std::string::npos);
  EXPECT_NE(ParseError({"get", "a", "b"}).find("unexpected 'b'"), std::string::npos);
  EXPECT_NE(ParseError({"stats", "extra"}).find("takes no arguments"), std::string::npos);
}

TEST(ParseCliArgsTest, DoubleDashMakesTheRestPositional) {
  absl::StatusOr<CliArgs> a = Parse({"delete", "-n", "ns", "--", "-odd-id"});
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->id, "-odd-id");
  EXPECT_EQ(a->ns, "ns");
  EXPECT_NE(ParseError({"delete", "-odd-id"}).find("unknown flag -odd-id"), std::string::npos);
}

TEST(ParseCliArgsTest, RejectsUnknownFlagsAndCommands) {
  EXPECT_NE(ParseError({"list", "--bogus"}).find("unknown flag --bogus"), std::string::npos);
  EXPECT_NE(ParseError({"frobnicate"}).find("unknown command 'frobnicate'"), std::string::npos);
  EXPECT_NE(ParseError({}).find("missing command"), std::string::npos);
  EXPECT_NE(ParseError({"--json"}).find("missing command"), std::string::npos);
}

TEST(ParseCliArgsTest, RejectsFlagsOfOtherCommands) {
  EXPECT_NE(ParseError({"get", "x", "--all"}).find("--all does not apply to 'get'"), std::string::npos);
  EXPECT_NE(ParseError({"health", "-n", "x"}).find("-n does not apply to 'health'"), std::string::npos);
  EXPECT_NE(ParseError({"stats", "--service", "x"}).find("does not apply"), std::string::npos);
}

TEST(ParseCliArgsTest, ValueFlagsNeedAValueAndSwitchesTakeNone) {
  EXPECT_NE(ParseError({"start", "x", "--ttl"}).find("--ttl needs a value: --ttl DUR"), std::string::npos);
  EXPECT_NE(ParseError({"list", "--all=yes"}).find("--all takes no value"), std::string::npos);
}

TEST(ParseCliArgsTest, BadValuesNameTheFlag) {
  EXPECT_NE(ParseError({"start", "x", "--ttl", "soon"}).find("--ttl: \"soon\" is not a duration"),
            std::string::npos);
  EXPECT_NE(ParseError({"start", "x", "--ttl", "1s", "--interval", "0s"}).find("--interval: must be more"),
            std::string::npos);
  EXPECT_NE(ParseError({"--timeout", "0s", "stats"}).find("--timeout: must be more"), std::string::npos);
  EXPECT_NE(ParseError({"start", "x", "--deadline", "noon"}).find("--deadline: \"noon\""), std::string::npos);
}

TEST(ParseCliArgsTest, ListReadsPagingFlags) {
  absl::StatusOr<CliArgs> a =
      Parse({"list", "-n", "q", "--page-size", "1000", "--page-token", "abc", "--all"});
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->command, CliCommand::kList);
  EXPECT_EQ(a->page_size, 1000);
  EXPECT_EQ(a->page_token, "abc");
  EXPECT_TRUE(a->all);
  EXPECT_NE(ParseError({"list", "--page-size", "1001"}).find("0..1000"), std::string::npos);
  EXPECT_NE(ParseError({"list", "--page-size", "-1"}).find("not a whole number"), std::string::npos);
  EXPECT_NE(ParseError({"list", "--page-size", "ten"}).find("not a whole number"), std::string::npos);
}

TEST(ParseCliArgsTest, SubscribeReadsItsFlags) {
  absl::StatusOr<CliArgs> a =
      Parse({"subscribe", "--max-in-flight", "7", "--observe", "--count", "3", "--for", "1.5s", "--max-batch", "0"});
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->command, CliCommand::kSubscribe);
  EXPECT_EQ(a->max_in_flight, 7u);
  EXPECT_EQ(a->max_batch, 0u);
  EXPECT_TRUE(a->observe);
  EXPECT_EQ(a->count, 3u);
  EXPECT_EQ(a->for_duration, milliseconds(1500));

  absl::StatusOr<CliArgs> defaults = Parse({"subscribe"});
  ASSERT_TRUE(defaults.ok());
  EXPECT_EQ(defaults->max_in_flight, 100u);
  EXPECT_EQ(defaults->max_batch, 1000u);
  EXPECT_FALSE(defaults->observe);
  EXPECT_EQ(defaults->count, 0u);
  EXPECT_FALSE(defaults->for_duration.has_value());

  EXPECT_NE(ParseError({"subscribe", "--count", "0"}).find("at least 1"), std::string::npos);
  EXPECT_NE(ParseError({"subscribe", "--max-in-flight", "4294967296"}).find("0..4294967295"),
            std::string::npos);
}

TEST(ParseCliArgsTest, HealthTakesAServiceName) {
  absl::StatusOr<CliArgs> a = Parse({"health", "--service", "lawn.v1.TimerService"});
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->command, CliCommand::kHealth);
  EXPECT_EQ(a->service, "lawn.v1.TimerService");
}

TEST(ParseCliArgsTest, HelpWinsOverMissingArguments) {
  for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
           {"--help"}, {"-h"}, {"help"}, {"start", "--help"}, {"reschedule", "-h"}, {"--json", "help"}}) {
    absl::StatusOr<CliArgs> a = Parse(args);
    ASSERT_TRUE(a.ok()) << a.status();
    EXPECT_EQ(a->command, CliCommand::kHelp);
  }
}

// ---- Security flags
// ----------------------------------------------------------------------------------------

TEST(ParseCliArgsTest, WithoutSecurityFlagsTheConnectionIsPlaintextWithoutToken) {
  absl::StatusOr<CliArgs> a = Parse({"stats"});
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_FALSE(a->tls);
  EXPECT_EQ(a->tls_ca, "");
  EXPECT_EQ(a->tls_cert, "");
  EXPECT_EQ(a->tls_key, "");
  EXPECT_EQ(a->tls_server_name, "");
  EXPECT_EQ(a->token, "");
}

TEST(ParseCliArgsTest, SecurityFlagsAreGlobalAndReadTheirValues) {
  absl::StatusOr<CliArgs> a = Parse({"--tls-ca", "/etc/ca.crt", "get", "x", "--tls-cert=/c.crt", "--tls-key",
                                     "/c.key", "--tls-server-name", "lawn.example", "--token", "s3cr3t"});
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_TRUE(a->tls);
  EXPECT_EQ(a->tls_ca, "/etc/ca.crt");
  EXPECT_EQ(a->tls_cert, "/c.crt");
  EXPECT_EQ(a->tls_key, "/c.key");
  EXPECT_EQ(a->tls_server_name, "lawn.example");
  EXPECT_EQ(a->token, "s3cr3t");
  for (const char* command : {"health", "stats", "list", "subscribe"}) {
    EXPECT_TRUE(Parse({command, "--tls-ca", "ca.crt", "--token", "t"}).ok()) << command;
  }
}

TEST(ParseCliArgsTest, AnyTlsFlagTurnsTlsOnAndACaIsNotRequired) {
  // Without --tls-ca lawnctl checks lawnd's certificate against gRPC's default (system) roots.
  for (const std::vector<std::string>& args :
       std::vector<std::vector<std::string>>{{"stats", "--tls-ca", "ca.crt"},
                                             {"stats", "--tls-cert", "c.crt", "--tls-key", "c.key"},
                                             {"stats", "--tls-server-name", "lawn.example"}}) {
    absl::StatusOr<CliArgs> a = Parse(args);
    ASSERT_TRUE(a.ok()) << a.status();
    EXPECT_TRUE(a->tls) << args[1];
  }
}

TEST(ParseCliArgsTest, ClientCertificateAndKeyComeTogether) {
  EXPECT_NE(ParseError({"stats", "--tls-cert", "c.crt"}).find("--tls-cert needs --tls-key FILE"),
            std::string::npos);
  EXPECT_NE(
      ParseError({"stats", "--tls-ca", "ca.crt", "--tls-key", "c.key"}).find("--tls-key needs --tls-cert"),
      std::string::npos);
}

TEST(ParseCliArgsTest, EmptyTlsValuesAreRejected) {
  EXPECT_NE(ParseError({"stats", "--tls-ca="}).find("--tls-ca: an empty path"), std::string::npos);
  EXPECT_NE(ParseError({"stats", "--tls-server-name", ""}).find("--tls-server-name: an empty name"),
            std::string::npos);
}

TEST(ParseCliArgsTest, TokenComesFromTheEnvironmentUnlessTheFlagIsGiven) {
  absl::StatusOr<CliArgs> env = ParseCliArgs({"stats"}, kAddr, "from-env");
  ASSERT_TRUE(env.ok()) << env.status();
  EXPECT_EQ(env->token, "from-env");
  absl::StatusOr<CliArgs> flag = ParseCliArgs({"stats", "--token", "from-flag"}, kAddr, "from-env");
  ASSERT_TRUE(flag.ok()) << flag.status();
  EXPECT_EQ(flag->token, "from-flag");
  // An empty flag also wins: it sends no token although $LAWN_TOKEN is set.
  absl::StatusOr<CliArgs> none = ParseCliArgs({"stats", "--token="}, kAddr, "from-env");
  ASSERT_TRUE(none.ok()) << none.status();
  EXPECT_EQ(none->token, "");
}

TEST(ParseCliArgsTest, ATokenThatCannotBeAHeaderIsRejectedWithoutBeingShown) {
  const std::string flag_error = ParseError({"stats", "--token", "top secret"});
  EXPECT_NE(flag_error.find("--token: token: byte 3 is 0x20"), std::string::npos) << flag_error;
  EXPECT_EQ(flag_error.find("secret"), std::string::npos) << flag_error;

  absl::StatusOr<CliArgs> env = ParseCliArgs({"stats"}, kAddr, "secret\n");
  ASSERT_FALSE(env.ok());
  EXPECT_EQ(env.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(env.status().message().find("$LAWN_TOKEN: token: byte 6 is 0x0a"), std::string::npos)
      << env.status();
  EXPECT_EQ(env.status().message().find("secret"), std::string::npos) << env.status();

  // A valid flag replaces a bad environment value, so the latter does not matter.
  EXPECT_TRUE(ParseCliArgs({"stats", "--token", "good"}, kAddr, "bad token").ok());
}

TEST(ExitCodeForTest, MapsTheDocumentedCodes) {
  EXPECT_EQ(ExitCodeFor(absl::StatusCode::kOk), 0);
  EXPECT_EQ(ExitCodeFor(absl::StatusCode::kNotFound), 3);
  EXPECT_EQ(ExitCodeFor(absl::StatusCode::kAlreadyExists), 4);
  EXPECT_EQ(ExitCodeFor(absl::StatusCode::kUnavailable), 5);
  EXPECT_EQ(ExitCodeFor(absl::StatusCode::kDeadlineExceeded), 5);
  EXPECT_EQ(ExitCodeFor(absl::StatusCode::kInvalidArgument), 6);
  EXPECT_EQ(ExitCodeFor(absl::StatusCode::kResourceExhausted), 7);
  EXPECT_EQ(ExitCodeFor(absl::StatusCode::kInternal), 1);
  EXPECT_EQ(ExitCodeFor(absl::StatusCode::kCancelled), 1);
}

TEST(UsageTextTest, DocumentsCommandsAndExitCodes) {
  const std::string usage = UsageText();
  for (const char* needle : {"start <id>",
                             "delete <id>",
                             "get <id>",
                             "reschedule <id>",
                             "list",
                             "subscribe",
                             "health",
                             "stats",
                             "LAWN_ADDR",
                             "127.0.0.1:7070",
                             "5  UNAVAILABLE",
                             "7  RESOURCE_EXHAUSTED",
                             "2  usage error",
                             "--tls-ca FILE",
                             "--tls-cert FILE",
                             "--tls-key FILE",
                             "--tls-server-name NAME",
                             "--token TOKEN",
                             "$LAWN_TOKEN",
                             "`ps`",
                             "UNAUTHENTICATED",
                             "PERMISSION_DENIED"}) {
    EXPECT_NE(usage.find(needle), std::string::npos) << needle;
  }
}

}  // namespace
}  // namespace lawn

namespace lawn {
namespace {

TEST(ParseCliArgsClusterTest, ClusterTakesStatusMapOrDrainOfAMember) {
  absl::StatusOr<CliArgs> status = ParseCliArgs({"cluster", "status"}, "127.0.0.1:7070");
  ASSERT_TRUE(status.ok()) << status.status();
  EXPECT_EQ(status->command, CliCommand::kCluster);
  EXPECT_EQ(status->id, "status");
  EXPECT_TRUE(status->member.empty());
  EXPECT_TRUE(ParseCliArgs({"cluster", "map", "--json"}, "127.0.0.1:7070").ok());
  absl::StatusOr<CliArgs> drain = ParseCliArgs({"cluster", "drain", "lawn-3", "--for", "90s"}, "127.0.0.1:7070");
  ASSERT_TRUE(drain.ok()) << drain.status();
  EXPECT_EQ(drain->id, "drain");
  EXPECT_EQ(drain->member, "lawn-3");
  EXPECT_EQ(drain->for_duration, std::chrono::seconds(90));
  EXPECT_FALSE(drain->cancel);
  absl::StatusOr<CliArgs> cancel = ParseCliArgs({"cluster", "drain", "--cancel", "lawn-3"}, "127.0.0.1:7070");
  ASSERT_TRUE(cancel.ok()) << cancel.status();
  EXPECT_TRUE(cancel->cancel);
  for (const std::vector<std::string>& bad : {std::vector<std::string>{"cluster"},
                                              std::vector<std::string>{"cluster", "move"},
                                              std::vector<std::string>{"cluster", "map", "extra"}}) {
    absl::StatusOr<CliArgs> parsed = ParseCliArgs(bad, "127.0.0.1:7070");
    ASSERT_FALSE(parsed.ok());
    EXPECT_NE(parsed.status().message().find("status, map or drain <member>"), std::string::npos)
        << parsed.status();
  }
  for (const std::vector<std::string>& bad : {std::vector<std::string>{"cluster", "drain"},
                                              std::vector<std::string>{"cluster", "drain", "a", "b"}}) {
    absl::StatusOr<CliArgs> parsed = ParseCliArgs(bad, "127.0.0.1:7070");
    ASSERT_FALSE(parsed.ok());
    EXPECT_NE(parsed.status().message().find("one <member>"), std::string::npos) << parsed.status();
  }
  absl::StatusOr<CliArgs> stray = ParseCliArgs({"cluster", "status", "--cancel"}, "127.0.0.1:7070");
  ASSERT_FALSE(stray.ok());
  EXPECT_NE(stray.status().message().find("go with 'cluster drain <member>'"), std::string::npos) << stray.status();
}

}  // namespace
}  // namespace lawn
