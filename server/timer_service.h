// TimerServiceImpl: lawn.v1.TimerService on gRPC's callback API. Each handler parses and validates its
// request on the gRPC thread, then hands a command to the owning shard worker and returns; the worker answers
// the RPC after the storage write. No handler blocks on a shard or on disk.
//
// Every method is registered raw (grpc::ByteBuffer in and out, see server/raw_call.h) so that a request whose
// bytes do not parse is answered INVALID_ARGUMENT naming the method, not gRPC's bare UNIMPLEMENTED.
//
// Thread-safety: handlers run concurrently on gRPC threads; all shared state is in Runtime.
#pragma once

#include "grpcpp/grpcpp.h"
#include "lawn/v1/timer.grpc.pb.h"
#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "server/auth.h"
#include "server/cluster_router.h"
#include "server/rate_limiter.h"
#include "server/raw_call.h"
#include "server/request_timer.h"
#include "server/runtime.h"
#include "server/subscribe_reactor.h"

namespace lawn {

struct StartBatch;

// Built on Service, not CallbackService: a typed callback override left behind then fails to compile. The
// flip side: a method missing from this list would stay a sync method answering UNIMPLEMENTED, which
// tests/integration/malformed_test.cc catches by calling every method of the service.
using TimerServiceBase = v1::TimerService::WithRawCallbackMethod_StartTimer<
    v1::TimerService::WithRawCallbackMethod_StartTimers<
    v1::TimerService::WithRawCallbackMethod_DeleteTimer<
    v1::TimerService::WithRawCallbackMethod_RescheduleTimer<
    v1::TimerService::WithRawCallbackMethod_GetTimer<
    v1::TimerService::WithRawCallbackMethod_ListTimers<
    v1::TimerService::WithRawCallbackMethod_GetStats<
    v1::TimerService::WithRawCallbackMethod_Subscribe<
    v1::TimerService::Service>>>>>>>>;

class TimerServiceImpl final : public TimerServiceBase {
 public:
  // `auth` and `limiter` are not owned and outlive the service.
  TimerServiceImpl(Runtime& runtime, const Authenticator& auth, RateLimiter& limiter)
      : runtime_(runtime), auth_(auth), limiter_(limiter) {}

  // Cluster mode (server/cluster_router.h): until SetRouter, calls for timers are refused UNAVAILABLE
  // ("joining the cluster"); then each is served here, forwarded to its owner or refused, by its partition.
  void EnableClusterMode() { cluster_mode_.store(true, std::memory_order_release); }
  // `router` is not owned and outlives the service.
  void SetRouter(ClusterRouter* router) { router_.store(router, std::memory_order_release); }

  // Ends every Subscribe stream (drain) and refuses new ones with `status`.
  void CloseStreams(const grpc::Status& status) { streams_.CloseAll(status); }
  // Ends the streams whose callers lost their permission (after a tokens file reload).
  void RecheckStreams() {
    streams_.ForEach([](SubscribeReactor* r) { r->Recheck(); });
  }
  size_t open_streams() const { return streams_.size(); }
  // Drain: refuse new unary calls with UNAVAILABLE, then wait until the ones in flight are answered.
  void BeginDrain();
  bool WaitIdle(std::chrono::steady_clock::time_point deadline);

