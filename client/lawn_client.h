// LawnClient: the C++ client of lawnd, a thin layer over the generated lawn.v1.TimerService stub.
//
// Security (issue 10): ClientOptions::tls makes the channel TLS (mutual TLS with a client certificate), and
// ClientOptions::token goes out as `authorization: Bearer <token>` metadata on every call, Subscribe streams
// and health checks included. lawnd answers UNAUTHENTICATED without a valid token and PERMISSION_DENIED when
// the token lacks the permission for the namespace; both come back as those codes.
//
// Every unary method makes one blocking RPC with ClientOptions::timeout as its deadline and returns lawnd's
// answer, or lawnd's error as an absl::Status with the same canonical code and message (NOT_FOUND,
// ALREADY_EXISTS, INVALID_ARGUMENT, ...). Transport failures come back as UNAVAILABLE (lawnd unreachable;
// calls fail fast rather than wait for a connection) or DEADLINE_EXCEEDED.
//
// Thread-safety: a LawnClient may be used from any number of threads at once; each call has its own context.
// Subscriptions it creates share its channel and may outlive it.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "client/client_security.h"
#include "client/direct_router.h"
#include "client/subscription.h"
#include "grpc/health/v1/health.pb.h"
#include "grpcpp/grpcpp.h"
#include "lawn/v1/cluster.grpc.pb.h"
#include "lawn/v1/timer.grpc.pb.h"
#include "lawn/v1/timer.pb.h"

namespace lawn {

struct ClientOptions {
  // Deadline of each unary call, counted from its start. Zero or negative: no deadline. Subscribe streams
  // have none.
  std::chrono::nanoseconds timeout = std::chrono::seconds(10);
  // Largest message sent or received, in bytes; -1 for no limit. lawnd's own limit is its max_message_bytes
  // (default 4MiB).
  int max_message_bytes = 4 * 1024 * 1024;
  // Bearer token sent with every call (see client/client_security.h); empty: none. Visible ASCII only.
  std::string token;
  // TLS settings; nullopt: plaintext (insecure) channel. Used by Connect / Create only: a LawnClient made
  // over an existing channel keeps that channel's credentials.
  std::optional<ClientTls> tls;
  // Cluster mode: read the cluster map once (GetClusterMap through the target) and send each by-key call and
  // each StartTimers part straight to the member owning the timer's partition (client/direct_router.h),
  // skipping the hop a member would forward it over. A call that answers UNAVAILABLE there (wrong owner,
  // owner unreachable) is retried once through the target after the map is read again. Against a lawnd that
  // runs alone it changes nothing. Used by Create / Connect only; with it, Create reads the map at once and
  // returns that call's error (UNAVAILABLE while the target is unreachable or still joining its cluster)
  // instead of connecting lazily.
  bool route_directly = false;
};

// OK, or INVALID_ARGUMENT naming what is wrong: a bad token (ValidateToken) or bad TLS settings
// (ValidateClientTls).
absl::Status ValidateClientOptions(const ClientOptions& options);

// grpc.health.v1 serving status: UNKNOWN, SERVING, NOT_SERVING, SERVICE_UNKNOWN.
using ServingStatus = grpc::health::v1::HealthCheckResponse::ServingStatus;

class LawnClient {
 public:
  // A client of lawnd at `target` (a gRPC target: "host:port", "dns:///host:port", "unix:/path"), over a
  // channel made from `options` (plaintext unless options.tls is set). Connects lazily: an unreachable lawnd,
  // or a failed TLS handshake (unknown CA, wrong server name), shows up as UNAVAILABLE on the first call.
  // INVALID_ARGUMENT when ValidateClientOptions(options) fails.
  static absl::StatusOr<std::unique_ptr<LawnClient>> Create(const std::string& target,
                                                            const ClientOptions& options = {});
  // Create for options known to be valid (the defaults are: plaintext, no token).
  // REQUIRES: ValidateClientOptions(options).ok(); aborts with the message otherwise. Options read from
  // configuration or a command line go through Create, which returns the error instead.
  static std::unique_ptr<LawnClient> Connect(const std::string& target, const ClientOptions& options = {});

  // A client over an existing channel (custom credentials, in-process servers in tests). options.token is
  // still sent with every call; options.tls is ignored. REQUIRES: ValidateToken(options.token).ok().
  explicit LawnClient(std::shared_ptr<grpc::Channel> channel, const ClientOptions& options = {});

  LawnClient(const LawnClient&) = delete;
  LawnClient& operator=(const LawnClient&) = delete;

  // Starts the timer `request` describes and returns it as lawnd stored it (with its absolute deadline).
  // ALREADY_EXISTS if (namespace, id) is pending and request.replace() is false; INVALID_ARGUMENT for a bad
  // namespace, id, TTL, deadline, payload or interval; RESOURCE_EXHAUSTED when lawnd is full.
  absl::StatusOr<v1::Timer> StartTimer(const v1::StartTimerRequest& request);
  // Convenience form: fires `ttl` from now, repeats every `interval` if given; `replace` overwrites a pending
  // timer of the same id instead of failing with ALREADY_EXISTS.
  absl::StatusOr<v1::Timer> StartTimer(std::string ns, std::string id, std::chrono::nanoseconds ttl,
                                       std::string payload = {},
                                       std::optional<std::chrono::nanoseconds> interval = {},
                                       bool replace = false);

