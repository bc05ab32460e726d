// beanstalk_put: load generator for beanstalkd's `put` (Debian ships no benchmark tool for it), shaped like
// redis-benchmark so the two peers are driven alike in bench/scripts/compare.sh (BENCHMARKS.md section 9).
//
//   beanstalk_put --target 127.0.0.1:PORT --connections 64 --pipeline 1 --duration 4s --server-pid PID
//
// --connections TCP connections, each with --pipeline puts in flight: it writes that many put commands at once
// (one write), reads as many `INSERTED` replies, then sends the next round, as redis-benchmark -c N -P M
// does. Each put is a delayed job (the timer analogue): `put 0 <delay> 60 16` with a 16-byte body (like
// lawn_load's 16-byte ids) into the default tube. One thread and epoll, so the loader costs little CPU; it
// reports its own CPU per put so that can be checked.
//
// Measured over a window: --warmup after the connections are opened (so connecting and the first replies do
// not count), then --duration; the rate is the puts answered INSERTED within the window over its length, and
// with --server-pid the server's CPU (utime+stime, /proc/PID/stat) over the same window per put. Bounded:
// stops issuing at --count puts or at the end of the window, then waits at most 5 s for the replies in flight.
// Prints one JSON line. Loopback only.
//
// Exit status: 0 clean, 1 errors (a reply other than INSERTED, a connection lost, or nothing measured),
// 2 bad flags.
//
// Thread-safety: single-threaded.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "bench/load_cpu.h"

namespace lawn {
namespace {

using Clock = std::chrono::steady_clock;

constexpr char kUsage[] =
    "usage: beanstalk_put --target 127.0.0.1:PORT [--connections 64] [--pipeline 1] [--duration 4s]\n"
    "                     [--warmup 500ms] [--count 100000000] [--delay 3600] [--server-pid PID]\n"
    "  Closed-loop beanstalkd puts (delayed jobs, 16-byte bodies); one JSON line on stdout.\n";

struct Flags {
  std::string host = "127.0.0.1";
  int port = 0;
  int connections = 64;
  int pipeline = 1;
  std::chrono::nanoseconds duration = std::chrono::seconds(4);
  std::chrono::nanoseconds warmup = std::chrono::milliseconds(500);
  uint64_t count = 100'000'000;
  uint32_t delay_s = 3600;
  pid_t server_pid = 0;
};

// "4s", "500ms", "2m" -> nanoseconds; nullopt if malformed.
std::optional<std::chrono::nanoseconds> ParseDuration(const std::string& s) {
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  const std::string unit = end != nullptr ? end : "";
  if (end == s.c_str() || v < 0) return std::nullopt;
  double scale = 0;
  if (unit == "ms") scale = 1e6;
  if (unit == "s") scale = 1e9;
  if (unit == "m") scale = 60e9;
  if (scale == 0) return std::nullopt;
  return std::chrono::nanoseconds(static_cast<int64_t>(v * scale));
}

bool ParseFlags(int argc, char** argv, Flags* f, std::string* error) {
  for (int i = 1; i < argc; ++i) {
    std::string name = argv[i], value;
    if (const size_t eq = name.find('='); eq != std::string::npos) {
      value = name.substr(eq + 1);
      name.resize(eq);
    } else if (i + 1 < argc) {
      value = argv[++i];
    } else {
      *error = name + ": needs a value";
      return false;
    }
    auto number = [&](int64_t lo, int64_t hi, int64_t* out) {
      char* end = nullptr;
      const long long v = std::strtoll(value.c_str(), &end, 10);
      if (end == value.c_str() || *end != '\0' || v < lo || v > hi) {
        *error = name + ": " + value + "; allowed " + std::to_string(lo) + ".." + std::to_string(hi);
        return false;
      }
      *out = v;
      return true;
    };
    int64_t n = 0;
    if (name == "--target") {
      const size_t colon = value.rfind(':');
      f->host = value.substr(0, colon);
      if (colon == std::string::npos || (f->host != "127.0.0.1" && f->host != "localhost")) {
        *error = "--target: " + value + "; allowed 127.0.0.1:PORT (loopback only)";
        return false;
      }
      f->host = "127.0.0.1";
      value = value.substr(colon + 1);
      if (!number(1, 65535, &n)) return false;
      f->port = static_cast<int>(n);
    } else if (name == "--connections") {
      if (!number(1, 4096, &n)) return false;
      f->connections = static_cast<int>(n);
    } else if (name == "--pipeline") {
      if (!number(1, 10000, &n)) return false;
      f->pipeline = static_cast<int>(n);
    } else if (name == "--count") {
      if (!number(1, int64_t{1} << 40, &n)) return false;
      f->count = static_cast<uint64_t>(n);
    } else if (name == "--delay") {
      if (!number(0, 1 << 30, &n)) return false;
      f->delay_s = static_cast<uint32_t>(n);
    } else if (name == "--server-pid") {
      if (!number(1, 1 << 30, &n)) return false;
      f->server_pid = static_cast<pid_t>(n);
    } else if (name == "--duration" || name == "--warmup") {
      const std::optional<std::chrono::nanoseconds> d = ParseDuration(value);
      if (!d || *d > std::chrono::hours(1)) {
        *error = name + ": " + value + "; allowed e.g. 500ms, 4s, 2m (at most 1h)";
        return false;
      }
      (name == "--duration" ? f->duration : f->warmup) = *d;
    } else {
      *error = "unknown flag " + name;
      return false;
    }
  }
  if (f->port == 0) {
    *error = "--target 127.0.0.1:PORT is required";
    return false;
  }
  return true;
}

struct Conn {
  int fd = -1;
  std::string out;      // Bytes of the current round not yet written.
  size_t out_sent = 0;
  std::string in;       // Reply bytes not yet consumed (a partial line at most).
  int awaiting = 0;     // Replies still due for the current round.
  bool want_write = false;
};

class Loader {
 public:
  explicit Loader(const Flags& flags) : f_(flags) {}

