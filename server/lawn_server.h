// LawnServer: everything lawnd runs, wired together: the store, the runtime (shards, outboxes), the gRPC
// server with TimerService, health and reflection. main() only parses flags and waits for a signal.
//
// Health: NOT_SERVING until recovery is done, SERVING while ready, NOT_SERVING again on a storage failure or
// during the drain.
//
// Thread-safety: Start and Drain are called from one thread; health updates come from any thread.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "config/options.h"
#include "grpcpp/grpcpp.h"
#include "storage/timer_store.h"

namespace lawn {

class AdminServiceImpl;
class ClusterNode;
class PartitionGate;
class PartitionMover;
class ClusterRouter;
class ClusterServiceImpl;
class Authenticator;
class Metrics;
class RateLimiter;
class Runtime;
class TimerServiceImpl;
class TlsFileGuard;

class RocksDbTimerStore;
struct RocksDbStoreOptions;

class LawnServer {
 public:
  // Opens the RocksDB store lawnd runs on. The default opens it on the real file system; a test executable
  // may open it on another RocksDB Env (e.g. one that simulates power cuts).
  using StoreOpener =
      std::function<absl::StatusOr<std::unique_ptr<RocksDbTimerStore>>(const RocksDbStoreOptions& options)>;

  explicit LawnServer(const Options& options, StoreOpener open_store = nullptr);
  ~LawnServer();
  LawnServer(const LawnServer&) = delete;
  LawnServer& operator=(const LawnServer&) = delete;

  // Opens the store, starts recovery and the gRPC server (listening before recovery ends, NOT_SERVING).
  absl::Status Start();
  // Stops accepting, ends Subscribe streams, finishes in-flight calls (bounded by shutdown_timeout), stops
  // the workers and syncs the store.
  void Drain();

  // Blocks until recovery is done; returns its status (not OK: lawnd must exit, nothing has fired).
  absl::Status WaitUntilRecovered();

  int port() const { return port_; }
  // The plaintext health listener's port (0 if health_listen is "").
  int health_port() const { return health_port_; }
  TimerStore* store();

 private:
  void UpdateHealth();
  // Cluster mode: joins the cluster with the port lawnd got (cluster.advertise port 0).
  absl::Status JoinCluster();

  const Options options_;
  const StoreOpener open_store_;
  std::unique_ptr<Metrics> metrics_;
  std::unique_ptr<PartitionGate> gate_;  // Cluster mode; the workers read it, so it outlives runtime_.
  std::unique_ptr<Runtime> runtime_;
  std::unique_ptr<Authenticator> auth_;
  std::unique_ptr<RateLimiter> limiter_;
  // Cluster mode: the membership and the router (declared before the services and server_, which use them).
  std::unique_ptr<ClusterNode> cluster_;
  std::unique_ptr<ClusterRouter> router_;
  std::atomic<ClusterNode*> cluster_view_{nullptr};  // The workers' firing fence reads it.
  std::unique_ptr<PartitionMover> mover_;            // Hand-overs; gone before runtime_ stops.
  std::unique_ptr<TimerServiceImpl> service_;
  std::unique_ptr<ClusterServiceImpl> cluster_service_;
  std::unique_ptr<AdminServiceImpl> admin_;
  std::unique_ptr<TlsFileGuard> tls_files_;  // The TLS files gRPC reads; declared before server_ to outlive it.
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<grpc::CallbackGenericService> health_only_;  // Before health_server_: outlives it.
  std::unique_ptr<grpc::Server> health_server_;  // health_listen: grpc.health.v1.Health only, plaintext.
  int port_ = 0;
  int health_port_ = 0;
  std::atomic<bool> draining_{false};
};

}  // namespace lawn
