#include "bench/load_options.h"

#include <unistd.h>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace lawn {

namespace {

absl::Status Bad(absl::string_view flag, absl::string_view value, absl::string_view allowed) {
  return absl::InvalidArgumentError(absl::StrCat("--", flag, " '", value, "': ", allowed));
}

absl::Status ParseUint(absl::string_view flag, absl::string_view value, uint64_t min, uint64_t max,
                       uint64_t* out) {
  uint64_t v = 0;
  if (!absl::SimpleAtoi(value, &v) || v < min || v > max) {
    return Bad(flag, value, absl::StrCat("an integer in ", min, "..", max));
  }
  *out = v;
  return absl::OkStatus();
}

absl::Status ParseUint32(absl::string_view flag, absl::string_view value, uint32_t min, uint32_t max,
                         uint32_t* out) {
  uint64_t v = 0;
  if (absl::Status s = ParseUint(flag, value, min, max, &v); !s.ok()) return s;
  *out = static_cast<uint32_t>(v);
  return absl::OkStatus();
}

absl::Status ParseDuration(absl::string_view flag, absl::string_view value, std::chrono::nanoseconds* out) {
  absl::Duration d;
  if (!absl::ParseDuration(value, &d) || d <= absl::ZeroDuration()) {
    return Bad(flag, value, "a positive duration such as 500ms, 20s or 1h");
  }
  *out = absl::ToChronoNanoseconds(d);
  return absl::OkStatus();
}

absl::Status Apply(absl::string_view name, absl::string_view value, LoadOptions* o) {
  if (name == "target") {
    o->target = std::string(value);
  } else if (name == "mode") {
    if (value == "unary") {
      o->mode = LoadMode::kUnary;
    } else if (value == "batch") {
      o->mode = LoadMode::kBatch;
    } else if (value == "precision") {
      o->mode = LoadMode::kPrecision;
    } else if (value == "drain") {
      o->mode = LoadMode::kDrain;
    } else {
      return Bad(name, value, "one of unary, batch, precision, drain");
    }
  } else if (name == "concurrency") {
    return ParseUint32(name, value, 1, 4096, &o->concurrency);
  } else if (name == "channels") {
    return ParseUint32(name, value, 1, 4096, &o->channels);
  } else if (name == "count") {
    return ParseUint(name, value, 1, uint64_t{1} << 40, &o->count);
  } else if (name == "duration") {
    o->duration_given = true;
    return ParseDuration(name, value, &o->duration);
  } else if (name == "batch") {
    return ParseUint32(name, value, 1, 10000, &o->batch);
  } else if (name == "ttl") {
    o->ttl_given = true;
    return ParseDuration(name, value, &o->ttl);
  } else if (name == "namespace") {
    o->ns = std::string(value);
  } else if (name == "seed") {
    return ParseUint(name, value, 0, UINT64_MAX, &o->seed);
  } else if (name == "token") {
    o->token = std::string(value);
  } else if (name == "tls-ca") {
    o->tls_ca = std::string(value);
  } else if (name == "payload-bytes") {
    return ParseUint32(name, value, 0, 1 << 20, &o->payload_bytes);
  } else if (name == "api") {
    if (value == "cq") {
      o->api = ClientApi::kCompletionQueue;
    } else if (value == "callback") {
      o->api = ClientApi::kCallback;
    } else if (value == "blocking") {
      o->api = ClientApi::kBlocking;
    } else {
      return Bad(name, value, "cq, callback or blocking");
    }
  } else if (name == "client-threads") {
    return ParseUint32(name, value, 1, 64, &o->client_threads);
  } else if (name == "server-pid") {
    return ParseUint32(name, value, 0, UINT32_MAX, &o->server_pid);
  } else if (name == "pending") {
    return ParseUint(name, value, 0, uint64_t{1} << 34, &o->pending);
  } else if (name == "preload-batch") {
    return ParseUint32(name, value, 1, 10000, &o->preload_batch);
  } else if (name == "rate") {
    return ParseUint32(name, value, 1, 10'000'000, &o->rate);
  } else if (name == "ttl-min") {
    return ParseDuration(name, value, &o->ttl_min);
  } else if (name == "ttl-max") {
    return ParseDuration(name, value, &o->ttl_max);
  } else if (name == "max-in-flight") {
    return ParseUint32(name, value, 1, 100000, &o->max_in_flight);
  } else if (name == "max-batch") {
    return ParseUint32(name, value, 0, 1000, &o->max_batch);
  } else if (name == "grace") {
    return ParseDuration(name, value, &o->grace);
  } else {
    return absl::InvalidArgumentError(absl::StrCat("unknown flag --", name, " (see --help)"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<LoadOptions> ParseLoadOptions(int argc, char** argv) {
  LoadOptions o;
  for (int i = 1; i < argc; ++i) {
    absl::string_view arg = argv[i];
    if (arg.substr(0, 2) != "--")
      return absl::InvalidArgumentError(absl::StrCat("unexpected argument '", arg, "'"));
    arg.remove_prefix(2);
    if (arg == "json") {
      o.json = true;
      continue;
    }
    if (arg == "return-timers") {
      o.return_timers = true;
      continue;
    }
    absl::string_view name = arg, value;
    if (const size_t eq = arg.find('='); eq != absl::string_view::npos) {
      name = arg.substr(0, eq);
      value = arg.substr(eq + 1);
    } else {
      if (i + 1 >= argc) return absl::InvalidArgumentError(absl::StrCat("--", name, " needs a value"));
      value = argv[++i];
    }
    if (absl::Status s = Apply(name, value, &o); !s.ok()) return s;
  }
  if (o.channels > o.concurrency) o.channels = o.concurrency;
  if (o.mode == LoadMode::kPrecision && !o.duration_given) o.duration = std::chrono::seconds(20);
  if (o.mode == LoadMode::kDrain && !o.ttl_given) o.ttl = std::chrono::milliseconds(1);
  if (o.ttl_min > o.ttl_max) return absl::InvalidArgumentError("--ttl-min must not exceed --ttl-max");
  if (o.ttl_min < std::chrono::milliseconds(1)) return absl::InvalidArgumentError("--ttl-min: at least 1ms");
  if (o.ns.empty()) {
    o.ns = absl::StrCat("load-", getpid(), "-", absl::ToUnixSeconds(absl::Now()));
  }
  return o;
}

const char* LoadUsage() {
  return R"(lawn_load: networked load generator for lawnd (loopback).

  lawn_load --target 127.0.0.1:PORT --mode unary|batch [--concurrency N] [--count N] [--duration 10s]
            [--batch 100] [--ttl 1h] [--channels 1] [--json]
      Starts --count long-TTL timers (random 16-byte ids, one namespace per run) with --concurrency calls in
      flight, stopping at --duration; prints timers/s, calls/s, call latency p50/p99/max and errors.
      --return-timers (batch) sets StartTimersRequest.return_timers: lawnd answers with every timer.

  lawn_load --target 127.0.0.1:PORT --mode precision [--pending 1000000] [--rate 10000] [--duration 20s]
            [--ttl-min 100ms] [--ttl-max 2s] [--batch 100] [--max-in-flight 1000] [--json]
      Preloads --pending timers of --ttl (1h), subscribes to the namespace, then starts --rate short timers
      per second for --duration and reports, per expiration, receive wall time minus the timer's deadline:
      p50/p99/p999/max in microseconds, and how many arrived early (a bug).

  lawn_load --target 127.0.0.1:PORT --mode drain [--count 200000] [--batch 1000] [--concurrency 4]
            [--max-in-flight 1000] [--max-batch 1000] [--json]
      Subscribe throughput: starts --count timers of --ttl (1ms) with nobody subscribed, waits until all have
      fired into the outbox, then opens one subscriber (acking everything at once) and times it from open
      to its last ack written: expirations/s, responses and ack messages, and with --server-pid lawnd's CPU
      microseconds per expiration over that drain (until lawnd's outbox is empty).

  --max-batch N (precision, drain): the subscriber's open.max_batch, 0..1000 (default 1000; 0 = one
  expiration per response, the original shape).

  --server-pid PID adds the CPU seconds lawnd used during the run (from /proc/PID/stat), and CPU
  microseconds per timer of lawnd and of lawn_load itself, and lawnd context switches per call, to the
  summary.

  --api cq|callback|blocking: async calls with completion queues drained by --client-threads (2) threads
  of lawn_load's own (default); gRPC's callback API; or one thread per call in flight making blocking calls.

  Other flags: --namespace NAME, --seed N, --payload-bytes N, --token TOKEN, --tls-ca CA.pem, --preload-batch 1000, --grace 10s.
)";
}

}  // namespace lawn
