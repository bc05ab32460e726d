// lawnd: parse flags, load config, wire the runtime and the gRPC server, run until SIGTERM/SIGINT, drain.
#include <signal.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>

#include "absl/synchronization/mutex.h"
#include "config/config.h"
#include "server/lawn_server.h"
#include "server/logging.h"
#include "server/signal_pipe.h"
#include "spdlog/spdlog.h"

namespace {

// Posted to the signal pipe (instead of a signal number) when recovery fails.
constexpr char kRecoveryFailed = 'R';

// Exit codes (README, operations): 0 stopped by SIGTERM/SIGINT; 1 cannot start (store, ports); 2 bad flags or
// config; 3 recovery failed (e.g. a corrupt record: see --skip-corrupt-records).
constexpr int kExitCannotStart = 1;
constexpr int kExitRecoveryFailed = 3;

}  // namespace

int main(int argc, char** argv) {
  // Debian builds Abseil without NDEBUG, so by default every absl::Mutex lock and unlock records the lock
  // order in one process-wide graph under one global spin lock: a lock shared by every shard and gRPC thread
  // on the hot path (3-4% of lawnd's CPU in unary calls, BENCHMARKS.md section 19). Lock order stays checked
  // where it costs nothing in production: the tests run lawnd with LAWN_MUTEX_DEADLOCK_CHECK=1, which keeps
  // Abseil's detection (a lock-order cycle aborts), the unit tests keep it too, and the TSan build reports
  // lock-order inversions.
  if (const char* check = std::getenv("LAWN_MUTEX_DEADLOCK_CHECK"); check == nullptr || std::string(check) != "1") {
    absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  }
  if (!lawn::SignalPipe::Install({SIGTERM, SIGINT})) {
    std::perror("lawnd: cannot install the SIGTERM handler");
    return 1;
  }

  if (lawn::WantsHelp(argc, argv)) {
    std::fputs(lawn::UsageText().c_str(), stdout);
    return 0;
  }
  absl::StatusOr<lawn::Options> options = lawn::ParseCommandLine(argc, argv);
  if (!options.ok()) {
    std::fprintf(stderr, "lawnd: %s\n(see lawnd --help)\n", std::string(options.status().message()).c_str());
    return 2;
  }
  if (absl::Status s = lawn::SetupLogging(options->log_level, options->log_format); !s.ok()) {
    std::fprintf(stderr, "lawnd: %s\n", std::string(s.message()).c_str());
    return 2;
  }
  spdlog::info("lawnd starting: {}", lawn::DescribeOptions(*options));

  // Threads started from here on (gRPC's, RocksDB's, the workers, the recovery watch) are born with the stop
  // signals blocked; the main thread unblocks them and waits (see SignalPipe::BlockInThisThread).
  lawn::SignalPipe::BlockInThisThread();
  lawn::LawnServer server(*options);
  if (absl::Status s = server.Start(); !s.ok()) {
    spdlog::critical("lawnd cannot start: {}", s.ToString());
    return kExitCannotStart;
  }
  // Recovery runs in the background (health says NOT_SERVING meanwhile); if it fails, wake main to exit.
  std::thread recovery_watch([&server] {
    if (!server.WaitUntilRecovered().ok()) {
      lawn::SignalPipe::Post(kRecoveryFailed);
    }
  });
  lawn::SignalPipe::UnblockInThisThread();
  const int signal = lawn::SignalPipe::Wait();
  if (signal == kRecoveryFailed) {
    spdlog::critical("lawnd exits: recovery failed (exit code {})", kExitRecoveryFailed);
  } else {
    spdlog::info("received {}; draining (at most {} ms)", signal == SIGTERM ? "SIGTERM" : "SIGINT",
                 std::chrono::duration_cast<std::chrono::milliseconds>(options->shutdown_timeout).count());
  }
  // The drain stops the runtime, which ends recovery if it still runs, so the watch returns; it is joined
  // before the server it reads is destroyed.
  server.Drain();
  recovery_watch.join();
  if (signal == kRecoveryFailed) return kExitRecoveryFailed;
  spdlog::info("lawnd stopped");
  return 0;
}
