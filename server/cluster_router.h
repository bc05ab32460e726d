// ClusterRouter: how lawnd's services reach the rest of a cluster. It asks the ClusterNode where a timer's
// partition is served (here, forwarded to its owner, or refused) and forwards unary calls to the owner with
// gRPC's generic stub: the request's bytes go as they came, the owner's answer (status and bytes) comes back
// as it is, one hop only. A forwarded call carries `lawn-forwarded-by: <member>`; a member that gets one for a
// partition it does not own answers UNAVAILABLE ("wrong owner") instead of forwarding again, so a stale map
// costs a retry, never a loop. The caller's `authorization` header goes along, so the owner authorizes the
// caller as the first member did. (A caller known only by its client certificate's subject reaches the owner
// as the forwarding member's certificate: in cluster mode with mutual TLS, callers should use tokens.)
//
// Thread-safety: every method may be called from any thread; the forward's callback runs on a gRPC thread.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "cluster/cluster_node.h"
#include "grpcpp/grpcpp.h"

namespace lawn {

class SubscriptionRelay;

class ClusterRouter {
 public:
  static constexpr char kForwardedBy[] = "lawn-forwarded-by";

  // `node` is not owned and outlives the router.
  // `credentials` for the channels to other members (TLS with the cluster CA and this member's certificate,
  // or insecure); `server_name`, if not empty, is the name checked on their certificates.
  ClusterRouter(ClusterNode& node, std::shared_ptr<grpc::ChannelCredentials> credentials, std::string server_name);
  ~ClusterRouter();
  ClusterRouter(const ClusterRouter&) = delete;
  ClusterRouter& operator=(const ClusterRouter&) = delete;

  // Where calls for (namespace, id) go now; `ns` is the validated namespace ("default" for empty).
  Placement Place(std::string_view ns, std::string_view id) const {
    return node_.Place(node_.PartitionOf(ns, id));
  }
  // The answer for a forwarded call that reached a member not owning its partition.
  absl::Status WrongOwner(const Placement& placement) const;
  // Whether the call came from another member (it must not be forwarded again).
  static bool IsForwarded(const grpc::ServerContextBase& context);
  // The caller's `authorization` headers, which go along with a forwarded call or relayed stream.
  static std::vector<std::pair<std::string, std::string>> CallerMetadata(const grpc::ServerContextBase& context);

  using Done = std::function<void(const grpc::Status& status, const grpc::ByteBuffer& response)>;
  // Sends `request` to `method` ("/lawn.v1.TimerService/StartTimer") at `address`, with the caller's
  // deadline (at most kMaxForwardDeadline from now), cancellation and authorization; `done` gets the owner's answer, or
  // the transport's error (UNAVAILABLE when the owner cannot be reached), with the owner named.
  void Forward(const std::string& address, const std::string& method, const grpc::CallbackServerContext& from,
               const grpc::ByteBuffer& request, Done done);

  using Answers = std::vector<std::pair<grpc::Status, grpc::ByteBuffer>>;
  // Sends `request` to `method` on every live member, this one included (its own call arrives forwarded and
  // is served locally), and calls `merge` once with every answer. Refuses (returns UNAVAILABLE, sends
  // nothing) when a member that owns partitions is not live: a merged answer without it would be silently
  // incomplete. For ListTimers and GetStats, which read the whole cluster.
  absl::Status FanOut(const std::string& method, const grpc::CallbackServerContext& from, const grpc::ByteBuffer& request,
                      std::function<void(Answers answers)> merge);

  ClusterNode& node() { return node_; }
  // The channel to a member's address (one per address, kept).
  std::shared_ptr<grpc::Channel> Channel(const std::string& address) { return ChannelTo(address); }
  // Has `relay` maintained (SubscriptionRelay::Maintain: reconnect, reach new members) every second while
  // it lives.
  void Register(const std::shared_ptr<SubscriptionRelay>& relay);

 private:
  std::shared_ptr<grpc::Channel> ChannelTo(const std::string& address);
  void MaintainLoop();

  ClusterNode& node_;
  const std::shared_ptr<grpc::ChannelCredentials> credentials_;
  const std::string server_name_;
  absl::Mutex mu_;
  absl::flat_hash_map<std::string, std::shared_ptr<grpc::Channel>> channels_ ABSL_GUARDED_BY(mu_);
  std::vector<std::weak_ptr<SubscriptionRelay>> relays_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::thread maintainer_;
};

}  // namespace lawn
