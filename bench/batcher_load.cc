// lawn_batcher_load: unary-style StartTimer callers through the C++ client, plain or through TimerBatcher
// (issue 11; bench/scripts/batcher.sh runs it, BENCHMARKS.md section 11).
//
//   lawn_batcher_load --target 127.0.0.1:PORT --server-pid PID --mode batcher --threads 16 --duration 5s
//
// --threads threads each start timers one at a time for --duration: each call waits for its answer before
// the next, as code written against a unary StartTimer does. --mode unary: LawnClient::StartTimer (one RPC
// per timer); --mode batcher: TimerBatcher::StartTimer(...).get() (--linger, --max-batch, --in-flight);
// --mode batch: LawnClient::StartTimers of --max-batch timers at a time. --route-directly: a cluster's
// C++ client that sends each call (each StartTimers part) to the member owning the timer's partition
// (ClientOptions::route_directly; bench/scripts/cluster_hop.sh). One channel (one TCP connection) to the
// target either way; namespace "bench", TTL 1h, ids p<pid>t<thread>-<n>. Prints one line
// (with --json, one JSON object): timers/s, errors, StartTimers calls and timers per call (batcher), and CPU
// microseconds per timer of this process and, with --server-pid, of lawnd (utime + stime of /proc/PID/stat).
//
// Exit status: 0 when every timer was started, 1 when some failed (the line is printed anyway), 2 for bad
// flags.
//
// Thread-safety: main thread, --threads caller threads, gRPC's threads.
#include <sys/types.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "bench/load_cpu.h"
#include "client/lawn_client.h"
#include "client/timer_batcher.h"

