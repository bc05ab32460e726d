#include "client/lawn_client.h"

#include <cstdio>
#include <cstdlib>
#include <latch>
#include <map>
#include <utility>

#include "client/grpc_status.h"
#include "client/proto_time.h"
#include "grpc/health/v1/health.grpc.pb.h"

namespace lawn {
namespace {

// The timer of a response that carries one, or the call's error.
template <typename Response>
absl::StatusOr<v1::Timer> TimerOrError(const grpc::Status& status, Response& response) {
  if (!status.ok()) return FromGrpcStatus(status);
  return std::move(*response.mutable_timer());
}

}  // namespace

absl::Status ValidateClientOptions(const ClientOptions& options) {
  if (absl::Status s = ValidateToken(options.token); !s.ok()) return s;
  if (options.tls.has_value()) return ValidateClientTls(*options.tls);
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<LawnClient>> LawnClient::Create(const std::string& target,
                                                               const ClientOptions& options) {
  if (absl::Status s = ValidateClientOptions(options); !s.ok()) return s;
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(options.max_message_bytes);
  args.SetMaxSendMessageSize(options.max_message_bytes);
  // GRPC_SSL_TARGET_NAME_OVERRIDE_ARG: the name checked against lawnd's certificate (and sent as SNI).
  if (options.tls.has_value() && !options.tls->server_name.empty()) {
    args.SetSslTargetNameOverride(options.tls->server_name);
  }
  auto client = std::make_unique<LawnClient>(
      grpc::CreateCustomChannel(target, ChannelCredentialsFor(options.tls), args), options);
  if (options.route_directly) {
    const LawnClient* self = client.get();
    absl::StatusOr<std::unique_ptr<DirectRouter>> router = DirectRouter::Load(
        client->channel_, [self](grpc::ClientContext& context) { self->PrepareContext(context); },
        [options, args](const std::string& address) {
          return grpc::CreateCustomChannel(address, ChannelCredentialsFor(options.tls), args);
        });
    if (!router.ok()) return router.status();
    client->router_ = std::move(*router);
  }
  return client;
}

std::unique_ptr<LawnClient> LawnClient::Connect(const std::string& target, const ClientOptions& options) {
  absl::StatusOr<std::unique_ptr<LawnClient>> client = Create(target, options);
  if (!client.ok()) {
    std::fprintf(stderr, "LawnClient::Connect: %s\n", client.status().ToString().c_str());
    std::abort();  // A broken REQUIRES: the caller passed options it had not validated.
  }
  return *std::move(client);
}

LawnClient::LawnClient(std::shared_ptr<grpc::Channel> channel, const ClientOptions& options)
    : options_(options), channel_(std::move(channel)), stub_(v1::TimerService::NewStub(channel_)) {}

void LawnClient::PrepareContext(grpc::ClientContext& context) const {
  if (options_.timeout > std::chrono::nanoseconds::zero()) {
    context.set_deadline(std::chrono::system_clock::now() + options_.timeout);
  }
  AddBearerToken(options_.token, context);
}

grpc::Status LawnClient::Routed(const std::string& ns, const std::string& id,
                                const std::function<grpc::Status(v1::TimerService::Stub&, grpc::ClientContext&)>& call) {
  v1::TimerService::Stub* direct = router_ != nullptr ? router_->StubFor(ns, id) : nullptr;
  grpc::ClientContext context;
  PrepareContext(context);
  if (direct == nullptr) return call(*stub_, context);
  const grpc::Status status = call(*direct, context);
  if (status.error_code() != grpc::StatusCode::UNAVAILABLE) return status;
  // The map moved on, or the owner is unreachable from here: the target's member forwards (or says why not).
  router_->Refresh();
  grpc::ClientContext retry;
  PrepareContext(retry);
  return call(*stub_, retry);
}

absl::StatusOr<v1::Timer> LawnClient::StartTimer(const v1::StartTimerRequest& request) {
  v1::StartTimerResponse response;
  const grpc::Status status =
      Routed(request.namespace_(), request.id(), [&](v1::TimerService::Stub& stub, grpc::ClientContext& context) {
        response.Clear();
        return stub.StartTimer(&context, request, &response);
      });
  return TimerOrError(status, response);
}

absl::StatusOr<v1::Timer> LawnClient::StartTimer(std::string ns, std::string id, std::chrono::nanoseconds ttl,
                                                 std::string payload,
                                                 std::optional<std::chrono::nanoseconds> interval,
                                                 bool replace) {
  v1::StartTimerRequest request;
  request.set_namespace_(std::move(ns));
  request.set_id(std::move(id));
  *request.mutable_ttl() = ToProtoDuration(ttl);
  request.set_payload(std::move(payload));
  if (interval.has_value()) *request.mutable_interval() = ToProtoDuration(*interval);
  request.set_replace(replace);
  return StartTimer(request);
}

absl::Status LawnClient::CallStartTimers(const std::vector<v1::StartTimerRequest>& requests, bool return_timers,
                                         v1::StartTimersResponse* response) {
  if (router_ != nullptr) return CallStartTimersRouted(requests, return_timers, response);
  v1::StartTimersRequest request;
  request.mutable_timers()->Reserve(static_cast<int>(requests.size()));
  for (const v1::StartTimerRequest& r : requests) *request.add_timers() = r;
  request.set_return_timers(return_timers);
  grpc::ClientContext context;
  PrepareContext(context);
  if (grpc::Status s = stub_->StartTimers(&context, request, response); !s.ok()) return FromGrpcStatus(s);
  if (static_cast<size_t>(response->results_size()) != requests.size()) {
    return absl::InternalError("StartTimers: lawnd answered " + std::to_string(response->results_size()) +
                               " results for " + std::to_string(requests.size()) + " timers");
  }
  return absl::OkStatus();
}

absl::Status LawnClient::CallStartTimersRouted(const std::vector<v1::StartTimerRequest>& requests,
                                               bool return_timers, v1::StartTimersResponse* response) {
  struct Part {
    v1::TimerService::Stub* stub = nullptr;  // nullptr: the target.
    std::vector<size_t> items;
    v1::StartTimersRequest request;
    v1::StartTimersResponse response;
    grpc::ClientContext context;
    grpc::Status status;
  };
  std::map<v1::TimerService::Stub*, std::unique_ptr<Part>> parts;
  for (size_t i = 0; i < requests.size(); ++i) {
    v1::TimerService::Stub* stub = router_->StubFor(requests[i].namespace_(), requests[i].id());
    std::unique_ptr<Part>& part = parts[stub];
    if (part == nullptr) {
      part = std::make_unique<Part>();
      part->stub = stub;
      part->request.set_return_timers(return_timers);
    }
    part->items.push_back(i);
    *part->request.add_timers() = requests[i];
  }
  // All parts at once, each to its owner.
  std::latch done(static_cast<std::ptrdiff_t>(parts.size()));
  for (auto& [stub, part] : parts) {
    PrepareContext(part->context);
    Part* p = part.get();
    (stub != nullptr ? stub : stub_.get())
        ->async()
        ->StartTimers(&p->context, &p->request, &p->response, [p, &done](grpc::Status status) {
          p->status = std::move(status);
          done.count_down();
        });
  }
  done.wait();
  response->Clear();
  response->mutable_results()->Reserve(static_cast<int>(requests.size()));
  for (size_t i = 0; i < requests.size(); ++i) response->add_results();
  bool refreshed = false;
  for (auto& [stub, part] : parts) {
    if (part->status.error_code() == grpc::StatusCode::UNAVAILABLE && stub != nullptr) {
      // As for one call: read the map again and send the part through the target, which forwards it.
      if (!refreshed) router_->Refresh();
      refreshed = true;
      grpc::ClientContext retry;
      PrepareContext(retry);
      part->response.Clear();
      part->status = stub_->StartTimers(&retry, part->request, &part->response);
    }
    if (!part->status.ok()) return FromGrpcStatus(part->status);
    if (static_cast<size_t>(part->response.results_size()) != part->items.size()) {
      return absl::InternalError("StartTimers: lawnd answered " + std::to_string(part->response.results_size()) +
                                 " results for " + std::to_string(part->items.size()) + " timers");
    }
    for (size_t j = 0; j < part->items.size(); ++j) {
      response->mutable_results(static_cast<int>(part->items[j]))->Swap(part->response.mutable_results(static_cast<int>(j)));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<absl::Status>> LawnClient::StartTimers(const std::vector<v1::StartTimerRequest>& requests) {
  v1::StartTimersResponse response;
  if (absl::Status s = CallStartTimers(requests, /*return_timers=*/false, &response); !s.ok()) return s;
  std::vector<absl::Status> results;
  results.reserve(requests.size());
  for (v1::StartTimerResult& result : *response.mutable_results()) {
    results.push_back(result.code() == 0 ? absl::OkStatus()
                                         : FromGrpcStatus(grpc::Status(static_cast<grpc::StatusCode>(result.code()),
                                                                       std::move(*result.mutable_message()))));
  }
  return results;
}

absl::StatusOr<std::vector<absl::StatusOr<v1::Timer>>> LawnClient::StartTimersReturningTimers(
    const std::vector<v1::StartTimerRequest>& requests) {
  v1::StartTimersResponse response;
  if (absl::Status s = CallStartTimers(requests, /*return_timers=*/true, &response); !s.ok()) return s;
  std::vector<absl::StatusOr<v1::Timer>> results;
  results.reserve(requests.size());
  for (v1::StartTimerResult& result : *response.mutable_results()) {
    if (result.code() == 0) {
      results.emplace_back(std::move(*result.mutable_timer()));
    } else {
      results.emplace_back(FromGrpcStatus(
          grpc::Status(static_cast<grpc::StatusCode>(result.code()), std::move(*result.mutable_message()))));
    }
  }
  return results;
}

absl::StatusOr<v1::Timer> LawnClient::DeleteTimer(const std::string& ns, const std::string& id) {
  v1::DeleteTimerRequest request;
  request.set_namespace_(ns);
  request.set_id(id);
  v1::DeleteTimerResponse response;
  const grpc::Status status = Routed(ns, id, [&](v1::TimerService::Stub& stub, grpc::ClientContext& context) {
    response.Clear();
    return stub.DeleteTimer(&context, request, &response);
  });
  return TimerOrError(status, response);
}

absl::StatusOr<v1::Timer> LawnClient::RescheduleTimer(const std::string& ns, const std::string& id,
                                                      std::chrono::nanoseconds ttl) {
  v1::RescheduleTimerRequest request;
  request.set_namespace_(ns);
  request.set_id(id);
  *request.mutable_ttl() = ToProtoDuration(ttl);
  v1::RescheduleTimerResponse response;
  const grpc::Status status = Routed(ns, id, [&](v1::TimerService::Stub& stub, grpc::ClientContext& context) {
    response.Clear();
    return stub.RescheduleTimer(&context, request, &response);
  });
  return TimerOrError(status, response);
}

absl::StatusOr<v1::Timer> LawnClient::RescheduleTimer(const std::string& ns, const std::string& id,
                                                      std::chrono::system_clock::time_point deadline) {
  v1::RescheduleTimerRequest request;
  request.set_namespace_(ns);
  request.set_id(id);
  *request.mutable_deadline() = ToProtoTimestamp(deadline);
  v1::RescheduleTimerResponse response;
  const grpc::Status status = Routed(ns, id, [&](v1::TimerService::Stub& stub, grpc::ClientContext& context) {
    response.Clear();
    return stub.RescheduleTimer(&context, request, &response);
  });
  return TimerOrError(status, response);
}

absl::StatusOr<v1::Timer> LawnClient::GetTimer(const std::string& ns, const std::string& id) {
  v1::GetTimerRequest request;
  request.set_namespace_(ns);
  request.set_id(id);
  v1::GetTimerResponse response;
  const grpc::Status status = Routed(ns, id, [&](v1::TimerService::Stub& stub, grpc::ClientContext& context) {
    response.Clear();
    return stub.GetTimer(&context, request, &response);
  });
  return TimerOrError(status, response);
}

absl::StatusOr<v1::ListTimersResponse> LawnClient::ListTimers(const std::string& ns, int32_t page_size,
                                                              const std::string& page_token) {
  v1::ListTimersRequest request;
  request.set_namespace_(ns);
  request.set_page_size(page_size);
  request.set_page_token(page_token);
  grpc::ClientContext context;
  PrepareContext(context);
  v1::ListTimersResponse response;
  if (grpc::Status s = stub_->ListTimers(&context, request, &response); !s.ok()) return FromGrpcStatus(s);
  return response;
}

absl::StatusOr<v1::GetStatsResponse> LawnClient::GetStats() {
  grpc::ClientContext context;
  PrepareContext(context);
  v1::GetStatsResponse response;
  if (grpc::Status s = stub_->GetStats(&context, v1::GetStatsRequest(), &response); !s.ok()) {
    return FromGrpcStatus(s);
  }
  return response;
}

absl::StatusOr<v1::GetClusterMapResponse> LawnClient::GetClusterMap() {
  grpc::ClientContext context;
  PrepareContext(context);
  v1::GetClusterMapResponse response;
  if (grpc::Status s = v1::ClusterService::NewStub(channel_)->GetClusterMap(&context, v1::GetClusterMapRequest(),
                                                                            &response);
      !s.ok()) {
    return FromGrpcStatus(s);
  }
  return response;
}

absl::StatusOr<uint32_t> LawnClient::DrainMember(const std::string& member, bool cancel) {
  grpc::ClientContext context;
  PrepareContext(context);
  v1::DrainMemberRequest request;
  request.set_member(member);
  request.set_cancel(cancel);
  v1::DrainMemberResponse response;
  if (grpc::Status s = v1::ClusterService::NewStub(channel_)->DrainMember(&context, request, &response); !s.ok()) {
    return FromGrpcStatus(s);
  }
  return response.partitions_owned();
}

absl::StatusOr<std::string> LawnClient::CreateCheckpoint(const std::string& name) {
  grpc::ClientContext context;
  PrepareContext(context);
  v1::CreateCheckpointRequest request;
  request.set_name(name);
  v1::CreateCheckpointResponse response;
  if (grpc::Status s = v1::AdminService::NewStub(channel_)->CreateCheckpoint(&context, request, &response);
      !s.ok()) {
    return FromGrpcStatus(s);
  }
  return response.path();
}

absl::StatusOr<std::chrono::nanoseconds> LawnClient::SetTick(std::chrono::nanoseconds tick) {
  grpc::ClientContext context;
  PrepareContext(context);
  v1::SetTickRequest request;
  *request.mutable_tick() = ToProtoDuration(tick);
  v1::SetTickResponse response;
  if (grpc::Status s = v1::AdminService::NewStub(channel_)->SetTick(&context, request, &response); !s.ok()) {
    return FromGrpcStatus(s);
  }
  return FromProtoDuration(response.previous());
}

absl::StatusOr<ServingStatus> LawnClient::Health(const std::string& service) {
  grpc::health::v1::HealthCheckRequest request;
  request.set_service(service);
  grpc::ClientContext context;
  PrepareContext(context);
  grpc::health::v1::HealthCheckResponse response;
  if (grpc::Status s = grpc::health::v1::Health::NewStub(channel_)->Check(&context, request, &response);
      !s.ok()) {
    return FromGrpcStatus(s);
  }
  return response.status();
}

std::unique_ptr<Subscription> LawnClient::Subscribe(
    const std::string& ns, SubscribeOptions options,
    std::function<void(const v1::Expiration&)> on_expiration) {
  return std::make_unique<Subscription>(channel_, ns, options, std::move(on_expiration), options_.token);
}

}  // namespace lawn
