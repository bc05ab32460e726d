// Shard commands of a partition hand-over (server/partition_mover.h): copy a set of partitions' timers out
// of a shard, delete them from it, and take over expirations another member handed over.
//
// Thread-safety: see ShardCommand. The vectors they fill or read belong to the caller, who reads them only
// after Done (Runtime::RunOnEveryShard waits for it).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "server/delivery.h"
#include "server/shard_command.h"
#include "server/worker_commands.h"

namespace lawn {

class PartitionGate;

// Appends the shard's pending timers whose partition is marked in `partitions` to `*out`.
class ExportCommand final : public ShardCommand {
 public:
  ExportCommand(const PartitionGate& gate, const std::vector<bool>& partitions, std::vector<RecoveredTimer>* out)
      : gate_(gate), partitions_(partitions), out_(out) {}
  void Apply(ShardContext& ctx) override;
  void Done(const absl::Status&) override {}

 private:
  const PartitionGate& gate_;
  const std::vector<bool>& partitions_;
  std::vector<RecoveredTimer>* out_;
};

// Deletes the timers with these keys from the shard and the store (those still there); `*status` gets the
// write's status.
class DropTimersCommand final : public ShardCommand {
 public:
  DropTimersCommand(const std::vector<RecoveredTimer>& timers, absl::Status* status)
      : timers_(timers), status_(status) {}
  void Apply(ShardContext& ctx) override;
  void Done(const absl::Status& write_status) override { *status_ = write_status; }

 private:
  const std::vector<RecoveredTimer>& timers_;
  absl::Status* status_;
};

// Moves staged expirations (the `incoming` column family, keyed by staging id) into the outbox under new
// delivery ids of this shard, in one write, and publishes them to their namespaces once it is written.
// `*status` gets the write's status.
class AdoptCommand final : public ShardCommand {
 public:
  AdoptCommand(std::vector<Delivery> staged, absl::Status* status) : staged_(std::move(staged)), status_(status) {}
  void Apply(ShardContext& ctx) override;
  void Done(const absl::Status& write_status) override;

 private:
  std::vector<Delivery> staged_;  // delivery_id: the staging id until Apply gives each its new id.
  absl::Status* status_;
  Runtime* runtime_ = nullptr;
};

}  // namespace lawn
