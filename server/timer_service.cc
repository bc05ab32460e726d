#include "server/timer_service.h"

#include <chrono>
#include <memory>
#include <thread>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "google/protobuf/empty.pb.h"
#include "server/proto_convert.h"
#include "server/start_request.h"
#include "server/timer_commands.h"
#include "server/validation.h"
#include "spdlog/spdlog.h"

namespace lawn {

namespace {

constexpr int32_t kDefaultPageSize = 100;
constexpr int32_t kMaxPageSize = 1000;
constexpr int kMaxBatch = 10000;

}  // namespace

namespace {

// Namespace + id of a by-key request, as a key.
absl::StatusOr<std::string> ParseKey(const std::string& ns_field, const std::string& id) {
  absl::StatusOr<std::string_view> ns = ValidateNamespace(ns_field);
  if (!ns.ok()) return ns.status();
  if (absl::Status s = ValidateId(id); !s.ok()) return s;
  return Runtime::Key(*ns, id);
}

}  // namespace

RequestTimer TimerServiceImpl::Track(Rpc rpc) { return RequestTimer::Start(runtime_.metrics(), rpc, &in_flight_); }

void TimerServiceImpl::BeginDrain() { draining_.store(true, std::memory_order_release); }

bool TimerServiceImpl::WaitIdle(std::chrono::steady_clock::time_point deadline) {
  while (in_flight_.load(std::memory_order_acquire) > 0 || live_calls_.load(std::memory_order_acquire) > 0) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

absl::Status TimerServiceImpl::Admit(bool write) const {
  if (draining_.load(std::memory_order_acquire)) {
    return absl::UnavailableError("lawnd is shutting down; retry on another instance or after restart");
  }
  if (!runtime_.ready()) return absl::UnavailableError("lawnd is recovering its timers; retry shortly");
  if (write && runtime_.write_failed()) return runtime_.write_status();
  return absl::OkStatus();
}

absl::Status TimerServiceImpl::CheckQueue(uint32_t shard) const {
  if (!runtime_.Overloaded(shard)) return absl::OkStatus();
  if (Metrics* m = runtime_.metrics()) m->overload_refusals().Increment();
  return absl::UnavailableError("lawnd is overloaded: shard " + std::to_string(shard) + " has max_queued_commands (" +
                                std::to_string(runtime_.options().max_queued_commands) +
                                ") queued; retry with backoff");
}

grpc::ServerUnaryReactor* TimerServiceImpl::Reject(grpc::CallbackServerContext* context, UnaryCall* call,
                                                   const char* method, const grpc::Status& status) {
  spdlog::debug("{} from {}: {}", method, context->peer(), status.error_message());
  call->Reply(status);
  return call;
}

grpc::ServerUnaryReactor* TimerServiceImpl::Reject(grpc::CallbackServerContext* context, UnaryCall* call,
                                                   const char* method, const absl::Status& status) {
  spdlog::debug("{} from {}: {}", method, context->peer(), status.ToString());
  call->Reply(ToGrpcStatus(status));
  return call;
}

grpc::ServerUnaryReactor* TimerServiceImpl::StartTimer(grpc::CallbackServerContext* context,
                                                       const grpc::ByteBuffer* raw_request,
                                                       grpc::ByteBuffer* raw_response) {
  // Read from its bytes as StartTimers' items are (server/start_wire.h); `request` stays empty.
  auto* call = new RawUnary<google::protobuf::Empty, v1::StartTimerResponse>(raw_response, &live_calls_);
  absl::StatusOr<Caller> caller = Authenticate(context, "StartTimer");
  if (!caller.ok()) return Reject(context, call, "StartTimer", caller.status());
  static constexpr std::string_view kType = "lawn.v1.StartTimerRequest";
  std::string_view bytes;
  if (grpc::Status s = RequestBytes(raw_request, "StartTimer", kType, call->arena(), &bytes); !s.ok()) {
    return Reject(context, call, "StartTimer", s);
  }
  StartItem item;
  if (!ReadStartTimer(bytes, &item)) {
    return Reject(context, call, "StartTimer", NotAValidRequest("StartTimer", kType));
  }
  if (absl::Status s = Admit(true); !s.ok()) return Reject(context, call, "StartTimer", s);
  if (absl::Status s = auth_.Authorize(*caller, kPermStart, item.ns, "StartTimer"); !s.ok()) {
    return Reject(context, call, "StartTimer", s);
  }
  auto batch = std::make_shared<StartBatch>();
  batch->ops.resize(1);
  if (absl::Status s = ParseStart(item, runtime_.options(), -1, call->arena(), &batch->ops[0]); !s.ok()) {
    return Reject(context, call, "StartTimer", s);
  }
  if (RouteElsewhere(context, call, "StartTimer", raw_request, batch->ops[0].key)) return call;
  if (absl::Status s = limiter_.TryTake(item.ns, std::chrono::steady_clock::now()); !s.ok()) {
    return Reject(context, call, "StartTimer", s);
  }
  batch->ops[0].out = call->response.mutable_timer();
  batch->call = call;
  batch->remaining.store(1, std::memory_order_relaxed);
  const uint32_t shard = runtime_.ShardFor(batch->ops[0].key);
  if (absl::Status s = CheckQueue(shard); !s.ok()) return Reject(context, call, "StartTimer", s);
  // Tracked only once a worker will answer it (StartBatch::Finish observes): a call refused above must not
  // stay counted in flight, or a later drain waits for it until shutdown_timeout.
  batch->timer = Track(Rpc::kStartTimer);
  runtime_.Submit(shard, std::make_unique<StartCommand>(std::move(batch), std::vector<uint32_t>{0}));
  return call;  // Possibly answered (not yet deleted: gRPC binds it first) by the worker already.
}

grpc::ServerUnaryReactor* TimerServiceImpl::StartTimers(grpc::CallbackServerContext* context,
                                                        const grpc::ByteBuffer* raw_request,
                                                        grpc::ByteBuffer* raw_response) {
  // The request is read from its bytes (server/start_wire.h: no heap block per id); `request` stays empty.
  auto* call = new RawUnary<google::protobuf::Empty, v1::StartTimersResponse>(raw_response, &live_calls_);
  absl::StatusOr<Caller> caller = Authenticate(context, "StartTimers");
  if (!caller.ok()) return Reject(context, call, "StartTimers", caller.status());
  static constexpr std::string_view kType = "lawn.v1.StartTimersRequest";
  std::string_view bytes;
  if (grpc::Status s = RequestBytes(raw_request, "StartTimers", kType, call->arena(), &bytes); !s.ok()) {
    return Reject(context, call, "StartTimers", s);
  }
  auto batch = std::make_shared<StartBatch>();
  size_t count = 0;
  if (!ReadStartTimers(bytes, kMaxBatch, &batch->items, &count, &batch->return_timers)) {
    return Reject(context, call, "StartTimers", NotAValidRequest("StartTimers", kType));
  }
  if (absl::Status s = Admit(true); !s.ok()) return Reject(context, call, "StartTimers", s);
  if (count > static_cast<size_t>(kMaxBatch)) {
    return Reject(context, call, "StartTimers",
                  absl::InvalidArgumentError("timers: " + std::to_string(count) + " items; allowed up to " +
                                             std::to_string(kMaxBatch) + " per StartTimers call"));
  }
  const std::vector<StartItem>& items = batch->items;
  v1::StartTimersResponse& response = call->response;
  const int n = static_cast<int>(items.size());
  batch->ops.resize(static_cast<size_t>(n));
  batch->call = call;
  batch->batch_response = &response;
  batch->timer = Track(Rpc::kStartTimers);
  std::vector<std::vector<uint32_t>> per_shard(runtime_.shard_count());
  // Results exist before any worker runs: workers fill disjoint elements, never resize the list.
  response.mutable_results()->Reserve(n);
  for (int i = 0; i < n; ++i) response.add_results();
  const auto now = std::chrono::steady_clock::now();
  // Cluster mode: the items other members own, by owner address, in request order.
  const bool cluster = cluster_mode_.load(std::memory_order_acquire);
  ClusterRouter* router = cluster ? router_.load(std::memory_order_acquire) : nullptr;
  const bool forwarded = cluster && ClusterRouter::IsForwarded(*context);
  absl::flat_hash_map<std::string, std::vector<uint32_t>> remote;
  for (int i = 0; i < n; ++i) {
    StartOp& op = batch->ops[static_cast<size_t>(i)];
    const std::string_view ns = items[static_cast<size_t>(i)].ns;
    op.status = auth_.Authorize(*caller, kPermStart, ns, "StartTimers");
    if (op.status.ok()) {
      op.status = ParseStart(items[static_cast<size_t>(i)], runtime_.options(), i, call->arena(), &op);
    }
    if (op.status.ok() && cluster) {
      if (router == nullptr) {
        op.status = absl::UnavailableError("lawnd is joining its cluster; retry shortly");
        continue;
      }
      const auto [item_ns, item_id] = Runtime::SplitKey(op.key);
      const Placement placement = router->Place(item_ns, item_id);
      if (placement.kind == Placement::Kind::kRefuse) {
        op.status = placement.status;
      } else if (placement.kind == Placement::Kind::kForward) {
        if (forwarded) {
          op.status = router->WrongOwner(placement);
        } else {
          remote[placement.address].push_back(static_cast<uint32_t>(i));
        }
        continue;
      }
    }
    if (op.status.ok()) op.status = limiter_.TryTake(ns, now);
    if (!op.status.ok()) continue;
    // Codes only unless asked: no Timer is built (or sent) per item by default.
    if (batch->return_timers) op.out = response.mutable_results(i)->mutable_timer();
    per_shard[runtime_.ShardFor(op.key)].push_back(static_cast<uint32_t>(i));
  }
  size_t commands = 0;
  for (uint32_t shard = 0; shard < per_shard.size(); ++shard) {
    if (per_shard[shard].empty()) continue;
    if (absl::Status s = CheckQueue(shard); !s.ok()) {
      batch->timer.Observe();  // Answered here: no worker finishes it.
      call->Reply(ToGrpcStatus(s));
      return call;
    }
    ++commands;
  }
  if (commands + remote.size() == 0) {
    batch->Finish();
    return call;
  }
  batch->remaining.store(commands + remote.size(), std::memory_order_relaxed);
  for (uint32_t shard = 0; shard < per_shard.size(); ++shard) {
    if (per_shard[shard].empty()) continue;
    runtime_.Submit(shard, std::make_unique<StartCommand>(batch, std::move(per_shard[shard])));
  }
  if (Metrics* m = runtime_.metrics(); m != nullptr && !remote.empty()) {
    m->forwarded_calls().Increment(static_cast<double>(remote.size()));
  }
  for (auto& [address, items] : remote) ForwardStarts(context, router, address, std::move(items), batch);
  return call;
}

grpc::ServerUnaryReactor* TimerServiceImpl::DeleteTimer(grpc::CallbackServerContext* context,
                                                        const grpc::ByteBuffer* raw_request,
                                                        grpc::ByteBuffer* raw_response) {
  auto* call = new RawUnary<v1::DeleteTimerRequest, v1::DeleteTimerResponse>(raw_response, &live_calls_);
  absl::StatusOr<Caller> caller = Authenticate(context, "DeleteTimer");
  if (!caller.ok()) return Reject(context, call, "DeleteTimer", caller.status());
  if (grpc::Status s = ParseRequest(raw_request, "DeleteTimer", &call->request); !s.ok()) {
    return Reject(context, call, "DeleteTimer", s);
  }
  if (absl::Status s = Admit(true); !s.ok()) return Reject(context, call, "DeleteTimer", s);
  if (absl::Status s = auth_.Authorize(*caller, kPermDelete, call->request.namespace_(), "DeleteTimer"); !s.ok()) {
    return Reject(context, call, "DeleteTimer", s);
  }
  absl::StatusOr<std::string> key = ParseKey(call->request.namespace_(), call->request.id());
  if (!key.ok()) return Reject(context, call, "DeleteTimer", key.status());
  if (RouteElsewhere(context, call, "DeleteTimer", raw_request, *key)) return call;
  const uint32_t shard = runtime_.ShardFor(*key);
  if (absl::Status s = CheckQueue(shard); !s.ok()) return Reject(context, call, "DeleteTimer", s);
  runtime_.Submit(shard, std::make_unique<KeyCommand>(KeyCommand::Kind::kDelete, std::move(*key), call,
                                                      call->response.mutable_timer(),
                                                      Track(Rpc::kDeleteTimer)));
  return call;
}

grpc::ServerUnaryReactor* TimerServiceImpl::RescheduleTimer(grpc::CallbackServerContext* context,
                                                            const grpc::ByteBuffer* raw_request,
                                                            grpc::ByteBuffer* raw_response) {
  auto* call = new RawUnary<v1::RescheduleTimerRequest, v1::RescheduleTimerResponse>(raw_response, &live_calls_);
  absl::StatusOr<Caller> caller = Authenticate(context, "RescheduleTimer");
  if (!caller.ok()) return Reject(context, call, "RescheduleTimer", caller.status());
  if (grpc::Status s = ParseRequest(raw_request, "RescheduleTimer", &call->request); !s.ok()) {
    return Reject(context, call, "RescheduleTimer", s);
  }
  if (absl::Status s = Admit(true); !s.ok()) return Reject(context, call, "RescheduleTimer", s);
  if (absl::Status s = auth_.Authorize(*caller, kPermDelete, call->request.namespace_(), "RescheduleTimer");
      !s.ok()) {
    return Reject(context, call, "RescheduleTimer", s);
  }
  const v1::RescheduleTimerRequest& request = call->request;
  absl::StatusOr<std::string> key = ParseKey(request.namespace_(), request.id());
  if (!key.ok()) return Reject(context, call, "RescheduleTimer", key.status());
  if (RouteElsewhere(context, call, "RescheduleTimer", raw_request, *key)) return call;
  bool by_ttl = true;
  uint64_t ttl = 0;
  int64_t deadline = 0;
  switch (request.when_case()) {
    case v1::RescheduleTimerRequest::kTtl: {
      absl::StatusOr<uint64_t> v = ValidateDuration("ttl", request.ttl(), 1);
      if (!v.ok()) return Reject(context, call, "RescheduleTimer", v.status());
      ttl = *v;
      break;
    }
    case v1::RescheduleTimerRequest::kDeadline: {
      absl::StatusOr<int64_t> v = ValidateDeadline("deadline", request.deadline());
      if (!v.ok()) return Reject(context, call, "RescheduleTimer", v.status());
      by_ttl = false;
      deadline = *v;
      break;
    }
    default:
      return Reject(context, call, "RescheduleTimer",
                    absl::InvalidArgumentError("when: exactly one of ttl or deadline is required"));
  }
  const uint32_t shard = runtime_.ShardFor(*key);
  if (absl::Status s = CheckQueue(shard); !s.ok()) return Reject(context, call, "RescheduleTimer", s);
  auto command = std::make_unique<KeyCommand>(KeyCommand::Kind::kReschedule, std::move(*key), call,
                                              call->response.mutable_timer(), Track(Rpc::kRescheduleTimer));
  command->SetWhen(by_ttl, ttl, deadline);
  runtime_.Submit(shard, std::move(command));
  return call;
}

grpc::ServerUnaryReactor* TimerServiceImpl::GetTimer(grpc::CallbackServerContext* context,
                                                     const grpc::ByteBuffer* raw_request,
                                                     grpc::ByteBuffer* raw_response) {
  auto* call = new RawUnary<v1::GetTimerRequest, v1::GetTimerResponse>(raw_response, &live_calls_);
  absl::StatusOr<Caller> caller = Authenticate(context, "GetTimer");
  if (!caller.ok()) return Reject(context, call, "GetTimer", caller.status());
  if (grpc::Status s = ParseRequest(raw_request, "GetTimer", &call->request); !s.ok()) {
    return Reject(context, call, "GetTimer", s);
  }
  if (absl::Status s = Admit(false); !s.ok()) return Reject(context, call, "GetTimer", s);
  if (absl::Status s = auth_.Authorize(*caller, kPermRead, call->request.namespace_(), "GetTimer"); !s.ok()) {
    return Reject(context, call, "GetTimer", s);
  }
  absl::StatusOr<std::string> key = ParseKey(call->request.namespace_(), call->request.id());
  if (!key.ok()) return Reject(context, call, "GetTimer", key.status());
  if (RouteElsewhere(context, call, "GetTimer", raw_request, *key)) return call;
  const uint32_t shard = runtime_.ShardFor(*key);
  if (absl::Status s = CheckQueue(shard); !s.ok()) return Reject(context, call, "GetTimer", s);
  runtime_.Submit(shard, std::make_unique<KeyCommand>(KeyCommand::Kind::kGet, std::move(*key), call,
                                                      call->response.mutable_timer(), Track(Rpc::kGetTimer)));
  return call;
}

grpc::ServerUnaryReactor* TimerServiceImpl::ListTimers(grpc::CallbackServerContext* context,
                                                       const grpc::ByteBuffer* raw_request,
                                                       grpc::ByteBuffer* raw_response) {
  auto* call = new RawUnary<v1::ListTimersRequest, v1::ListTimersResponse>(raw_response, &live_calls_);
  absl::StatusOr<Caller> caller = Authenticate(context, "ListTimers");
  if (!caller.ok()) return Reject(context, call, "ListTimers", caller.status());
  if (grpc::Status s = ParseRequest(raw_request, "ListTimers", &call->request); !s.ok()) {
    return Reject(context, call, "ListTimers", s);
  }
  if (absl::Status s = Admit(false); !s.ok()) return Reject(context, call, "ListTimers", s);
  if (absl::Status s = auth_.Authorize(*caller, kPermRead, call->request.namespace_(), "ListTimers"); !s.ok()) {
    return Reject(context, call, "ListTimers", s);
  }
  const v1::ListTimersRequest& request = call->request;
  absl::StatusOr<std::string_view> ns = ValidateNamespace(request.namespace_());
  if (!ns.ok()) return Reject(context, call, "ListTimers", ns.status());
  if (request.page_size() < 0 || request.page_size() > kMaxPageSize) {
    return Reject(context, call, "ListTimers",
                  absl::InvalidArgumentError("page_size: " + std::to_string(request.page_size()) +
                                             "; allowed 0..1000 (0 means 100)"));
  }
  if (cluster_mode_.load(std::memory_order_acquire) && !ClusterRouter::IsForwarded(*context)) {
    // The namespace's timers are spread over the members: each lists its page from the same token, and the
    // first page_size ids of their union are this page.
    return FanOutList(context, call, raw_request,
                      request.page_size() == 0 ? kDefaultPageSize : static_cast<size_t>(request.page_size()));
  }
  for (uint32_t shard = 0; shard < runtime_.shard_count(); ++shard) {
    if (absl::Status s = CheckQueue(shard); !s.ok()) return Reject(context, call, "ListTimers", s);
  }
  auto state = std::make_shared<ListState>();
  state->ns = std::string(*ns);
  state->limit = request.page_size() == 0 ? kDefaultPageSize : static_cast<size_t>(request.page_size());
  if (!request.page_token().empty()) {
    if (!DecodePageToken(request.page_token(), &state->after)) {
      return Reject(context, call, "ListTimers",
                    absl::InvalidArgumentError(
                        "page_token: not a token returned by ListTimers (pass next_page_token as is)"));
    }
    state->has_after = true;
  }
  state->per_shard.resize(runtime_.shard_count());
  state->remaining.store(runtime_.shard_count(), std::memory_order_relaxed);
  state->call = call;
  state->response = &call->response;
  state->timer = Track(Rpc::kListTimers);
  for (uint32_t shard = 0; shard < runtime_.shard_count(); ++shard) {
    runtime_.Submit(shard, std::make_unique<ListCommand>(state, shard));
  }
  return call;
}

grpc::ServerUnaryReactor* TimerServiceImpl::GetStats(grpc::CallbackServerContext* context,
                                                     const grpc::ByteBuffer* raw_request,
                                                     grpc::ByteBuffer* raw_response) {
  auto* call = new RawUnary<v1::GetStatsRequest, v1::GetStatsResponse>(raw_response, &live_calls_);
  absl::StatusOr<Caller> caller = Authenticate(context, "GetStats");
  if (!caller.ok()) return Reject(context, call, "GetStats", caller.status());
  if (grpc::Status s = ParseRequest(raw_request, "GetStats", &call->request); !s.ok()) {
    return Reject(context, call, "GetStats", s);
  }
  if (draining_.load(std::memory_order_acquire)) {
    return Reject(context, call, "GetStats", absl::UnavailableError("lawnd is shutting down"));
  }
  if (cluster_mode_.load(std::memory_order_acquire) && !ClusterRouter::IsForwarded(*context)) {
    return FanOutStats(context, call, raw_request);
  }
  auto state = std::make_shared<StatsState>();
  state->all = caller->Allows(kPermAdmin, "");
  state->caller = *caller;
  state->per_shard.resize(runtime_.shard_count());
  state->remaining.store(runtime_.shard_count(), std::memory_order_relaxed);
  state->call = call;
  state->response = &call->response;
  state->runtime = &runtime_;
  state->timer = Track(Rpc::kGetStats);
  for (uint32_t shard = 0; shard < runtime_.shard_count(); ++shard) {
    runtime_.Submit(shard, std::make_unique<StatsCommand>(state, shard));
  }
  return call;
}

grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>* TimerServiceImpl::Subscribe(
    grpc::CallbackServerContext* context) {
  absl::StatusOr<Caller> caller = Authenticate(context, "Subscribe");
  // While recovering, the outboxes are not back yet; while draining, the stream would end at once.
  absl::Status admission = caller.ok() ? Admit(false) : caller.status();
  const bool cluster = cluster_mode_.load(std::memory_order_acquire);
  // Another member's relay: counted apart in the stats (still against max_subscribers_per_namespace).
  const bool relayed = cluster && ClusterRouter::IsForwarded(*context);
  ClusterRouter* relay = nullptr;
  std::vector<std::pair<std::string, std::string>> metadata;
  if (admission.ok() && cluster && !relayed) {
    relay = router_.load(std::memory_order_acquire);
    if (relay == nullptr) admission = absl::UnavailableError("lawnd is joining its cluster; retry shortly");
    metadata = ClusterRouter::CallerMetadata(*context);  // The caller's token goes with the relayed streams.
  }
  return new SubscribeReactor(runtime_, streams_, ToGrpcStatus(admission), caller.ok() ? *caller : Caller(), auth_,
                              relay, std::move(metadata), relayed);
}

}  // namespace lawn