  int Run() {
    epoll_ = epoll_create1(0);
    if (epoll_ < 0) return Fail("epoll_create1");
    conns_.resize(static_cast<size_t>(f_.connections));
    for (size_t i = 0; i < conns_.size(); ++i) {
      if (!Connect(conns_[i], i)) return 1;
    }
    const Clock::time_point start = Clock::now();
    window_start_ = start + f_.warmup;
    window_end_ = window_start_ + f_.duration;
    for (Conn& c : conns_) SendRound(c);

    std::vector<epoll_event> events(conns_.size());
    bool window_open = false, window_closed = false;
    Clock::time_point drain_limit{};
    while (true) {
      const Clock::time_point now = Clock::now();
      if (!window_open && now >= window_start_) {
        window_open = true;
        Sample(&at_start_);
      }
      if (!window_closed && now >= window_end_) {
        window_closed = true;
        Sample(&at_end_);
        stopping_ = true;
        drain_limit = now + std::chrono::seconds(5);
      }
      if (stopping_ && (InFlight() == 0 || now >= drain_limit)) break;
      const Clock::time_point next = !window_open ? window_start_ : !window_closed ? window_end_ : drain_limit;
      const int timeout_ms = static_cast<int>(std::clamp<int64_t>(
          std::chrono::duration_cast<std::chrono::milliseconds>(next - now).count() + 1, 0, 100));
      const int n = epoll_wait(epoll_, events.data(), static_cast<int>(events.size()), timeout_ms);
      if (n < 0 && errno != EINTR) return Fail("epoll_wait");
      for (int i = 0; i < n; ++i) {
        Conn& c = conns_[events[static_cast<size_t>(i)].data.u64];
        if (c.fd < 0) continue;
        if (events[static_cast<size_t>(i)].events & EPOLLOUT) Flush(c);
        if (c.fd >= 0 && (events[static_cast<size_t>(i)].events & (EPOLLIN | EPOLLHUP | EPOLLERR))) Read(c);
      }
      if (live_ == 0) break;
    }
    for (Conn& c : conns_) {
      if (c.fd >= 0) close(c.fd);
    }
    close(epoll_);
    return Report(window_closed);
  }

 private:
  struct Snapshot {
    Clock::time_point t;
    uint64_t inserted = 0;
    double client_cpu_s = 0;
    std::optional<double> server_cpu_s;
  };

  int Fail(const char* what) {
    std::fprintf(stderr, "beanstalk_put: %s: %s\n", what, std::strerror(errno));
    return 1;
  }

  bool Connect(Conn& c, size_t index) {
    c.fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(f_.port));
    inet_pton(AF_INET, f_.host.c_str(), &addr.sin_addr);
    const int one = 1;
    setsockopt(c.fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    if (connect(c.fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) < 0 && errno != EINPROGRESS) {
      Fail("connect");
      return false;
    }
    epoll_event ev{};
    ev.events = EPOLLIN | EPOLLOUT;  // EPOLLOUT until connected; dropped by Flush when nothing is pending.
    ev.data.u64 = index;
    c.want_write = true;
    if (epoll_ctl(epoll_, EPOLL_CTL_ADD, c.fd, &ev) < 0) {
      Fail("epoll_ctl");
      return false;
    }
    ++live_;
    return true;
  }

  uint64_t InFlight() const {
    uint64_t n = 0;
    for (const Conn& c : conns_) n += c.fd >= 0 ? static_cast<uint64_t>(c.awaiting) : 0;
    return n;
  }

  // Builds and writes the connection's next round of puts, unless the run is over.
  void SendRound(Conn& c) {
    if (stopping_ || issued_ >= f_.count) return;
    const int puts = static_cast<int>(std::min<uint64_t>(static_cast<uint64_t>(f_.pipeline), f_.count - issued_));
    c.out.clear();
    c.out_sent = 0;
    char line[96];
    for (int i = 0; i < puts; ++i) {
      // 16-byte body: the put's sequence number in hex, unique within the run.
      const int len = std::snprintf(line, sizeof(line), "put 0 %" PRIu32 " 60 16\r\n%016" PRIx64 "\r\n", f_.delay_s,
                                    issued_++);
      c.out.append(line, static_cast<size_t>(len));
    }
    c.awaiting = puts;
    Flush(c);
  }

