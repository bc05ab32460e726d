// ClusterNode: one lawnd's membership in a lawn cluster (docs/cluster.md): it agrees the partition count with
// etcd, keeps its member key alive under its own lease, leads when no one else does (handing out a new
// cluster's partitions once `expect_members` are live), and keeps a fresh copy of the ownership map that the
// server routes by.
//
// What it serves is decided by Place(): a partition is served here only while (1) the last map read from
// etcd names this member as its owner and (2) the lease is certainly alive (LeaseKeeper::Fresh). The map is
// re-read whenever a key of the cluster changes (an etcd watch on /<cluster>/, cluster/etcd_watch.h) and
// every `refresh_every` besides, in case the watch's stream is down; ownership changes only by etcd
// transaction, so a stale map can only make this member refuse or forward, never serve a partition that
// another member was given, as long as partitions do not move without a hand-over: the PartitionGate
// (server/partition_gate.h) closes a partition that is moving before its owner key changes.
//
// A member whose key is still held by an earlier lease (a restart after kill -9, before the old lease ran out)
// waits for that key to go before it registers: two live processes with one name would serve the same
// partitions. Until it is registered, Fresh() is false and it serves nothing.
//
// Thread-safety: every public method may be called from any thread.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <set>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "cluster/etcd_client.h"
#include "cluster/assignment.h"
#include "cluster/lease_keeper.h"

namespace lawn {

struct ClusterNodeOptions {
  std::vector<std::string> etcd_endpoints;
  std::string cluster = "lawn";  // Key prefix in etcd.
  std::string member;            // This member's stable name.
  std::string advertise;         // host:port the others reach it at.
  uint32_t partitions = 1024;
  std::chrono::seconds lease_ttl{10};
  uint32_t expect_members = 1;
  // How often the member (and leader) re-reads membership and ownership from etcd when nothing changed:
  // changes are seen at once through the watch, so this only bounds how long a change can go unseen
  // while the watch's stream is down, and how soon a lost lease is replaced.
  std::chrono::milliseconds refresh_every{2000};
};

// The cluster as one member last read it from etcd. Immutable once published.
struct ClusterMap {
  std::string cluster;
  std::string self;
  uint32_t partitions = 0;
  std::string leader;                       // "" when no member leads.
  std::vector<std::string> owners;          // owners[p]: the owning member, "" for none.
  std::vector<int64_t> epochs;              // epochs[p]: the owner key's mod revision, 0 for none.
  std::map<std::string, std::string> live;  // Live member -> advertise address.
  std::set<std::string> draining;           // Members being drained (lawnctl cluster drain).
  uint64_t generation = 0;                  // Counts the maps this member published.
};

// Where the calls for one partition go, from this member's point of view.
struct Placement {
  enum class Kind {
    kLocal,    // This member owns it and its lease is fresh: serve here.
    kForward,  // Another live member owns it: forward to `address`.
    kRefuse,   // Nobody can serve it now (`status`, UNAVAILABLE): no owner yet, the owner is not live, or
               // this member's own lease is not fresh.
  };
  Kind kind = Kind::kRefuse;
  uint32_t partition = 0;
  std::string owner;
  std::string address;
  absl::Status status;
};

class ClusterNode {
 public:
  // Connects to etcd, agrees the partition count (FAILED_PRECONDITION if the cluster was formed with another
  // one), grants the lease, and starts the thread that registers the member and refreshes the map. Errors:
  // INVALID_ARGUMENT for bad options, UNAVAILABLE / DEADLINE_EXCEEDED when etcd does not answer.
  static absl::StatusOr<std::unique_ptr<ClusterNode>> Join(const ClusterNodeOptions& options);
  ClusterNode(const ClusterNode&) = delete;
  ClusterNode& operator=(const ClusterNode&) = delete;
  // Leave() if not done yet.
  ~ClusterNode();

  // Stops refreshing and revokes the lease: the member key (and leadership) go at once, so the others see
  // this member leave without waiting for its TTL. Its partitions stay its own. Idempotent.
  void Leave();

  // The map as last read; never null (empty owners until the first read).
  std::shared_ptr<const ClusterMap> map() const {
    absl::ReaderMutexLock lock(&map_mu_);
    return map_;
  }
  // True while this member is registered and its lease is certainly alive (the fence is open).
  bool Fresh() const;
  // The partition of (namespace, id) in this cluster (cluster/partition.h).
  uint32_t PartitionOf(std::string_view ns, std::string_view id) const;
  // Where calls for `partition` go now.
  Placement Place(uint32_t partition) const;
  const ClusterNodeOptions& options() const { return options_; }

