// jetstream_append: what one replicated append per commit round costs (issue 12, BENCHMARKS.md section 13).
//
// Against a running JetStream cluster (bench/scripts/replicated_log.sh starts 3 nats-servers on loopback),
// for one round size S:
//   1. local baseline: N rounds of write(S bytes) + fdatasync to a file in --dir (what lawn's `sync`
//      durability pays per round today, on the same filesystem as the servers' data dirs);
//   2. creates stream LAWN_ROUNDS_<S> (file storage, --replicas, default 3; retried until the cluster has a
//      JetStream meta leader, at most --ready-timeout s), then N rounds appended one at a time: each is a
//      message of S bytes carrying `Nats-Expected-Last-Sequence: <sequence of the previous PubAck>`, and the
//      next one waits for its PubAck (the owner of a partition appending its commit rounds in order);
//   3. fencing: an append whose expected sequence is stale (a deposed owner that missed the new owner's
//      appends) must be refused with JSStreamWrongLastSequenceErr (10071) and leave the stream unchanged;
//      then the current owner's next append (right expected sequence) is accepted.
// Prints one `result ...` line per system (latency median/p99 in us, rounds/s, CPU us per round of this
// process, and with --server-pids the servers' CPU us per round summed over them) and one `fencing ...` line.
// Exit status 0 only if every append was accepted in order and the stale append was refused.
//
//   jetstream_append --url nats://127.0.0.1:P1,nats://127.0.0.1:P2,nats://127.0.0.1:P3 --size 4096
//                    --rounds 2000 --dir /tmp/x [--warmup 100] [--replicas 3] [--server-pids 1,2,3]
#include <fcntl.h>
#include <nats/nats.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "bench/load_cpu.h"

namespace {

using Clock = std::chrono::steady_clock;

struct Options {
  std::string url = "nats://127.0.0.1:4222";
  std::string dir = ".";
  int size = 4096;
  int rounds = 2000;
  int warmup = 100;
  int replicas = 3;
  int ready_timeout_s = 60;
  std::vector<pid_t> server_pids;
};

[[noreturn]] void Usage(const char* argv0) {
  std::fprintf(stderr,
               "usage: %s --url URLS --size BYTES --rounds N --dir DIR [--warmup N] [--replicas R]\n"
               "          [--ready-timeout S] [--server-pids P1,P2,...]\n",
               argv0);
  std::exit(2);
}

Options Parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (i + 1 >= argc) Usage(argv[0]);
    std::string v = argv[++i];
    if (a == "--url") {
      o.url = v;
    } else if (a == "--dir") {
      o.dir = v;
    } else if (a == "--size") {
      o.size = std::atoi(v.c_str());
    } else if (a == "--rounds") {
      o.rounds = std::atoi(v.c_str());
    } else if (a == "--warmup") {
      o.warmup = std::atoi(v.c_str());
    } else if (a == "--replicas") {
      o.replicas = std::atoi(v.c_str());
    } else if (a == "--ready-timeout") {
      o.ready_timeout_s = std::atoi(v.c_str());
    } else if (a == "--server-pids") {
      for (size_t pos = 0; pos < v.size();) {
        size_t comma = v.find(',', pos);
        if (comma == std::string::npos) comma = v.size();
        o.server_pids.push_back(static_cast<pid_t>(std::atol(v.substr(pos, comma - pos).c_str())));
        pos = comma + 1;
      }
    } else {
      Usage(argv[0]);
    }
  }
  if (o.size <= 0 || o.rounds <= 0 || o.warmup < 0 || o.replicas <= 0) Usage(argv[0]);
  return o;
}

double ServersCpuSeconds(const std::vector<pid_t>& pids) {
  double sum = 0;
  for (pid_t p : pids) sum += lawn::ProcessCpuSeconds(p).value_or(0);
  return sum;
}

// Latencies (us) of the measured rounds, wall time and CPU of the whole measured loop.
struct Run {
  std::vector<double> latency_us;
  double wall_s = 0;
  double cpu_s = 0;
  double servers_cpu_s = 0;
};

void Report(const char* system, const Options& o, Run& r) {
  std::sort(r.latency_us.begin(), r.latency_us.end());
  auto pct = [&](double q) {
    size_t i = static_cast<size_t>(q * static_cast<double>(r.latency_us.size() - 1) + 0.5);
    return r.latency_us[i];
  };
  const double n = static_cast<double>(r.latency_us.size());
  std::printf(
      "result system=%s size=%d rounds=%zu median_us=%.1f p99_us=%.1f max_us=%.1f rounds_per_s=%.1f "
      "cpu_us_per_round=%.2f servers_cpu_us_per_round=%.2f\n",
      system, o.size, r.latency_us.size(), pct(0.5), pct(0.99), r.latency_us.back(), n / r.wall_s,
      r.cpu_s * 1e6 / n, o.server_pids.empty() ? 0.0 : r.servers_cpu_s * 1e6 / n);
  std::fflush(stdout);
}

