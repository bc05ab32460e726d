// lawnd: parse flags, load config, wire the runtime and the gRPC server, run until SIGTERM/SIGINT, drain.
#include <signal.h>

#include <chrono>
#include <cstdio>
#include <memory>

#include "config/config.h"
#include "server/lawn_server.h"
#include "server/logging.h"
#include "spdlog/spdlog.h"

int main(int argc, char** argv) {
  // Block the stop signals before any thread exists, so every thread inherits the mask and only sigwait
  // below sees them.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

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
    return 1;
  }
  int signal = 0;
  sigwait(&stop_signals, &signal);
  spdlog::info("received {}; draining (at most {} ms)", signal == SIGTERM ? "SIGTERM" : "SIGINT",
               std::chrono::duration_cast<std::chrono::milliseconds>(options->shutdown_timeout).count());
  server.Drain();
  spdlog::info("lawnd stopped");
  return 0;
}
