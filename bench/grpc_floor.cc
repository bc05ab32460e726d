// lawn_grpc_floor: the gRPC floor under lawnd. Serves lawn.v1.TimerService (proto/lawn/v1/timer.proto) on
// gRPC's callback API and does no work: StartTimer answers OK with an empty StartTimerResponse, StartTimers
// answers one StartTimerResult with code 0 (and no Timer) per item, every other method UNIMPLEMENTED. No
// validation, no shard hand-off, no storage: what is left is gRPC, HTTP/2, TCP and the protobuf parse and
// serialize of lawn's messages, so lawn_load's rate against it is the most a lawnd could reach on this
// machine, and lawnd's CPU per timer minus this one's is what lawnd itself costs (BENCHMARKS.md section 9).
//
//   lawn_grpc_floor [--listen 127.0.0.1:0]
//   lawn_load --target 127.0.0.1:PORT --mode unary --concurrency 64 --duration 4s --server-pid PID
//
// Set up as lawnd's gRPC server is (server/lawn_server.cc): callback API with gRPC's own threads, the same
// channel arguments and limits (taken from the defaults of lawn::Options), the default health service. Prints
// "lawn_grpc_floor listening on HOST:PORT" (the form of lawnd's line, which bench/scripts/load_common.sh waits
// for) on stderr once it accepts calls; SIGTERM or SIGINT stops it with exit status 0. Exit 1: cannot listen;
// 2: bad flags.
//
// Thread-safety: the handlers keep no state; they run on gRPC's threads. main waits for the stop signal.
#include <signal.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>

#include "absl/synchronization/mutex.h"
#include "config/options.h"
#include "grpcpp/grpcpp.h"
#include "grpcpp/health_check_service_interface.h"
#include "grpcpp/resource_quota.h"
#include "lawn/v1/timer.grpc.pb.h"

namespace lawn {
namespace {

constexpr char kUsage[] =
    "usage: lawn_grpc_floor [--listen HOST:PORT]\n"
    "  Serves lawn.v1.TimerService doing no work (StartTimer/StartTimers answer OK, the rest UNIMPLEMENTED).\n"
    "  --listen  address to listen on; port 0 picks a free port (printed). Default 127.0.0.1:0\n";

// Overrides only the two start methods; CallbackService answers the others UNIMPLEMENTED.
class FloorService final : public v1::TimerService::CallbackService {
 public:
  grpc::ServerUnaryReactor* StartTimer(grpc::CallbackServerContext* context, const v1::StartTimerRequest*,
                                       v1::StartTimerResponse*) override {
    grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
    reactor->Finish(grpc::Status::OK);
    return reactor;
  }

  grpc::ServerUnaryReactor* StartTimers(grpc::CallbackServerContext* context, const v1::StartTimersRequest* request,
                                        v1::StartTimersResponse* response) override {
    // code 0 is proto3's default: each result goes on the wire as an empty message, as lawn_load expects.
    response->mutable_results()->Reserve(request->timers_size());
    for (int i = 0; i < request->timers_size(); ++i) response->add_results();
    grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
    reactor->Finish(grpc::Status::OK);
    return reactor;
  }
};

// lawnd's gRPC limits (ApplyServerLimits in server/lawn_server.cc) at their defaults, so that both servers
// make the same flow-control and quota decisions. Keep the two in step.
void ApplyLawndLimits(grpc::ServerBuilder& builder) {
  const Options defaults;
  auto ms = [](std::chrono::nanoseconds d) {
    return static_cast<int>(
        std::min<int64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(d).count(), INT32_MAX));
  };
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  builder.AddChannelArgument(GRPC_ARG_MAX_CONCURRENT_STREAMS, static_cast<int>(defaults.grpc_max_concurrent_streams));
  builder.AddChannelArgument(GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS,
                             ms(defaults.grpc_keepalive_min_time));
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
  builder.AddChannelArgument(GRPC_ARG_HTTP2_MAX_PING_STRIKES, 2);
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIME_MS, 60'000);
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, 20'000);
  if (defaults.grpc_max_connection_idle.count() > 0) {
    builder.AddChannelArgument(GRPC_ARG_MAX_CONNECTION_IDLE_MS, ms(defaults.grpc_max_connection_idle));
  }
  grpc::ResourceQuota quota("lawn_grpc_floor");
  quota.Resize(static_cast<size_t>(defaults.grpc_memory_quota_bytes));
  builder.SetResourceQuota(quota);
  builder.SetMaxReceiveMessageSize(static_cast<int>(defaults.max_message_bytes));
}

// The host part of "host:port", as lawnd prints it.
std::string HostOf(const std::string& listen) {
  const size_t colon = listen.rfind(':');
  return colon == std::string::npos ? listen : listen.substr(0, colon);
}

int Run(const std::string& listen) {
  // Blocked before gRPC starts its threads, so they inherit the mask and only sigwait below sees the signal.
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGTERM);
  sigaddset(&stop, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop, nullptr);

  FloorService service;
  grpc::EnableDefaultHealthCheckService(true);
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort(listen, grpc::InsecureServerCredentials(), &port);
  ApplyLawndLimits(builder);
  builder.RegisterService(&service);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (server == nullptr || port == 0) {
    std::fprintf(stderr, "lawn_grpc_floor: cannot listen on %s\n", listen.c_str());
    return 1;
  }
  std::fprintf(stderr, "lawn_grpc_floor listening on %s:%d (plaintext; no work behind the calls)\n",
               HostOf(listen).c_str(), port);
  std::fflush(stderr);

  int signal = 0;
  sigwait(&stop, &signal);
  server->Shutdown(std::chrono::system_clock::now());
  std::fprintf(stderr, "lawn_grpc_floor: %s, stopped\n", signal == SIGTERM ? "SIGTERM" : "SIGINT");
  return 0;
}

}  // namespace
}  // namespace lawn

int main(int argc, char** argv) {
  // As lawnd does (server/lawnd_main.cc): Debian's Abseil checks lock order on every absl::Mutex (gRPC's
  // too) under one global lock, which would tax this side of the comparison and not lawnd's.
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  std::string listen = "127.0.0.1:0";
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      std::fputs(lawn::kUsage, stdout);
      return 0;
    }
    if (arg == "--listen" && i + 1 < argc) {
      listen = argv[++i];
    } else if (arg.rfind("--listen=", 0) == 0) {
      listen = arg.substr(std::strlen("--listen="));
    } else {
      std::fprintf(stderr, "lawn_grpc_floor: unknown flag or missing value: %s\n%s", arg.c_str(), lawn::kUsage);
      return 2;
    }
  }
  return lawn::Run(listen);
}
