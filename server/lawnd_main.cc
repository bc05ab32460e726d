// lawnd: parse flags, load config, wire the runtime and the gRPC server, run until SIGTERM/SIGINT, drain.
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <memory>

#include "config/config.h"
#include "server/lawn_server.h"
#include "server/logging.h"
#include "spdlog/spdlog.h"

namespace {

// The write end of the self-pipe the stop-signal handler writes to. A process-wide handler (rather than a
// blocked mask and sigwait) works whichever thread the kernel picks, so it does not depend on every thread,
// including those libraries create, inheriting a mask set before them.
int g_stop_pipe_write = -1;

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

// Blocks until a stop signal arrives; returns it. Waits in poll() rather than in a blocking read():
// ThreadSanitizer runs a signal handler at once only in calls it knows to block, and read() is not one.
int WaitForStopSignal(int read_fd) {
  pollfd readable = {read_fd, POLLIN, 0};
  char byte = 0;
  while (read(read_fd, &byte, 1) != 1) {
    if (errno != EAGAIN && errno != EINTR) return SIGTERM;
    if (poll(&readable, 1, -1) < 0 && errno != EINTR) return SIGTERM;
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

  // The threads started from here on (gRPC's, RocksDB's, the workers) are born with SIGTERM and SIGINT
  // blocked, so the kernel hands a stop signal to the main thread, waiting below, whenever it can. The
  // handler stays process-wide for a thread that unblocks them. (ThreadSanitizer defers a signal that lands
  // on a thread parked inside an uninstrumented library until that thread wakes up, which may be never.)
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  lawn::LawnServer server(*options);
  if (absl::Status s = server.Start(); !s.ok()) {
    spdlog::critical("lawnd cannot start: {}", s.ToString());
    return 1;
  }
  pthread_sigmask(SIG_UNBLOCK, &stop_signals, nullptr);
  const int signal = WaitForStopSignal(stop_fd);
  spdlog::info("received {}; draining (at most {} ms)", signal == SIGTERM ? "SIGTERM" : "SIGINT",
               std::chrono::duration_cast<std::chrono::milliseconds>(options->shutdown_timeout).count());
  server.Drain();
  spdlog::info("lawnd stopped");
  return 0;
}
