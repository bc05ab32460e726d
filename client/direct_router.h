// DirectRouter: the C++ client's direct routing in cluster mode (ClientOptions::route_directly). It reads the
// cluster map (lawn.v1.ClusterService.GetClusterMap) through the address the client was made for, computes
// each timer's partition (base/partition.h) and sends by-key calls straight to the member that owns it, so
// they skip the hop a member would otherwise forward them over. Clients never need etcd.
//
// The map is read again (at most every 100 ms) when a call answers "wrong owner" or the owner cannot be
// reached; LawnClient then retries that call once through the seed address, whose member forwards it.
//
// Thread-safety: every method may be called from any thread; stubs it returns stay valid for its lifetime.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "grpcpp/grpcpp.h"
#include "lawn/v1/cluster.grpc.pb.h"
#include "lawn/v1/timer.grpc.pb.h"

namespace lawn {

class DirectRouter {
 public:
  // Makes a channel to a member's advertise address (with the client's credentials and limits).
  using ChannelMaker = std::function<std::shared_ptr<grpc::Channel>(const std::string& address)>;
  // Prepares a context of a GetClusterMap call (deadline, token).
  using ContextPreparer = std::function<void(grpc::ClientContext&)>;

  // Reads the map through `seed`. nullptr (and OK) when lawnd runs alone (FAILED_PRECONDITION): the client
  // then talks to the seed only. Other errors of the call are returned.
  static absl::StatusOr<std::unique_ptr<DirectRouter>> Load(std::shared_ptr<grpc::Channel> seed,
                                                            ContextPreparer prepare, ChannelMaker make_channel);
  DirectRouter(const DirectRouter&) = delete;
  DirectRouter& operator=(const DirectRouter&) = delete;

  // The stub of the member owning (ns, id)'s partition, or nullptr if the map names none (the seed serves).
  v1::TimerService::Stub* StubFor(std::string_view ns, std::string_view id);
  // The owner's address, or "" (as StubFor).
  std::string AddressFor(std::string_view ns, std::string_view id);
  // Reads the map again, unless it was read less than 100 ms ago.
  void Refresh();
  uint32_t partitions() const { return partitions_; }

 private:
  DirectRouter(std::shared_ptr<grpc::Channel> seed, ContextPreparer prepare, ChannelMaker make_channel,
               uint32_t partitions);
  absl::Status Apply(const v1::GetClusterMapResponse& map);

  const std::unique_ptr<v1::ClusterService::Stub> seed_;
  const ContextPreparer prepare_;
  const ChannelMaker make_channel_;
  const uint32_t partitions_;

  absl::Mutex mu_;
  std::vector<std::string> owner_address_ ABSL_GUARDED_BY(mu_);  // By partition; "" for unknown.
  std::map<std::string, std::unique_ptr<v1::TimerService::Stub>> stubs_ ABSL_GUARDED_BY(mu_);  // Kept.
  std::chrono::steady_clock::time_point last_read_ ABSL_GUARDED_BY(mu_);
};

}  // namespace lawn
