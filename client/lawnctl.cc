// lawnctl: the command-line client of lawnd. Parses arguments (client/cli_args.h), makes the calls through
// LawnClient, prints the answers (client/cli_output.h) and maps errors to exit codes (see lawnctl --help).
#include <signal.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "client/cli_args.h"
#include "client/cli_output.h"
#include "client/cli_values.h"
#include "client/lawn_client.h"
#include "client/proto_time.h"

namespace lawn {
namespace {

int Fail(const absl::Status& status) {
  std::fprintf(stderr, "lawnctl: %s: %s\n", absl::StatusCodeToString(status.code()).c_str(),
               std::string(status.message()).c_str());
  return ExitCodeFor(status.code());
}

void PrintLine(const std::string& line) {
  std::fwrite(line.data(), 1, line.size(), stdout);
  std::fputc('\n', stdout);
  std::fflush(stdout);
}

// Prints `message` as JSON, or `human` (which ends in a newline unless it is a single line).
int Print(const CliArgs& args, const google::protobuf::Message& message, const std::string& human) {
  if (!args.json) {
    std::fputs(human.c_str(), stdout);
    if (human.empty() || human.back() != '\n') std::fputc('\n', stdout);
    return kExitOk;
  }
  absl::StatusOr<std::string> json = ToJson(message);
  if (!json.ok()) return Fail(json.status());
  PrintLine(*json);
  return kExitOk;
}

int PrintTimer(const CliArgs& args, const absl::StatusOr<v1::Timer>& timer, std::string_view verb) {
  if (!timer.ok()) return Fail(timer.status());
  return Print(args, *timer, verb.empty() ? TimerDetails(*timer) : TimerSummary(verb, *timer));
}

int Start(const CliArgs& args, LawnClient& client) {
  v1::StartTimerRequest request;
  request.set_namespace_(args.ns);
  request.set_id(args.id);
  if (args.ttl.has_value()) *request.mutable_ttl() = ToProtoDuration(*args.ttl);
  if (args.deadline.has_value()) *request.mutable_deadline() = ToProtoTimestamp(*args.deadline);
  request.set_payload(args.payload);
  if (args.interval.has_value()) *request.mutable_interval() = ToProtoDuration(*args.interval);
  request.set_replace(args.replace);
  return PrintTimer(args, client.StartTimer(request), "started");
}

int Reschedule(const CliArgs& args, LawnClient& client) {
  return PrintTimer(args,
                    args.ttl.has_value() ? client.RescheduleTimer(args.ns, args.id, *args.ttl)
                                         : client.RescheduleTimer(args.ns, args.id, *args.deadline),
                    "rescheduled");
}

int List(const CliArgs& args, LawnClient& client) {
  v1::ListTimersResponse all;
  std::string token = args.page_token;
  for (;;) {
    absl::StatusOr<v1::ListTimersResponse> page = client.ListTimers(args.ns, args.page_size, token);
    if (!page.ok()) return Fail(page.status());
    for (v1::Timer& timer : *page->mutable_timers()) *all.add_timers() = std::move(timer);
    all.set_next_page_token(page->next_page_token());
    // A token that does not move would loop forever; stop rather than trust it.
    if (!args.all || page->next_page_token().empty() || page->next_page_token() == token) break;
    token = page->next_page_token();
  }
  if (args.all) all.clear_next_page_token();
  const int code = Print(args, all, TimerTable(all));
  if (!args.json && !all.next_page_token().empty()) {
    std::fprintf(stderr, "more timers: add --page-token %s, or use --all\n", all.next_page_token().c_str());
  }
  return code;
}

int Health(const CliArgs& args, LawnClient& client) {
  absl::StatusOr<ServingStatus> status = client.Health(args.service);
  if (!status.ok()) return Fail(status.status());
  grpc::health::v1::HealthCheckResponse response;
  response.set_status(*status);
  Print(args, response, grpc::health::v1::HealthCheckResponse::ServingStatus_Name(*status));
  return *status == grpc::health::v1::HealthCheckResponse::SERVING ? kExitOk : kExitError;
}

int Stats(const CliArgs& args, LawnClient& client) {
  absl::StatusOr<v1::GetStatsResponse> stats = client.GetStats();
  if (!stats.ok()) return Fail(stats.status());
  return Print(args, *stats, StatsText(*stats));
}

// `cluster drain <member>`: marks it draining, then follows the map until it owns nothing.
int ClusterDrain(const CliArgs& args, LawnClient& client) {
  absl::StatusOr<uint32_t> owned = client.DrainMember(args.member, args.cancel);
  if (!owned.ok()) return Fail(owned.status());
  if (args.cancel) {
    PrintLine(args.member + " is no longer draining; it owns " + std::to_string(*owned) + " partitions");
    return kExitOk;
  }
  const auto until = std::chrono::steady_clock::now() + args.for_duration.value_or(std::chrono::minutes(10));
  int64_t last = -1;
  while (true) {
    absl::StatusOr<v1::GetClusterMapResponse> map = client.GetClusterMap();
    if (!map.ok()) return Fail(map.status());
    uint32_t left = 0;
    for (const v1::PartitionOwner& owner : map->owners()) left += owner.member() == args.member ? 1 : 0;
    if (static_cast<int64_t>(left) != last) {
      PrintLine(args.member + ": " + std::to_string(left) + " partitions left");
      last = left;
    }
    if (left == 0) {
      PrintLine(args.member + " is drained: it owns no partition and may be stopped");
      return kExitOk;
    }
    if (std::chrono::steady_clock::now() >= until) {
      std::fprintf(stderr, "lawnctl: DEADLINE_EXCEEDED: %s still owns %u partitions (the drain goes on)\n",
                   args.member.c_str(), left);
      return kExitUnavailable;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }
}

// `cluster status` and `cluster map`: the cluster as the member at --addr sees it.
int Cluster(const CliArgs& args, LawnClient& client) {
  if (!args.member.empty()) return ClusterDrain(args, client);
  if (args.id != "status" && args.id != "map") {
    std::fprintf(stderr, "lawnctl: cluster: unknown subcommand '%s'; use status or map\n", args.id.c_str());
    return kExitUsage;
  }
  absl::StatusOr<v1::GetClusterMapResponse> map = client.GetClusterMap();
  if (!map.ok()) return Fail(map.status());
  std::string text;
  if (args.id == "status") {
    text = "cluster " + map->cluster() + ": " + std::to_string(map->partitions()) + " partitions, leader " +
           (map->leader().empty() ? "(none)" : map->leader()) + ", seen from " + map->member() +
           (map->serving() ? " (serving)" : " (NOT serving: its lease is not certainly alive)") + "\n";
    uint32_t unowned = 0;
    for (const v1::PartitionOwner& owner : map->owners()) unowned += owner.member().empty() ? 1 : 0;
    for (const v1::ClusterMember& member : map->members()) {
      text += "  " + member.name() + "  " + (member.live() ? member.address() : std::string("(not live)")) + "  " +
              std::to_string(member.partitions_owned()) + " partitions\n";
    }
    if (unowned > 0) text += "  " + std::to_string(unowned) + " partitions have no owner yet\n";
  } else {
    // Runs of consecutive partitions with one owner, one line each.
    const auto& owners = map->owners();
    for (int i = 0; i < owners.size();) {
      int j = i;
      while (j + 1 < owners.size() && owners[j + 1].member() == owners[i].member()) ++j;
      text += std::to_string(owners[i].partition()) + "-" + std::to_string(owners[j].partition()) + "  " +
              (owners[i].member().empty() ? std::string("(no owner)") : owners[i].member()) + "\n";
      i = j + 1;
    }
  }
  if (!text.empty() && text.back() == '\n') text.pop_back();
  return Print(args, *map, text);
}

// REQUIRES: SIGINT and SIGTERM blocked in every thread (main blocks them before any thread exists), so they
// are taken here with sigtimedwait.
int Subscribe(const CliArgs& args, LawnClient& client, const sigset_t& stop_signals) {
  // The callback stops the stream itself after --count expirations, so none past the count is acked (unacked
  // ones go back to lawnd). It needs the Subscription, which exists only once Subscribe has returned.
  struct Shared {
    absl::Mutex mu;
    Subscription* subscription ABSL_GUARDED_BY(mu) = nullptr;
  } shared;
  uint64_t seen = 0;  // Callback thread only.
  SubscribeOptions options;
  options.max_in_flight = args.max_in_flight;
  // No point holding more than --count: whatever is received past it goes back to lawnd as a redelivery.
  if (args.count != 0 && (options.max_in_flight == 0 || options.max_in_flight > args.count)) {
    options.max_in_flight = static_cast<uint32_t>(args.count);
  }
  options.observe = args.observe;
  options.max_batch = args.max_batch;
  const auto on_expiration = [&](const v1::Expiration& e) {
    if (args.json) {
      absl::StatusOr<std::string> json = ExpirationJson(e);
      PrintLine(json.ok() ? *json : std::string(json.status().message()));
    } else {
      PrintLine(ExpirationLine(e));
    }
    if (args.count != 0 && ++seen == args.count) {
      const auto ready = [&] {
        shared.mu.AssertReaderHeld();
        return shared.subscription != nullptr;
      };
      absl::MutexLock lock(&shared.mu, absl::Condition(&ready));
      shared.subscription
          ->Stop();  // From the callback: this expiration is still acked, no later one is shown.
    }
  };
  std::unique_ptr<Subscription> subscription = client.Subscribe(args.ns, options, on_expiration);
  {
    absl::MutexLock lock(&shared.mu);
    shared.subscription = subscription.get();
  }

  const auto until = args.for_duration.has_value() ? std::chrono::steady_clock::now() + *args.for_duration
                                                   : std::chrono::steady_clock::time_point::max();
  constexpr std::chrono::milliseconds kPoll{100};  // Signal latency; the stream's end wakes us at once.
  for (;;) {
    const auto now = std::chrono::steady_clock::now();
    if (now >= until) break;
    const auto wait = until - now < kPoll ? std::chrono::nanoseconds(until - now) : kPoll;
    if (std::optional<absl::Status> status = subscription->WaitFor(wait); status.has_value()) {
      // Ended: by the callback after --count, or by lawnd / the transport. `seen` is final: the callback has
      // returned for the last time before the stream is marked done.
      if (args.count != 0 && seen >= args.count) return kExitOk;
      return status->ok() ? kExitOk : Fail(*status);
    }
    const timespec no_wait{0, 0};
    if (sigtimedwait(&stop_signals, nullptr, &no_wait) > 0) break;
  }
  subscription->Stop();  // --for elapsed or a stop signal: a clean end either way.
  return kExitOk;
}

// The client's options from the command line; reads the --tls-* files. Errors name the file.
absl::StatusOr<ClientOptions> ClientOptionsFor(const CliArgs& args) {
  ClientOptions options;
  options.timeout = args.timeout;
  options.token = args.token;
  if (args.tls) {
    absl::StatusOr<ClientTls> tls =
        LoadClientTls(args.tls_ca, args.tls_cert, args.tls_key, args.tls_server_name);
    if (!tls.ok()) return tls.status();
    options.tls = *std::move(tls);
  }
  return options;
}

int Run(const CliArgs& args, const sigset_t& stop_signals) {
  if (args.command == CliCommand::kHelp) {
    std::fputs(UsageText().c_str(), stdout);
    return kExitOk;
  }
  // A TLS file that cannot be read or is not PEM is a configuration error: the usage exit code, as for a bad
  // flag, rather than the code the errno maps to (NOT_FOUND would read as "no such timer").
  absl::StatusOr<ClientOptions> options = ClientOptionsFor(args);
  absl::StatusOr<std::unique_ptr<LawnClient>> created =
      options.ok() ? LawnClient::Create(args.addr, *options) : options.status();
  if (!created.ok()) {
    std::fprintf(stderr, "lawnctl: %s\n", std::string(created.status().message()).c_str());
    return kExitUsage;
  }
  const std::unique_ptr<LawnClient>& client = *created;
  switch (args.command) {
    case CliCommand::kStart:
      return Start(args, *client);
    case CliCommand::kDelete:
      return PrintTimer(args, client->DeleteTimer(args.ns, args.id), "deleted");
    case CliCommand::kGet:
      return PrintTimer(args, client->GetTimer(args.ns, args.id), "");
    case CliCommand::kReschedule:
      return Reschedule(args, *client);
    case CliCommand::kList:
      return List(args, *client);
    case CliCommand::kSubscribe:
      return Subscribe(args, *client, stop_signals);
    case CliCommand::kHealth:
      return Health(args, *client);
    case CliCommand::kStats:
      return Stats(args, *client);
    case CliCommand::kCheckpoint: {
      absl::StatusOr<std::string> path = client->CreateCheckpoint(args.id);
      if (!path.ok()) return Fail(path.status());
      v1::CreateCheckpointResponse response;
      response.set_path(*path);
      return Print(args, response, "checkpoint written to " + *path);
    }
    case CliCommand::kSetTick: {
      absl::StatusOr<std::chrono::nanoseconds> tick = ParseDurationArg(args.id);
      if (!tick.ok()) return Fail(absl::InvalidArgumentError("set-tick: " + std::string(tick.status().message())));
      absl::StatusOr<std::chrono::nanoseconds> previous = client->SetTick(*tick);
      if (!previous.ok()) return Fail(previous.status());
      v1::SetTickResponse response;
      *response.mutable_previous() = ToProtoDuration(*previous);
      return Print(args, response, "tick set to " + args.id + " (was " + std::to_string(previous->count()) + " ns)");
    }
    case CliCommand::kCluster:
      return Cluster(args, *client);
    case CliCommand::kHelp:
      break;
  }
  return kExitOk;  // kHelp, answered above.
}

}  // namespace
}  // namespace lawn

int main(int argc, char** argv) {
  const std::vector<std::string> args(argv + 1, argv + argc);
  const char* env_addr = std::getenv("LAWN_ADDR");
  const char* env_token = std::getenv("LAWN_TOKEN");
  const absl::StatusOr<lawn::CliArgs> parsed =
      lawn::ParseCliArgs(args, env_addr != nullptr && *env_addr != '\0' ? env_addr : lawn::kDefaultLawnAddr,
                         env_token != nullptr ? env_token : "");
  if (!parsed.ok()) {
    std::fprintf(stderr, "lawnctl: %s\nRun 'lawnctl --help' for usage.\n",
                 std::string(parsed.status().message()).c_str());
    return lawn::kExitUsage;
  }
  // subscribe ends cleanly on SIGINT / SIGTERM: block them before gRPC starts any thread (threads inherit the
  // mask) and take them with sigtimedwait. Other commands keep the default: a signal kills them.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  if (parsed->command == lawn::CliCommand::kSubscribe) pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  return lawn::Run(*parsed, stop_signals);
}