  // Raw handlers: each parses `raw_request` into its typed message (INVALID_ARGUMENT if it does not parse);
  // whoever answers serializes the typed response into `raw_response` (UnaryCall::Reply).
  grpc::ServerUnaryReactor* StartTimer(grpc::CallbackServerContext* context,
                                       const grpc::ByteBuffer* raw_request,
                                       grpc::ByteBuffer* raw_response) override;
  grpc::ServerUnaryReactor* StartTimers(grpc::CallbackServerContext* context,
                                        const grpc::ByteBuffer* raw_request,
                                        grpc::ByteBuffer* raw_response) override;
  grpc::ServerUnaryReactor* DeleteTimer(grpc::CallbackServerContext* context,
                                        const grpc::ByteBuffer* raw_request,
                                        grpc::ByteBuffer* raw_response) override;
  grpc::ServerUnaryReactor* RescheduleTimer(grpc::CallbackServerContext* context,
                                            const grpc::ByteBuffer* raw_request,
                                            grpc::ByteBuffer* raw_response) override;
  grpc::ServerUnaryReactor* GetTimer(grpc::CallbackServerContext* context,
                                     const grpc::ByteBuffer* raw_request,
                                     grpc::ByteBuffer* raw_response) override;
  grpc::ServerUnaryReactor* ListTimers(grpc::CallbackServerContext* context,
                                       const grpc::ByteBuffer* raw_request,
                                       grpc::ByteBuffer* raw_response) override;
  grpc::ServerUnaryReactor* GetStats(grpc::CallbackServerContext* context,
                                     const grpc::ByteBuffer* raw_request,
                                     grpc::ByteBuffer* raw_response) override;
  // Raw too: the stream parses its messages (SubscribeReactor).
  grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>* Subscribe(
      grpc::CallbackServerContext* context) override;

 private:
  // UNAVAILABLE while recovering or after a storage failure (`write` = the RPC changes state).
  absl::Status Admit(bool write) const;
  // UNAVAILABLE (and counted) when the shard's command queue is full.
  absl::Status CheckQueue(uint32_t shard) const;
  // Answers `call` with `status` (not OK) and returns it, for a handler to return.
  grpc::ServerUnaryReactor* Reject(grpc::CallbackServerContext* context, UnaryCall* call, const char* method,
                                   const grpc::Status& status);
  grpc::ServerUnaryReactor* Reject(grpc::CallbackServerContext* context, UnaryCall* call, const char* method,
                                   const absl::Status& status);

  // Cluster mode: answers `call` elsewhere (forwarded to the owner of (ns, id) with `raw_request`, or refused)
  // and returns true, or returns false when this member serves it. Always false outside cluster mode.
  bool RouteElsewhere(grpc::CallbackServerContext* context, UnaryCall* call, const char* method,
                      const grpc::ByteBuffer* raw_request, std::string_view key);
  // StartTimers in cluster mode: sends the `items` of `batch` that the member at `address` owns there, as one
  // StartTimers call, and fills their results from its answer; the last part to finish answers the call.
  void ForwardStarts(grpc::CallbackServerContext* context, ClusterRouter* router, const std::string& address,
                     std::vector<uint32_t> items, std::shared_ptr<StartBatch> batch);

  // Cluster mode: asks every member (server/cluster_router.h, FanOut) and answers `call` with what `merge`
  // makes of their answers (filling the call's response); `rpc` is measured as this member's call.
  using Merge = std::function<grpc::Status(const ClusterRouter::Answers& answers)>;
  grpc::ServerUnaryReactor* FanOutAndMerge(grpc::CallbackServerContext* context, UnaryCall* call, const char* method,
                                           Rpc rpc, const grpc::ByteBuffer* raw_request, Merge merge);
  // ListTimers and GetStats in cluster mode: asks every member (server/cluster_router.h, FanOut) and merges.
  grpc::ServerUnaryReactor* FanOutList(grpc::CallbackServerContext* context, UnaryCall* call,
                                       const grpc::ByteBuffer* raw_request, size_t limit);
  grpc::ServerUnaryReactor* FanOutStats(grpc::CallbackServerContext* context, UnaryCall* call,
                                        const grpc::ByteBuffer* raw_request);

  RequestTimer Track(Rpc rpc);
  // The authenticated caller, or the UNAUTHENTICATED status to answer.
  absl::StatusOr<Caller> Authenticate(grpc::CallbackServerContext* context, const char* method) const {
    return auth_.Authenticate(*context, method);
  }

  Runtime& runtime_;
  const Authenticator& auth_;
  RateLimiter& limiter_;
  StreamRegistry streams_;
  std::atomic<bool> cluster_mode_{false};
  std::atomic<ClusterRouter*> router_{nullptr};
  std::atomic<bool> draining_{false};
  std::atomic<int64_t> in_flight_{0};  // Unary calls received and not yet answered.
  // Unary calls whose reactor is not done yet: answered calls stay counted until gRPC has sent the answer.
  std::atomic<int64_t> live_calls_{0};
};

}  // namespace lawn
