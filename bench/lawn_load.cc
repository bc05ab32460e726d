// lawn_load: networked load generator for lawnd over gRPC (loopback), for bench/NETWORK_RESULTS.md.
//
//   lawn_load --target 127.0.0.1:PORT --mode batch --concurrency 16 --count 2000000 --duration 5s --json
//   lawn_load --target 127.0.0.1:PORT --mode unary --concurrency 64 --count 500000 --duration 5s
//   lawn_load --target 127.0.0.1:PORT --mode precision --pending 1000000 --rate 10000 --duration 20s
//   lawn_load --target 127.0.0.1:PORT --mode drain --count 200000 --max-batch 1000 --server-pid PID
//
// unary/batch: closed-loop StartTimer / StartTimers (of --batch timers) calls, --concurrency in flight, until
// --count timers or --duration; TTL --ttl (1h) so nothing fires during the run; random 16-byte ids; one
// namespace per run. Prints one line: timers/s (timers lawnd accepted / elapsed), calls/s, call latency
// p50/p99/max in microseconds, errors. precision: see bench/load_precision.h; drain (Subscribe throughput):
// see bench/load_drain.h. --help lists every flag.
// bench/scripts/*.sh start lawnd, run this and collect the medians.
//
// Exit status: 0 when the run completed without errors, 1 when some calls or timers failed (the summary is
// printed anyway), 2 for bad flags.
//
// Thread-safety: main thread plus gRPC's callback threads (see load_writer.h, load_precision.h).
#include <fstream>
#include <iterator>
#include <cstdio>
#include <cstring>
#include <memory>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "bench/load_cpu.h"
#include "bench/load_drain.h"
#include "bench/load_options.h"
#include "bench/load_precision.h"
#include "bench/load_report.h"
#include "bench/load_writer.h"
#include "grpcpp/grpcpp.h"
#include "lawn/v1/timer.grpc.pb.h"

namespace {

// `count` channels to `target`, each its own TCP connection (a local subchannel pool, and an argument that
// differs per channel, keep gRPC from sharing one connection among them).
std::vector<std::shared_ptr<grpc::Channel>> MakeChannels(const std::string& target, uint32_t count,
                                                         const std::string& tls_ca) {
  std::shared_ptr<grpc::ChannelCredentials> credentials = grpc::InsecureChannelCredentials();
  if (!tls_ca.empty()) {
    std::ifstream in(tls_ca);
    grpc::SslCredentialsOptions tls;
    tls.pem_root_certs.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    credentials = grpc::SslCredentials(tls);
  }
  std::vector<std::shared_ptr<grpc::Channel>> channels;
  for (uint32_t i = 0; i < count; ++i) {
    grpc::ChannelArguments args;
    args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
    args.SetInt("lawn_load.channel", static_cast<int>(i));
    args.SetMaxReceiveMessageSize(64 << 20);
    args.SetMaxSendMessageSize(64 << 20);
    channels.push_back(grpc::CreateCustomChannel(target, credentials, args));
  }
  return channels;
}

}  // namespace