// The local baseline: append S bytes and fdatasync, N times, to a fresh file in o.dir.
bool LocalFdatasync(const Options& o, const std::string& payload) {
  std::string path = o.dir + "/fdatasync-" + std::to_string(o.size) + ".log";
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) {
    std::perror(path.c_str());
    return false;
  }
  auto one = [&]() {
    if (::write(fd, payload.data(), payload.size()) != static_cast<ssize_t>(payload.size())) return false;
    return ::fdatasync(fd) == 0;
  };
  for (int i = 0; i < o.warmup; ++i) {
    if (!one()) {
      std::perror("write/fdatasync");
      return false;
    }
  }
  Run r;
  r.latency_us.reserve(static_cast<size_t>(o.rounds));
  double cpu0 = lawn::SelfCpuSeconds();
  double scpu0 = ServersCpuSeconds(o.server_pids);
  auto t0 = Clock::now();
  for (int i = 0; i < o.rounds; ++i) {
    auto a = Clock::now();
    if (!one()) {
      std::perror("write/fdatasync");
      return false;
    }
    r.latency_us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - a).count());
  }
  r.wall_s = std::chrono::duration<double>(Clock::now() - t0).count();
  r.cpu_s = lawn::SelfCpuSeconds() - cpu0;
  r.servers_cpu_s = ServersCpuSeconds(o.server_pids) - scpu0;
  ::close(fd);
  ::unlink(path.c_str());
  Report("local-fdatasync", o, r);
  return true;
}

// One append of payload to subject with Nats-Expected-Last-Sequence: expected. Returns the acked sequence,
// or nullopt with *status / *jerr set.
std::optional<uint64_t> Append(jsCtx* js, const std::string& subject, const std::string& payload,
                               uint64_t expected, natsStatus* status, jsErrCode* jerr) {
  natsMsg* msg = nullptr;
  *jerr = static_cast<jsErrCode>(0);
  *status = natsMsg_Create(&msg, subject.c_str(), nullptr, payload.data(), static_cast<int>(payload.size()));
  if (*status != NATS_OK) return std::nullopt;
  // Set explicitly (not through jsPubOptions.ExpectLastSeq, where 0 means "no expectation"), so the very
  // first append into the empty stream is checked too.
  std::string exp = std::to_string(expected);
  *status = natsMsgHeader_Set(msg, "Nats-Expected-Last-Sequence", exp.c_str());
  std::optional<uint64_t> seq;
  if (*status == NATS_OK) {
    jsPubAck* ack = nullptr;
    *status = js_PublishMsg(&ack, js, msg, nullptr, jerr);
    if (*status == NATS_OK && ack != nullptr) seq = ack->Sequence;
    jsPubAck_Destroy(ack);
  }
  natsMsg_Destroy(msg);
  return seq;
}

bool CreateStream(jsCtx* js, const Options& o, const std::string& name, const std::string& subject) {
  const char* subjects[] = {subject.c_str()};
  jsStreamConfig sc;
  jsStreamConfig_Init(&sc);
  sc.Name = name.c_str();
  sc.Subjects = subjects;
  sc.SubjectsLen = 1;
  sc.Storage = js_FileStorage;
  sc.Replicas = o.replicas;
  auto deadline = Clock::now() + std::chrono::seconds(o.ready_timeout_s);
  natsStatus s = NATS_OK;
  jsErrCode jerr = static_cast<jsErrCode>(0);
  for (int attempt = 1;; ++attempt) {
    jsStreamInfo* si = nullptr;
    s = js_AddStream(&si, js, &sc, nullptr, &jerr);
    if (s == NATS_OK) {
      std::printf("stream %s replicas=%lld storage=file leader=%s followers=%d attempts=%d\n", name.c_str(),
                  static_cast<long long>(si->Config->Replicas),
                  si->Cluster != nullptr && si->Cluster->Leader != nullptr ? si->Cluster->Leader : "?",
                  si->Cluster != nullptr ? si->Cluster->ReplicasLen : 0, attempt);
      jsStreamInfo_Destroy(si);
      return true;
    }
    if (Clock::now() > deadline) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
  }
  std::fprintf(stderr, "js_AddStream %s: %s (jerr %d) %s\n", name.c_str(), natsStatus_GetText(s),
               static_cast<int>(jerr), nats_GetLastError(nullptr));
  return false;
}

uint64_t StreamLastSeq(jsCtx* js, const std::string& name) {
  jsStreamInfo* si = nullptr;
  jsErrCode jerr;
  if (js_GetStreamInfo(&si, js, name.c_str(), nullptr, &jerr) != NATS_OK) return 0;
  uint64_t last = si->State.LastSeq;
  jsStreamInfo_Destroy(si);
  return last;
}

