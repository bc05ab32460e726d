// PartitionMover (server/partition_mover.h): the source's side of a hand-over, the leader's driving, and
// what both sides share. The target's side is in partition_import.cc.
#include "server/partition_mover.h"

#include <chrono>
#include <fstream>
#include <iterator>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "lawn/v1/cluster.grpc.pb.h"
#include "server/cluster_router.h"
#include "server/handover_commands.h"
#include "spdlog/spdlog.h"

namespace lawn {

namespace {

// Timers per ImportPartitions chunk, and bytes (keys and payloads) after which a chunk is sent early: well
// under the members' default 4 MiB message limit.
constexpr size_t kChunkTimers = 8192;
constexpr size_t kChunkBytes = 2 << 20;
constexpr auto kCallTimeout = std::chrono::seconds(30);

absl::Status FromGrpc(const grpc::Status& s, const std::string& what) {
  if (s.ok()) return absl::OkStatus();
  return absl::Status(static_cast<absl::StatusCode>(s.error_code()), absl::StrCat(what, ": ", s.error_message()));
}

void Fill(v1::HandedOverTimer* out, const std::string& key, const std::string& payload, int64_t deadline,
          uint64_t ttl, uint64_t interval) {
  out->set_key(key);
  out->set_payload(payload);
  out->set_deadline_unix_ns(deadline);
  out->set_ttl_ns(ttl);
  out->set_interval_ns(interval);
}

}  // namespace

std::string PartitionMover::MemberToken() const {
  const std::string& file = runtime_.options().cluster_token_file;
  if (file.empty()) return "";
  std::ifstream in(file);
  std::string token((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  while (!token.empty() && (token.back() == '\n' || token.back() == '\r' || token.back() == ' ')) token.pop_back();
  if (!in || token.empty()) {
    spdlog::error("cluster.token_file {} cannot be read or is empty: this hand-over's calls go without a token", file);
  }
  return token;
}

void PartitionMover::Authorize(grpc::ClientContext& context, const std::string& token) {
  if (!token.empty()) context.AddMetadata("authorization", "Bearer " + token);
}

PartitionMover::PartitionMover(Runtime& runtime, PartitionGate& gate, ClusterNode& node, ClusterRouter& router)
    : runtime_(runtime), gate_(gate), node_(node), router_(router) {}

PartitionMover::~PartitionMover() { Stop(); }

void PartitionMover::Stop() {
  stopping_.store(true, std::memory_order_release);
  // The leader's call to a source may run for minutes; the source finishes or undoes its hand-over alone.
  absl::MutexLock lock(&mu_);
  if (leading_call_ != nullptr) leading_call_->TryCancel();
}

void PartitionMover::Unblock(const std::vector<uint32_t>& partitions) {
  bool opened = false;
  for (uint32_t p : partitions) opened |= gate_.Unblock(p);
  if (opened) runtime_.ReleaseGated();
}

std::vector<std::vector<RecoveredTimer>> PartitionMover::Export(const std::vector<bool>& partitions) {
  std::vector<std::vector<RecoveredTimer>> slots(runtime_.shard_count());
  runtime_.RunOnEveryShard(
      [&](uint32_t shard) { return std::make_unique<ExportCommand>(gate_, partitions, &slots[shard]); });
  return slots;
}

std::vector<Delivery> PartitionMover::ExtractExpirations(const std::vector<bool>& partitions) {
  std::vector<Delivery> out;
  for (const std::shared_ptr<NamespaceState>& ns : runtime_.namespaces().All()) {
    ns->outbox.Extract([&](std::string_view key) { return partitions[gate_.PartitionOfKey(key)]; }, &out);
  }
  return out;
}

absl::Status PartitionMover::DeleteExpirations(const std::vector<Delivery>& expirations) {
  if (expirations.empty() || runtime_.store() == nullptr) return absl::OkStatus();
  StoreBatch batch;
  for (const Delivery& d : expirations) batch.DeleteExpiration(d.delivery_id);
  // Synced: one that came back after a crash would be delivered by this member, which no longer owns it,
  // as well as by the one that does.
  return runtime_.store()->Write(batch, SyncMode::kSync);
}

void PartitionMover::SetDraining(std::string member, bool draining, std::function<void(absl::Status)> done) {
  admin_.Post([this, member = std::move(member), draining, done = std::move(done)] {
    absl::Status s = node_.SetDraining(member, draining);
    if (s.ok()) spdlog::info("cluster: member {} {}", member, draining ? "is draining" : "is no longer draining");
    done(s);
  });
}

void PartitionMover::MoveOut(v1::MovePartitionsRequest request, MoveDone done) {
  outgoing_.Post([this, request = std::move(request), done = std::move(done)] { done(RunMoveOut(request)); });
}

absl::StatusOr<v1::MovePartitionsResponse> PartitionMover::RunMoveOut(const v1::MovePartitionsRequest& request) {
  if (stopping_.load(std::memory_order_acquire)) return absl::UnavailableError("member is shutting down");
  if (!settled_.load(std::memory_order_acquire)) return absl::UnavailableError("member is still settling");
  const auto started = std::chrono::steady_clock::now();
  const std::string& self = node_.options().member;
  if (request.partitions_size() == 0 || request.partitions_size() != request.epochs_size() ||
      static_cast<size_t>(request.partitions_size()) > kBatch) {
    return absl::InvalidArgumentError(
        absl::StrCat("MovePartitions takes 1..", kBatch, " partitions, each with its epoch"));
  }
  std::vector<uint32_t> partitions(request.partitions().begin(), request.partitions().end());
  std::vector<int64_t> epochs(request.epochs().begin(), request.epochs().end());
  std::shared_ptr<const ClusterMap> map = node_.map();
  const auto target = map->live.find(request.to_member());
  if (request.to_member() == self || target == map->live.end()) {
    return absl::FailedPreconditionError(
        absl::StrCat("cannot hand partitions to '", request.to_member(), "': not another live member"));
  }
  std::vector<bool> moving(gate_.partitions(), false);
  for (size_t i = 0; i < partitions.size(); ++i) {
    const uint32_t p = partitions[i];
    if (p >= gate_.partitions() || moving[p]) return absl::InvalidArgumentError("partitions must be distinct and in range");
    if (map->owners[p] != self || map->epochs[p] != epochs[i] || !gate_.Owned(p)) {
      return absl::FailedPreconditionError(absl::StrCat("partition ", p, " is not member ", self,
                                                        "'s at epoch ", epochs[i], " (the map moved on)"));
    }
    moving[p] = true;
  }
  // Where the time goes, for the log line: export, stream, flip, take-over, delete.
  std::vector<std::pair<const char*, std::chrono::steady_clock::time_point>> steps;
  auto step = [&](const char* name) { steps.emplace_back(name, std::chrono::steady_clock::now()); };
  // Freeze: from the round after this on, nothing writes or fires these partitions here.
  for (uint32_t p : partitions) gate_.Block(p);
  std::vector<std::vector<RecoveredTimer>> slots = Export(moving);
  std::vector<Delivery> expirations = ExtractExpirations(moving);
  step("export");
  auto put_back = [&] {
    // Nothing moved: the expirations return to their outboxes.
    runtime_.PublishPersisted(std::move(expirations), "hand-over undone");
    Unblock(partitions);
  };

  // Stream to the target, the process whose member key has this create revision.
  absl::StatusOr<int64_t> target_incarnation = node_.MemberIncarnation(request.to_member());
  if (!target_incarnation.ok()) {
    put_back();
    return target_incarnation.status();
  }
  auto stub = v1::ClusterService::NewStub(router_.Channel(target->second));
  const std::string token = MemberToken();  // Read once per hand-over (rotation takes effect at the next).
  const std::string move_id = absl::StrCat(self, "-", std::chrono::system_clock::now().time_since_epoch().count());
  uint64_t timers = 0;
  v1::ImportPartitionsRequest chunk;
  size_t chunk_bytes = 0;
  auto send = [&](bool last, bool abort) -> absl::Status {
    chunk.set_move_id(move_id);
    chunk.set_from_member(self);
    chunk.set_last(last);
    chunk.set_abort(abort);
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + kCallTimeout);
    Authorize(context, token);
    v1::ImportPartitionsResponse response;
    absl::Status s = FromGrpc(stub->ImportPartitions(&context, chunk, &response),
                              absl::StrCat("import at ", request.to_member()));
    chunk.Clear();
    chunk_bytes = 0;
    return s;
  };
  absl::Status streamed = absl::OkStatus();
  for (uint32_t p : partitions) chunk.add_partitions(p);
  for (const std::vector<RecoveredTimer>& slot : slots) {
    for (const RecoveredTimer& t : slot) {
      Fill(chunk.add_timers(), t.key, t.payload, t.deadline_unix_ns, t.ttl_ns, t.interval_ns);
      chunk_bytes += t.key.size() + t.payload.size();
      ++timers;
      if (chunk.timers_size() >= static_cast<int>(kChunkTimers) || chunk_bytes >= kChunkBytes) {
        streamed = send(false, false);
        if (!streamed.ok()) break;
      }
    }
    if (!streamed.ok()) break;
  }
  if (streamed.ok()) {
    for (const Delivery& d : expirations) {
      v1::HandedOverTimer* e = chunk.add_expirations();
      Fill(e, d.key, d.payload, d.deadline_unix_ns, d.ttl_ns, d.interval_ns);
      e->set_fired_at_unix_ns(d.fired_at_unix_ns);
      e->set_attempt(d.attempt);
      chunk_bytes += d.key.size() + d.payload.size();
      if (chunk.expirations_size() >= static_cast<int>(kChunkTimers) || chunk_bytes >= kChunkBytes) {
        streamed = send(false, false);
        if (!streamed.ok()) break;
      }
    }
  }
  if (streamed.ok()) streamed = send(true, false);
  step("stream");
  if (!streamed.ok()) {
    send(false, true).IgnoreError();  // Best effort: the target also drops it when it restarts.
    put_back();
    return streamed;
  }

  // Flip, only if the target is still the process that took the import (its member key was created before
  // the import began: a target that restarted meanwhile may have dropped it at its start-up settle). An etcd
  // error leaves the outcome unknown: read the owners back until they say which, for as long as it takes
  // (the partitions stay frozen meanwhile, never served by two members). A shutdown leaves it to the
  // restart's settle, which sees the outcome in the map.
  absl::StatusOr<bool> flipped = node_.Transfer(partitions, epochs, request.to_member(), *target_incarnation);
  while (!flipped.ok()) {
    spdlog::warn("hand-over {}: the ownership flip's outcome is unknown ({}); reading it back", move_id,
                 flipped.status().ToString());
    if (stopping_.load(std::memory_order_acquire)) return flipped.status();
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
    if (!node_.RefreshNow(std::chrono::seconds(2))) continue;
    map = node_.map();
    if (map->owners[partitions[0]] == request.to_member()) {
      flipped = true;
    } else if (map->owners[partitions[0]] == self && map->epochs[partitions[0]] == epochs[0]) {
      flipped = node_.Transfer(partitions, epochs, request.to_member(), *target_incarnation);
    } else {
      flipped = false;
    }
  }
  if (!*flipped) {
    send(false, true).IgnoreError();
    put_back();
    return absl::AbortedError("an owner key changed during the hand-over, or the target restarted");
  }

  step("flip");
  // The target owns them now: it takes over (it also would on its own, from the map).
  {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + kCallTimeout);
    Authorize(context, token);
    v1::ActivatePartitionsRequest activate;
    activate.set_move_id(move_id);
    v1::ActivatePartitionsResponse response;
    const grpc::Status s = stub->ActivatePartitions(&context, activate, &response);
    if (!s.ok()) {
      spdlog::warn("hand-over {}: {} did not confirm the take-over ({}); it takes over when it reads the map",
                   move_id, request.to_member(), s.error_message());
    }
  }
  step("take-over");
  // Delete the copy here.
  std::vector<absl::Status> dropped(slots.size());
  runtime_.RunOnEveryShard(
      [&](uint32_t shard) { return std::make_unique<DropTimersCommand>(slots[shard], &dropped[shard]); });
  for (const absl::Status& s : dropped) {
    if (!s.ok()) spdlog::error("hand-over {}: deleting the moved timers here failed: {}", move_id, s.ToString());
  }
  if (absl::Status s = DeleteExpirations(expirations); !s.ok()) {
    spdlog::error("hand-over {}: deleting the moved expirations here failed: {}", move_id, s.ToString());
  }
  // The partitions stay closed here whatever happens next: not this member's in the gate at once, and the
  // blocks go only once the map names the target too (a map read before the flip cannot set them again).
  step("delete");
  for (uint32_t p : partitions) gate_.Disown(p);
  while (!stopping_.load(std::memory_order_acquire)) {
    if (node_.RefreshNow(std::chrono::seconds(5)) && node_.map()->owners[partitions[0]] == request.to_member()) {
      break;
    }
  }
  for (uint32_t p : partitions) gate_.Unblock(p);
  // Timers of other partitions held behind the dropped ones (Shard::ReleaseHeld stops at a timer it holds
  // again) are offered again.
  runtime_.ReleaseGated();
  step("map");
  v1::MovePartitionsResponse response;
  response.set_timers(timers);
  response.set_expirations(expirations.size());
  response.set_frozen_ns(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - started).count());
  std::string breakdown;
  auto last = started;
  for (const auto& [name, at] : steps) {
    absl::StrAppend(&breakdown, breakdown.empty() ? "" : ", ", name, " ",
                    absl::StrFormat("%.3f", std::chrono::duration<double>(at - last).count()));
    last = at;
  }
  spdlog::info("hand-over {}: {} partitions to {}: {} timers and {} expirations in {:.3f} s ({})", move_id,
               partitions.size(), request.to_member(), timers, expirations.size(), response.frozen_ns() * 1e-9,
               breakdown);
  return response;
}

