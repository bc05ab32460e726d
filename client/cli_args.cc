#include "client/cli_args.h"

#include <limits>
#include <utility>

#include "client/cat.h"
#include "client/client_security.h"

namespace lawn {
namespace {

using internal::Cat;

struct CommandSpec {
  std::string_view name;
  CliCommand command;
  bool takes_id;
};
constexpr CommandSpec kCommands[] = {
    {"start", CliCommand::kStart, true},    {"delete", CliCommand::kDelete, true},
    {"get", CliCommand::kGet, true},        {"reschedule", CliCommand::kReschedule, true},
    {"list", CliCommand::kList, false},     {"subscribe", CliCommand::kSubscribe, false},
    {"health", CliCommand::kHealth, false}, {"stats", CliCommand::kStats, false},
    {"checkpoint", CliCommand::kCheckpoint, true},
    {"set-tick", CliCommand::kSetTick, true},
    {"cluster", CliCommand::kCluster, true},  // The <id> is the subcommand: status or map.
};

constexpr unsigned Bit(CliCommand c) { return 1u << static_cast<unsigned>(c); }
constexpr unsigned kGlobal = ~0u;
constexpr unsigned kWithNamespace = Bit(CliCommand::kStart) | Bit(CliCommand::kDelete) |
                                    Bit(CliCommand::kGet) | Bit(CliCommand::kReschedule) |
                                    Bit(CliCommand::kList) | Bit(CliCommand::kSubscribe);
constexpr unsigned kWithWhen = Bit(CliCommand::kStart) | Bit(CliCommand::kReschedule);

// Sets one field of CliArgs from a flag's value ("" for a flag without a value).
using Setter = absl::Status (*)(std::string_view value, CliArgs& args);

struct FlagSpec {
  std::string_view name;        // Without the leading "--".
  std::string_view short_name;  // Without the leading "-"; "" for none.
  std::string_view value_name;  // "" for a flag that takes no value.
  unsigned commands;            // Bit(command) of each command that accepts it; kGlobal for all.
  Setter set;
};

absl::Status SetDuration(std::string_view value, std::optional<std::chrono::nanoseconds>& out) {
  absl::StatusOr<std::chrono::nanoseconds> d = ParseDurationArg(value);
  if (!d.ok()) return d.status();
  out = *d;
  return absl::OkStatus();
}

// A --tls-* FILE flag: a non-empty path, and TLS on.
absl::Status SetTlsPath(std::string_view value, std::string& out, CliArgs& args) {
  if (value.empty()) return absl::InvalidArgumentError("an empty path; use FILE (PEM)");
  out = std::string(value);
  args.tls = true;
  return absl::OkStatus();
}

template <typename Int>
absl::Status SetInteger(std::string_view value, uint64_t max, Int& out) {
  absl::StatusOr<uint64_t> n = ParseCountArg(value, max);
  if (!n.ok()) return n.status();
  out = static_cast<Int>(*n);
  return absl::OkStatus();
}

constexpr FlagSpec kFlags[] = {
    {"addr", "", "HOST:PORT", kGlobal,
     [](std::string_view v, CliArgs& a) {
       if (v.empty()) return absl::InvalidArgumentError("an empty address; use HOST:PORT");
       a.addr = std::string(v);
       return absl::OkStatus();
     }},
    {"json", "", "", kGlobal,
     [](std::string_view, CliArgs& a) {
       a.json = true;
       return absl::OkStatus();
     }},
    {"timeout", "", "DUR", kGlobal,
     [](std::string_view v, CliArgs& a) {
       absl::StatusOr<std::chrono::nanoseconds> d = ParseDurationArg(v);
       if (!d.ok()) return d.status();
       if (*d <= std::chrono::nanoseconds::zero()) return absl::InvalidArgumentError("must be more than 0");
       a.timeout = *d;
       return absl::OkStatus();
     }},
    {"tls-ca", "", "FILE", kGlobal,
     [](std::string_view v, CliArgs& a) { return SetTlsPath(v, a.tls_ca, a); }},
    {"tls-cert", "", "FILE", kGlobal,
     [](std::string_view v, CliArgs& a) { return SetTlsPath(v, a.tls_cert, a); }},
    {"tls-key", "", "FILE", kGlobal,
     [](std::string_view v, CliArgs& a) { return SetTlsPath(v, a.tls_key, a); }},
    {"tls-server-name", "", "NAME", kGlobal,
     [](std::string_view v, CliArgs& a) {
       if (v.empty()) return absl::InvalidArgumentError("an empty name; use the name in lawnd's certificate");
       a.tls_server_name = std::string(v);
       a.tls = true;
       return absl::OkStatus();
     }},
    {"token", "", "TOKEN", kGlobal,
     [](std::string_view v, CliArgs& a) {
       a.token = std::string(v);  // "" = send none, even with $LAWN_TOKEN set.
       return ValidateToken(v);
     }},
    {"namespace", "n", "NS", kWithNamespace,
     [](std::string_view v, CliArgs& a) {
       a.ns = std::string(v);
       return absl::OkStatus();
     }},
    {"ttl", "", "DUR", kWithWhen, [](std::string_view v, CliArgs& a) { return SetDuration(v, a.ttl); }},
    {"deadline", "", "RFC3339", kWithWhen,
     [](std::string_view v, CliArgs& a) {
       absl::StatusOr<std::chrono::system_clock::time_point> t = ParseDeadlineArg(v);
       if (!t.ok()) return t.status();
       a.deadline = *t;
       return absl::OkStatus();
     }},
    {"payload", "", "STR", Bit(CliCommand::kStart),
     [](std::string_view v, CliArgs& a) {
       a.payload = std::string(v);
       return absl::OkStatus();
     }},
    {"interval", "", "DUR", Bit(CliCommand::kStart),
     [](std::string_view v, CliArgs& a) {
       absl::Status s = SetDuration(v, a.interval);
       if (s.ok() && *a.interval <= std::chrono::nanoseconds::zero()) {
         return absl::InvalidArgumentError("must be more than 0");
       }
       return s;
     }},
    {"replace", "", "", Bit(CliCommand::kStart),
     [](std::string_view, CliArgs& a) {
       a.replace = true;
       return absl::OkStatus();
     }},
    {"page-size", "", "N", Bit(CliCommand::kList),
     [](std::string_view v, CliArgs& a) { return SetInteger(v, 1000, a.page_size); }},
    {"page-token", "", "TOKEN", Bit(CliCommand::kList),
     [](std::string_view v, CliArgs& a) {
       a.page_token = std::string(v);
       return absl::OkStatus();
     }},
    {"all", "", "", Bit(CliCommand::kList),
     [](std::string_view, CliArgs& a) {
       a.all = true;
       return absl::OkStatus();
     }},
    {"max-in-flight", "", "N", Bit(CliCommand::kSubscribe),
     [](std::string_view v, CliArgs& a) {
       return SetInteger(v, std::numeric_limits<uint32_t>::max(), a.max_in_flight);
     }},
    {"max-batch", "", "N", Bit(CliCommand::kSubscribe),
     [](std::string_view v, CliArgs& a) {
       return SetInteger(v, std::numeric_limits<uint32_t>::max(), a.max_batch);
     }},
    {"observe", "", "", Bit(CliCommand::kSubscribe),
     [](std::string_view, CliArgs& a) {
       a.observe = true;
       return absl::OkStatus();
     }},
    {"count", "", "N", Bit(CliCommand::kSubscribe),
     [](std::string_view v, CliArgs& a) {
       absl::Status s = SetInteger(v, std::numeric_limits<uint64_t>::max(), a.count);
       if (s.ok() && a.count == 0) return absl::InvalidArgumentError("must be at least 1");
       return s;
     }},
    {"cancel", "", "", Bit(CliCommand::kCluster),
     [](std::string_view, CliArgs& a) {
       a.cancel = true;
       return absl::OkStatus();
     }},
    {"for", "", "DUR", Bit(CliCommand::kSubscribe) | Bit(CliCommand::kCluster),
     [](std::string_view v, CliArgs& a) { return SetDuration(v, a.for_duration); }},
    {"service", "", "NAME", Bit(CliCommand::kHealth),
     [](std::string_view v, CliArgs& a) {
       a.service = std::string(v);
       return absl::OkStatus();
     }},
};

const FlagSpec* FindFlag(std::string_view name, bool is_short) {
  for (const FlagSpec& flag : kFlags) {
    if ((is_short ? flag.short_name : flag.name) == name && !name.empty()) return &flag;
  }
  return nullptr;
}

const CommandSpec* FindCommand(std::string_view name) {
  for (const CommandSpec& command : kCommands) {
    if (command.name == name) return &command;
  }
  return nullptr;
}

struct FlagValue {
  const FlagSpec* flag;
  std::string spelled;  // As written ("-n", "--ttl"), for messages.
  std::string value;
};

absl::Status UsageError(const std::string& message) { return absl::InvalidArgumentError(message); }

}  // namespace

int ExitCodeFor(absl::StatusCode code) {
  switch (code) {
    case absl::StatusCode::kOk:
      return kExitOk;
    case absl::StatusCode::kNotFound:
      return kExitNotFound;
    case absl::StatusCode::kAlreadyExists:
      return kExitAlreadyExists;
    case absl::StatusCode::kUnavailable:
    case absl::StatusCode::kDeadlineExceeded:
      return kExitUnavailable;
    case absl::StatusCode::kInvalidArgument:
      return kExitInvalidArgument;
    case absl::StatusCode::kResourceExhausted:
      return kExitResourceExhausted;
    default:
      return kExitError;
  }
}

absl::StatusOr<CliArgs> ParseCliArgs(const std::vector<std::string>& args, std::string_view default_addr,
                                     std::string_view default_token) {
  CliArgs out;
  out.addr = std::string(default_addr);
  out.token = std::string(default_token);
  const CommandSpec* command = nullptr;
  std::vector<FlagValue> flags;
  std::vector<std::string> positionals;
  bool help = false;
  bool flags_done = false;  // After "--" everything is positional (an id may start with '-').
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (!flags_done && arg == "--") {
      flags_done = true;
      continue;
    }
    if (!flags_done && (arg == "--help" || arg == "-h")) {
      help = true;
      continue;
    }
    if (!flags_done && arg.size() > 1 && arg[0] == '-') {
      const bool is_short = arg[1] != '-';
      const std::string_view body = std::string_view(arg).substr(is_short ? 1 : 2);
      const size_t equals = body.find('=');
      const std::string_view name = body.substr(0, equals);
      const FlagSpec* flag = FindFlag(name, is_short);
      const std::string spelled = std::string(is_short ? "-" : "--") + std::string(name);
      if (flag == nullptr) return UsageError("unknown flag " + spelled);
      if (flag->value_name.empty()) {
        if (equals != std::string_view::npos) return UsageError("flag " + spelled + " takes no value");
        flags.push_back({flag, spelled, ""});
        continue;
      }
      if (equals != std::string_view::npos) {
        flags.push_back({flag, spelled, std::string(body.substr(equals + 1))});
        continue;
      }
      if (i + 1 >= args.size()) {
        return UsageError(Cat("flag ", spelled, " needs a value: ", spelled, " ", flag->value_name));
      }
      flags.push_back({flag, spelled, args[++i]});
      continue;
    }
    if (command == nullptr && !flags_done) {
      if (arg == "help") {
        help = true;
        continue;
      }
      command = FindCommand(arg);
      if (command == nullptr) return UsageError("unknown command '" + arg + "'");
      continue;
    }
    positionals.push_back(arg);
  }
  if (help) return out;  // command stays kHelp.
  if (command == nullptr) return UsageError("missing command");
  out.command = command->command;