  // Called on the refresh thread after every map this member publishes. Set before the first map matters
  // (right after Join); must not block for long.
  void SetMapListener(std::function<void(const ClusterMap&)> listener);
  // Called on the refresh thread of the leader when the live members' partitions should move (a member
  // joined, or is draining): `target` is Assign's answer for the map just read. Must not block.
  void SetMoveDriver(std::function<void(const Assignment& target, std::shared_ptr<const ClusterMap> map)> driver);
  // Maps published so far (one per read of etcd); for tests and logs.
  uint64_t generation() const { return map()->generation; }
  // Reads etcd now instead of at the next period and waits (up to `timeout`) until a map read after this
  // call is published. False on timeout.
  bool RefreshNow(std::chrono::milliseconds timeout);
  // The create revision of `member`'s key: it names one process of that member (a restart registers anew).
  // NOT_FOUND when the member is not live.
  absl::StatusOr<int64_t> MemberIncarnation(const std::string& member);
  // Gives `partitions` (with the epochs the caller read) to `to`, in one etcd transaction, if `to`'s member
  // key still has the create revision `to_incarnation`. True if written; false if an owner key changed or
  // `to` restarted meanwhile (nothing written). UNAVAILABLE/DEADLINE_EXCEEDED: unknown.
  absl::StatusOr<bool> Transfer(const std::vector<uint32_t>& partitions, const std::vector<int64_t>& epochs,
                                const std::string& to, int64_t to_incarnation);
  // Marks `member` as draining or not, in etcd.
  absl::Status SetDraining(const std::string& member, bool draining);

 private:
  ClusterNode(const ClusterNodeOptions& options, std::unique_ptr<EtcdClient> etcd);
  void Run();
  // Registers the member key under the current lease if it is not yet; false while an older lease holds it.
  absl::StatusOr<bool> Register();
  // One pass: renew the lease if lost, register, lead if possible, read the map and publish it.
  absl::Status Refresh();
  // The map as etcd holds it now (one consistent read; generation not set).
  absl::StatusOr<std::shared_ptr<ClusterMap>> ReadMap();
  bool SleepFor(std::chrono::milliseconds duration);
  // Makes the refresh thread start a pass now (or right after the one running), without waiting for it.
  void AskRefresh();

  const ClusterNodeOptions options_;
  const std::unique_ptr<EtcdClient> etcd_;
  // The current lease; replaced (only by the Run thread) when etcd reports it lost. Fresh() reads it through
  // keeper_view_; replaced keepers stay in retired_ so a concurrent reader never sees a freed one.
  std::unique_ptr<LeaseKeeper> keeper_;
  std::vector<std::unique_ptr<LeaseKeeper>> retired_;
  std::atomic<const LeaseKeeper*> keeper_view_{nullptr};
  std::atomic<bool> registered_{false};
  // Replaced whole by the Run thread, read by every routed call: a copy of the pointer under a reader lock
  // (libstdc++'s std::atomic<std::shared_ptr> spins on a bit that TSan cannot see).
  mutable absl::Mutex map_mu_;
  std::shared_ptr<const ClusterMap> map_ ABSL_GUARDED_BY(map_mu_);

  absl::Mutex hooks_mu_;  // Guards the two hooks (set once, read by the refresh thread).
  std::function<void(const ClusterMap&)> map_listener_ ABSL_GUARDED_BY(hooks_mu_);
  std::function<void(const Assignment&, std::shared_ptr<const ClusterMap>)> move_driver_ ABSL_GUARDED_BY(hooks_mu_);
  uint64_t generation_ = 0;  // Refresh thread only.
  bool refresh_asked_ = false;  // Guarded by sleep_mu_: RefreshNow or the watch wants a pass at once.
  std::condition_variable published_;  // With sleep_mu_: a map was published.
  uint64_t passes_started_ = 0;        // Guarded by sleep_mu_: refresh passes begun.
  uint64_t current_pass_ = 0;          // Guarded by sleep_mu_: the pass running (or last run).
  uint64_t published_pass_ = 0;        // Guarded by sleep_mu_: the pass whose map was published last.

  std::thread thread_;
  std::unique_ptr<EtcdWatch> watch_;  // Wakes the refresh thread when a key of the cluster changes.
  std::once_flag leave_once_;
  std::mutex sleep_mu_;
  std::condition_variable wake_;
  bool stopping_ = false;  // Guarded by sleep_mu_.
};

}  // namespace lawn
