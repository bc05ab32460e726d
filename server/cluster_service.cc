// ClusterServiceImpl (server/cluster_service.h): GetClusterMap.
#include "server/cluster_service.h"

#include <map>

#include "server/proto_convert.h"

namespace lawn {

grpc::ServerUnaryReactor* ClusterServiceImpl::GetClusterMap(grpc::CallbackServerContext* context,
                                                            const v1::GetClusterMapRequest* /*request*/,
                                                            v1::GetClusterMapResponse* response) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  absl::StatusOr<Caller> caller = auth_.Authenticate(*context, "GetClusterMap");
  if (!caller.ok()) {
    reactor->Finish(ToGrpcStatus(caller.status()));
    return reactor;
  }
  const ClusterNode* node = node_.load(std::memory_order_acquire);
  if (!cluster_mode_) {
    reactor->Finish(grpc::Status(grpc::StatusCode::FAILED_PRECONDITION,
                                 "this lawnd runs alone (no cluster section in its config): it has no cluster map"));
    return reactor;
  }
  if (node == nullptr) {
    reactor->Finish(grpc::Status(grpc::StatusCode::UNAVAILABLE, "lawnd is joining its cluster; retry shortly"));
    return reactor;
  }
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
  reactor->Finish(grpc::Status::OK);
  return reactor;
}

}  // namespace lawn
