// PartitionMover (server/partition_mover.h): the target's side of a hand-over, and the start-up Settle.
#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "server/handover_commands.h"
#include "server/partition_mover.h"
#include "spdlog/spdlog.h"

namespace lawn {

void PartitionMover::Import(v1::ImportPartitionsRequest request, std::function<void(absl::Status)> done) {
  incoming_thread_.Post([this, request = std::move(request), done = std::move(done)] { done(RunImport(request)); });
}

void PartitionMover::Activate(v1::ActivatePartitionsRequest request, std::function<void(absl::Status)> done) {
  incoming_thread_.Post([this, request = std::move(request), done = std::move(done)] {
    // The flip was just written: read the map that shows it before taking over.
    node_.RefreshNow(std::chrono::seconds(5));
    done(RunActivate(request.move_id()));
  });
}

absl::Status PartitionMover::RunImport(const v1::ImportPartitionsRequest& request) {
  if (stopping_.load(std::memory_order_acquire)) return absl::UnavailableError("member is shutting down");
  if (!settled_.load(std::memory_order_acquire)) return absl::UnavailableError("member is still settling");
  TimerStore* store = runtime_.store();
  if (store == nullptr) return absl::FailedPreconditionError("a member without a store cannot take partitions");
  Incoming* in = nullptr;
  std::vector<uint32_t> unblock;
  if (!request.abort() && request.partitions_size() > 0) {
    for (uint32_t p : request.partitions()) {
      if (p >= gate_.partitions()) return absl::InvalidArgumentError(absl::StrCat("partition ", p, " out of range"));
      if (gate_.Owned(p)) {
        return absl::FailedPreconditionError(absl::StrCat("partition ", p, " is already this member's"));
      }
    }
    // A new hand-over of partitions that an earlier one was bringing (its source died before its flip and the
    // leader tried again): what the old one left is dropped first, or its expirations would arrive twice
    // and its blocks would never go.
    std::vector<std::string> superseded;
    bool complete = false;
    {
      absl::MutexLock lock(&mu_);
      for (const auto& [id, old] : incoming_) {
        if (id == request.move_id()) continue;
        for (uint32_t p : old.partitions) {
          if (std::find(request.partitions().begin(), request.partitions().end(), p) != request.partitions().end()) {
            superseded.push_back(id);
            complete |= old.complete;
            break;
          }
        }
      }
      if (superseded.empty() && incoming_.size() >= kMaxIncoming) {
        return absl::ResourceExhaustedError(absl::StrCat("member takes at most ", kMaxIncoming,
                                                         " hand-overs at once; retry when one has ended"));
      }
    }
    if (complete) {
      // An earlier hand-over of these partitions arrived whole: had its flip happened, this member would own
      // them. Make sure of it with a fresh map before dropping it (a stale one might not show the flip yet).
      if (!node_.RefreshNow(std::chrono::seconds(5))) {
        return absl::UnavailableError("cannot read the cluster map to check an earlier hand-over; retry");
      }
      for (uint32_t p : request.partitions()) {
        if (gate_.Owned(p)) {
          return absl::FailedPreconditionError(absl::StrCat("partition ", p, " is already this member's"));
        }
      }
    }
    for (const std::string& id : superseded) {
      v1::ImportPartitionsRequest abort;
      abort.set_move_id(id);
      abort.set_abort(true);
      if (absl::Status s = RunImport(abort); !s.ok()) return s;
    }
  }
  {
    absl::MutexLock lock(&mu_);
    auto it = incoming_.find(request.move_id());
    if (it == incoming_.end()) {
      if (request.abort()) return absl::OkStatus();
      if (request.partitions_size() == 0) {
        return absl::FailedPreconditionError(absl::StrCat("hand-over ", request.move_id(), " is not known here"));
      }
      it = incoming_.emplace(request.move_id(), Incoming{}).first;
      it->second.from = request.from_member();
      it->second.partitions.assign(request.partitions().begin(), request.partitions().end());
      // Closed until the take-over, even once the map names this member.
      for (uint32_t p : it->second.partitions) gate_.Block(p);
    }
    in = &it->second;
    if (in->complete && !request.abort()) {
      return absl::FailedPreconditionError(absl::StrCat("hand-over ", request.move_id(), " already ended"));
    }
  }
  // Only this thread touches `in`'s vectors; the map entry stays until this thread erases it.
  StoreBatch batch;
  if (request.abort()) {
    for (const RecoveredTimer& t : in->timers) batch.DeleteTimer(t.key, t.deadline_unix_ns);
    for (const Delivery& d : in->staged) batch.DeleteIncoming(d.delivery_id);
    absl::Status s = batch.empty() ? absl::OkStatus() : store->Write(batch, SyncMode::kSync);
    spdlog::info("hand-over {} from {} ended unfinished: dropped {} timers and {} expirations that had arrived",
                 request.move_id(), in->from, in->timers.size(), in->staged.size());
    {
      absl::MutexLock lock(&mu_);
      unblock = std::move(in->partitions);
      incoming_.erase(request.move_id());
    }
    Unblock(unblock);
    return s;
  }
  // Only records of the partitions this hand-over brings: anything else could overwrite a timer this member
  // serves.
  for (const auto* list : {&request.timers(), &request.expirations()}) {
    for (const v1::HandedOverTimer& t : *list) {
      const uint32_t p = gate_.PartitionOfKey(t.key());
      if (t.key().find('\0') == std::string::npos ||
          std::find(in->partitions.begin(), in->partitions.end(), p) == in->partitions.end()) {
        return absl::InvalidArgumentError(absl::StrCat("hand-over ", request.move_id(), " carries a timer of partition ",
                                                       p, ", which it does not bring"));
      }
    }
  }
  const size_t first_timer = in->timers.size();
  const size_t first_staged = in->staged.size();
  for (const v1::HandedOverTimer& t : request.timers()) {
    in->timers.push_back(RecoveredTimer{t.key(), t.payload(), t.deadline_unix_ns(), t.ttl_ns(), t.interval_ns()});
    batch.PutTimer(t.key(), t.deadline_unix_ns(), t.ttl_ns(), t.interval_ns(), t.payload());
  }
  const uint64_t epoch = runtime_.boot_epoch();
  for (const v1::HandedOverTimer& e : request.expirations()) {
    Delivery& d = in->staged.emplace_back();
    // Unique across this member's runs: the boot epoch above a counter.
    d.delivery_id = (epoch << 40) | staging_seq_.fetch_add(1, std::memory_order_relaxed);
    d.key = e.key();
    d.payload = e.payload();
    d.deadline_unix_ns = e.deadline_unix_ns();
    d.fired_at_unix_ns = e.fired_at_unix_ns();
    d.ttl_ns = e.ttl_ns();
    d.interval_ns = e.interval_ns();
    d.attempt = e.attempt();
    d.late = static_cast<__int128>(d.fired_at_unix_ns) - d.deadline_unix_ns > static_cast<__int128>(kLateAfterNs);
    batch.PutIncoming(d.delivery_id, d.key, d.deadline_unix_ns, d.ttl_ns, d.interval_ns, d.payload,
                      d.fired_at_unix_ns, d.attempt);
  }
  if (!batch.empty()) {
    if (absl::Status s = store->Write(batch, SyncMode::kSync); !s.ok()) {
      in->timers.resize(first_timer);
      in->staged.resize(first_staged);
      return s;
    }
  }
  if (request.last()) {
    absl::MutexLock lock(&mu_);
    in->complete = true;
  }
  return absl::OkStatus();
}

absl::Status PartitionMover::RunActivate(const std::string& move_id) {
  Incoming taken;
  {
    absl::MutexLock lock(&mu_);
    auto it = incoming_.find(move_id);
    if (it == incoming_.end()) return absl::OkStatus();  // Taken over already (the map came first).
    if (!it->second.complete) {
      return absl::FailedPreconditionError(absl::StrCat("hand-over ", move_id, " has not arrived whole"));
    }
    for (uint32_t p : it->second.partitions) {
      if (!gate_.Owned(p)) {
        return absl::FailedPreconditionError(
            absl::StrCat("partition ", p, " of hand-over ", move_id, " is not this member's in its map yet"));
      }
    }
    taken = std::move(it->second);
    incoming_.erase(it);
  }
  const size_t timers = taken.timers.size(), staged = taken.staged.size();
  absl::Status s = TakeOver(std::move(taken.timers), std::move(taken.staged));
  Unblock(taken.partitions);
  spdlog::info("hand-over {} from {}: took over {} partitions, {} timers and {} expirations{}", move_id, taken.from,
               taken.partitions.size(), timers, staged, s.ok() ? "" : absl::StrCat(" (", s.ToString(), ")"));
  return s;
}

absl::Status PartitionMover::TakeOver(std::vector<RecoveredTimer> timers, std::vector<Delivery> staged) {
  const uint32_t shards = runtime_.shard_count();
  std::vector<std::vector<RecoveredTimer>> timer_slots(shards);
  for (RecoveredTimer& t : timers) timer_slots[runtime_.ShardFor(t.key)].push_back(std::move(t));
  std::vector<std::vector<Delivery>> staged_slots(shards);
  for (Delivery& d : staged) staged_slots[runtime_.ShardFor(d.key)].push_back(std::move(d));
  std::vector<absl::Status> adopted(shards);
  runtime_.RunOnEveryShard([&](uint32_t shard) -> std::unique_ptr<ShardCommand> {
    return std::make_unique<RecoverCommand>(std::move(timer_slots[shard]));
  });
  runtime_.RunOnEveryShard([&](uint32_t shard) -> std::unique_ptr<ShardCommand> {
    return std::make_unique<AdoptCommand>(std::move(staged_slots[shard]), &adopted[shard]);
  });
  for (const absl::Status& s : adopted) {
    if (!s.ok()) return s;  // They stay staged; the next start adopts them.
  }
  return absl::OkStatus();
}

void PartitionMover::OnMap(const ClusterMap& map) {
  std::vector<bool> owned(gate_.partitions(), false);
  for (uint32_t p = 0; p < map.owners.size() && p < owned.size(); ++p) owned[p] = map.owners[p] == map.self;
  if (gate_.SetOwned(owned)) runtime_.ReleaseGated();
  if (stopping_.load(std::memory_order_acquire) || !runtime_.ready()) return;
  if (!settled_.load(std::memory_order_acquire)) {
    bool formed = true;  // Settle once every partition has an owner (a new cluster hands them out first).
    for (const std::string& owner : map.owners) formed = formed && !owner.empty();
    if (formed && !settling_.exchange(true)) {
      incoming_thread_.Post([this, m = std::make_shared<const ClusterMap>(map)] { Settle(m); });
    }
    return;
  }
  // Hand-overs that arrived whole and whose partitions the map now gives this member (the source may have
  // died between its flip and its ActivatePartitions).
  std::vector<std::string> ready;
  {
    absl::MutexLock lock(&mu_);
    for (const auto& [id, in] : incoming_) {
      bool all = in.complete;
      for (uint32_t p : in.partitions) all = all && owned[p];
      if (all) ready.push_back(id);
    }
  }
  for (const std::string& id : ready) {
    incoming_thread_.Post([this, id] { RunActivate(id).IgnoreError(); });
  }
}

void PartitionMover::Settle(std::shared_ptr<const ClusterMap> map) {
  std::vector<bool> foreign(gate_.partitions(), false);
  bool any = false;
  for (uint32_t p = 0; p < gate_.partitions(); ++p) {
    foreign[p] = p < map->owners.size() && !map->owners[p].empty() && map->owners[p] != map->self;
    any |= foreign[p];
  }
  uint64_t dropped_timers = 0, dropped_expirations = 0, adopted = 0, dropped_staged = 0;
  // What recovery read back from the outbox: published now if the partition is this member's, deleted if
  // another member owns it (this one handed it over and stopped before deleting its copy).
  {
    std::vector<Delivery> foreign_parked, own;
    for (Delivery& d : runtime_.TakeParkedExpirations()) {
      (foreign[gate_.PartitionOfKey(d.key)] ? foreign_parked : own).push_back(std::move(d));
    }
    runtime_.PublishPersisted(std::move(own), "cluster settle");  // In delivery-id order, as recovery read them.
    dropped_expirations += foreign_parked.size();
    if (absl::Status s = DeleteExpirations(foreign_parked); !s.ok()) {
      spdlog::error("cluster settle: deleting expirations of partitions owned elsewhere failed: {}", s.ToString());
    }
  }
  if (any) {
    // What a source that died after its flip left here: the new owner has it all.
    std::vector<std::vector<RecoveredTimer>> slots = Export(foreign);
    std::vector<absl::Status> dropped(slots.size());
    runtime_.RunOnEveryShard(
        [&](uint32_t shard) { return std::make_unique<DropTimersCommand>(slots[shard], &dropped[shard]); });
    for (const auto& slot : slots) dropped_timers += slot.size();
    std::vector<Delivery> expirations = ExtractExpirations(foreign);
    dropped_expirations += expirations.size();
    if (absl::Status s = DeleteExpirations(expirations); !s.ok()) {
      spdlog::error("cluster settle: deleting expirations of partitions owned elsewhere failed: {}", s.ToString());
    }
  }
  // The staging area: expirations of hand-overs that did not finish here.
  std::vector<Delivery> adopt;
  StoreBatch drop;
  if (TimerStore* store = runtime_.store()) {
    absl::Status read = store->ForEachIncoming([&](const StoredExpiration& e) {
      if (foreign[gate_.PartitionOfKey(e.timer.key)]) {
        drop.DeleteIncoming(e.delivery_id);
        ++dropped_staged;
        return;
      }
      adopt.push_back(Runtime::DeliveryOf(e));  // delivery_id: the staging id, as AdoptCommand wants.
    });
    if (!read.ok()) spdlog::error("cluster settle: reading the staging area failed: {}", read.ToString());
    if (!drop.empty()) {
      if (absl::Status s = store->Write(drop, SyncMode::kSync); !s.ok()) {
        spdlog::error("cluster settle: dropping staged expirations failed: {}", s.ToString());
      }
    }
  }
  adopted = adopt.size();
  if (!adopt.empty()) {
    if (absl::Status s = TakeOver({}, std::move(adopt)); !s.ok()) {
      spdlog::error("cluster settle: adopting staged expirations failed: {}", s.ToString());
    }
  }
  if (dropped_timers + dropped_expirations + adopted + dropped_staged > 0) {
    spdlog::info("cluster settle: dropped {} timers and {} expirations of partitions owned elsewhere; staged "
                 "expirations: {} adopted, {} dropped",
                 dropped_timers, dropped_expirations, adopted, dropped_staged);
  }
  runtime_.ReleaseGated();
  settled_.store(true, std::memory_order_release);
}

}  // namespace lawn