  bool token_flag = false;
  for (const FlagValue& f : flags) {
    if ((f.flag->commands & Bit(out.command)) == 0) {
      return UsageError(Cat("flag ", f.spelled, " does not apply to '", command->name, "'"));
    }
    if (absl::Status s = f.flag->set(f.value, out); !s.ok()) {
      return UsageError(Cat(f.spelled, ": ", s.message()));
    }
    token_flag = token_flag || f.flag->name == "token";
  }
  if (!token_flag) {
    if (absl::Status s = ValidateToken(out.token); !s.ok())
      return UsageError(Cat("$LAWN_TOKEN: ", s.message()));
  }
  if (out.tls_cert.empty() != out.tls_key.empty()) {
    return UsageError(out.tls_cert.empty() ? "--tls-key needs --tls-cert FILE too (both or neither)"
                                           : "--tls-cert needs --tls-key FILE too (both or neither)");
  }

  if (out.command == CliCommand::kCluster) {
    // `cluster status`, `cluster map` or `cluster drain <member>`: the subcommand rides in `id`.
    if (!positionals.empty() && positionals[0] == "drain") {
      if (positionals.size() != 2) return UsageError("'cluster drain' takes one <member>");
      out.member = positionals[1];
      positionals.pop_back();
    } else if (positionals.size() != 1 || (positionals[0] != "status" && positionals[0] != "map")) {
      return UsageError("'cluster' takes one subcommand: status, map or drain <member>");
    }
    if ((out.cancel || out.for_duration.has_value()) && out.member.empty()) {
      return UsageError("--cancel and --for go with 'cluster drain <member>'");
    }
  }
  if (command->takes_id) {
    if (positionals.empty()) return UsageError(Cat("'", command->name, "' needs a timer <id>"));
    if (positionals.size() > 1) {
      return UsageError(Cat("'", command->name, "' takes one <id>; unexpected '", positionals[1], "'"));
    }
    out.id = positionals[0];
  } else if (!positionals.empty()) {
    return UsageError(Cat("'", command->name, "' takes no arguments; unexpected '", positionals[0], "'"));
  }
  if (out.command == CliCommand::kStart || out.command == CliCommand::kReschedule) {
    if (out.ttl.has_value() == out.deadline.has_value()) {
      return UsageError(Cat("'", command->name, "' needs exactly one of --ttl DUR and --deadline RFC3339"));
    }
  }
  return out;
}

