// ClusterServiceImpl (server/cluster_service.h): GetClusterMap.
#include "server/cluster_service.h"

#include <map>

#include "server/proto_convert.h"
#include "server/raw_call.h"

namespace lawn {

grpc::ServerUnaryReactor* ClusterServiceImpl::GetClusterMap(grpc::CallbackServerContext* context,
                                                            const grpc::ByteBuffer* raw_request,
                                                            grpc::ByteBuffer* raw_response) {
  auto* call = new RawUnary<v1::GetClusterMapRequest, v1::GetClusterMapResponse>(raw_response, nullptr);
  absl::StatusOr<Caller> caller = auth_.Authenticate(*context, "GetClusterMap");
  if (!caller.ok()) {
    call->Reply(ToGrpcStatus(caller.status()));
    return call;
  }
  if (grpc::Status s = ParseRequest(raw_request, "GetClusterMap", &call->request); !s.ok()) {
    call->Reply(s);
    return call;
  }
  const ClusterNode* node = node_.load(std::memory_order_acquire);
  if (!cluster_mode_) {
    call->Reply(grpc::Status(grpc::StatusCode::FAILED_PRECONDITION,
                             "this lawnd runs alone (no cluster section in its config): it has no cluster map"));
    return call;
  }
  if (node == nullptr) {
    call->Reply(grpc::Status(grpc::StatusCode::UNAVAILABLE, "lawnd is joining its cluster; retry shortly"));
    return call;
  }
  v1::GetClusterMapResponse* response = &call->response;
  const std::shared_ptr<const ClusterMap> map = node->map();
  response->set_cluster(map->cluster);
  response->set_member(map->self);
  response->set_partitions(map->partitions);
  response->set_leader(map->leader);
  response->set_serving(node->Fresh());
  std::map<std::string, uint32_t> owned;
  for (const auto& [name, address] : map->live) owned.emplace(name, 0);
  response->mutable_owners()->Reserve(static_cast<int>(map->owners.size()));
  for (uint32_t p = 0; p < map->owners.size(); ++p) {
    v1::PartitionOwner* owner = response->add_owners();
    owner->set_partition(p);
    owner->set_member(map->owners[p]);
    owner->set_epoch(map->epochs[p]);
    if (!map->owners[p].empty()) ++owned[map->owners[p]];
  }
  for (const auto& [name, count] : owned) {
    v1::ClusterMember* member = response->add_members();
    member->set_name(name);
    const auto live = map->live.find(name);
    member->set_live(live != map->live.end());
    if (live != map->live.end()) member->set_address(live->second);
    member->set_partitions_owned(count);
  }
  call->Reply(grpc::Status::OK);
  return call;
}

template <typename Call>
bool ClusterServiceImpl::Admit(grpc::CallbackServerContext* context, const grpc::ByteBuffer* raw_request,
                               std::string_view method, Call* call) {
  absl::StatusOr<Caller> caller = auth_.Authenticate(*context, method);
  if (!caller.ok()) {
    call->Reply(ToGrpcStatus(caller.status()));
    return false;
  }
  if (absl::Status s = auth_.Authorize(*caller, kPermAdmin, "", method); !s.ok()) {
    call->Reply(ToGrpcStatus(s));
    return false;
  }
  if (grpc::Status s = ParseRequest(raw_request, method, &call->request); !s.ok()) {
    call->Reply(s);
    return false;
  }
  if (!cluster_mode_) {
    call->Reply(grpc::Status(grpc::StatusCode::FAILED_PRECONDITION,
                             "this lawnd runs alone (no cluster section in its config): it has no partitions to move"));
    return false;
  }
  if (node_.load(std::memory_order_acquire) == nullptr || mover_.load(std::memory_order_acquire) == nullptr) {
    call->Reply(grpc::Status(grpc::StatusCode::UNAVAILABLE, "lawnd is joining its cluster; retry shortly"));
    return false;
  }
  return true;
}

grpc::ServerUnaryReactor* ClusterServiceImpl::DrainMember(grpc::CallbackServerContext* context,
                                                          const grpc::ByteBuffer* raw_request,
                                                          grpc::ByteBuffer* raw_response) {
  auto* call = new RawUnary<v1::DrainMemberRequest, v1::DrainMemberResponse>(raw_response, nullptr);
  if (!Admit(context, raw_request, "DrainMember", call)) return call;
  const std::string member = call->request.member();
  const ClusterNode* node = node_.load(std::memory_order_acquire);
  std::shared_ptr<const ClusterMap> map = node->map();
  if (member.empty()) {
    call->Reply(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "DrainMember: member is required"));
    return call;
  }
  bool known = map->live.count(member) > 0;
  uint32_t owned = 0;
  for (const std::string& owner : map->owners) {
    known |= owner == member;
    owned += owner == member;
  }
  if (!known) {
    call->Reply(grpc::Status(grpc::StatusCode::NOT_FOUND,
                             "DrainMember: no member '" + member + "' is live or owns a partition"));
    return call;
  }
  if (!call->request.cancel() && map->live.size() - (map->live.count(member) > 0 ? 1 : 0) == 0) {
    call->Reply(grpc::Status(grpc::StatusCode::FAILED_PRECONDITION,
                             "DrainMember: '" + member + "' is the only live member; nothing could take its partitions"));
    return call;
  }
  call->response.set_partitions_owned(owned);
  // One etcd write (blocking, bounded by the etcd client's 2 s timeout): on the mover's thread, not gRPC's.
  mover_.load(std::memory_order_acquire)->SetDraining(member, !call->request.cancel(), [call](absl::Status s) {
    call->Reply(ToGrpcStatus(s));
  });
  return call;
}

