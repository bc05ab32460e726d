// PartitionMover: a cluster member's side of partition hand-overs (docs/cluster.md, "Moves").
//
// As the source (MoveOut, asked by the leader): block the partitions in the PartitionGate, wait for one
// round of every shard (from then on nothing writes or fires them), copy their pending timers out of the
// shards and take their undelivered expirations out of the outboxes (unacked ones included: they move as
// unacked), stream both to the target (ImportPartitions, synced there), flip the owner keys in one etcd
// transaction on the epochs the leader read, have the target take them over (ActivatePartitions), delete
// the copy here, and unblock once the map says they are the target's. Any failure before the flip puts
// everything back (the expirations into their outboxes) and unblocks: nothing was lost or moved.
//
// As the target: Import persists what arrives (timers into `pending`, expirations into the staging area)
// with synced writes, with the partitions blocked; Activate, once the map names this member, loads the
// timers into the shards, adopts the staged expirations into the outbox under new delivery ids, and
// unblocks. If the source dies after the flip, the map alone triggers the activation (OnMap).
//
// At start (the first map after recovery), Settle removes what a crash left behind: timers and expirations
// of partitions this member does not own (a source that died after its flip), staged expirations of
// partitions it does not own (an import that never completed), and adopts those of partitions it owns.
//
// As the leader (Drive, from ClusterNode's move driver): one hand-over at a time, of up to kBatch
// partitions that go from one member to another, by asking their owner (MovePartitions).
//
// Thread-safety: every public method may be called from any thread. Blocking work runs on four
// TaskThreads (outgoing, incoming, leading, admin), never on gRPC's callback threads.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "cluster/cluster_node.h"
#include "grpcpp/grpcpp.h"
#include "lawn/v1/cluster.pb.h"
#include "server/delivery.h"
#include "server/partition_gate.h"
#include "server/runtime.h"
#include "server/task_thread.h"
#include "server/worker_commands.h"

namespace lawn {

class ClusterRouter;

class PartitionMover {
 public:
  // Partitions per hand-over: one etcd transaction flips them all (etcd allows 128 operations in one).
  static constexpr size_t kBatch = 64;
  // Hand-overs a member takes at once (the leader runs one; more are left-overs of failed ones).
  static constexpr size_t kMaxIncoming = 4;

  // None is owned; all outlive the mover.
  PartitionMover(Runtime& runtime, PartitionGate& gate, ClusterNode& node, ClusterRouter& router);
  ~PartitionMover();
  PartitionMover(const PartitionMover&) = delete;
  PartitionMover& operator=(const PartitionMover&) = delete;

  // Stops taking work; what runs finishes. Called before the runtime stops.
  void Stop();

  using MoveDone = std::function<void(absl::StatusOr<v1::MovePartitionsResponse>)>;
  void MoveOut(v1::MovePartitionsRequest request, MoveDone done);
  void Import(v1::ImportPartitionsRequest request, std::function<void(absl::Status)> done);
  void Activate(v1::ActivatePartitionsRequest request, std::function<void(absl::Status)> done);

  // Marks `member` as draining (or not) in etcd; `done` gets the outcome.
  void SetDraining(std::string member, bool draining, std::function<void(absl::Status)> done);

  // ClusterNode's map listener (refresh thread): owned bits into the gate, releases of held timers when a
  // partition opens, the start-up Settle, activations the map alone allows.
  void OnMap(const ClusterMap& map);
  // ClusterNode's move driver (the leader's refresh thread).
  void Drive(const Assignment& target, std::shared_ptr<const ClusterMap> map);

 private:
  // A hand-over arriving here.
  struct Incoming {
    std::string from;
    std::vector<uint32_t> partitions;
    std::vector<RecoveredTimer> timers;  // Persisted, not yet in the shards.
    std::vector<Delivery> staged;        // Persisted in the staging area; delivery_id = staging id.
    bool complete = false;               // The last chunk arrived.
  };

  // The members' token (cluster.token_file, read now), or "" when none is configured or it cannot be read.
  std::string MemberToken() const;
  // Adds `token` (MemberToken's) to a call to another member, unless it is empty.
  static void Authorize(grpc::ClientContext& context, const std::string& token);
  absl::StatusOr<v1::MovePartitionsResponse> RunMoveOut(const v1::MovePartitionsRequest& request);
  absl::Status RunImport(const v1::ImportPartitionsRequest& request);
  absl::Status RunActivate(const std::string& move_id);
  // Unblocks `partitions` and lets their held timers fire if they opened.
  void Unblock(const std::vector<uint32_t>& partitions);
  // Copies the timers of the marked partitions out of every shard (a round of each, after the caller blocked
  // them); one vector per shard.
  std::vector<std::vector<RecoveredTimer>> Export(const std::vector<bool>& partitions);
  // Takes the marked partitions' expirations out of every outbox.
  std::vector<Delivery> ExtractExpirations(const std::vector<bool>& partitions);
  // Loads timers into their shards (no write: they are on disk) and adopts staged expirations.
  absl::Status TakeOver(std::vector<RecoveredTimer> timers, std::vector<Delivery> staged);
  // Deletes expirations from the outbox column family, synced.
  absl::Status DeleteExpirations(const std::vector<Delivery>& expirations);
  void Settle(std::shared_ptr<const ClusterMap> map);
  void LeadOne(std::vector<Move> moves, std::shared_ptr<const ClusterMap> map);

  Runtime& runtime_;
  PartitionGate& gate_;
  ClusterNode& node_;
  ClusterRouter& router_;
  std::atomic<bool> stopping_{false};
  std::atomic<bool> settled_{false};
  std::atomic<bool> settling_{false};
  std::atomic<bool> leading_move_{false};  // The leader has a hand-over in flight.
  std::atomic<uint64_t> staging_seq_{0};

  absl::Mutex mu_;
  std::map<std::string, Incoming> incoming_ ABSL_GUARDED_BY(mu_);  // By move id.
  grpc::ClientContext* leading_call_ ABSL_GUARDED_BY(mu_) = nullptr;  // The leader's MovePartitions call.

  // Last: they run tasks that use everything above, and join first when the mover goes.
  TaskThread outgoing_;
  TaskThread incoming_thread_;
  TaskThread leading_;
  TaskThread admin_;  // Drain marks: never behind a hand-over.
};

}  // namespace lawn