std::string UsageText() {
  return R"(Usage: lawnctl [--addr HOST:PORT] [--json] [--timeout DUR] [security flags] <command> [arguments]

lawnctl talks to lawnd, the lawn timer daemon.

Commands:
  start <id> (--ttl DUR | --deadline RFC3339) [-n NS] [--payload STR] [--interval DUR] [--replace]
      Start a timer that fires after --ttl or at --deadline; --interval re-arms it after each expiration;
      --replace overwrites a pending timer with the same id instead of failing with ALREADY_EXISTS.
  delete <id> [-n NS]
      Delete a pending timer.
  get <id> [-n NS]
      Show a pending timer.
  reschedule <id> (--ttl DUR | --deadline RFC3339) [-n NS]
      Move a pending timer to a new deadline.
  list [-n NS] [--page-size N] [--page-token TOKEN] [--all]
      List the pending timers of a namespace in id order, one page (default 100, at most 1000);
      --all follows the page tokens to the last page.
  subscribe [-n NS] [--max-in-flight N] [--max-batch N] [--observe] [--count N] [--for DUR]
      Print each expiration as it fires, and ack it. Runs until --count expirations, until --for has
      elapsed, or until Ctrl-C / SIGTERM (all exit 0); exits non-zero if the stream fails. --observe
      receives a copy of every expiration without taking work from other subscribers. --max-batch: up
      to N expirations per message from lawnd (default 1000, lawnd's cap; 0 = one per message).
  health [--service NAME]
      Print SERVING or NOT_SERVING (exit 0 only when SERVING).
  stats
      Print totals, shards and namespaces.
  checkpoint <name>
      Back up the store: lawnd writes a consistent copy to <data_dir>/checkpoints/<name> (name: 1..64 of
      [a-z0-9._-]) and prints its path. Restore by starting lawnd with --data-dir pointing at a copy of it.
  set-tick <duration>
      Change the firing resolution of the running lawnd (1us..1s, e.g. 10ms) until its next restart; prints
      the previous tick. Needs the admin permission.
  cluster status|map
      Cluster mode: `status` prints the members (address, live, partitions owned) and the leader as the
      member at --addr sees them; `map` prints which member owns each range of partitions.
  cluster drain <member> [--for DUR] [--cancel]
      Cluster mode: move every partition of <member> to the other live members (before stopping it for
      good), printing the partitions it still owns as they go, until it owns none (exit 0) or --for has
      elapsed (default 10m; exit 5). A restart of the member ends the drain; --cancel ends it at once.
      Needs the admin permission.

Global flags (before or after the command):
  --addr HOST:PORT   lawnd's address (default: $LAWN_ADDR, else 127.0.0.1:7070)
  --json             print JSON (proto3 JSON mapping: ids and payloads are base64); subscribe prints
                     one object per line
  --timeout DUR      deadline of each call (default 10s); subscribe streams have none
  -h, --help         print this help

Security flags (global; TLS is on when any --tls-* flag is given, plaintext otherwise):
  --tls-ca FILE      CA certificate(s), PEM, that lawnd's certificate must chain to; without it, gRPC's
                     default roots (the system's, or $GRPC_DEFAULT_SSL_ROOTS_FILE_PATH)
  --tls-cert FILE    client certificate, PEM, for mutual TLS (lawnd's tls.client_ca_file); needs --tls-key
  --tls-key FILE     the client certificate's private key, PEM; needs --tls-cert
  --tls-server-name NAME
                     check lawnd's certificate for NAME instead of the host in --addr (to connect by IP
                     to a certificate issued for a DNS name)
  --token TOKEN      bearer token sent with every call (default: $LAWN_TOKEN; --token= sends none).
                     A flag's value is visible to other users in `ps`: prefer $LAWN_TOKEN.

  -n, --namespace NS   the namespace; default "default"
  Flags take their value as the next argument or after '=' (--ttl=5s). After "--" every argument is
  positional, for ids that start with '-'.

Durations: a number and a unit, ns us ms s m h; terms may be combined: 250us, 500ms, 1.5s, 2m, 1h30m.
Deadlines: RFC 3339 with a zone: 2025-01-31T12:00:00Z, 2025-01-31T13:00:00.250+01:00.

Exit codes:
  0  success
  1  other error (and health: not SERVING)
  2  usage error, or a --tls-* file that cannot be read
  3  NOT_FOUND
  4  ALREADY_EXISTS
  5  UNAVAILABLE or DEADLINE_EXCEEDED (lawnd unreachable)
  6  INVALID_ARGUMENT
  7  RESOURCE_EXHAUSTED
Without a valid token lawnd answers UNAUTHENTICATED, and PERMISSION_DENIED when the token lacks the
permission for the namespace (both exit 1).
Errors are printed to stderr as "lawnctl: <CODE>: <message>".
)";
}

}  // namespace lawn