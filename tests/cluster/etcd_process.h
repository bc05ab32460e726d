// EtcdProcess: a real, single-member etcd (Debian's etcd-server) for the cluster tests, on 127.0.0.1 with
// port 0 for clients and peers (etcd logs the ports it got), its data in a fresh temp dir. Only the process
// it started is ever signalled: SIGSTOP / SIGCONT to pause it, SIGKILL at the end.
//
// Thread-safety: one test thread.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <memory>
#include <string>

#include "cluster/etcd_client.h"

#include "tests/integration/lawnd_process.h"

namespace lawn::testing {

class EtcdProcess {
 public:
  // Starts etcd and waits until it serves clients (a test failure after `timeout`).
  explicit EtcdProcess(std::chrono::milliseconds timeout = std::chrono::seconds(30));
  ~EtcdProcess();

  // host:port of the client API.
  std::string endpoint() const { return "127.0.0.1:" + std::to_string(client_port_); }
  bool serving() const { return client_port_ > 0; }
  void Pause();   // SIGSTOP: etcd holds its sockets but answers nothing (a partition, a GC pause).
  void Resume();  // SIGCONT.
  std::string Log() const;
  // A client of this etcd whose calls give up after `call_timeout` (a test failure if it cannot be made).
  std::unique_ptr<EtcdClient> Client(
      std::chrono::milliseconds call_timeout = std::chrono::milliseconds(1000)) const;

 private:
  TempDir dir_;
  std::string log_path_;
  pid_t pid_ = -1;
  int client_port_ = 0;
  bool paused_ = false;
};

}  // namespace lawn::testing