  // Starts many timers in one RPC (at most 10,000). The outer status is the RPC's; on success there is one
  // result per request, in request order: OK, or that item's own error (same codes as StartTimer). lawnd
  // answers with codes only (return_timers false), so nothing per timer is built or sent back.
  absl::StatusOr<std::vector<absl::Status>> StartTimers(const std::vector<v1::StartTimerRequest>& requests);
  // StartTimers with return_timers set: each result is the started timer as lawnd stored it (its absolute
  // deadline), or that item's error. For callers that need the timers; costs lawnd a Timer per item.
  absl::StatusOr<std::vector<absl::StatusOr<v1::Timer>>> StartTimersReturningTimers(
      const std::vector<v1::StartTimerRequest>& requests);

  // Deletes a pending timer and returns it. NOT_FOUND if there is none.
  absl::StatusOr<v1::Timer> DeleteTimer(const std::string& ns, const std::string& id);

  // Moves a pending timer to `ttl` from now / to `deadline`, and returns it. NOT_FOUND if there is none.
  absl::StatusOr<v1::Timer> RescheduleTimer(const std::string& ns, const std::string& id,
                                            std::chrono::nanoseconds ttl);
  absl::StatusOr<v1::Timer> RescheduleTimer(const std::string& ns, const std::string& id,
                                            std::chrono::system_clock::time_point deadline);

  // Reads a pending timer. NOT_FOUND if there is none.
  absl::StatusOr<v1::Timer> GetTimer(const std::string& ns, const std::string& id);

  // One page of the pending timers of `ns`, in id order. `page_size` 1..1000, 0 for lawnd's default (100);
  // `page_token` empty for the first page, else the previous page's next_page_token (empty on the last page).
  absl::StatusOr<v1::ListTimersResponse> ListTimers(const std::string& ns, int32_t page_size = 0,
                                                    const std::string& page_token = {});

  // Operator statistics: totals, per shard, per namespace.
  absl::StatusOr<v1::GetStatsResponse> GetStats();
  // lawn.v1.ClusterService.GetClusterMap: the members and partition owners as the member called sees them.
  // FAILED_PRECONDITION from a lawnd that runs alone.
  absl::StatusOr<v1::GetClusterMapResponse> GetClusterMap();
  // lawn.v1.ClusterService.DrainMember: marks `member` as draining (or not, with `cancel`); returns the
  // partitions it owns now.
  absl::StatusOr<uint32_t> DrainMember(const std::string& member, bool cancel);
  // lawn.v1.AdminService.CreateCheckpoint: returns the checkpoint's path on lawnd's file system.
  absl::StatusOr<std::string> CreateCheckpoint(const std::string& name);
  // lawn.v1.AdminService.SetTick: changes the firing resolution of the running lawnd (1us..1s); returns the
  // previous tick.
  absl::StatusOr<std::chrono::nanoseconds> SetTick(std::chrono::nanoseconds tick);

  // grpc.health.v1.Health/Check of `service` ("" = the whole server; lawnd also answers for
  // "lawn.v1.TimerService"). NOT_FOUND for a service lawnd does not know.
  absl::StatusOr<ServingStatus> Health(const std::string& service = "");

  // Opens a Subscribe stream on `ns` ("" = "default") and calls `on_expiration` for each expiration, on the
  // subscription's own thread (see client/subscription.h for acks, Stop and Wait). Never null; failures to
  // connect or open arrive through Subscription::Wait.
  std::unique_ptr<Subscription> Subscribe(const std::string& ns, SubscribeOptions options,
                                          std::function<void(const v1::Expiration&)> on_expiration);

  const std::shared_ptr<grpc::Channel>& channel() const { return channel_; }

 private:
  // A context with the call deadline and the token set.
  void PrepareContext(grpc::ClientContext& context) const;
  // The StartTimers call behind both forms; `response` has one result per request when OK.
  absl::Status CallStartTimers(const std::vector<v1::StartTimerRequest>& requests, bool return_timers,
                               v1::StartTimersResponse* response);
  // Direct routing: StartTimers split by owner, the parts sent at once, their results merged in order.
  absl::Status CallStartTimersRouted(const std::vector<v1::StartTimerRequest>& requests, bool return_timers,
                                     v1::StartTimersResponse* response);
  // Runs `call(stub, context)` on the owner of (ns, id) when routing directly, else on the target; a direct
  // call answering UNAVAILABLE is retried once on the target after the map is read again.
  grpc::Status Routed(const std::string& ns, const std::string& id,
                      const std::function<grpc::Status(v1::TimerService::Stub&, grpc::ClientContext&)>& call);

  const ClientOptions options_;
  const std::shared_ptr<grpc::Channel> channel_;
  const std::unique_ptr<v1::TimerService::Stub> stub_;
  std::unique_ptr<DirectRouter> router_;  // Set by Create with route_directly against a cluster.
};

}  // namespace lawn
