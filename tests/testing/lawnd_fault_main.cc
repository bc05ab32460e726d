// lawnd_fault: lawnd on FaultInjectionEnv, for daemon-level fault tests. Test-only (tests/testing/): the
// product lawnd never links the fault-injection env.
//
// Same flags and behaviour as lawnd, plus two signals:
//   SIGUSR1  the disk starts failing: every later append through the env fails (a storage write error).
//   SIGUSR2  the power goes out: nothing more reaches the disk; lawnd closes the store (its writes dropped),
//            the files are rewound to what a real disk could hold after the cut (unsynced data lost), and the
//            process exits 0 after logging "power cut simulated". Restart the real lawnd on the data dir.
#include <signal.h>

#include <cstdio>
#include <memory>
#include <thread>

#include "config/config.h"
#include "server/lawn_server.h"
#include "server/logging.h"
#include "server/signal_pipe.h"
#include "spdlog/spdlog.h"
#include "storage/rocksdb_timer_store.h"
#include "tests/testing/fault_injection_env.h"

int main(int argc, char** argv) {
  if (!lawn::SignalPipe::Install({SIGTERM, SIGINT, SIGUSR1, SIGUSR2})) return 1;
  absl::StatusOr<lawn::Options> options = lawn::ParseCommandLine(argc, argv);
  if (!options.ok()) {
    std::fprintf(stderr, "lawnd_fault: %s\n", std::string(options.status().message()).c_str());
    return 2;
  }
  if (!lawn::SetupLogging(options->log_level, options->log_format).ok()) return 2;
  lawn::SignalPipe::BlockInThisThread();
  lawn::FaultInjectionEnv env;
  auto server = std::make_unique<lawn::LawnServer>(
      *options, [&env](const lawn::RocksDbStoreOptions& o) { return lawn::RocksDbTimerStore::Open(o, env.env()); });
  if (absl::Status s = server->Start(); !s.ok()) {
    spdlog::critical("lawnd cannot start: {}", s.ToString());
    return 1;
  }
  lawn::SignalPipe::UnblockInThisThread();
  while (true) {
    const int signal = lawn::SignalPipe::Wait();
    if (signal == SIGUSR1) {
      spdlog::warn("fault injection: every append now fails");
      env.FailAppends(lawn::AppendFailure::kIoError);
      continue;
    }
    if (signal == SIGUSR2) {
      env.CutPower();
      server.reset();  // Drains and closes the store; nothing of it reaches the disk any more.
      if (options->durability != lawn::Durability::kMemory) {
        if (absl::Status s = env.RestoreAfterPowerCut(); !s.ok()) {
          spdlog::critical("power cut: cannot rewind the files: {}", s.ToString());
          return 1;
        }
      }
      spdlog::info("power cut simulated");
      return 0;
    }
    server->Drain();
    return 0;
  }
}
