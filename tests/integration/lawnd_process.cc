#include "tests/integration/lawnd_process.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <string_view>
#include <thread>
#include <utility>

#include "grpcpp/generic/generic_stub.h"
#include "gtest/gtest.h"
#include "tests/integration/spawn.h"

namespace lawn::testing {

namespace fs = std::filesystem;

namespace {

// This process's environment plus LAWN_MUTEX_DEADLOCK_CHECK=1: lawnd under test keeps Abseil's lock-order
// check (a cycle aborts it), which production lawnd turns off.
std::vector<std::string> ChildEnvironment() {
  std::vector<std::string> env = CurrentEnvironment({"LAWN_MUTEX_DEADLOCK_CHECK"});
  env.emplace_back("LAWN_MUTEX_DEADLOCK_CHECK=1");
  return env;
}

}  // namespace

std::string LawndPath() { return LAWND_PATH; }

std::string WriteFile(const std::string& path, const std::string& text) {
  std::ofstream(path) << text;
  return path;
}

bool WaitFor(const std::function<bool()>& pred, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (pred()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return pred();
}

RefusingPort::RefusingPort() : fd_(socket(AF_INET, SOCK_STREAM, 0)) {
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  if (fd_ < 0 || bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    ADD_FAILURE() << "cannot bind a loopback port";
    return;
  }
  port_ = ntohs(addr.sin_port);
}

RefusingPort::~RefusingPort() {
  if (fd_ >= 0) close(fd_);
}

TempDir::TempDir() {
  std::string tmpl = (fs::temp_directory_path() / "lawn-test-XXXXXX").string();
  char* made = mkdtemp(tmpl.data());
  if (made == nullptr) std::abort();
  path_ = made;
}

TempDir::~TempDir() {
  std::error_code ec;
  fs::remove_all(path_, ec);
}

LawndProcess::LawndProcess(std::string data_dir, std::vector<std::string> extra_args)
    : data_dir_(std::move(data_dir)), extra_args_(std::move(extra_args)) {
  log_path_ = data_dir_ + ".log";
}

LawndProcess::~LawndProcess() {
  if (pid_ > 0) Stop(SIGKILL);
  std::error_code ec;
  fs::remove(log_path_, ec);
}

std::string LawndProcess::Log() const {
  std::ifstream in(log_path_);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

int LawndProcess::RunToExit(std::chrono::milliseconds timeout) {
  const std::vector<std::string> args = [&] {
    std::vector<std::string> a = {binary_, "--listen", "127.0.0.1:0", "--data-dir", data_dir_,
                                  "--metrics-listen", ""};
    a.insert(a.end(), extra_args_.begin(), extra_args_.end());
    return a;
  }();
  std::string error;
  const pid_t pid = Spawn(args, ChildEnvironment(), {log_path_, log_path_}, &error);
  if (pid < 0) {
    ADD_FAILURE() << error;
    return -1;
  }
  pid_ = pid;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    int status;
    if (waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  Stop(SIGKILL);
  return -1;
}

void LawndProcess::Launch() {
  ASSERT_LT(pid_, 0) << "already running";
  log_offset_ = Log().size();
  std::vector<std::string> args = {binary_, "--listen", "127.0.0.1:0", "--data-dir", data_dir_,
                                   "--metrics-listen", "", "--shards", "2", "--log-level", "debug"};
  args.insert(args.end(), extra_args_.begin(), extra_args_.end());
  std::string error;
  const pid_t pid = Spawn(args, ChildEnvironment(), {log_path_, log_path_}, &error);
  ASSERT_GE(pid, 0) << error;
  pid_ = pid;
}

bool LawndProcess::WaitForLog(const std::string& text, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (Log().find(text, log_offset_) != std::string::npos) return true;
    int status;
    if (pid_ < 0 || waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      return Log().find(text, log_offset_) != std::string::npos;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return false;
}

void LawndProcess::StartNoWait(std::chrono::milliseconds timeout) {
  Launch();
  if (pid_ < 0) return;
  const std::regex listening(R"(listening on [^ ]*:(\d+))");
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    const std::string log = Log().substr(log_offset_);
    std::smatch m;
    if (std::regex_search(log, m, listening)) {
      port_ = std::stoi(m[1]);
      return;
    }
    int status;
    if (waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      FAIL() << "lawnd exited before listening; log:\n" << Log().substr(log_offset_);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  FAIL() << "lawnd did not report its port; log:\n" << Log().substr(log_offset_);
}

void LawndProcess::Start(std::chrono::milliseconds timeout) {
  StartNoWait(timeout);
  if (port_ == 0) return;
  ASSERT_TRUE(WaitServing(timeout)) << "lawnd never became SERVING; log:\n" << Log().substr(log_offset_);
}

grpc::Status RawUnaryCall(const std::shared_ptr<grpc::Channel>& channel, const std::string& method,
                          const std::string& request, std::string* response, std::chrono::milliseconds deadline) {
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + deadline);
  grpc::Slice slice(request);
  grpc::ByteBuffer request_buf(&slice, 1), response_buf;
  grpc::GenericStub generic(channel);
  grpc::CompletionQueue cq;
  grpc::Status status;
  auto call = generic.PrepareUnaryCall(&ctx, method, request_buf, &cq);
  call->StartCall();
  call->Finish(&response_buf, &status, reinterpret_cast<void*>(1));
  void* tag;
  bool ok;
  cq.Next(&tag, &ok);
  cq.Shutdown();
  while (cq.Next(&tag, &ok)) {
  }
  if (status.ok() && response != nullptr) {
    std::vector<grpc::Slice> slices;
    (void)response_buf.Dump(&slices);
    response->clear();
    for (auto& s : slices) response->append(reinterpret_cast<const char*>(s.begin()), s.size());
  }
  return status;
}

int LawndProcess::HealthStatus(const std::string& service) {
  // grpc.health.v1.HealthCheckRequest{service}: field 1, length-delimited (services here are < 128 bytes).
  std::string request = service.empty() ? std::string() : std::string(1, '\x0a') + static_cast<char>(service.size()) + service;
  std::string bytes;
  if (!RawUnaryCall(channel(), "/grpc.health.v1.Health/Check", request, &bytes, std::chrono::seconds(1)).ok()) {
    return -1;
  }
  // HealthCheckResponse{status}: 08 <status>; an empty message is status 0 (UNKNOWN).
  return bytes.size() == 2 && bytes[0] == '\x08' ? bytes[1] : 0;
}

bool LawndProcess::WaitServing(std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (HealthStatus("") == kServing) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return false;
}

void LawndProcess::Signal(int signal) {
  if (pid_ > 0) ::kill(pid_, signal);
}

int LawndProcess::Stop(int signal, std::chrono::milliseconds timeout) {
  if (pid_ <= 0) return -1;
  ::kill(pid_, signal);
  return WaitExit(timeout);
}

int LawndProcess::WaitExit(std::chrono::milliseconds timeout) {
  if (pid_ <= 0) return -1;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  int status = 0;
  while (true) {
    const pid_t r = waitpid(pid_, &status, WNOHANG);
    if (r == pid_) break;
    if (std::chrono::steady_clock::now() > deadline) {
      ::kill(pid_, SIGKILL);
      waitpid(pid_, &status, 0);
      ADD_FAILURE() << "lawnd did not exit within the timeout";
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  pid_ = -1;
  port_ = 0;
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return -1;
}

std::shared_ptr<grpc::Channel> LawndProcess::channel() {
  return grpc::CreateChannel(address(), credentials_ != nullptr ? credentials_ : grpc::InsecureChannelCredentials());
}

std::unique_ptr<v1::TimerService::Stub> LawndProcess::stub() { return v1::TimerService::NewStub(channel()); }

std::string HttpGet(int port, const std::string& path) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    close(fd);
    return "";
  }
  const std::string request = "GET " + path + " HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n";
  (void)!write(fd, request.data(), request.size());
  std::string response;
  char buf[65536];
  ssize_t n;
  while ((n = read(fd, buf, sizeof(buf))) > 0) response.append(buf, static_cast<size_t>(n));
  close(fd);
  const size_t body = response.find("\r\n\r\n");
  return body == std::string::npos ? "" : response.substr(body + 4);
}

double MetricSample(const std::string& text, const std::string& series) {
  std::smatch m;
  if (std::regex_search(text, m, std::regex("\n" + series + " ([0-9.e+-]+)"))) return std::stod(m[1]);
  return -1;
}

int MetricsPortFromLog(const std::string& log) {
  std::smatch m;
  if (!std::regex_search(log, m, std::regex(R"(metrics on http://[^:]+:(\d+)/metrics)"))) return 0;
  return std::stoi(m[1]);
}

SmallTmpfs::SmallTmpfs(std::string path, const std::string& size) : path_(std::move(path)) {
  if (geteuid() != 0) {
    why_ = "mounting a tmpfs needs root";
    return;
  }
  if (mkdir(path_.c_str(), 0755) != 0 && errno != EEXIST) {
    why_ = "cannot create " + path_;
    return;
  }
  mounted_ = mount("tmpfs", path_.c_str(), "tmpfs", 0, ("size=" + size).c_str()) == 0;
  if (!mounted_) why_ = "cannot mount a tmpfs here";
}

SmallTmpfs::~SmallTmpfs() {
  if (mounted_) umount2(path_.c_str(), MNT_DETACH);
}

bool SmallTmpfs::Resize(const std::string& size) {
  return mounted_ && mount("tmpfs", path_.c_str(), "tmpfs", MS_REMOUNT, ("size=" + size).c_str()) == 0;
}

std::vector<std::string> DurableModeFlags(std::string_view mode) {
  std::string engine;
  for (std::string_view suffix : {"-log", "-rocksdb"}) {
    if (mode.size() > suffix.size() && mode.substr(mode.size() - suffix.size()) == suffix) {
      engine = suffix.substr(1);
      mode.remove_suffix(suffix.size());
    }
  }
  std::vector<std::string> flags = {"--durability", std::string(mode)};
  if (!engine.empty()) flags.insert(flags.end(), {"--storage-engine", engine});
  return flags;
}

}  // namespace lawn::testing