grpc::ServerUnaryReactor* ClusterServiceImpl::MovePartitions(grpc::CallbackServerContext* context,
                                                             const grpc::ByteBuffer* raw_request,
                                                             grpc::ByteBuffer* raw_response) {
  auto* call = new RawUnary<v1::MovePartitionsRequest, v1::MovePartitionsResponse>(raw_response, nullptr);
  if (!Admit(context, raw_request, "MovePartitions", call)) return call;
  mover_.load(std::memory_order_acquire)
      ->MoveOut(std::move(call->request), [call](absl::StatusOr<v1::MovePartitionsResponse> result) {
        if (!result.ok()) {
          call->Reply(ToGrpcStatus(result.status()));
          return;
        }
        call->response = std::move(*result);
        call->Reply(grpc::Status::OK);
      });
  return call;
}

grpc::ServerUnaryReactor* ClusterServiceImpl::ImportPartitions(grpc::CallbackServerContext* context,
                                                               const grpc::ByteBuffer* raw_request,
                                                               grpc::ByteBuffer* raw_response) {
  auto* call = new RawUnary<v1::ImportPartitionsRequest, v1::ImportPartitionsResponse>(raw_response, nullptr);
  if (!Admit(context, raw_request, "ImportPartitions", call)) return call;
  mover_.load(std::memory_order_acquire)
      ->Import(std::move(call->request), [call](absl::Status s) { call->Reply(ToGrpcStatus(s)); });
  return call;
}

grpc::ServerUnaryReactor* ClusterServiceImpl::ActivatePartitions(grpc::CallbackServerContext* context,
                                                                 const grpc::ByteBuffer* raw_request,
                                                                 grpc::ByteBuffer* raw_response) {
  auto* call = new RawUnary<v1::ActivatePartitionsRequest, v1::ActivatePartitionsResponse>(raw_response, nullptr);
  if (!Admit(context, raw_request, "ActivatePartitions", call)) return call;
  mover_.load(std::memory_order_acquire)
      ->Activate(std::move(call->request), [call](absl::Status s) { call->Reply(ToGrpcStatus(s)); });
  return call;
}

}  // namespace lawn
