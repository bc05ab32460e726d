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

}  // namespace lawn
