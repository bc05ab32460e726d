// AdminServiceImpl: lawn.v1.AdminService, operator actions.
//
// CreateCheckpoint validates the name and the target before anything starts, runs at most one checkpoint at a
// time (a second call meanwhile gets ABORTED), obeys the free-space guard, and does the disk I/O (RocksDB's
// checkpoint, then the retention sweep) on a thread of its own, never on a gRPC callback thread. So no flood
// of calls can pile up threads.
//
// The method is registered raw (see server/raw_call.h): a request that does not parse is answered
// INVALID_ARGUMENT naming it.
//
// Thread-safety: handlers run concurrently on gRPC threads; state is guarded by mu_.
#pragma once

#include <cstdint>
#include <string>
#include <thread>

#include "absl/synchronization/mutex.h"
#include "grpcpp/grpcpp.h"
#include "lawn/v1/timer.grpc.pb.h"
#include "server/auth.h"
#include "server/raw_call.h"

namespace lawn {

class Metrics;
class TimerStore;
class Runtime;

// On Service, not CallbackService: see TimerServiceBase in server/timer_service.h.
class AdminServiceImpl final
    : public v1::AdminService::WithRawCallbackMethod_CreateCheckpoint<
          v1::AdminService::WithRawCallbackMethod_SetTick<v1::AdminService::Service>> {
 public:
  // `store` is nullptr in `memory` durability; `metrics` may be nullptr; neither is owned. `retention`: how
  // many checkpoints to keep (0 = all). Every call needs the admin permission of `auth` (not owned).
  AdminServiceImpl(TimerStore* store, std::string data_dir, uint32_t retention, Metrics* metrics,
                   const Authenticator& auth, Runtime& runtime);
  ~AdminServiceImpl() override { Drain(); }

  // Raw: parses `raw_request` as a CreateCheckpointRequest; the answer is serialized into `raw_response`.
  grpc::ServerUnaryReactor* CreateCheckpoint(grpc::CallbackServerContext* context,
                                             const grpc::ByteBuffer* raw_request,
                                             grpc::ByteBuffer* raw_response) override;
  // Raw: a SetTickRequest; answered once every shard runs on the new tick.
  grpc::ServerUnaryReactor* SetTick(grpc::CallbackServerContext* context, const grpc::ByteBuffer* raw_request,
                                    grpc::ByteBuffer* raw_response) override;
  // Waits for a running checkpoint.
  void Drain();

 private:
  // Authenticates the caller, parses the request into `call` and checks the admin permission; answers the
  // call and returns false when any of them refuses.
  template <typename Call>
  bool Admit(grpc::CallbackServerContext& context, const grpc::ByteBuffer* raw_request, const char* method,
             Call& call);
  // Deletes the oldest checkpoints beyond the retention count; returns how many are kept.
  size_t ApplyRetention();

  TimerStore* const store_;
  const std::string data_dir_;
  const uint32_t retention_;
  Metrics* const metrics_;
  const Authenticator& auth_;
  Runtime& runtime_;
  absl::Mutex mu_;
  bool running_ ABSL_GUARDED_BY(mu_) = false;
  std::thread worker_ ABSL_GUARDED_BY(mu_);  // The last checkpoint's thread; joined before the next starts.
};

}  // namespace lawn
