// ClusterServiceImpl: lawn.v1.ClusterService, the cluster map as this member last read it from etcd
// (proto/lawn/v1/cluster.proto), drains, and the hand-over calls between members (PartitionMover). Any authenticated caller may read it: it names members, addresses and
// partition owners, nothing about timers. A lawnd that runs alone answers FAILED_PRECONDITION; a member that
// has not joined yet, UNAVAILABLE.
//
// Thread-safety: handlers run concurrently on gRPC threads; the node is set once, before or while serving.
#pragma once

#include <atomic>

#include "cluster/cluster_node.h"
#include "grpcpp/grpcpp.h"
#include "lawn/v1/cluster.grpc.pb.h"
#include "server/auth.h"
#include "server/partition_mover.h"

namespace lawn {

// Raw, like TimerService and AdminService (server/raw_call.h): a request whose bytes do not parse is answered
// INVALID_ARGUMENT naming the method, not gRPC's bare UNIMPLEMENTED.
class ClusterServiceImpl final
    : public v1::ClusterService::WithRawCallbackMethod_GetClusterMap<
          v1::ClusterService::WithRawCallbackMethod_DrainMember<
              v1::ClusterService::WithRawCallbackMethod_MovePartitions<
                  v1::ClusterService::WithRawCallbackMethod_ImportPartitions<
                      v1::ClusterService::WithRawCallbackMethod_ActivatePartitions<v1::ClusterService::Service>>>>> {
 public:
  // `auth` is not owned and outlives the service. `cluster_mode`: lawnd has a cluster section.
  ClusterServiceImpl(const Authenticator& auth, bool cluster_mode) : auth_(auth), cluster_mode_(cluster_mode) {}

  // `node` is not owned and outlives the service.
  void SetNode(const ClusterNode* node) { node_.store(node, std::memory_order_release); }

  // `mover` is not owned and outlives the service (set with the node).
  void SetMover(PartitionMover* mover) { mover_.store(mover, std::memory_order_release); }

  grpc::ServerUnaryReactor* GetClusterMap(grpc::CallbackServerContext* context, const grpc::ByteBuffer* raw_request,
                                          grpc::ByteBuffer* raw_response) override;
  grpc::ServerUnaryReactor* DrainMember(grpc::CallbackServerContext* context, const grpc::ByteBuffer* raw_request,
                                        grpc::ByteBuffer* raw_response) override;
  grpc::ServerUnaryReactor* MovePartitions(grpc::CallbackServerContext* context, const grpc::ByteBuffer* raw_request,
                                           grpc::ByteBuffer* raw_response) override;
  grpc::ServerUnaryReactor* ImportPartitions(grpc::CallbackServerContext* context,
                                             const grpc::ByteBuffer* raw_request,
                                             grpc::ByteBuffer* raw_response) override;
  grpc::ServerUnaryReactor* ActivatePartitions(grpc::CallbackServerContext* context,
                                               const grpc::ByteBuffer* raw_request,
                                               grpc::ByteBuffer* raw_response) override;

 private:
  const Authenticator& auth_;
  const bool cluster_mode_;
  // The admin permission (and a member to act on): OK, or the status the call was answered with.
  template <typename Call>
  bool Admit(grpc::CallbackServerContext* context, const grpc::ByteBuffer* raw_request, std::string_view method,
             Call* call);

  std::atomic<const ClusterNode*> node_{nullptr};
  std::atomic<PartitionMover*> mover_{nullptr};
};

}  // namespace lawn
