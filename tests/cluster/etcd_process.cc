// EtcdProcess (tests/cluster/etcd_process.h).
#include "tests/cluster/etcd_process.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <regex>
#include <sstream>
#include <vector>

#include "gtest/gtest.h"
#include "tests/integration/spawn.h"

namespace lawn::testing {

EtcdProcess::EtcdProcess(std::chrono::milliseconds timeout) : log_path_(dir_.path() + "/etcd.log") {
  const std::string any = "http://127.0.0.1:0";
  const std::vector<std::string> args = {
      "/usr/bin/etcd", "--name", "test", "--data-dir", dir_.path() + "/data",
      "--listen-client-urls", any, "--advertise-client-urls", any,
      "--listen-peer-urls", any, "--initial-advertise-peer-urls", any, "--initial-cluster", "test=" + any,
      // Short elections: a single member elects itself at once, and lease TTLs may be as short as 1-2 s.
      "--heartbeat-interval", "50", "--election-timeout", "500",
      // Tests need etcd's answers, not its durability: no fsync, so a loaded disk does not slow its calls.
      "--unsafe-no-fsync"};
  std::string error;
  pid_ = Spawn(args, CurrentEnvironment(), {log_path_, log_path_}, &error);
  if (pid_ <= 0) {
    ADD_FAILURE() << error;
    return;
  }
  // "serving insecure client requests on 127.0.0.1:PORT": the port it bound for the client API.
  static const std::regex kServing(R"(serving insecure client requests on 127\.0\.0\.1:(\d+))");
  const bool up = WaitFor(
      [&] {
        std::smatch m;
        const std::string log = Log();
        if (!std::regex_search(log, m, kServing)) return false;
        client_port_ = std::stoi(m[1]);
        return true;
      },
      timeout);
  if (!up) ADD_FAILURE() << "etcd did not serve within " << timeout.count() << " ms; log:\n" << Log();
}

EtcdProcess::~EtcdProcess() {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGKILL);  // Also ends a stopped process.
  int status;
  waitpid(pid_, &status, 0);
}

void EtcdProcess::Pause() {
  ASSERT_FALSE(paused_);
  ::kill(pid_, SIGSTOP);
  paused_ = true;
}

void EtcdProcess::Resume() {
  ASSERT_TRUE(paused_);
  ::kill(pid_, SIGCONT);
  paused_ = false;
}

std::string EtcdProcess::Log() const {
  std::ifstream in(log_path_);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::unique_ptr<EtcdClient> EtcdProcess::Client(std::chrono::milliseconds call_timeout) const {
  absl::StatusOr<std::unique_ptr<EtcdClient>> client =
      EtcdClient::Connect({.endpoints = {endpoint()}, .call_timeout = call_timeout});
  EXPECT_TRUE(client.ok()) << client.status();
  return client.ok() ? std::move(client).value() : nullptr;
}

}  // namespace lawn::testing