int main(int argc, char** argv) {
  // As lawnd does (server/lawnd_main.cc): Debian's Abseil checks lock order on every absl::Mutex (gRPC's
  // too) under one global lock, which would tax this side of the comparison and not lawnd's.
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--help") == 0 || std::strcmp(argv[i], "-h") == 0) {
      std::fputs(lawn::LoadUsage(), stdout);
      return 0;
    }
  }
  absl::StatusOr<lawn::LoadOptions> parsed = lawn::ParseLoadOptions(argc, argv);
  if (!parsed.ok()) {
    std::fprintf(stderr, "lawn_load: %s\n", std::string(parsed.status().message()).c_str());
    return 2;
  }
  lawn::LoadOptions options = *parsed;
  if (options.seed == 0) options.seed = static_cast<uint64_t>(absl::GetCurrentTimeNanos()) | 1;

  const auto channels = MakeChannels(options.target, options.channels, options.tls_ca);
  for (const auto& channel : channels) {
    if (!channel->WaitForConnected(std::chrono::system_clock::now() + std::chrono::seconds(10))) {
      std::fprintf(stderr, "lawn_load: cannot connect to %s within 10 s\n", options.target.c_str());
      return 1;
    }
  }
  std::vector<std::unique_ptr<lawn::v1::TimerService::Stub>> stubs;
  std::vector<lawn::v1::TimerService::Stub*> stub_ptrs;
  for (const auto& channel : channels) {
    stubs.push_back(lawn::v1::TimerService::NewStub(channel));
    stub_ptrs.push_back(stubs.back().get());
  }

  lawn::Report report;
  bool clean = true;
  const double client_cpu_start = lawn::SelfCpuSeconds();
  const std::optional<double> server_cpu_start =
      options.server_pid != 0 ? lawn::ProcessCpuSeconds(static_cast<pid_t>(options.server_pid))
                              : std::nullopt;
  const std::optional<uint64_t> server_switches_start =
      options.server_pid != 0 ? lawn::ProcessContextSwitches(static_cast<pid_t>(options.server_pid))
                              : std::nullopt;
  uint64_t timers = 0, calls = 0;  // For the costs per timer and per call.
  if (options.mode == lawn::LoadMode::kPrecision) {
    clean = lawn::RunPrecision(options, stub_ptrs[0], stub_ptrs, &report);
  } else if (options.mode == lawn::LoadMode::kDrain) {
    clean = lawn::RunDrain(options, stub_ptrs[0], stub_ptrs, &report);
  } else {
    lawn::StartLoadConfig config;
    config.stubs = stub_ptrs;
    config.unary = options.mode == lawn::LoadMode::kUnary;
    config.concurrency = options.concurrency;
    config.batch = options.batch;
    config.return_timers = options.return_timers;
    config.count = options.count;
    config.duration = options.duration;
    config.ttl = options.ttl;
    config.ns = options.ns;
    config.payload_bytes = options.payload_bytes;
    config.token = options.token;
    config.seed = options.seed;
    config.api = options.api;
    config.cq_threads = options.client_threads;
    lawn::StartLoadResult r = lawn::RunStartLoad(config);
    const lawn::Percentiles latency = lawn::Summarize(r.latencies_us);
    report.Add("mode", config.unary ? "unary" : "batch");
    report.Add("concurrency", uint64_t{options.concurrency});
    report.Add("channels", uint64_t{options.channels});
    report.Add("api", options.api == lawn::ClientApi::kCompletionQueue ? "cq"
                      : options.api == lawn::ClientApi::kCallback      ? "callback"
                                                                       : "blocking");
    report.Add("client_threads",
               uint64_t{options.api == lawn::ClientApi::kCompletionQueue ? options.client_threads
                        : options.api == lawn::ClientApi::kBlocking      ? options.concurrency
                                                                         : 0});
    report.Add("batch", uint64_t{config.unary ? 1 : options.batch});
    report.Add("return_timers", uint64_t{options.return_timers ? 1u : 0u});
    report.Add("timers", r.timers_ok);
    report.Add("calls", r.calls);
    report.Add("elapsed_s", r.elapsed_s);
    report.Add("timers_per_s", r.elapsed_s > 0 ? static_cast<double>(r.timers_ok) / r.elapsed_s : 0.0);
    report.Add("calls_per_s", r.elapsed_s > 0 ? static_cast<double>(r.calls) / r.elapsed_s : 0.0);
    report.AddPercentiles("latency_us", latency, false);
    report.Add("call_errors", r.call_errors);
    report.Add("timer_errors", r.timer_errors);
    if (!r.first_error.empty()) report.Add("first_error", r.first_error);
    clean = r.call_errors == 0 && r.timer_errors == 0;
    timers = r.timers_ok;
    calls = r.calls;
  }
  // CPU over the whole run (precision: preload included), so per-timer figures are for unary/batch.
  const double client_cpu = lawn::SelfCpuSeconds() - client_cpu_start;
  report.Add("client_cpu_s", client_cpu);
  if (timers > 0) report.Add("client_cpu_us_per_timer", client_cpu * 1e6 / static_cast<double>(timers));
  if (server_cpu_start) {
    if (std::optional<double> end = lawn::ProcessCpuSeconds(static_cast<pid_t>(options.server_pid))) {
      const double server_cpu = *end - *server_cpu_start;
      report.Add("server_cpu_s", server_cpu);
      if (timers > 0) report.Add("server_cpu_us_per_timer", server_cpu * 1e6 / static_cast<double>(timers));
    }
  }
  if (server_switches_start && calls > 0) {
    if (std::optional<uint64_t> end = lawn::ProcessContextSwitches(static_cast<pid_t>(options.server_pid))) {
      report.Add("server_switches_per_call",
                 static_cast<double>(*end - *server_switches_start) / static_cast<double>(calls));
    }
  }
  std::printf("%s\n", options.json ? report.Json().c_str() : report.Text().c_str());
  return clean ? 0 : 1;
}
