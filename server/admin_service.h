// AdminServiceImpl: lawn.v1.AdminService, operator actions. CreateCheckpoint runs RocksDB's checkpoint (disk
// I/O) on a thread of its own, never on a gRPC callback thread; the threads are joined by Drain.
//
// Thread-safety: handlers run concurrently on gRPC threads; state is guarded by mu_.
#pragma once

#include <string>
#include <thread>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "grpcpp/grpcpp.h"
#include "lawn/v1/timer.grpc.pb.h"

namespace lawn {

class RocksDbTimerStore;

class AdminServiceImpl final : public v1::AdminService::CallbackService {
 public:
  // `store` is nullptr in `memory` durability; not owned.
  AdminServiceImpl(RocksDbTimerStore* store, std::string data_dir) : store_(store), data_dir_(std::move(data_dir)) {}
  ~AdminServiceImpl() override { Drain(); }

  grpc::ServerUnaryReactor* CreateCheckpoint(grpc::CallbackServerContext* context,
                                             const v1::CreateCheckpointRequest* request,
                                             v1::CreateCheckpointResponse* response) override;
  // Waits for running checkpoints.
  void Drain();

 private:
  RocksDbTimerStore* const store_;
  const std::string data_dir_;
  absl::Mutex mu_;
  std::vector<std::thread> workers_ ABSL_GUARDED_BY(mu_);
};

}  // namespace lawn
