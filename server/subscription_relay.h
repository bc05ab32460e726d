// SubscriptionRelay: cluster mode's Subscribe fan-in. A Subscribe stream opened on one member receives its
// namespace's expirations from every member: the member serves its own partitions' expirations from its
// outbox as always, and this relay holds one upstream Subscribe stream (with `lawn-forwarded-by`, so the
// upstream member serves only its own) to each other live member, passing their expirations on and their
// acks back.
//
// Ids. A relayed expiration's delivery id is a 64-bit mix of (its member's name, the member's delivery id):
// the same expiration relayed again (a redelivery, after a reconnect, on another stream of this member) keeps
// its id, as the API promises, and ids of different members' expirations do not collide (a 2^-64 chance per
// pair, as for any two random ids). An ack's ids are split by asking the relay which ones it delivered.
//
// Semantics. At least once, as on one member: an ack goes to the member that delivered the expiration; if
// the upstream stream ends first (that member stops, the network breaks), the member redelivers what it had
// in flight to whichever subscriber it has next, and this relay reconnects within a second. The in-flight
// bound is per member: each upstream is opened with the downstream's max_in_flight. When the downstream ends,
// the acks it sent are written upstream before each upstream is half-closed (cancelled after 5 s at most).
//
// Thread-safety: every public method may be called from any thread. Lock order: the downstream reactor's
// mutex, then the relay's, then an upstream's. The wake callback is called with no relay lock held.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
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
  // The id a relayed expiration of `member` with the member's `delivery_id` carries downstream (never 0).
  static uint64_t RelayId(std::string_view member, uint64_t delivery_id);

  // Opens upstreams to every other live member with `open` and the caller's `authorization` metadata
  // (forwarded as is); `wake` is called when relayed expirations are ready. `router` outlives the relay.
  static std::shared_ptr<SubscriptionRelay> Start(ClusterRouter& router,
                                                  std::vector<std::pair<std::string, std::string>> metadata,
                                                  const v1::SubscribeRequest::Open& open, std::function<void()> wake);
  SubscriptionRelay(const SubscriptionRelay&) = delete;
  SubscriptionRelay& operator=(const SubscriptionRelay&) = delete;
  ~SubscriptionRelay();

  // Moves ready expirations to the end of `out`: at most `max_count`, and while their encoded size stays
  // within `max_bytes`; with `first_may_exceed`, a first one larger than that goes alone. Returns how many.
  size_t Take(size_t max_count, size_t max_bytes, bool first_may_exceed, std::vector<v1::Expiration>* out);
  // Sends the acks of ids this relay delivered back to their members; returns the others (this member's own).
  std::vector<uint64_t> Ack(const std::vector<uint64_t>& ids);
  // Writes the acks already given, half-closes every upstream (each member takes back what it still had in
  // flight) and stops reconnecting; upstreams still open 5 s later are cancelled. Idempotent.
  void Stop();
  // Connects to live members that have no upstream, drops upstreams of members that left or moved, and
  // cancels the upstreams of a relay stopped long enough ago (the router calls it every second). Any thread.
  void Maintain();

 private:
  class Upstream;
  struct Origin {
    std::string member;
    uint64_t id = 0;  // The upstream member's delivery id.
  };
  struct Link {
    Upstream* upstream = nullptr;
    std::string address;
  };

  SubscriptionRelay(ClusterRouter& router, std::vector<std::pair<std::string, std::string>> metadata,
                    const v1::SubscribeRequest::Open& open, std::function<void()> wake);
  void OnExpirations(const std::string& member, std::vector<v1::Expiration> batch);
  void OnUpstreamDone(Upstream* upstream, const std::string& member, const grpc::Status& status);

  ClusterRouter& router_;
  const std::vector<std::pair<std::string, std::string>> metadata_;
  v1::SubscribeRequest open_;
  const std::function<void()> wake_;
  const size_t observe_cap_;  // Observe streams: relayed copies held at most (per relay); more are dropped.

  absl::Mutex mu_;
  bool stopped_ ABSL_GUARDED_BY(mu_) = false;
  std::chrono::steady_clock::time_point stopped_at_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, Link> upstreams_ ABSL_GUARDED_BY(mu_);  // By member; removed in their OnDone.
  std::deque<v1::Expiration> ready_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<uint64_t, Origin> origins_ ABSL_GUARDED_BY(mu_);  // Relay id -> origin, until acked.
  uint64_t observe_dropped_ ABSL_GUARDED_BY(mu_) = 0;
  // When the last "member refuses the relay" warning was logged (rate limit).
  std::chrono::steady_clock::time_point last_warning_ ABSL_GUARDED_BY(mu_);
};

}  // namespace lawn
