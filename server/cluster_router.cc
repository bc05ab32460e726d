// ClusterRouter (server/cluster_router.h): placement and one-hop forwarding of unary calls.
#include "server/cluster_router.h"

#include <chrono>
#include <utility>

#include "absl/synchronization/mutex.h"
#include "grpcpp/generic/generic_stub.h"
#include "server/subscription_relay.h"

namespace lawn {

namespace {

// A forwarded call whose caller set no deadline still ends: the owner answers in milliseconds when it is up
// (a first ListTimers page of a namespace of millions, whose index the owner builds first: about a
// second).
constexpr std::chrono::seconds kMaxForwardDeadline(30);

}  // namespace

ClusterRouter::ClusterRouter(ClusterNode& node, std::shared_ptr<grpc::ChannelCredentials> credentials,
                             std::string server_name)
    : node_(node), credentials_(std::move(credentials)), server_name_(std::move(server_name)) {
  maintainer_ = std::thread([this] { MaintainLoop(); });
}

ClusterRouter::~ClusterRouter() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  maintainer_.join();
}

void ClusterRouter::Register(const std::shared_ptr<SubscriptionRelay>& relay) {
  absl::MutexLock lock(&mu_);
  relays_.push_back(relay);
}

void ClusterRouter::MaintainLoop() {
  for (;;) {
    std::vector<std::shared_ptr<SubscriptionRelay>> live;
    {
      absl::MutexLock lock(&mu_);
      // Wakes at once when stopping; otherwise every second.
      mu_.AwaitWithTimeout(absl::Condition(&stopping_), absl::Seconds(1));
      if (stopping_) return;
      std::erase_if(relays_, [](const std::weak_ptr<SubscriptionRelay>& r) { return r.expired(); });
      for (const auto& r : relays_) {
        if (auto relay = r.lock()) live.push_back(std::move(relay));
      }
    }
    for (const auto& relay : live) relay->Maintain();
  }
}

absl::Status ClusterRouter::WrongOwner(const Placement& placement) const {
  return absl::UnavailableError("wrong owner: member " + node_.options().member + " does not serve partition " +
                                std::to_string(placement.partition) + " (its map names '" + placement.owner +
                                "'); read the cluster map again and retry");
}

bool ClusterRouter::IsForwarded(const grpc::ServerContextBase& context) {
  const auto& metadata = const_cast<grpc::ServerContextBase&>(context).client_metadata();
  return metadata.find(kForwardedBy) != metadata.end();
}

std::vector<std::pair<std::string, std::string>> ClusterRouter::CallerMetadata(
    const grpc::ServerContextBase& context) {
  std::vector<std::pair<std::string, std::string>> out;
  const auto& metadata = const_cast<grpc::ServerContextBase&>(context).client_metadata();
  for (auto it = metadata.lower_bound("authorization"); it != metadata.end() && it->first == "authorization"; ++it) {
    out.emplace_back("authorization", std::string(it->second.data(), it->second.size()));
  }
  return out;
}

std::shared_ptr<grpc::Channel> ClusterRouter::ChannelTo(const std::string& address) {
  absl::MutexLock lock(&mu_);
  auto it = channels_.find(address);
  if (it != channels_.end()) return it->second;
  grpc::ChannelArguments args;
  // The owner enforces its own limits; its answer passes through whatever its size.
  args.SetMaxReceiveMessageSize(-1);
  args.SetMaxSendMessageSize(-1);
  // Let a member that restarts at the same address be reached again quickly.
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 1000);
  // A member that vanished without closing its connections (host lost, network split) is noticed within
  // about 40 s, and the relayed Subscribe streams to it end and are replaced. 30 s stays above the members'
  // own grpc_keepalive_min_time default (10 s).
  args.SetInt(GRPC_ARG_KEEPALIVE_TIME_MS, 30'000);
  args.SetInt(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, 10'000);
  args.SetInt(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
  if (!server_name_.empty()) args.SetSslTargetNameOverride(server_name_);
  auto channel = grpc::CreateCustomChannel(address, credentials_, args);
  channels_.emplace(address, channel);
  return channel;
}

void ClusterRouter::Forward(const std::string& address, const std::string& method,
                            const grpc::CallbackServerContext& from, const grpc::ByteBuffer& request, Done done) {
  struct State {
    std::unique_ptr<grpc::ClientContext> context;
    grpc::ByteBuffer request;
    grpc::ByteBuffer response;
    std::unique_ptr<grpc::GenericStub> stub;
  };
  auto state = std::make_shared<State>();
  // The hop inherits the caller's deadline and cancellation: a call the caller (or lawnd's drain) cancels
  // cancels its forward too, so nothing waits on a hop nobody wants.
  state->context = grpc::ClientContext::FromCallbackServerContext(from);
  state->request = request;  // Shares the slices: no copy of the bytes.
  for (const auto& [key, value] : CallerMetadata(from)) state->context->AddMetadata(key, value);
  state->context->AddMetadata(kForwardedBy, node_.options().member);
  state->context->set_deadline(std::chrono::system_clock::now() + kMaxForwardDeadline);  // The earlier wins.
  state->stub = std::make_unique<grpc::GenericStub>(ChannelTo(address));
  State* raw = state.get();
  raw->stub->UnaryCall(raw->context.get(), method, grpc::StubOptions(), &raw->request, &raw->response,
                       [state = std::move(state), done = std::move(done), address](grpc::Status status) {
                         if (!status.ok() && status.error_message().rfind("wrong owner", 0) != 0) {
                           // Name the hop: the caller could not tell a member's answer from the owner's.
                           status = grpc::Status(status.error_code(), "forwarded to the owner at " + address +
                                                                          ": " + status.error_message());
                         }
                         done(status, state->response);
                       });
}

absl::Status ClusterRouter::FanOut(const std::string& method, const grpc::CallbackServerContext& from,
                                   const grpc::ByteBuffer& request, std::function<void(Answers answers)> merge) {
  const std::shared_ptr<const ClusterMap> map = node_.map();
  for (const std::string& owner : map->owners) {
    if (owner.empty()) return absl::UnavailableError("the cluster is forming: some partitions have no owner yet; retry shortly");
    if (!map->live.contains(owner)) {
      return absl::UnavailableError("member " + owner +
                                    " owns partitions but is not live, so the answer would be incomplete; retry when it is back");
    }
  }
  struct Gather {
    absl::Mutex mu;
    Answers answers ABSL_GUARDED_BY(mu);
    size_t remaining ABSL_GUARDED_BY(mu) = 0;
    std::function<void(Answers)> merge;
  };
  auto gather = std::make_shared<Gather>();
  gather->merge = std::move(merge);
  {
    absl::MutexLock lock(&gather->mu);
    gather->answers.resize(map->live.size());
    gather->remaining = map->live.size();
  }
  size_t i = 0;
  for (const auto& [name, address] : map->live) {
    Forward(address, method, from, request, [gather, i](const grpc::Status& status, const grpc::ByteBuffer& answer) {
      Answers done;
      {
        absl::MutexLock lock(&gather->mu);
        gather->answers[i] = {status, answer};
        if (--gather->remaining > 0) return;
        done = std::move(gather->answers);
      }
      gather->merge(std::move(done));
    });
    ++i;
  }
  return absl::OkStatus();
}

}  // namespace lawn
