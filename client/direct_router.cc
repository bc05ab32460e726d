// DirectRouter (client/direct_router.h): the cluster map, read through the seed, and a stub per member.
#include "client/direct_router.h"

#include <utility>

#include "base/partition.h"
#include "client/grpc_status.h"

namespace lawn {

namespace {

constexpr std::chrono::milliseconds kMinRefresh(100);

}  // namespace

absl::StatusOr<std::unique_ptr<DirectRouter>> DirectRouter::Load(std::shared_ptr<grpc::Channel> seed,
                                                                  ContextPreparer prepare,
                                                                  ChannelMaker make_channel) {
  auto stub = v1::ClusterService::NewStub(seed);
  grpc::ClientContext context;
  prepare(context);
  v1::GetClusterMapResponse map;
  const grpc::Status status = stub->GetClusterMap(&context, v1::GetClusterMapRequest(), &map);
  if (status.error_code() == grpc::StatusCode::FAILED_PRECONDITION) return std::unique_ptr<DirectRouter>();
  if (!status.ok()) return FromGrpcStatus(status);
  if (map.partitions() == 0) return absl::InternalError("GetClusterMap: the map has no partitions");
  std::unique_ptr<DirectRouter> router(
      new DirectRouter(std::move(seed), std::move(prepare), std::move(make_channel), map.partitions()));
  if (absl::Status s = router->Apply(map); !s.ok()) return s;
  return router;
}

DirectRouter::DirectRouter(std::shared_ptr<grpc::Channel> seed, ContextPreparer prepare, ChannelMaker make_channel,
                           uint32_t partitions)
    : seed_(v1::ClusterService::NewStub(std::move(seed))),
      prepare_(std::move(prepare)),
      make_channel_(std::move(make_channel)),
      partitions_(partitions) {}

absl::Status DirectRouter::Apply(const v1::GetClusterMapResponse& map) {
  if (map.partitions() != partitions_ || map.owners_size() != static_cast<int>(partitions_)) {
    return absl::InternalError("GetClusterMap: the map's partition count changed or is incomplete");
  }
  std::map<std::string, std::string> address;  // Member -> address, live ones only.
  for (const v1::ClusterMember& member : map.members()) {
    if (member.live()) address.emplace(member.name(), member.address());
  }
  absl::MutexLock lock(&mu_);
  owner_address_.assign(partitions_, "");
  for (const v1::PartitionOwner& owner : map.owners()) {
    const auto it = address.find(owner.member());
    if (owner.partition() < partitions_ && it != address.end()) owner_address_[owner.partition()] = it->second;
  }
  last_read_ = std::chrono::steady_clock::now();
  return absl::OkStatus();
}

void DirectRouter::Refresh() {
  {
    absl::MutexLock lock(&mu_);
    if (std::chrono::steady_clock::now() - last_read_ < kMinRefresh) return;
    last_read_ = std::chrono::steady_clock::now();  // One reader at a time; the others keep the old map.
  }
  grpc::ClientContext context;
  prepare_(context);
  v1::GetClusterMapResponse map;
  if (seed_->GetClusterMap(&context, v1::GetClusterMapRequest(), &map).ok()) Apply(map).IgnoreError();
}

std::string DirectRouter::AddressFor(std::string_view ns, std::string_view id) {
  absl::MutexLock lock(&mu_);
  return owner_address_[PartitionOf(ns, id, partitions_)];
}

v1::TimerService::Stub* DirectRouter::StubFor(std::string_view ns, std::string_view id) {
  absl::MutexLock lock(&mu_);
  const std::string& address = owner_address_[PartitionOf(ns, id, partitions_)];
  if (address.empty()) return nullptr;
  auto it = stubs_.find(address);
  if (it == stubs_.end()) it = stubs_.emplace(address, v1::TimerService::NewStub(make_channel_(address))).first;
  return it->second.get();
}

}  // namespace lawn