bool JetStreamAppends(const Options& o, const std::string& payload) {
  natsOptions* opts = nullptr;
  natsConnection* nc = nullptr;
  jsCtx* js = nullptr;
  bool ok = false;
  std::vector<std::string> urls;
  for (size_t pos = 0; pos < o.url.size();) {
    size_t comma = o.url.find(',', pos);
    if (comma == std::string::npos) comma = o.url.size();
    urls.push_back(o.url.substr(pos, comma - pos));
    pos = comma + 1;
  }
  std::vector<const char*> url_ptrs;
  for (const auto& u : urls) url_ptrs.push_back(u.c_str());
  natsStatus s = natsOptions_Create(&opts);
  if (s == NATS_OK) s = natsOptions_SetServers(opts, url_ptrs.data(), static_cast<int>(url_ptrs.size()));
  if (s == NATS_OK) s = natsOptions_SetTimeout(opts, 5000);
  if (s == NATS_OK) s = natsConnection_Connect(&nc, opts);
  if (s != NATS_OK) {
    std::fprintf(stderr, "connect %s: %s %s\n", o.url.c_str(), natsStatus_GetText(s), nats_GetLastError(nullptr));
    natsOptions_Destroy(opts);
    return false;
  }
  jsOptions jo;
  jsOptions_Init(&jo);
  jo.Wait = 10000;  // ms for a PubAck / API answer
  s = natsConnection_JetStream(&js, nc, &jo);

  const std::string name = "LAWN_ROUNDS_" + std::to_string(o.size);
  const std::string subject = "lawn.rounds." + std::to_string(o.size);
  if (s == NATS_OK && CreateStream(js, o, name, subject)) {
    ok = true;
    uint64_t last = 0;
    natsStatus st;
    jsErrCode jerr;
    for (int i = 0; i < o.warmup && ok; ++i) {
      auto seq = Append(js, subject, payload, last, &st, &jerr);
      if (!seq || *seq != last + 1) ok = false;
      else last = *seq;
    }
    Run r;
    r.latency_us.reserve(static_cast<size_t>(o.rounds));
    double cpu0 = lawn::SelfCpuSeconds();
    double scpu0 = ServersCpuSeconds(o.server_pids);
    auto t0 = Clock::now();
    for (int i = 0; i < o.rounds && ok; ++i) {
      auto a = Clock::now();
      auto seq = Append(js, subject, payload, last, &st, &jerr);
      r.latency_us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - a).count());
      if (!seq || *seq != last + 1) {
        std::fprintf(stderr, "append %d (expected last %llu) failed: %s jerr=%d %s\n", i,
                     static_cast<unsigned long long>(last), natsStatus_GetText(st), static_cast<int>(jerr),
                     nats_GetLastError(nullptr));
        ok = false;
      } else {
        last = *seq;
      }
    }
    r.wall_s = std::chrono::duration<double>(Clock::now() - t0).count();
    r.cpu_s = lawn::SelfCpuSeconds() - cpu0;
    r.servers_cpu_s = ServersCpuSeconds(o.server_pids) - scpu0;
    if (ok) {
      char system[32];
      std::snprintf(system, sizeof system, "jetstream-r%d", o.replicas);
      Report(system, o, r);

      // Fencing. A deposed owner still believes the stream ends at `last - 5` (it missed the new owner's last
      // five rounds): its append must be refused, and the stream must not change.
      const uint64_t stale = last >= 5 ? last - 5 : 0;
      auto refused = Append(js, subject, payload, stale, &st, &jerr);
      const uint64_t after = StreamLastSeq(js, name);
      const bool fenced = !refused && jerr == JSStreamWrongLastSequenceErr && after == last;
      std::printf("fencing size=%d stale_expected=%llu stream_last=%llu stale_append=%s jerr=%d (%s) "
                  "stream_last_after=%llu\n",
                  o.size, static_cast<unsigned long long>(stale), static_cast<unsigned long long>(last),
                  refused ? "ACCEPTED" : "REFUSED", static_cast<int>(jerr),
                  jerr == JSStreamWrongLastSequenceErr ? "JSStreamWrongLastSequenceErr" : nats_GetLastError(nullptr),
                  static_cast<unsigned long long>(after));
      // The current owner, expecting the true last sequence, goes on.
      auto next = Append(js, subject, payload, last, &st, &jerr);
      std::printf("fencing size=%d current_expected=%llu current_append=%s seq=%llu\n", o.size,
                  static_cast<unsigned long long>(last), next ? "ACCEPTED" : "REFUSED",
                  static_cast<unsigned long long>(next.value_or(0)));
      ok = fenced && next && *next == last + 1;
    }
    jsErrCode derr;
    js_DeleteStream(js, name.c_str(), nullptr, &derr);
  } else if (s != NATS_OK) {
    std::fprintf(stderr, "JetStream context: %s\n", natsStatus_GetText(s));
  }
  jsCtx_Destroy(js);
  natsConnection_Destroy(nc);
  natsOptions_Destroy(opts);
  return ok;
}

}  // namespace

int main(int argc, char** argv) {
  Options o = Parse(argc, argv);
  std::string payload(static_cast<size_t>(o.size), '\0');
  for (size_t i = 0; i < payload.size(); ++i) payload[i] = static_cast<char>('a' + (i * 7919 % 26));
  bool ok = LocalFdatasync(o, payload);
  ok = JetStreamAppends(o, payload) && ok;
  nats_Close();
  return ok ? 0 : 1;
}