  void Flush(Conn& c) {
    while (c.out_sent < c.out.size()) {
      const ssize_t n = write(c.fd, c.out.data() + c.out_sent, c.out.size() - c.out_sent);
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == ENOTCONN)) break;
      if (n < 0) {
        Lost(c, "write");
        return;
      }
      c.out_sent += static_cast<size_t>(n);
    }
    const bool pending = c.out_sent < c.out.size();
    if (pending != c.want_write) {
      epoll_event ev{};
      ev.events = EPOLLIN | (pending ? EPOLLOUT : 0u);
      ev.data.u64 = static_cast<uint64_t>(&c - conns_.data());
      epoll_ctl(epoll_, EPOLL_CTL_MOD, c.fd, &ev);
      c.want_write = pending;
    }
  }

  void Read(Conn& c) {
    char buf[16384];
    while (true) {
      const ssize_t n = read(c.fd, buf, sizeof(buf));
      if (n == 0) return Lost(c, "closed by the server");
      if (n < 0) {
        if (errno == EAGAIN || errno == EWOULDBLOCK) break;
        return Lost(c, "read");
      }
      c.in.append(buf, static_cast<size_t>(n));
    }
    size_t pos = 0;
    while (true) {
      const size_t eol = c.in.find("\r\n", pos);
      if (eol == std::string::npos) break;
      if (c.in.compare(pos, 9, "INSERTED ") == 0) {
        ++inserted_;
      } else {
        ++errors_;
        if (first_error_.empty()) first_error_ = c.in.substr(pos, eol - pos);
      }
      --c.awaiting;
      pos = eol + 2;
    }
    c.in.erase(0, pos);
    if (c.awaiting <= 0) SendRound(c);
  }

  void Lost(Conn& c, const char* what) {
    ++errors_;
    if (first_error_.empty()) first_error_ = std::string("connection: ") + what;
    epoll_ctl(epoll_, EPOLL_CTL_DEL, c.fd, nullptr);
    close(c.fd);
    c.fd = -1;
    c.awaiting = 0;
    --live_;
  }

  void Sample(Snapshot* s) const {
    s->t = Clock::now();
    s->inserted = inserted_;
    s->client_cpu_s = SelfCpuSeconds();
    if (f_.server_pid != 0) s->server_cpu_s = ProcessCpuSeconds(f_.server_pid);
  }

  int Report(bool measured) const {
    const double elapsed = measured ? std::chrono::duration<double>(at_end_.t - at_start_.t).count() : 0.0;
    const uint64_t ops = measured ? at_end_.inserted - at_start_.inserted : 0;
    std::string json = "{\"connections\":" + std::to_string(f_.connections) +
                       ",\"pipeline\":" + std::to_string(f_.pipeline) + ",\"ops\":" + std::to_string(ops) +
                       ",\"elapsed_s\":" + std::to_string(elapsed) +
                       ",\"ops_per_s\":" + std::to_string(elapsed > 0 ? static_cast<double>(ops) / elapsed : 0.0) +
                       ",\"errors\":" + std::to_string(errors_);
    if (ops > 0) {
      json += ",\"client_cpu_us_per_op\":" +
              std::to_string((at_end_.client_cpu_s - at_start_.client_cpu_s) * 1e6 / static_cast<double>(ops));
      if (at_start_.server_cpu_s && at_end_.server_cpu_s) {
        json += ",\"server_cpu_us_per_op\":" +
                std::to_string((*at_end_.server_cpu_s - *at_start_.server_cpu_s) * 1e6 / static_cast<double>(ops));
      }
    }
    if (!first_error_.empty()) {
      std::string escaped;
      for (char ch : first_error_) {
        if (ch == '"' || ch == '\\') escaped += '\\';
        if (static_cast<unsigned char>(ch) >= 0x20) escaped += ch;
      }
      json += ",\"first_error\":\"" + escaped + "\"";
    }
    std::printf("%s}\n", json.c_str());
    return errors_ == 0 && ops > 0 ? 0 : 1;
  }

  const Flags f_;
  int epoll_ = -1;
  std::vector<Conn> conns_;
  int live_ = 0;
  bool stopping_ = false;
  uint64_t issued_ = 0, inserted_ = 0, errors_ = 0;
  std::string first_error_;
  Clock::time_point window_start_, window_end_;
  Snapshot at_start_, at_end_;
};

}  // namespace
}  // namespace lawn

int main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--help") == 0 || std::strcmp(argv[i], "-h") == 0) {
      std::fputs(lawn::kUsage, stdout);
      return 0;
    }
  }
  lawn::Flags flags;
  std::string error;
  if (!lawn::ParseFlags(argc, argv, &flags, &error)) {
    std::fprintf(stderr, "beanstalk_put: %s\n%s", error.c_str(), lawn::kUsage);
    return 2;
  }
  return lawn::Loader(flags).Run();
}
