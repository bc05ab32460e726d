// LawndProcess: runs the real lawnd binary for integration tests, on 127.0.0.1 port 0 with its data in a
// fresh temp dir, and finds the port it got from its log. Only the process it started is ever signalled.
//
// Thread-safety: one test thread.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "grpcpp/grpcpp.h"
#include "lawn/v1/timer.grpc.pb.h"
#include "tests/testing/sanitized.h"

namespace lawn::testing {

// How long a start may take to listen and to report SERVING. A sanitized lawnd restarted under CI's parallel
// tests has taken 27 s to listen (TSan, ClusterMovesTest: opening its data dir, 0.6 s alone, took 24 s while
// three other tests' lawnds wrote and synced beside it); a plain build opens that dir in 0.1-0.3 s.
inline constexpr std::chrono::seconds kStartTimeout{kSanitized ? 90 : 30};

// Path of the lawnd binary under test (set by CMake).
std::string LawndPath();

// A temp dir removed (recursively) at destruction.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

class LawndProcess {
 public:
  // `data_dir` is reused across restarts of one test; `extra_args` are appended to the command line.
  LawndProcess(std::string data_dir, std::vector<std::string> extra_args = {});
  ~LawndProcess();  // SIGKILLs the process if still running.

  // Starts lawnd and waits until it listens and reports SERVING (or `timeout` passes: test failure).
  void Start(std::chrono::milliseconds timeout = kStartTimeout);
  // Starts without waiting for SERVING (still waits for the port).
  void StartNoWait(std::chrono::milliseconds timeout = kStartTimeout);
  bool WaitServing(std::chrono::milliseconds timeout);
  // Spawns lawnd and returns at once (e.g. to kill it while it starts); StartNoWait waits for the port.
  void Launch();
  // Waits until the log since the last start holds `text`; false after `timeout` or once lawnd has exited
  // without it.
  bool WaitForLog(const std::string& text, std::chrono::milliseconds timeout);
  // grpc.health.v1 status of `service` ("" = the server): kServing, kNotServing, 0 (unknown), -1 (no answer).
  static constexpr int kServing = 1;
  static constexpr int kNotServing = 2;
  int HealthStatus(const std::string& service);
  // Runs `binary` instead of lawnd (e.g. tests/testing's lawnd_fault), with the same flags.
  void set_binary(std::string binary) { binary_ = std::move(binary); }
  // Runs lawnd expecting it to exit on its own (e.g. refusing a bad config); returns its exit status, or -1
  // if it was still running after `timeout` (then it is killed).
  int RunToExit(std::chrono::milliseconds timeout);
  // Sends `signal` and waits for the exit; returns the exit status (WEXITSTATUS, or 128 + signal).
  int Stop(int signal, std::chrono::milliseconds timeout = std::chrono::seconds(30));
  // Sends `signal` to the process and returns at once (e.g. to watch a drain from outside).
  void Signal(int signal);
  // Waits for the process to exit on its own; returns the exit status as Stop does (SIGKILL and a test
  // failure after `timeout`).
  int WaitExit(std::chrono::milliseconds timeout = std::chrono::seconds(30));
  void Kill() { Stop(9); }
  bool running() const { return pid_ > 0; }
  pid_t pid() const { return pid_; }

  int port() const { return port_; }
  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }
  // Credentials of channel() (and so of health checks and stub()): plaintext unless set (TLS tests).
  void set_credentials(std::shared_ptr<grpc::ChannelCredentials> credentials) { credentials_ = std::move(credentials); }
  std::shared_ptr<grpc::Channel> channel();
  std::unique_ptr<v1::TimerService::Stub> stub();
  // The log written so far.
  std::string Log() const;
  const std::string& data_dir() const { return data_dir_; }

 private:
  std::string data_dir_;
  std::vector<std::string> extra_args_;
  std::string binary_ = LawndPath();
  std::shared_ptr<grpc::ChannelCredentials> credentials_;
  std::string log_path_;
  pid_t pid_ = -1;
  int port_ = 0;
  size_t log_offset_ = 0;  // Port search starts after the previous run's log.
};

// One unary call of `method` ("/package.Service/Method") with the serialized `request`, whatever the
// method's real shape; `response` (if not null) gets the serialized answer of an OK call.
grpc::Status RawUnaryCall(const std::shared_ptr<grpc::Channel>& channel, const std::string& method,
                          const std::string& request, std::string* response = nullptr,
                          std::chrono::milliseconds deadline = std::chrono::seconds(5));

// A plain HTTP/1.0 GET on 127.0.0.1:`port`; returns the body ("" on failure).
std::string HttpGet(int port, const std::string& path);

// The value of the first sample line of Prometheus text `text` matching `series` (a regex over
// "name{labels}"), or -1.
double MetricSample(const std::string& text, const std::string& series);

// The metrics port lawnd logged ("metrics on http://host:PORT/metrics") in `log`, or 0.
int MetricsPortFromLog(const std::string& log);

// A loopback port bound but not listening, held for the object's life: connections to it are refused, and
// no other process can take the port meanwhile (unlike a port freed by a stopped server).
class RefusingPort {
 public:
  RefusingPort();
  ~RefusingPort();
  RefusingPort(const RefusingPort&) = delete;
  RefusingPort& operator=(const RefusingPort&) = delete;
  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }

 private:
  int fd_ = -1;
  int port_ = 0;
};


// Writes `text` to `path` (e.g. a lawn.yaml for --config); returns `path`.
std::string WriteFile(const std::string& path, const std::string& text);

// A tmpfs of `size` ("160m") mounted at `path` (created), for tests of a disk that really fills; lazily
// unmounted on destruction. Mounting needs root (as in CI): when it fails, mounted() is false and why()
// says why, for GTEST_SKIP.
class SmallTmpfs {
 public:
  SmallTmpfs(std::string path, const std::string& size);
  ~SmallTmpfs();
  SmallTmpfs(const SmallTmpfs&) = delete;
  SmallTmpfs& operator=(const SmallTmpfs&) = delete;
  bool mounted() const { return mounted_; }
  const std::string& why() const { return why_; }
  // Grows (or shrinks) the mounted tmpfs to `size`; whether it worked.
  bool Resize(const std::string& size);

 private:
  std::string path_;
  bool mounted_ = false;
  std::string why_;
};

// Polls `pred` every 10 ms until it holds or `timeout` passes: waits for an observable state instead of
// sleeping. Returns whether it held.
bool WaitFor(const std::function<bool()>& pred, std::chrono::milliseconds timeout = std::chrono::seconds(15));

// Command-line flags for a durable mode named as the parameterized tests name them: "sync" or "interval",
// optionally with "-log" or "-rocksdb" for that storage.engine (e.g. "sync-rocksdb"); without either, the
// default (auto: log, for the tests' new data dirs).
std::vector<std::string> DurableModeFlags(std::string_view mode);

}  // namespace lawn::testing
