// TimerServiceImpl: lawn.v1.TimerService on gRPC's callback API. Each handler validates its request on the
// gRPC thread, then hands a command to the owning shard worker and returns; the worker finishes the RPC
// after the storage write. No handler blocks on a shard or on disk.
//
// Thread-safety: handlers run concurrently on gRPC threads; all shared state is in Runtime.
#pragma once

#include "grpcpp/grpcpp.h"
#include "lawn/v1/timer.grpc.pb.h"
#include <atomic>
#include <chrono>

#include "server/request_timer.h"
#include "server/runtime.h"
#include "server/subscribe_reactor.h"

namespace lawn {

class TimerServiceImpl final : public v1::TimerService::CallbackService {
 public:
  explicit TimerServiceImpl(Runtime& runtime) : runtime_(runtime) {}

  // Ends every Subscribe stream (drain) and refuses new ones with `status`.
  void CloseStreams(const grpc::Status& status) { streams_.CloseAll(status); }
  size_t open_streams() const { return streams_.size(); }
  // Drain: refuse new unary calls with UNAVAILABLE, then wait until the ones in flight are answered.
  void BeginDrain();
  bool WaitIdle(std::chrono::steady_clock::time_point deadline);

  grpc::ServerUnaryReactor* StartTimer(grpc::CallbackServerContext* context, const v1::StartTimerRequest* request,
                                       v1::StartTimerResponse* response) override;
  grpc::ServerUnaryReactor* StartTimers(grpc::CallbackServerContext* context,
                                        const v1::StartTimersRequest* request,
                                        v1::StartTimersResponse* response) override;
  grpc::ServerUnaryReactor* DeleteTimer(grpc::CallbackServerContext* context,
                                        const v1::DeleteTimerRequest* request,
                                        v1::DeleteTimerResponse* response) override;
  grpc::ServerUnaryReactor* RescheduleTimer(grpc::CallbackServerContext* context,
                                            const v1::RescheduleTimerRequest* request,
                                            v1::RescheduleTimerResponse* response) override;
  grpc::ServerUnaryReactor* GetTimer(grpc::CallbackServerContext* context, const v1::GetTimerRequest* request,
                                     v1::GetTimerResponse* response) override;
  grpc::ServerUnaryReactor* ListTimers(grpc::CallbackServerContext* context, const v1::ListTimersRequest* request,
                                       v1::ListTimersResponse* response) override;
  grpc::ServerBidiReactor<v1::SubscribeRequest, v1::SubscribeResponse>* Subscribe(
      grpc::CallbackServerContext* context) override;
  grpc::ServerUnaryReactor* GetStats(grpc::CallbackServerContext* context, const v1::GetStatsRequest* request,
                                     v1::GetStatsResponse* response) override;

 private:
  // UNAVAILABLE while recovering or after a storage failure (`write` = the RPC changes state).
  absl::Status Admit(bool write) const;
  // UNAVAILABLE (and counted) when the shard's command queue is full.
  absl::Status CheckQueue(uint32_t shard) const;
  grpc::ServerUnaryReactor* Reject(grpc::CallbackServerContext* context, const char* method,
                                   const absl::Status& status);

  RequestTimer Track(Rpc rpc);

  Runtime& runtime_;
  StreamRegistry streams_;
  std::atomic<bool> draining_{false};
  std::atomic<int64_t> in_flight_{0};  // Unary calls received and not yet answered.
};

}  // namespace lawn