void PartitionMover::Drive(const Assignment& target, std::shared_ptr<const ClusterMap> map) {
  if (stopping_.load(std::memory_order_acquire)) return;
  if (leading_move_.exchange(true, std::memory_order_acq_rel)) return;  // One hand-over at a time.
  // The first (from, to) pair with a live source, and up to kBatch of its partitions.
  std::vector<Move> batch;
  for (const Move& m : target.moves) {
    if (m.from.empty() || map->live.count(m.from) == 0 || map->live.count(m.to) == 0) continue;
    if (!batch.empty() && (m.from != batch.front().from || m.to != batch.front().to)) continue;
    batch.push_back(m);
    if (batch.size() == kBatch) break;
  }
  if (batch.empty()) {
    leading_move_.store(false, std::memory_order_release);
    return;
  }
  leading_.Post([this, batch = std::move(batch), map = std::move(map)] { LeadOne(batch, map); });
}

void PartitionMover::LeadOne(std::vector<Move> moves, std::shared_ptr<const ClusterMap> map) {
  v1::MovePartitionsRequest request;
  request.set_to_member(moves.front().to);
  for (const Move& m : moves) {
    request.add_partitions(m.partition);
    request.add_epochs(map->epochs[m.partition]);
  }
  const std::string& from = moves.front().from;
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::minutes(10));
  Authorize(context, MemberToken());
  v1::MovePartitionsResponse response;
  auto stub = v1::ClusterService::NewStub(router_.Channel(map->live.at(from)));
  {
    absl::MutexLock lock(&mu_);
    if (stopping_.load(std::memory_order_acquire)) context.TryCancel();
    leading_call_ = &context;
  }
  const grpc::Status s = stub->MovePartitions(&context, request, &response);
  {
    absl::MutexLock lock(&mu_);
    leading_call_ = nullptr;
  }
  if (!s.ok()) {
    spdlog::warn("leader: moving {} partitions from {} to {} failed: {}; retrying with the next map", moves.size(),
                 from, moves.front().to, s.error_message());
    std::this_thread::sleep_for(std::chrono::seconds(1));
  }
  // A pass now reads the map with the flip and plans the next batch (Drive, from that pass).
  leading_move_.store(false, std::memory_order_release);
  node_.RefreshNow(std::chrono::seconds(5));
}

}  // namespace lawn
