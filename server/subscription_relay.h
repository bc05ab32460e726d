// SubscriptionRelay: cluster mode's Subscribe fan-in. A Subscribe stream opened on one member receives its
// namespace's expirations from every member: the member serves its own partitions' expirations from its
// outbox as always, and this relay holds one upstream Subscribe stream (with `lawn-forwarded-by`, so the
// upstream member serves only its own) to each other live member, passing their expirations on and their
// acks back.
//
// Ids. A relayed expiration gets a relay id, numbered per relay from 1 (below 2^40), in place of the
// upstream member's delivery id; a member's own delivery ids are at least 2^40 (they start with the
// milliseconds since 2020, server/delivery_ids.h), so an ack's ids split cleanly between the outbox and the
// relay. A redelivery from upstream of an id still unacked keeps its relay id.
//
// Semantics. At least once, as on one member: an ack goes to the member that delivered the expiration; if
// the upstream stream ends first (that member stops, the network breaks), the member redelivers what it had
// in flight to whichever subscriber it has next, and this relay reconnects within a second. The in-flight
// bound is per member: each upstream is opened with the downstream's max_in_flight.
//
// Thread-safety: every public method may be called from any thread. Lock order: the downstream reactor's
// mutex, then the relay's, then an upstream's. The wake callback is called with no relay lock held.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "grpcpp/grpcpp.h"
#include "lawn/v1/timer.grpc.pb.h"

namespace lawn {

class ClusterRouter;

class SubscriptionRelay : public std::enable_shared_from_this<SubscriptionRelay> {
 public:
  static constexpr uint64_t kRelayIdLimit = uint64_t{1} << 40;
  static bool IsRelayId(uint64_t id) { return id != 0 && id < kRelayIdLimit; }

  // Opens upstreams to every other live member with `open` and the caller's `authorization` metadata
  // (forwarded as is); `wake` is called when relayed expirations are ready. `router` outlives the relay.
  static std::shared_ptr<SubscriptionRelay> Start(ClusterRouter& router,
                                                  std::vector<std::pair<std::string, std::string>> metadata,
                                                  const v1::SubscribeRequest::Open& open, std::function<void()> wake);
  SubscriptionRelay(const SubscriptionRelay&) = delete;
  SubscriptionRelay& operator=(const SubscriptionRelay&) = delete;
  ~SubscriptionRelay();

  // Moves up to `max` ready expirations (relay ids in delivery_id) to the end of `out`; returns how many.
  size_t Take(size_t max, std::vector<v1::Expiration>* out);
  // Sends the acks of relay ids back to the members they came from; others are ignored.
  void Ack(const std::vector<uint64_t>& relay_ids);
  // Ends every upstream (each member takes back what it had in flight) and stops reconnecting. Idempotent.
  void Stop();
  // Connects to live members that have no upstream (the router calls it every second). Any thread.
  void Maintain();

 private:
  class Upstream;
  struct Origin {
    std::string member;
    uint64_t id = 0;  // The upstream member's delivery id.
  };

  SubscriptionRelay(ClusterRouter& router, std::vector<std::pair<std::string, std::string>> metadata,
                    const v1::SubscribeRequest::Open& open, std::function<void()> wake);
  void OnExpirations(const std::string& member, std::vector<v1::Expiration> batch);
  void OnUpstreamDone(Upstream* upstream, const std::string& member, const grpc::Status& status);

  ClusterRouter& router_;
  const std::vector<std::pair<std::string, std::string>> metadata_;
  v1::SubscribeRequest open_;
  const std::function<void()> wake_;

  absl::Mutex mu_;
  bool stopped_ ABSL_GUARDED_BY(mu_) = false;
  std::map<std::string, Upstream*> upstreams_ ABSL_GUARDED_BY(mu_);  // By member; removed in their OnDone.
  std::deque<v1::Expiration> ready_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<uint64_t, Origin> origins_ ABSL_GUARDED_BY(mu_);  // Relay id -> origin, until acked.
  std::map<std::pair<std::string, uint64_t>, uint64_t> relay_ids_ ABSL_GUARDED_BY(mu_);  // Origin -> relay id.
  uint64_t next_id_ ABSL_GUARDED_BY(mu_) = 1;
};

}  // namespace lawn
