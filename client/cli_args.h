// lawnctl's command line: the parsed form (CliArgs), its parser, the value parsers it uses (durations, RFC
// 3339 deadlines), the usage text and the exit codes. No I/O and no gRPC, so all of it is unit tested without
// a server.
//
// Thread-safety: pure functions.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "client/cli_values.h"

namespace lawn {

// Where lawnctl connects when neither --addr nor $LAWN_ADDR says otherwise.
inline constexpr std::string_view kDefaultLawnAddr = "127.0.0.1:7070";

// Exit codes (also listed in UsageText).
inline constexpr int kExitOk = 0;
inline constexpr int kExitError = 1;  // Anything else, including health other than SERVING.
inline constexpr int kExitUsage = 2;  // Also a --tls-* file lawnctl cannot read.
inline constexpr int kExitNotFound = 3;
inline constexpr int kExitAlreadyExists = 4;
inline constexpr int kExitUnavailable = 5;  // UNAVAILABLE or DEADLINE_EXCEEDED: lawnd unreachable.
inline constexpr int kExitInvalidArgument = 6;
inline constexpr int kExitResourceExhausted = 7;

// The exit code for a failed call with `code` (kExitOk for OK).
int ExitCodeFor(absl::StatusCode code);

enum class CliCommand { kHelp, kStart, kDelete, kGet, kReschedule, kList, kSubscribe, kHealth, kStats, kCheckpoint,
                       kSetTick, kCluster };

struct CliArgs {
  CliCommand command = CliCommand::kHelp;

  // Global flags, accepted before or after the command.
  std::string addr;                                             // --addr HOST:PORT.
  bool json = false;                                            // --json.
  std::chrono::nanoseconds timeout = std::chrono::seconds(10);  // --timeout: deadline of each unary call.
  // Security. TLS is on when any --tls-* flag is given; without --tls-ca, lawnd's certificate is checked
  // against gRPC's default (system) roots. Paths are read by lawnctl's main, not by the parser.
  bool tls = false;
  std::string tls_ca;           // --tls-ca FILE: PEM roots for lawnd's certificate.
  std::string tls_cert;         // --tls-cert FILE: client certificate (PEM); set together with tls_key.
  std::string tls_key;          // --tls-key FILE: its private key (PEM).
  std::string tls_server_name;  // --tls-server-name NAME: checked against lawnd's certificate.
  std::string token;            // --token, else $LAWN_TOKEN; "" = none. Visible ASCII only.

  // Command arguments; each is set only for the commands that take it.
  std::string ns;  // -n / --namespace; "" = lawnd's "default". All commands but health and stats.
  std::string id;  // The <id> of start, delete, get, reschedule (bytes; taken verbatim).
  // start, reschedule: exactly one of the two.
  std::optional<std::chrono::nanoseconds> ttl;
  std::optional<std::chrono::system_clock::time_point> deadline;
  std::string payload;                               // start --payload.
  std::optional<std::chrono::nanoseconds> interval;  // start --interval; > 0.
  bool replace = false;                              // start --replace.
  int32_t page_size = 0;                             // list --page-size, 0..1000; 0 = lawnd's default (100).
  std::string page_token;                            // list --page-token.
  bool all = false;                                  // list --all: follow next_page_token to the end.
  uint32_t max_in_flight = 100;                      // subscribe --max-in-flight.
  bool observe = false;                              // subscribe --observe.
  uint32_t max_batch = 1000;                         // subscribe --max-batch: per response; 0 = one each.
  uint64_t count = 0;                                // subscribe --count: stop after this many; 0 = no limit.
  std::optional<std::chrono::nanoseconds> for_duration;  // subscribe --for: stop after this long.
  std::string service;                                   // health --service; "" = the whole server.
  std::string member;                                    // cluster drain <member>.
  bool cancel = false;                                   // cluster drain --cancel.
};

// Parses lawnctl's arguments (argv without argv[0]). `default_addr` is used when there is no --addr (main
// passes $LAWN_ADDR or kDefaultLawnAddr), `default_token` when there is no --token (main passes $LAWN_TOKEN;
// a --token flag wins, even an empty one). --help / -h / `help` anywhere give command kHelp. Every error is
// INVALID_ARGUMENT with a message naming the offending argument and what is allowed (never a token's
// value); lawnctl exits kExitUsage.
absl::StatusOr<CliArgs> ParseCliArgs(const std::vector<std::string>& args, std::string_view default_addr,
                                     std::string_view default_token = {});

// lawnctl --help.
std::string UsageText();

}  // namespace lawn
