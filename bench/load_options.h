// LoadOptions: the command line of lawn_load, the networked load generator of lawnd (see lawn_load.cc).
//
// Thread-safety: a plain value; parsed once in main, then shared read-only.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include "absl/status/statusor.h"

namespace lawn {

enum class LoadMode {
  kUnary,      // "unary": one StartTimer call per timer.
  kBatch,      // "batch": StartTimers calls of `batch` timers each.
  kPrecision,  // "precision": preload, then paced short timers and one subscriber measuring lateness.
  kDrain,      // "drain": fill the outbox with fired timers, then time one subscriber emptying it.
};

// How lawn_load's unary/batch calls are issued and completed.
enum class ClientApi {
  kCompletionQueue,  // "cq": async calls, completions drained by `client_threads` threads of our own.
  kCallback,         // "callback": gRPC's callback API; completions run on gRPC's own threads.
  kBlocking,         // "blocking": one thread per call in flight, each making blocking calls.
};

struct LoadOptions {
  // lawnd's gRPC address, host:port (loopback). Default "127.0.0.1:7070".
  std::string target = "127.0.0.1:7070";
  LoadMode mode = LoadMode::kBatch;
  // Calls in flight at once (unary/batch). Allowed 1..4096. Default 1.
  uint32_t concurrency = 1;
  // gRPC channels (TCP connections) the calls are spread over, round robin by slot. Allowed
  // 1..concurrency. Default 1.
  uint32_t channels = 1;
  // Timers to start in total (unary/batch; the run also stops at `duration`). Default 1'000'000.
  uint64_t count = 1'000'000;
  // Cap on the run: unary/batch stop issuing after it; precision starts short timers for this long.
  // Default 10s (unary/batch), set to 20s for precision unless given.
  std::chrono::nanoseconds duration = std::chrono::seconds(10);
  bool duration_given = false;
  // Timers per StartTimers call (batch, and the precision mode's paced starts). Allowed 1..10000. Default
  // 100.
  uint32_t batch = 100;
  // StartTimersRequest.return_timers of the batch mode's calls (the answer carries every timer, as before
  // issue 11). Default false: codes only.
  bool return_timers = false;
  // TTL of every timer in unary/batch, and of the preloaded timers of precision. Default 1h; 1ms for drain
  // (its timers are meant to fire at once).
  std::chrono::nanoseconds ttl = std::chrono::hours(1);
  bool ttl_given = false;
  // Namespace of the run; empty = "load-<pid>-<unix seconds>", so every run has its own.
  std::string ns;
  // Print the summary as one JSON object instead of key=value text.
  bool json = false;
  // Seed of the id and TTL generators; 0 = derived from the time. Default 0.
  uint64_t seed = 0;
  // Bearer token sent with every call (lawnd with auth.tokens_file). Default none.
  std::string token;
  // CA file (PEM) to connect over TLS (lawnd with tls.cert_file); empty = plaintext. Default empty.
  std::string tls_ca;
  // Payload bytes per timer. Default 0.
  uint32_t payload_bytes = 0;
  // See ClientApi. Default "cq" with 2 threads.
  ClientApi api = ClientApi::kCompletionQueue;
  uint32_t client_threads = 2;
  // lawnd's process id, to report the CPU time it used during the run (/proc/PID/stat); 0 = don't.
  uint32_t server_pid = 0;

  // ---- precision mode ----
  // Long-TTL timers preloaded before the measurement (StartTimers of `preload_batch`, `concurrency` calls in
  // flight, at least 4). Default 1'000'000.
  uint64_t pending = 1'000'000;
  uint32_t preload_batch = 1000;
  // Short timers started per second, in StartTimers calls of `batch` every batch/rate seconds.
  // Default 10'000.
  uint32_t rate = 10'000;
  // Short TTLs are uniform in [ttl_min, ttl_max], whole milliseconds. Defaults 100ms and 2s.
  std::chrono::nanoseconds ttl_min = std::chrono::milliseconds(100);
  std::chrono::nanoseconds ttl_max = std::chrono::seconds(2);
  // The subscriber's Subscribe open.max_in_flight (precision, drain). Default 1000.
  uint32_t max_in_flight = 1000;
  // The subscriber's Subscribe open.max_batch (precision, drain): expirations per response, 0 = one each
  // (the original shape). Allowed 0..1000. Default 1000.
  uint32_t max_batch = 1000;
  // After the last start, how long to wait for the outstanding expirations beyond ttl_max. Default 10s.
  std::chrono::nanoseconds grace = std::chrono::seconds(10);
};

// Parses argv ("--name value" or "--name=value"; durations as "1h", "100ms", ...). Returns INVALID_ARGUMENT
// with a message naming the flag and what it accepts.
absl::StatusOr<LoadOptions> ParseLoadOptions(int argc, char** argv);

// The --help text.
const char* LoadUsage();

}  // namespace lawn
