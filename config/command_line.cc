// lawnd's command line: ParseCommandLine, WantsHelp, UsageText (config/config.h).
//
// A flag sets the config key of the same name ('-' for '_' and '.') through the same parser as the YAML file, so
// `--tick 1ms` and `tick: 1ms` accept and reject the same text.
#include <algorithm>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "base/status_macros.h"
#include "config/config.h"
#include "config/fields.h"
#include "config/options.h"

namespace lawn {
namespace {

struct Flag {
  std::string_view name;  // Without the leading "--".
  std::string_view key;   // The config key it overrides; empty for --config.
  std::string_view arg;   // The argument's name in the usage text.
  std::string_view help;
};

constexpr std::string_view kConfigFlag = "config";
constexpr Flag kFlags[] = {
    {kConfigFlag, "", "PATH", "YAML config file (see lawn.yaml); without it every key has its default"},
    {"listen", "listen", "ADDR", "gRPC listen address host:port; port 0 picks a free port"},
    {"metrics-listen", "metrics_listen", "ADDR", "Prometheus /metrics address host:port; \"\" disables it"},
    {"health-listen", "health_listen", "ADDR", "plaintext health-only gRPC address host:port; \"\" = none"},
    {"tls-cert-file", "tls.cert_file", "FILE", "TLS: server certificate chain (PEM); with --tls-key-file"},
    {"tls-key-file", "tls.key_file", "FILE", "TLS: server private key (PEM)"},
    {"tls-client-ca-file", "tls.client_ca_file", "FILE",
     "mutual TLS: clients need a certificate this CA signed"},
    {"auth-tokens-file", "auth.tokens_file", "FILE",
     "tokens and grants (YAML); every call then needs a token"},
    {"data-dir", "data_dir", "DIR", "directory of the on-disk timer store"},
    {"shards", "shards", "N", "number of shards, 0..256; 0 = one per CPU core"},
    {"log-level", "log_level", "LEVEL", "trace, debug, info, warn, error, critical or off"},
    {"log-format", "log_format", "FORMAT", "text or json"},
    {"durability", "durability", "MODE", "sync, interval or memory"},
    {"storage-engine", "storage.engine", "ENGINE", "durable modes' store: auto, rocksdb or log"},
    {"tick", "tick", "DURATION", "timing wheel granularity, 1us..1s, e.g. 1ms"},
    {"cluster-etcd-endpoints", "cluster.etcd_endpoints", "LIST",
     "cluster mode: etcd host:port, comma-separated"},
    {"cluster-member", "cluster.member", "NAME", "cluster mode: this member's stable name"},
    {"cluster-advertise", "cluster.advertise", "ADDR",
     "cluster mode: address the other members reach this one at"},
    {"skip-corrupt-records", "skip_corrupt_records", "", "recovery skips (logs, counts) undecodable records"},
};

bool IsHelp(std::string_view arg) { return arg == "--help" || arg == "-h"; }

const Flag* FindFlag(std::string_view name) {
  for (const Flag& flag : kFlags) {
    if (flag.name == name) return &flag;
  }
  return nullptr;
}

struct FlagValue {
  const Flag* flag;
  std::string value;
};

// Splits argv into flags and their values, in command-line order; --help and -h are dropped.
absl::StatusOr<std::vector<FlagValue>> SplitFlags(int argc, const char* const* argv) {
  std::vector<FlagValue> values;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (IsHelp(arg)) continue;
    if (arg.size() <= 2 || !arg.starts_with("--")) {
      return absl::InvalidArgumentError("unexpected argument '" + std::string(arg) +
                                        "'; lawnd takes only flags (see --help)");
    }
    const size_t equals = arg.find('=');
    const std::string_view name =
        arg.substr(2, equals == std::string_view::npos ? std::string_view::npos : equals - 2);
    const Flag* flag = FindFlag(name);
    if (flag == nullptr) {
      return absl::InvalidArgumentError("unknown flag --" + std::string(name) + " (see --help)");
    }
    if (equals != std::string_view::npos) {
      values.push_back({flag, std::string(arg.substr(equals + 1))});
      continue;
    }
    if (flag->arg.empty()) {  // A switch: present means true.
      values.push_back({flag, "true"});
      continue;
    }
    // `--listen --tick 1ms` is a forgotten value, not a listen address of "--tick".
    if (i + 1 >= argc || std::string_view(argv[i + 1]).starts_with("--")) {
      return absl::InvalidArgumentError("flag --" + std::string(name) + " needs a value: --" +
                                        std::string(name) + " " + std::string(flag->arg) + " or --" +
                                        std::string(name) + "=" + std::string(flag->arg));
    }
    values.push_back({flag, argv[++i]});
  }
  return values;
}

}  // namespace

absl::StatusOr<Options> ParseCommandLine(int argc, const char* const* argv) {
  LAWN_ASSIGN_OR_RETURN(const std::vector<FlagValue> flags, SplitFlags(argc, argv));
  // The file first, whatever its position, so that every override flag wins over it.
  std::optional<std::string> config_path;
  for (const FlagValue& flag : flags) {
    if (flag.flag->name == kConfigFlag) config_path = flag.value;
  }
  Options options;
  if (config_path.has_value()) {
    if (config_path->empty()) return absl::InvalidArgumentError("flag --config needs a path, got \"\"");
    LAWN_RETURN_IF_ERROR(internal::ApplyYamlFile(*config_path, options));
  }
  for (const FlagValue& flag : flags) {
    if (flag.flag->name == kConfigFlag) continue;
    const internal::Field* field = internal::FindField(flag.flag->key);
    if (field == nullptr)
      return absl::InternalError("flag --" + std::string(flag.flag->name) + " has no config key");
    LAWN_RETURN_IF_ERROR(internal::WithPrefix(internal::SetField(*field, flag.value, options),
                                              "flag --" + std::string(flag.flag->name) + ": "));
  }
  LAWN_RETURN_IF_ERROR(Validate(options));
  return options;
}

bool WantsHelp(int argc, const char* const* argv) {
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (IsHelp(arg)) return true;
    // Skip the value of `--flag value`, so `--data-dir -h` names a directory rather than asking for help.
    if (arg.starts_with("--") && arg.find('=') == std::string_view::npos &&
        FindFlag(arg.substr(2)) != nullptr) {
      ++i;
    }
  }
  return false;
}

std::string UsageText() {
  const Options defaults;
  std::string text =
      "Usage: lawnd [--config PATH] [FLAG VALUE | FLAG=VALUE]...\n"
      "\n"
      "lawnd serves timers over gRPC. Settings come from the defaults, then the --config file, then the\n"
      "flags below, wherever they stand on the command line; a repeated flag keeps its last value.\n"
      "Every other setting is a key of the config file only.\n"
      "\n"
      "Flags:\n";
  for (const Flag& flag : kFlags) {
    std::string left = "  --" + std::string(flag.name) + " " + std::string(flag.arg);
    left.resize(std::max<size_t>(left.size() + 2, 28), ' ');
    text += left + std::string(flag.help);
    if (!flag.key.empty()) {
      const std::string value = internal::FieldValueText(*internal::FindField(flag.key), defaults);
      text += " (default " + (value.empty() ? std::string("\"\"") : value) + ")";
    }
    text += "\n";
  }
  std::string help = "  --help, -h";
  help.resize(28, ' ');
  text += help + "print this help and exit\n";
  return text;
}

}  // namespace lawn
