// lawnd: parse flags, load config, wire the runtime and the gRPC server, run until SIGTERM/SIGINT, drain.
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <memory>
#include <thread>

#include "config/config.h"
#include "server/lawn_server.h"
#include "server/logging.h"
#include "spdlog/spdlog.h"

namespace {

// The write end of the self-pipe the stop-signal handler writes to. A process-wide handler (rather than a
// blocked mask and sigwait) works whichever thread the kernel picks, so it does not depend on every thread,
// including those libraries create, inheriting a mask set before them.
int g_stop_pipe_write = -1;

// Written to the stop pipe (instead of a signal number) when recovery fails.
constexpr char kRecoveryFailed = 'R';

// Exit codes (README, operations): 0 stopped by SIGTERM/SIGINT; 1 cannot start (store, ports); 2 bad flags or
// config; 3 recovery failed (e.g. a corrupt record: see --skip-corrupt-records).
constexpr int kExitCannotStart = 1;
constexpr int kExitRecoveryFailed = 3;

extern "C" void OnStopSignal(int signal) {
  const char byte = static_cast<char>(signal);
  (void)!write(g_stop_pipe_write, &byte, 1);  // Async-signal-safe; a full pipe means a stop is already queued.
}

// Installs the handler; returns the read end of the pipe, or -1.
int InstallStopHandler() {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC | O_NONBLOCK) != 0) return -1;
  g_stop_pipe_write = fds[1];
  struct sigaction action = {};
  action.sa_handler = OnStopSignal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;
  sigaction(SIGTERM, &action, nullptr);
  sigaction(SIGINT, &action, nullptr);
  return fds[0];
}

// Blocks until a stop signal arrives; returns it.
int WaitForStopSignal(int read_fd) {
  const int flags = fcntl(read_fd, F_GETFL);
  fcntl(read_fd, F_SETFL, flags & ~O_NONBLOCK);
  char byte = 0;
  while (read(read_fd, &byte, 1) != 1) {
    if (errno != EINTR) return SIGTERM;
  }
  return byte;
}

}  // namespace

int main(int argc, char** argv) {
  const int stop_fd = InstallStopHandler();
  if (stop_fd < 0) {
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

  lawn::LawnServer server(*options);
  if (absl::Status s = server.Start(); !s.ok()) {
    spdlog::critical("lawnd cannot start: {}", s.ToString());
    return kExitCannotStart;
  }
  // Recovery runs in the background (health says NOT_SERVING meanwhile); if it fails, wake main to exit.
  std::thread recovery_watch([&server] {
    if (!server.WaitUntilRecovered().ok()) {
      (void)!write(g_stop_pipe_write, &kRecoveryFailed, 1);
    }
  });
  recovery_watch.detach();
  const int signal = WaitForStopSignal(stop_fd);
  if (signal == kRecoveryFailed) {
    spdlog::critical("lawnd exits: recovery failed (exit code {})", kExitRecoveryFailed);
    server.Drain();
    return kExitRecoveryFailed;
  }
  spdlog::info("received {}; draining (at most {} ms)", signal == SIGTERM ? "SIGTERM" : "SIGINT",
               std::chrono::duration_cast<std::chrono::milliseconds>(options->shutdown_timeout).count());
  server.Drain();
  spdlog::info("lawnd stopped");
  return 0;
}
