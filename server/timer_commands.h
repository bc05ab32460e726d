// The shard commands behind the TimerService RPCs. Each carries what the service parsed and validated, runs
// on the owning shard's worker, fills the response message there, and finishes the RPC from Done, after the
// round's storage write. The request and response messages belong to the call (UnaryCall): both live until
// gRPC's OnDone, which follows the answer, so commands may point into them.
//
// Requests fanned out to several shards (StartTimers, ListTimers, GetStats) share one state object; the last
// shard to finish completes the RPC.
//
// Thread-safety: see ShardCommand. Shared fan-out state is touched by one worker per item (disjoint), and
// the atomic countdown orders the final completion after every worker's writes.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "grpcpp/grpcpp.h"
#include "lawn/v1/timer.pb.h"
#include "server/auth.h"
#include "server/raw_call.h"
#include "server/request_timer.h"
#include "server/shard_command.h"
#include "server/start_request.h"
#include "server/start_wire.h"

namespace lawn {

// StartTimer (one op) and StartTimers (many): the ops and the RPC to finish when all are done.
struct StartBatch {
  std::vector<StartOp> ops;
  // StartTimers: the request's items (views into its bytes on the call's arena) and return_timers.
  std::vector<StartItem> items;
  bool return_timers = false;
  std::atomic<size_t> remaining{0};  // Commands still running.
  UnaryCall* call = nullptr;
  v1::StartTimersResponse* batch_response = nullptr;  // The call's; nullptr for the unary StartTimer.
  RequestTimer timer;
  void Finish();
};

class StartCommand final : public ShardCommand {
 public:
  StartCommand(std::shared_ptr<StartBatch> batch, std::vector<uint32_t> indices)
      : batch_(std::move(batch)), indices_(std::move(indices)) {}
  void Apply(ShardContext& ctx) override;
  void Done(const absl::Status& write_status) override;
  size_t ops() const override { return indices_.size(); }

 private:
  std::shared_ptr<StartBatch> batch_;
  std::vector<uint32_t> indices_;
};

// DeleteTimer, RescheduleTimer and GetTimer: one key, one call.
class KeyCommand final : public ShardCommand {
 public:
  enum class Kind { kDelete, kReschedule, kGet };
  KeyCommand(Kind kind, std::string key, UnaryCall* call, v1::Timer* out, RequestTimer timer)
      : kind_(kind), key_(std::move(key)), call_(call), out_(out), timer_(timer) {}
  // For kReschedule.
  void SetWhen(bool by_ttl, uint64_t ttl_ns, int64_t deadline_unix_ns) {
    by_ttl_ = by_ttl;
    ttl_ns_ = ttl_ns;
    deadline_unix_ns_ = deadline_unix_ns;
  }
  void Apply(ShardContext& ctx) override;
  void Done(const absl::Status& write_status) override;

 private:
  Kind kind_;
  std::string key_;
  UnaryCall* call_;
  v1::Timer* out_;  // In the call's response.
  RequestTimer timer_;
  bool by_ttl_ = true;
  uint64_t ttl_ns_ = 0;
  int64_t deadline_unix_ns_ = 0;
  bool wrote_ = false;
  absl::Status status_;
};

// ListTimers: each shard returns its first `limit` timers of the namespace with id > `after`.
struct ListState {
  std::string ns;
  std::string after;  // Exclusive lower bound on the id; empty = from the start.
  bool has_after = false;
  size_t limit = 0;
  std::vector<std::vector<v1::Timer>> per_shard;
  std::atomic<size_t> remaining{0};
  std::atomic<bool> unfinished{false};  // A worker stopped before its page was read: answer UNAVAILABLE.
  UnaryCall* call = nullptr;
  v1::ListTimersResponse* response = nullptr;  // The call's.
  RequestTimer timer;
  void Finish();
};

class ListCommand final : public ShardCommand {
 public:
  ListCommand(std::shared_ptr<ListState> state, uint32_t shard) : state_(std::move(state)), shard_(shard) {}
  void Apply(ShardContext& ctx) override;
  void Done(const absl::Status&) override;

 private:
  std::shared_ptr<ListState> state_;
  uint32_t shard_;
  bool read_ = false;  // Its page was read (Apply did not defer it).
};

// GetStats: per-shard counts plus, at the end, namespaces and outboxes.
struct StatsState {
  // What the caller may see: every namespace and the per-shard figures (admin, or auth off), or only the
  // namespaces it may read, with totals over those.
  bool all = true;
  Caller caller;
  std::vector<v1::ShardStats> per_shard;
  std::atomic<size_t> remaining{0};
  UnaryCall* call = nullptr;
  v1::GetStatsResponse* response = nullptr;  // The call's.
  class Runtime* runtime = nullptr;
  RequestTimer timer;
  void Finish();
};

class StatsCommand final : public ShardCommand {
 public:
  StatsCommand(std::shared_ptr<StatsState> state, uint32_t shard) : state_(std::move(state)), shard_(shard) {}
  void Apply(ShardContext& ctx) override;
  void Done(const absl::Status&) override;

 private:
  std::shared_ptr<StatsState> state_;
  uint32_t shard_;
};

}  // namespace lawn
