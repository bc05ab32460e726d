#include "core/shard.h"

#include <algorithm>
#include <string>

#include "absl/hash/hash.h"
#include "absl/strings/string_view.h"
#include "core/invariant.h"
#include "core/prefetch.h"

namespace lawn {

namespace {

uint64_t SaturatingAdd(uint64_t a, uint64_t b) { return b > UINT64_MAX - a ? UINT64_MAX : a + b; }

}  // namespace

uint32_t TimerIdHash(std::string_view id) { return static_cast<uint32_t>(absl::Hash<std::string_view>()(id)); }

namespace {

// The group of an id: up to and including its first 0x00 byte; "" when it has none.
std::string_view GroupOf(std::string_view id) {
  const size_t nul = id.find('\0');
  return nul == std::string_view::npos ? std::string_view() : id.substr(0, nul + 1);
}

}  // namespace

Shard::Shard(const ShardOptions& options)
    : tick_ns_(options.tick_ns == 0 ? 1 : options.tick_ns),
      keep_ordered_(options.ordered_index),
      id_groups_(options.id_groups),
      lawn_(pool_, options.max_lawn_buckets),
      wheel_(pool_, tick_ns_),
      router_(options.lawn_promote_after) {
  if (!id_groups_) {
    groups_.emplace_back();
    groups_[0].ordered = OrderedIndex(OrderedLess{&pool_});
    no_group_code_ = 0;
  }
}

Shard::~Shard() = default;

Shard::IdProbe Shard::Probe(std::string_view id) const {
  IdProbe probe;
  probe.whole = id;
  probe.hash = TimerIdHash(id);
  if (!id_groups_) {
    probe.rest = id;
    probe.known = true;
    return probe;
  }
  probe.group = GroupOf(id);
  probe.rest = id.substr(probe.group.size());
  if (probe.group.empty()) {
    probe.known = no_group_code_ >= 0;
    probe.code = static_cast<uint16_t>(no_group_code_);
    return probe;
  }
  // Debian's Abseil has its own string_view type: its string maps look up by that one.
  auto it = group_codes_.find(absl::string_view(probe.group.data(), probe.group.size()));
  if (it != group_codes_.end()) {
    probe.known = true;
    probe.code = it->second;
  }
  return probe;
}

TimerRef Shard::Find(const IdProbe& probe) const {
  if (!probe.known) return kNoTimer;
  return index_.Find(probe.hash, [&](TimerRef ref) {
    const TimerRecord& r = pool_[ref];
    return r.group == probe.code && r.id() == probe.rest;
  });
}

absl::StatusOr<uint16_t> Shard::GroupCode(const IdProbe& probe) {
  if (probe.known) return probe.code;
  if (groups() >= kMaxGroups) {
    return absl::ResourceExhaustedError("a shard holds timers of at most 65536 id groups (namespaces) at once");
  }
  uint16_t code;
  if (!free_group_codes_.empty()) {
    code = free_group_codes_.back();
    free_group_codes_.pop_back();
  } else {
    code = static_cast<uint16_t>(groups_.size());
    groups_.emplace_back();
    groups_.back().ordered = OrderedIndex(OrderedLess{&pool_});
  }
  if (probe.group.empty()) {
    no_group_code_ = code;
  } else {
    groups_[code].name.assign(probe.group);
    group_codes_.emplace(groups_[code].name, code);
  }
  return code;
}

void Shard::InsertOrdered(uint16_t code, TimerRef ref) {
  if (groups_[code].ordered.insert(OrderedRefOf(ref)).second) ++ordered_entries_;
}

void Shard::EraseOrdered(uint16_t code, TimerRef ref) {
  ordered_entries_ -= groups_[code].ordered.erase(OrderedRefOf(ref));
}

void Shard::DropOrder(Group& group) {
  ordered_entries_ -= group.ordered.size();
  group.ordered.clear();
  group.order = Order::kNone;
  group.build_cursor = 0;
  group.build_end = 0;
}

void Shard::Forget(TimerRef ref) {
  if (!index_.Erase(ref, pool_[ref].id_hash)) InvariantBroken("Shard", "forgotten timer not in the index");
  const uint16_t code = pool_[ref].group;
  if (Ordered(code)) EraseOrdered(code, ref);
  pool_.Free(ref);
  if (id_groups_ && --groups_[code].timers == 0) {
    // The code may name another group next, which starts unindexed.
    DropOrder(groups_[code]);
    if (groups_[code].name.empty()) {
      no_group_code_ = -1;
    } else {
      group_codes_.erase(groups_[code].name);
      groups_[code].name.clear();
      groups_[code].name.shrink_to_fit();
    }
    free_group_codes_.push_back(code);
  }
}

TimerView Shard::ViewOf(TimerRef ref) const {
  const TimerRecord& r = pool_[ref];
  return {r.id(), r.payload(), r.deadline_ns, r.ttl_ns, r.interval_ns, GroupName(r.group)};
}

bool Shard::WholeIdLess(TimerRef a, TimerRef b) const {
  const TimerRecord& ra = pool_[a];
  const TimerRecord& rb = pool_[b];
  if (ra.group == rb.group) return ra.id() < rb.id();
  // Different groups: compare the whole ids (rare: only on a deadline and 32-bit hash tie).
  return ViewOf(a).Key() < ViewOf(b).Key();
}

uint64_t Shard::DeadlineTick(uint64_t deadline_ns) const {
  return deadline_ns / tick_ns_ + (deadline_ns % tick_ns_ != 0);
}

void Shard::File(TimerRef ref, bool ttl_based) {
  const TimerRecord& r = pool_[ref];
  // Only timers armed as now + ttl keep a bucket in deadline order; absolute deadlines go to the wheel.
  if (ttl_based && (lawn_.HasBucket(r.ttl_ns) || router_.Observe(r.ttl_ns)) && lawn_.TryPush(ref)) return;
  wheel_.Insert(ref);
}

void Shard::Unfile(TimerRef ref) {
  switch (pool_[ref].home) {
    case Home::kLawn: lawn_.Remove(ref); break;
    case Home::kWheel: wheel_.Remove(ref); break;
    case Home::kHeld: Unhold(ref); break;
    case Home::kNone:
      InvariantBroken("Shard", "pending timer not filed");
  }
}

absl::Status Shard::Start(const StartSpec& spec, uint64_t now_ns) {
  return Start(spec, now_ns, [](const TimerView&) {});
}

absl::Status Shard::Start(const StartSpec& spec, uint64_t now_ns, TimerVisitor on_started) {
  if (spec.id.empty()) return absl::InvalidArgumentError("id must not be empty");
  if (spec.when.kind == When::Kind::kTtl && spec.when.value_ns == 0) {
    return absl::InvalidArgumentError("ttl must be > 0");
  }
  const IdProbe probe = Probe(spec.id);
  if (probe.rest.size() > TimerRecord::kMaxIdBytes) {
    return absl::InvalidArgumentError("an id may have at most 65535 bytes after its group");
  }
  TimerRef ref = Find(probe);
  if (ref != kNoTimer) {
    if (!spec.replace) return absl::AlreadyExistsError("timer '" + std::string(spec.id) + "' already exists");
    Unfile(ref);
    pool_.SetPayload(ref, spec.payload);
  } else {
    uint16_t code = 0;
    if (id_groups_) {
      absl::StatusOr<uint16_t> known = GroupCode(probe);
      if (!known.ok()) return known.status();
      code = *known;
      ++groups_[code].timers;
    }
    ref = pool_.Allocate(probe.rest, spec.payload, probe.hash, code);
    index_.Insert(ref, probe.hash, [this](TimerRef r) { return pool_[r].id_hash; });
    if (Ordered(code)) InsertOrdered(code, ref);
  }
  TimerRecord& r = pool_[ref];
  if (spec.when.kind == When::Kind::kTtl) {
    r.ttl_ns = spec.when.value_ns;
    r.deadline_ns = SaturatingAdd(now_ns, spec.when.value_ns);
  } else {
    r.deadline_ns = spec.when.value_ns;
    r.ttl_ns = spec.ttl_ns != 0 ? spec.ttl_ns : r.deadline_ns > now_ns ? r.deadline_ns - now_ns : 0;
  }
  r.interval_ns = spec.interval_ns;
  File(ref, spec.when.kind == When::Kind::kTtl);
  on_started(ViewOf(ref));
  return absl::OkStatus();
}

absl::Status Shard::Delete(std::string_view id) { return Delete(id, [](const TimerView&) {}); }

absl::Status Shard::Delete(std::string_view id, TimerVisitor on_deleted) {
  const TimerRef ref = Find(id);
  if (ref == kNoTimer) return absl::NotFoundError("no pending timer '" + std::string(id) + "'");
  on_deleted(ViewOf(ref));
  Unfile(ref);
  Forget(ref);
  return absl::OkStatus();
}

absl::Status Shard::Reschedule(std::string_view id, When when, uint64_t now_ns) {
  return Reschedule(id, when, now_ns, [](const TimerView&, uint64_t) {});
}

absl::Status Shard::Reschedule(std::string_view id, When when, uint64_t now_ns,
                               RescheduleVisitor on_rescheduled) {
  if (when.kind == When::Kind::kTtl && when.value_ns == 0) return absl::InvalidArgumentError("ttl must be > 0");
  const TimerRef ref = Find(id);
  if (ref == kNoTimer) return absl::NotFoundError("no pending timer '" + std::string(id) + "'");
  Unfile(ref);
  TimerRecord& r = pool_[ref];
  const uint64_t previous_deadline_ns = r.deadline_ns;
  if (when.kind == When::Kind::kTtl) {
    r.ttl_ns = when.value_ns;
    r.deadline_ns = SaturatingAdd(now_ns, when.value_ns);
  } else {
    r.deadline_ns = when.value_ns;
    r.ttl_ns = r.deadline_ns > now_ns ? r.deadline_ns - now_ns : 0;
  }
  File(ref, when.kind == When::Kind::kTtl);
  on_rescheduled(ViewOf(ref), previous_deadline_ns);
  return absl::OkStatus();
}

void Shard::Prefetch(uint32_t id_hash, PrefetchStep step) const {
  switch (step) {
    case PrefetchStep::kIndex:
      index_.Prefetch(id_hash);
      return;
    case PrefetchStep::kRecord:
      index_.ForEachCandidate(id_hash, [this](TimerRef ref) { PrefetchLine(&pool_[ref]); });
      return;
    case PrefetchStep::kLinks:
      index_.ForEachCandidate(id_hash, [this](TimerRef ref) {
        const TimerRecord& r = pool_[ref];
        if (r.prev != kNoTimer) PrefetchLine(&pool_[r.prev]);
        if (r.next != kNoTimer) PrefetchLine(&pool_[r.next]);
      });
      return;
  }
}

std::optional<TimerView> Shard::Get(std::string_view id) const {
  const TimerRef ref = Find(id);
  if (ref == kNoTimer) return std::nullopt;
  return ViewOf(ref);
}

size_t Shard::Advance(uint64_t now_ns, FiredSink sink) {
  return Advance(now_ns, [](const TimerView&) { return AdmitDecision{}; }, sink);
}

size_t Shard::Advance(uint64_t now_ns, AdmitFn admit, FiredSink sink) {
  const uint64_t now_tick = now_ns / tick_ns_;
  size_t fired = 0;
  while (true) {
    // The next group is every timer due at tick t, the earliest tick among the Lawn front and the wheel.
    const std::optional<uint64_t> wheel_tick = wheel_.NextTick();
    uint64_t t = UINT64_MAX;
    bool any = false;
    if (!lawn_.empty()) {
      t = DeadlineTick(lawn_.FrontDeadline());
      any = true;
    }
    if (wheel_tick && (!any || *wheel_tick < t)) {
      t = *wheel_tick;
      any = true;
    }
    if (!any || t > now_tick) break;
    group_.clear();
    uint64_t taken_tick;
    if (wheel_tick && *wheel_tick <= t) wheel_.TakeDue(t, group_, &taken_tick);
    // Due by tick t means deadline <= t * tick (DeadlineTick rounds up); t <= now_tick, so no overflow.
    lawn_.TakeDue(t * tick_ns_, group_);
    if (group_.empty()) continue;  // Only a cascade happened; look again.
    fired += FireGroup(group_, now_ns, admit, sink);
  }
  wheel_.AdvanceTo(now_tick);
  return fired;
}

size_t Shard::FireGroup(std::vector<TimerRef>& group, uint64_t now_ns, AdmitFn admit, FiredSink sink) {
  // Timers of one tick arrive from both structures in no useful order. Sort compact keys: ids are read only
  // when two timers share a deadline and a 32-bit hash.
  keys_.clear();
  for (TimerRef ref : group) keys_.push_back({pool_[ref].deadline_ns, pool_[ref].id_hash, ref});
  std::sort(keys_.begin(), keys_.end(), [this](const FireKey& a, const FireKey& b) {
    if (a.deadline_ns != b.deadline_ns) return a.deadline_ns < b.deadline_ns;
    if (a.id_hash != b.id_hash) return a.id_hash < b.id_hash;
    return WholeIdLess(a.ref, b.ref);
  });
  for (size_t i = 0; i < keys_.size(); ++i) group[i] = keys_[i].ref;
  size_t fired = 0;
  // A one-shot timer's firing ends in its index erase, a cache miss at a million timers (a fifth of lawnd's
  // CPU while a burst fires): load the index slots a few timers ahead. The keys carry the hashes.
  constexpr size_t kPrefetchAhead = 8;
  for (size_t i = 0; i < keys_.size() && i < kPrefetchAhead; ++i) index_.Prefetch(keys_[i].id_hash);
  for (size_t i = 0; i < group.size(); ++i) {
    const TimerRef ref = group[i];
    if (i + kPrefetchAhead < keys_.size()) index_.Prefetch(keys_[i + kPrefetchAhead].id_hash);
    const AdmitDecision decision = admit(ViewOf(ref));
    const bool recurring = pool_[ref].interval_ns != 0;
    if (decision.action == Admission::kHold || (decision.action == Admission::kSkip && !recurring)) {
      Hold(ref, decision.group);
      continue;
    }
    fired += FireOne(ref, now_ns, decision.action == Admission::kSkip, sink);
  }
  return fired;
}

bool Shard::FireOne(TimerRef ref, uint64_t now_ns, bool skip, FiredSink sink) {
  TimerRecord& r = pool_[ref];
  Fired fired{ViewOf(ref), 0, skip};
  if (r.interval_ns == 0) {
    sink(fired);
    Forget(ref);
    return true;
  }
  // Drift-free: the next deadline is on the grid first + k * interval. Missed periods are coalesced, so a
  // re-armed timer is due strictly after now and fires at most once per Advance.
  uint64_t next = SaturatingAdd(r.deadline_ns, r.interval_ns);
  if (next <= now_ns && next != UINT64_MAX) {
    const uint64_t periods = (now_ns - r.deadline_ns) / r.interval_ns + 1;
    const unsigned __int128 ahead = static_cast<unsigned __int128>(periods) * r.interval_ns + r.deadline_ns;
    next = ahead > UINT64_MAX ? UINT64_MAX : static_cast<uint64_t>(ahead);
  }
  fired.next_deadline_ns = next;
  sink(fired);
  r.deadline_ns = next;
  r.ttl_ns = r.interval_ns;  // Re-armed timers share a Lawn bucket per interval, in firing order.
  File(ref, /*ttl_based=*/next - now_ns == r.interval_ns);
  return !skip;
}

void Shard::Hold(TimerRef ref, uint16_t group) {
  HeldList& list = held_[group];
  TimerRecord& r = pool_[ref];
  r.home = Home::kHeld;
  r.location = group;
  AppendToList(pool_, ref, list.head, list.tail);
  ++list.size;
  ++held_count_;
}

void Shard::Unhold(TimerRef ref) {
  TimerRecord& r = pool_[ref];
  auto it = held_.find(r.location);
  if (it == held_.end()) InvariantBroken("Shard", "held timer's group has no list");
  HeldList& list = it->second;
  UnlinkFromList(pool_, ref, list.head, list.tail);
  r.home = Home::kNone;
  --held_count_;
  if (--list.size == 0) held_.erase(it);
}

size_t Shard::held(uint16_t group) const {
  auto it = held_.find(group);
  return it == held_.end() ? 0 : it->second.size;
}

size_t Shard::ReleaseHeld(uint16_t group, uint64_t now_ns, AdmitFn admit, FiredSink sink) {
  size_t fired = 0;
  while (true) {
    auto it = held_.find(group);
    if (it == held_.end()) break;
    const TimerRef ref = it->second.head;
    const AdmitDecision decision = admit(ViewOf(ref));
    const bool recurring = pool_[ref].interval_ns != 0;
    if (decision.action == Admission::kHold || (decision.action == Admission::kSkip && !recurring)) break;
    Unhold(ref);  // May erase the list: `it` is not used again.
    fired += FireOne(ref, now_ns, decision.action == Admission::kSkip, sink);
  }
  return fired;
}

std::vector<Timer> Shard::AdvanceCollect(uint64_t now_ns) {
  std::vector<Timer> out;
  Advance(now_ns, [&out](const Fired& f) { out.push_back(Timer::From(f.timer)); });
  return out;
}

std::optional<uint64_t> Shard::NextDeadlineNs() const {
  std::optional<uint64_t> tick = wheel_.NextTick();
  if (!lawn_.empty()) {
    const uint64_t t = DeadlineTick(lawn_.FrontDeadline());
    if (!tick || t < *tick) tick = t;
  }
  if (!tick) return std::nullopt;
  const unsigned __int128 ns = static_cast<unsigned __int128>(*tick) * tick_ns_;
  return ns > UINT64_MAX ? UINT64_MAX : static_cast<uint64_t>(ns);
}

void Shard::SetTick(uint64_t tick_ns, uint64_t /*now_ns*/) {
  if (tick_ns == 0) InvariantBroken("Shard", "tick must be > 0");
  tick_ns_ = tick_ns;
  wheel_.SetTick(tick_ns);  // Lawn is keyed by TTL and ordered by ns deadline: it does not depend on the tick.
}

void Shard::ForEach(TimerVisitor visit) const {
  index_.ForEach([&](TimerRef ref) { visit(ViewOf(ref)); });
}

uint32_t Shard::PrefixOf(std::string_view rest) {
  uint32_t prefix = 0;
  for (size_t i = 0; i < 4; ++i) {
    prefix = (prefix << 8) | (i < rest.size() ? static_cast<unsigned char>(rest[i]) : 0u);
  }
  return prefix;
}

Shard::OrderedRef Shard::OrderedRefOf(TimerRef ref) const { return {PrefixOf(pool_[ref].id()), ref}; }

bool Shard::RequestOrder(std::string_view id, uint64_t now_ns, size_t* budget) {
  if (!keep_ordered_) InvariantBroken("Shard", "RequestOrder needs ShardOptions::ordered_index");
  const IdProbe probe = Probe(id);
  if (!probe.known) return true;  // No pending timer in that group: nothing to order.
  Group& group = groups_[probe.code];
  group.order_used_ns = now_ns;
  if (group.order == Order::kComplete) return true;
  if (group.order == Order::kNone) {
    group.order = Order::kBuilding;
    group.build_cursor = 0;
    group.build_end = pool_.used();
  }
  // Timers started from now on are inserted as they start, and deleted ones erased (a no-op for those not
  // reached yet); the scan adds the rest. Records at or above build_end were allocated after the build began,
  // so they are in already: the scan's end stays put, or a group loaded faster than it is scanned would never
  // be complete. A record below it that was freed and reused meanwhile is in too; inserted twice, it is kept
  // once.
  while (group.build_cursor < group.build_end && *budget > 0) {
    const TimerRef ref = group.build_cursor++;
    const TimerRecord& r = pool_[ref];
    size_t cost = 1;
    if (r.home != Home::kNone && r.group == probe.code) {
      InsertOrdered(probe.code, ref);
      cost += kOrderInsertCost;
    }
    *budget -= std::min(*budget, cost);
  }
  if (group.build_cursor < group.build_end) return false;
  group.order = Order::kComplete;
  return true;
}

size_t Shard::DropOrdersUnusedSince(uint64_t before_ns) {
  size_t dropped = 0;
  for (Group& group : groups_) {
    if (group.order != Order::kNone && group.order_used_ns < before_ns) {
      DropOrder(group);
      ++dropped;
    }
  }
  return dropped;
}

void Shard::VisitGroupInOrder(std::string_view after, bool inclusive,
                              absl::FunctionRef<bool(const TimerView&)> visit) const {
  if (!keep_ordered_) InvariantBroken("Shard", "VisitGroupInOrder needs ShardOptions::ordered_index");
  const IdProbe id = Probe(after);
  if (!id.known) return;  // No pending timer in that group.
  if (groups_[id.code].order != Order::kComplete) {
    InvariantBroken("Shard", "VisitGroupInOrder before RequestOrder completed");
  }
  const OrderedIndex& ordered = groups_[id.code].ordered;
  const OrderedProbe probe{PrefixOf(id.rest), id.rest};
  for (auto it = inclusive ? ordered.lower_bound(probe) : ordered.upper_bound(probe); it != ordered.end(); ++it) {
    if (!visit(ViewOf(it->ref))) return;
  }
}

size_t Shard::MemoryBytes() const {
  return sizeof(*this) + pool_.MemoryBytes() + index_.MemoryBytes() +
         lawn_.MemoryBytes() + wheel_.MemoryBytes() + group_.capacity() * sizeof(TimerRef) +
         keys_.capacity() * sizeof(FireKey) +
         // B-tree nodes filled in random order are about 2/3 full.
         ordered_entries_ * sizeof(OrderedRef) * 3 / 2 +
         groups_.capacity() * sizeof(Group) + group_codes_.capacity() * (sizeof(std::string) + 3);
}

void Shard::CheckInvariants() const {
  lawn_.CheckInvariants();
  wheel_.CheckInvariants();
  if (index_.size() != pool_.live()) InvariantBroken("Shard", "index size differs from live records");
  size_t ordered_size = 0;
  for (size_t code = 0; code < groups_.size(); ++code) {
    const OrderedIndex& ordered = groups_[code].ordered;
    if (!keep_ordered_ && !ordered.empty()) {
      InvariantBroken("Shard", "ordered index kept without ordered_index");
    }
    if (groups_[code].order == Order::kNone && !ordered.empty()) {
      InvariantBroken("Shard", "unasked ordered index");
    }
    // Without id_groups the one group's count is the pool's.
    const size_t timers = id_groups_ ? groups_[code].timers : pool_.live();
    if (groups_[code].order == Order::kComplete ? ordered.size() != timers : ordered.size() > timers) {
      InvariantBroken("Shard", "ordered index size differs from the group's timers");
    }
    ordered_size += ordered.size();
    for (auto it = ordered.begin(); it != ordered.end(); ++it) {
      if (!index_.Contains(it->ref, pool_[it->ref].id_hash)) {
        InvariantBroken("Shard", "ordered index holds a dead ref");
      }
      if (pool_[it->ref].group != code) {
        InvariantBroken("Shard", "ordered index of another group holds the timer");
      }
      if (PrefixOf(pool_[it->ref].id()) != it->prefix) InvariantBroken("Shard", "ordered key is stale");
      if (std::next(it) != ordered.end() && !ordered.key_comp()(*it, *std::next(it))) {
        InvariantBroken("Shard", "ordered index out of order");
      }
    }
  }
  if (ordered_size != ordered_entries_) InvariantBroken("Shard", "ordered entry count");
  if (lawn_.size() + wheel_.size() + held_count_ != pool_.live()) {
    InvariantBroken("Shard", "filed and held timers differ from live records");
  }
  size_t held = 0;
  for (const auto& [group, list] : held_) {
    if (list.size == 0 || list.head == kNoTimer) InvariantBroken("Shard", "empty held list kept");
    size_t n = 0;
    TimerRef prev = kNoTimer;
    for (TimerRef ref = list.head; ref != kNoTimer; ref = pool_[ref].next) {
      const TimerRecord& r = pool_[ref];
      if (r.home != Home::kHeld || r.location != group || r.prev != prev) {
        InvariantBroken("Shard", "held list links");
      }
      prev = ref;
      ++n;
    }
    if (n != list.size || prev != list.tail) InvariantBroken("Shard", "held list size or tail");
    held += n;
  }
  if (held != held_count_) InvariantBroken("Shard", "held count");
  std::vector<uint64_t> group_timers(groups_.size(), 0);
  std::vector<TimerRef> indexed;
  indexed.reserve(index_.size());
  index_.ForEach([&](TimerRef ref) { indexed.push_back(ref); });
  std::sort(indexed.begin(), indexed.end());
  if (std::adjacent_find(indexed.begin(), indexed.end()) != indexed.end()) {
    InvariantBroken("Shard", "a ref indexed twice");
  }
  for (TimerRef ref : indexed) {
    const TimerRecord& r = pool_[ref];
    const std::string whole = ViewOf(ref).Key();
    if (r.home == Home::kNone) InvariantBroken("Shard", "indexed timer not filed");
    if (Find(whole) != ref) InvariantBroken("Shard", "index lookup does not find the record");
    if (r.id_hash != TimerIdHash(whole)) InvariantBroken("Shard", "stale id hash");
    if (!id_groups_) {
      if (r.group != 0) InvariantBroken("Shard", "a group code without id_groups");
      continue;
    }
    if (r.group >= groups_.size() || groups_[r.group].timers == 0) {
      InvariantBroken("Shard", "record's code names no group");
    }
    if (groups_[r.group].name.empty() ? r.group != no_group_code_ : GroupOf(whole) != groups_[r.group].name) {
      InvariantBroken("Shard", "record's code names another group");
    }
    ++group_timers[r.group];
  }
  if (!id_groups_) {
    if (groups_.size() != 1 || no_group_code_ != 0 || !group_codes_.empty()) {
      InvariantBroken("Shard", "group table used");
    }
    return;
  }
  for (size_t code = 0; code < groups_.size(); ++code) {
    const Group& g = groups_[code];
    if (group_timers[code] != g.timers) InvariantBroken("Shard", "group's timer count");
    if (g.timers == 0 && !g.name.empty()) InvariantBroken("Shard", "free group code keeps a name");
    if (g.timers != 0 && !g.name.empty()) {
      auto it = group_codes_.find(g.name);  // std::string: no conversion needed.
      if (it == group_codes_.end() || it->second != code) {
        InvariantBroken("Shard", "group table and its names differ");
      }
    }
  }
  if (groups() + free_group_codes_.size() != groups_.size()) InvariantBroken("Shard", "group codes lost");
}

}  // namespace lawn