namespace {

struct Flags {
  std::string target = "127.0.0.1:7070";
  pid_t server_pid = 0;
  std::string mode = "batcher";  // "unary" or "batcher".
  int threads = 16;
  std::chrono::nanoseconds duration = std::chrono::seconds(5);
  std::chrono::nanoseconds linger = std::chrono::nanoseconds::zero();  // BatcherOptions' default.
  size_t max_batch = 100;
  int in_flight = 4;
  bool json = false;
  bool route_directly = false;
};

// Per caller thread, on its own cache line.
struct alignas(64) Counts {
  uint64_t ok = 0;
  uint64_t errors = 0;
  std::string first_error;
};

int Usage(const std::string& why) {
  std::fprintf(stderr,
               "lawn_batcher_load: %s\nflags: --target HOST:PORT --server-pid PID --mode unary|batcher "
               "--threads N --duration 5s --linger 0s --max-batch 100 --in-flight 4 --route-directly --json\n",
               why.c_str());
  return 2;
}

bool ParseFlags(int argc, char** argv, Flags* f, std::string* error) {
  for (int i = 1; i < argc; ++i) {
    const std::string name = argv[i];
    if (name == "--json") {
      f->json = true;
      continue;
    }
    if (name == "--route-directly") {
      f->route_directly = true;
      continue;
    }
    if (i + 1 >= argc) {
      *error = name + ": needs a value";
      return false;
    }
    const std::string value = argv[++i];
    absl::Duration d;
    int64_t n = 0;
    const bool is_int = absl::SimpleAtoi(value, &n);
    if (name == "--target") {
      f->target = value;
    } else if (name == "--server-pid" && is_int && n > 0) {
      f->server_pid = static_cast<pid_t>(n);
    } else if (name == "--mode" && (value == "unary" || value == "batcher" || value == "batch")) {
      f->mode = value;
    } else if (name == "--threads" && is_int && n >= 1 && n <= 4096) {
      f->threads = static_cast<int>(n);
    } else if (name == "--duration" && absl::ParseDuration(value, &d) && d > absl::ZeroDuration()) {
      f->duration = absl::ToChronoNanoseconds(d);
    } else if (name == "--linger" && absl::ParseDuration(value, &d) && d >= absl::ZeroDuration()) {
      f->linger = absl::ToChronoNanoseconds(d);
    } else if (name == "--max-batch" && is_int && n >= 1) {
      f->max_batch = static_cast<size_t>(n);
    } else if (name == "--in-flight" && is_int && n >= 1) {
      f->in_flight = static_cast<int>(n);
    } else {
      *error = name + " " + value + ": unknown flag or bad value";
      return false;
    }
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  // As lawnd does (server/lawnd_main.cc): Debian's Abseil checks lock order on every absl::Mutex (gRPC's
  // too) under one global lock, which would tax this side of the comparison and not lawnd's.
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  Flags flags;
  std::string error;
  if (!ParseFlags(argc, argv, &flags, &error)) return Usage(error);

  lawn::ClientOptions options;
  options.route_directly = flags.route_directly;
  absl::StatusOr<std::unique_ptr<lawn::LawnClient>> created = lawn::LawnClient::Create(flags.target, options);
  if (!created.ok()) {
    std::fprintf(stderr, "lawn_batcher_load: %s: %s\n", flags.target.c_str(), created.status().ToString().c_str());
    return 1;
  }
  std::unique_ptr<lawn::LawnClient> client = *std::move(created);
  std::unique_ptr<lawn::TimerBatcher> batcher;
  if (flags.mode == "batcher") {
    absl::StatusOr<std::unique_ptr<lawn::TimerBatcher>> made = lawn::TimerBatcher::Create(
        client->channel(),
        {.max_batch = flags.max_batch, .max_linger = flags.linger, .max_in_flight = flags.in_flight});
    if (!made.ok()) return Usage(made.status().ToString());
    batcher = *std::move(made);
  }
  // Connect before the clock starts.
  if (absl::StatusOr<lawn::ServingStatus> health = client->Health(); !health.ok()) {
    std::fprintf(stderr, "lawn_batcher_load: %s: %s\n", flags.target.c_str(),
                 health.status().ToString().c_str());
    return 1;
  }

  std::vector<Counts> counts(static_cast<size_t>(flags.threads));
  std::atomic<bool> stop{false};
  const std::optional<double> server_cpu0 =
      flags.server_pid > 0 ? lawn::ProcessCpuSeconds(flags.server_pid) : std::nullopt;
  const double self_cpu0 = lawn::SelfCpuSeconds();
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<std::thread> threads;
  for (int t = 0; t < flags.threads; ++t) {
    threads.emplace_back([&, t] {
      Counts& c = counts[static_cast<size_t>(t)];
      lawn::v1::StartTimerRequest request;
      request.set_namespace_("bench");
      request.mutable_ttl()->set_seconds(3600);
      // The process id keeps the ids of runs against one lawnd apart.
      const std::string prefix = absl::StrCat("p", getpid(), "t", t, "-");
      if (flags.mode == "batch") {
        std::vector<lawn::v1::StartTimerRequest> batch(flags.max_batch, request);
        for (uint64_t n = 0; !stop.load(std::memory_order_relaxed);) {
          for (auto& r : batch) r.set_id(absl::StrCat(prefix, n++));
          absl::StatusOr<std::vector<absl::Status>> results = client->StartTimers(batch);
          for (size_t i = 0; i < batch.size(); ++i) {
            const absl::Status status = results.ok() ? (*results)[i] : results.status();
            if (status.ok()) {
              ++c.ok;
            } else if (c.errors++ == 0) {
              c.first_error = status.ToString();
            }
          }
        }
        return;
      }
      for (uint64_t n = 0; !stop.load(std::memory_order_relaxed); ++n) {
        request.set_id(absl::StrCat(prefix, n));
        absl::Status status;
        if (batcher != nullptr) {
          status = batcher->StartTimer(request).get();
        } else {
          status = client->StartTimer(request).status();
        }
        if (status.ok()) {
          ++c.ok;
        } else if (c.errors++ == 0) {
          c.first_error = status.ToString();
        }
      }
    });
  }
  std::this_thread::sleep_for(flags.duration);
  stop.store(true, std::memory_order_relaxed);
  for (std::thread& thread : threads) thread.join();
  const double elapsed_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const double self_cpu_s = lawn::SelfCpuSeconds() - self_cpu0;
  const std::optional<double> server_cpu1 =
      flags.server_pid > 0 ? lawn::ProcessCpuSeconds(flags.server_pid) : std::nullopt;

  uint64_t ok = 0;
  uint64_t errors = 0;
  std::string first_error;
  for (const Counts& c : counts) {
    ok += c.ok;
    errors += c.errors;
    if (first_error.empty()) first_error = c.first_error;
  }
  const uint64_t per_call = flags.mode == "batch" ? flags.max_batch : 1;
  const lawn::BatcherStats stats = batcher != nullptr
                                       ? batcher->stats()
                                       : lawn::BatcherStats{.calls = (ok + errors) / per_call, .timers = ok + errors};
  const double per_timer = ok > 0 ? 1e6 / static_cast<double>(ok) : 0;
  const double server_us = server_cpu0 && server_cpu1 ? (*server_cpu1 - *server_cpu0) * per_timer : -1;
  const double client_us = self_cpu_s * per_timer;
  const double rate = static_cast<double>(ok) / elapsed_s;
  const double timers_per_call =
      stats.calls > 0 ? static_cast<double>(stats.timers) / static_cast<double>(stats.calls) : 0;
  if (flags.json) {
    std::printf(
        "{\"mode\":\"%s\",\"threads\":%d,\"linger_us\":%.0f,\"max_batch\":%zu,\"in_flight\":%d,\"timers\":%llu,"
        "\"errors\":%llu,\"elapsed_s\":%.3f,\"timers_per_s\":%.1f,\"calls\":%llu,\"timers_per_call\":%.2f,"
        "\"server_cpu_us_per_timer\":%.3f,\"client_cpu_us_per_timer\":%.3f}\n",
        flags.mode.c_str(), flags.threads, std::chrono::duration<double, std::micro>(flags.linger).count(),
        flags.max_batch, flags.in_flight, static_cast<unsigned long long>(ok),
        static_cast<unsigned long long>(errors), elapsed_s, rate, static_cast<unsigned long long>(stats.calls),
        timers_per_call, server_us, client_us);
  } else {
    std::printf("%s threads=%d: %.0f timers/s (%llu in %.2f s), %llu errors, %.1f timers/call, "
                "lawnd %.2f us/timer, client %.2f us/timer\n",
                flags.mode.c_str(), flags.threads, rate, static_cast<unsigned long long>(ok), elapsed_s,
                static_cast<unsigned long long>(errors), timers_per_call, server_us, client_us);
  }
  if (errors > 0) std::fprintf(stderr, "first error: %s\n", first_error.c_str());
  return errors > 0 ? 1 : 0;
}
