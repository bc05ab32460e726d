// Shard: one worker's timer engine. Lawn TTL buckets (regular TTLs) + a hierarchical timing wheel (everything
// else) + an id index, behind one interface.
//
// Time: every method takes `now_ns`, a monotonic clock reading in nanoseconds chosen by the caller; the shard
// never reads a clock. `now_ns` must not go backwards between calls. Deadlines are absolute values on the
// same clock. The tick quantizes time: a timer is due once floor(now / tick) >= ceil(deadline / tick), so it
// never fires before its deadline and at most one tick after it (given Advance is called that often).
//
// Order: Advance reports due timers ordered by (deadline_ns, TimerIdHash(id), id): by deadline, ties in an
// arbitrary but deterministic order that costs no id comparison (ids are compared only on a hash tie). A timer started with a deadline that has
// already passed follows the same rule: it fires at the first Advance whose tick reaches its deadline's tick,
// which is the next Advance unless both fall within one tick.
//
// Recurring timers (interval > 0) re-arm drift-free: next deadline = fired deadline + interval. If the worker
// fell so far behind that the next deadline is also past, missed periods are coalesced: the timer fires once
// for this Advance and is re-armed at the first deadline on its grid that is after `now_ns`.
//
// Holding: the caller may refuse to take a due timer now (its consumer is full). Advance's `admit` decides
// per due timer: fire it, hold it (it leaves the wheel and Lawn for a FIFO list of its hold group, keeps its
// deadline, stays pending: Get, Delete, Reschedule and replace work on it as on any timer, and it is not
// reported again until ReleaseHeld offers it), or, for a recurring timer, skip this firing (it is re-armed on
// its grid and reported with `skipped` set, so the caller can persist its next deadline). A held timer is
// never fired early: it was due when held, and it fires only when released.
//
// Groups (ShardOptions::id_groups): an id's group is its bytes up to and including its first 0x00 byte, or
// none when it has no 0x00 (lawnd's ids are `namespace \0 id`: a group is a namespace). The shard keeps each
// group's bytes once, in a table of at most 65,536 groups with pending timers (no group counts as one), and a
// 16-bit code in each record, so that a short id after a long group still fits inside its record (no
// allocation; BENCHMARKS.md section 5). Views return the two parts apart (TimerView::group, TimerView::id);
// every method takes the whole id. Without id_groups every id is in the one group "" (binary ids with 0x00
// bytes in them cost nothing extra).
//
// Thread-safety: none. A shard is owned by one thread.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/btree_set.h"
#include "absl/container/flat_hash_map.h"
#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/id_index.h"
#include "core/lawn.h"
#include "core/timer_pool.h"
#include "core/timing_wheel.h"
#include "core/ttl_router.h"

namespace lawn {

struct ShardOptions {
  uint64_t tick_ns = 1'000'000;       // Resolution; default 1 ms. Must be > 0.
  uint32_t max_lawn_buckets = 1024;   // Bound on distinct TTLs held in Lawn buckets at once.
  uint32_t lawn_promote_after = 2;    // Sightings of a TTL before its timers go to a Lawn bucket.
  // Keep, per group, an index of ids in byte order (a B-tree of 8-byte entries) so VisitGroupInOrder reads a
  // range instead of scanning every timer. A group's index exists only once RequestOrder asked for it, and
  // until DropOrdersUnusedSince drops it: it costs each start and each delete or expiration of the group a
  // B-tree insert or erase, a cache miss or more per level at a million timers (BENCHMARKS.md sections 7,
  // 22).
  bool ordered_index = false;
  // Split ids into groups (see "Groups" above): for ids that share long prefixes up to a 0x00 byte.
  bool id_groups = false;
};

// When a timer is due: `ttl_ns` after now, or at the absolute `deadline_ns`.
struct When {
  enum class Kind : uint8_t { kTtl, kDeadline };
  Kind kind = Kind::kTtl;
  uint64_t value_ns = 0;
  static When After(uint64_t ttl_ns) { return {Kind::kTtl, ttl_ns}; }
  static When At(uint64_t deadline_ns) { return {Kind::kDeadline, deadline_ns}; }
};

struct StartSpec {
  std::string_view id;
  std::string_view payload;
  When when;
  uint64_t interval_ns = 0;  // 0: one-shot.
  bool replace = false;      // If the id exists: replace it instead of failing.
  uint64_t ttl_ns = 0;       // With When::At: the ttl to record (0: deadline - now). Used by recovery.
};

// A read-only view of a timer; valid until the next mutating call on the shard. The timer's id is `group`
// followed by `id` (see "Groups" above): for an id without a 0x00 byte, `group` is empty and `id` is all of it.
struct TimerView {
  std::string_view id;  // The id after its group.
  std::string_view payload;
  uint64_t deadline_ns = 0;
  uint64_t ttl_ns = 0;
  uint64_t interval_ns = 0;
  std::string_view group;  // The id's group, its trailing 0x00 included; "" when it has none.

  size_t key_size() const { return group.size() + id.size(); }
  std::string Key() const {
    std::string key;
    key.reserve(key_size());
    key.append(group).append(id);
    return key;
  }
};

// An owning copy, for callers that keep a timer past the next mutation. `id` is the whole id, group included.
struct Timer {
  std::string id;
  std::string payload;
  uint64_t deadline_ns = 0;
  uint64_t ttl_ns = 0;
  uint64_t interval_ns = 0;
  static Timer From(const TimerView& v) {
    return {v.Key(), std::string(v.payload), v.deadline_ns, v.ttl_ns, v.interval_ns};
  }
};

// One expiration reported by Advance. `timer.deadline_ns` is the deadline that fired; for a recurring timer
// `next_deadline_ns` is the deadline it was re-armed at (0 for one-shot timers, which are gone). A re-armed
// timer's ttl_ns becomes its interval (the time from arming to deadline, as for any TTL timer).
struct Fired {
  TimerView timer;
  uint64_t next_deadline_ns = 0;
  bool skipped = false;  // A recurring timer's firing the caller skipped (Admission::kSkip): re-armed only.
};

using FiredSink = absl::FunctionRef<void(const Fired&)>;

// What to do with one due timer (see "Holding" above).
enum class Admission : uint8_t {
  kFire,
  kHold,  // Keep it pending in hold group `group` until ReleaseHeld(group) admits it.
  kSkip,  // Recurring timers: re-arm without firing. A one-shot timer is held instead.
};
struct AdmitDecision {
  Admission action = Admission::kFire;
  uint16_t group = 0;
};
using AdmitFn = absl::FunctionRef<AdmitDecision(const TimerView&)>;

// The 32-bit hash of an id that orders same-deadline expirations (and keys the shard's index).
uint32_t TimerIdHash(std::string_view id);
using TimerVisitor = absl::FunctionRef<void(const TimerView&)>;

class Shard {
 public:
  explicit Shard(const ShardOptions& options = {});
  Shard(const Shard&) = delete;
  Shard& operator=(const Shard&) = delete;
  ~Shard();

  // Starts a timer. ALREADY_EXISTS if the id is pending and !spec.replace; INVALID_ARGUMENT for an empty id,
  // more than 65,535 id bytes after its group, or a zero ttl; RESOURCE_EXHAUSTED for a 65,537th group with
  // pending timers (id_groups only). On success `on_started` (if given) sees the stored timer.
  absl::Status Start(const StartSpec& spec, uint64_t now_ns);
  absl::Status Start(const StartSpec& spec, uint64_t now_ns, TimerVisitor on_started);

  // Deletes a pending timer; `on_deleted` sees it just before it is freed. NOT_FOUND if there is none.
  absl::Status Delete(std::string_view id);
  absl::Status Delete(std::string_view id, TimerVisitor on_deleted);

  // Moves a pending timer to a new deadline (ttl from now, or absolute); keeps payload and interval.
  // NOT_FOUND if there is none; INVALID_ARGUMENT for a zero ttl. `on_rescheduled` sees the moved timer and
  // the deadline it had (a store keyed by deadline deletes the old record by it, without a second lookup).
  using RescheduleVisitor = absl::FunctionRef<void(const TimerView&, uint64_t previous_deadline_ns)>;
  absl::Status Reschedule(std::string_view id, When when, uint64_t now_ns, RescheduleVisitor on_rescheduled);
  absl::Status Reschedule(std::string_view id, When when, uint64_t now_ns);

  // Looks a timer up; the view is valid until the next mutating call.
  std::optional<TimerView> Get(std::string_view id) const;

  // Loading ahead, for a run of operations on known ids (a batch of starts or deletes, a round of commands).
  // At a million timers each operation waits on cache misses one after another: its index chunk, then the
  // record the chunk points to, then (a delete, a reschedule, a replace) the record's two list neighbours.
  // A caller that knows the ids to come starts those loads some operations early, one dependent step at a
  // time, so that the misses of several operations overlap (core/prefetch_run.h runs the steps):
  //   kIndex  the index chunk of an id with this hash (TimerIdHash of the whole id);
  //   kRecord the records that chunk names for the hash (once the chunk is loaded);
  //   kLinks  those records' list neighbours (once the records are loaded).
  // Each step reads only what the shard holds when it runs, so a step for an id that an operation in between
  // starts or deletes costs a wasted load at most: prefetching never changes a result.
  enum class PrefetchStep : uint8_t { kIndex, kRecord, kLinks };
  void Prefetch(uint32_t id_hash, PrefetchStep step) const;

  // Fires every timer due at `now_ns` in the order above, calling `sink` for each; returns the count.
  size_t Advance(uint64_t now_ns, FiredSink sink);
  // As above, asking `admit` first for each due timer; returns the count of firings reported to `sink`
  // (skipped firings reach `sink` too, with `skipped` set, but are not counted).
  size_t Advance(uint64_t now_ns, AdmitFn admit, FiredSink sink);
  // Offers the timers held in `group`, oldest first, to `admit` again, until it holds one (which stays
  // first). Returns the count of firings, as Advance.
  size_t ReleaseHeld(uint16_t group, uint64_t now_ns, AdmitFn admit, FiredSink sink);
  // Timers held now (all groups).
  size_t held() const { return held_count_; }
  // Timers held in `group`.
  size_t held(uint16_t group) const;
  // Convenience for tests and tools: Advance collecting owning copies.
  std::vector<Timer> AdvanceCollect(uint64_t now_ns);

  // The earliest time at which Advance may have work to do (a lower bound: waking then and calling Advance
  // either fires timers or cascades the wheel). nullopt when nothing is pending.
  std::optional<uint64_t> NextDeadlineNs() const;

  // Changes the resolution on the live shard. Deadlines are kept in nanoseconds, so nothing fires early;
  // wheel timers are re-filed under the new tick (O(wheel timers)). REQUIRES: tick_ns > 0.
  void SetTick(uint64_t tick_ns, uint64_t now_ns);
  uint64_t tick_ns() const { return tick_ns_; }

  // Calls `visit` for every pending timer, in no particular order. Must not mutate the shard.
  void ForEach(TimerVisitor visit) const;

  // Asks for the ordered index of `id`'s group (see "Groups"), noting `now_ns` as its last use, and builds
  // it if it is missing: one scan of the records that existed when the build began (later ones are indexed
  // as they start), spending at most `*budget` units of work per call (a record scanned is one, an entry
  // inserted kOrderInsertCost) and subtracting what it spent, so a caller on a latency-bound thread can
  // spread a large group's build over several calls and share one budget between requests. Returns true once
  // the index is complete, and from then on keeps it complete through every start, delete and expiration.
  // REQUIRES: ShardOptions::ordered_index.
  static constexpr size_t kOrderInsertCost = 64;
  bool RequestOrder(std::string_view id, uint64_t now_ns, size_t* budget);
  // Drops the ordered index of every group whose last RequestOrder was before `before_ns` (it is rebuilt on
  // the next request). Returns how many it dropped. O(groups).
  size_t DropOrdersUnusedSince(uint64_t before_ns);
  // Entries in the ordered indexes (complete or being built), over all groups.
  size_t ordered_entries() const { return ordered_entries_; }

  // Calls `visit` for the pending timers of the group of `after` (see "Groups"), in id byte order, starting
  // at the first id > `after` (or >= `after` when `inclusive`), until `visit` returns false or the group
  // ends. Must not mutate the shard.
  // O(log n + visited). REQUIRES: ShardOptions::ordered_index, and RequestOrder returned true for the group
  // (a group without pending timers needs no request).
  void VisitGroupInOrder(std::string_view after, bool inclusive,
                         absl::FunctionRef<bool(const TimerView&)> visit) const;

  size_t pending() const { return pool_.live(); }
  // Groups with pending timers.
  size_t groups() const {
    if (!id_groups_) return pool_.live() != 0 ? 1 : 0;
    return group_codes_.size() + (no_group_code_ >= 0 ? 1 : 0);
  }
  size_t lawn_pending() const { return lawn_.size(); }
  size_t wheel_pending() const { return wheel_.size(); }
  size_t lawn_buckets() const { return lawn_.bucket_count(); }
  // Approximate bytes held: records, blobs, index, buckets, wheel.
  size_t MemoryBytes() const;

  // Verifies every internal invariant (links, bitmaps, heap order, index); aborts with a message if one is
  // broken. O(n): for tests.
  void CheckInvariants() const;

 private:
  static constexpr size_t kMaxGroups = size_t{UINT16_MAX} + 1;

  // A whole id split at its group, with the group's code resolved.
  struct IdProbe {
    std::string_view whole;
    std::string_view group;
    std::string_view rest;
    uint32_t hash = 0;  // TimerIdHash(whole): computed once, for the index and the new record.
    uint16_t code = 0;
    bool known = false;  // False if this shard holds no timer of the id's group: no timer can match.
  };
  // Each group has its own ordered index, ordered by (first 4 bytes of the id after the group, the rest):
  // most comparisons are decided by the entry's prefix word without reading the record (a cache miss each;
  // BENCHMARKS.md section 7), and an entry is 8 bytes (no group in it).
  struct OrderedRef {
    uint32_t prefix;  // Big-endian, zero-padded: orders like the bytes it holds.
    TimerRef ref;
  };
  struct OrderedProbe {
    uint32_t prefix;
    std::string_view id;  // After the group.
  };
  static uint32_t PrefixOf(std::string_view rest);
  struct OrderedLess {
    using is_transparent = void;
    OrderedLess() : pool(nullptr) {}  // A constructor, not a member initializer: Group uses it in-class.
    explicit OrderedLess(const TimerPool* p) : pool(p) {}
    const TimerPool* pool;
    std::string_view IdOf(const OrderedRef& r) const { return (*pool)[r.ref].id(); }
    std::string_view IdOf(const OrderedProbe& p) const { return p.id; }
    template <typename A, typename B>
    bool operator()(const A& a, const B& b) const {
      if (a.prefix != b.prefix) return a.prefix < b.prefix;
      return IdOf(a) < IdOf(b);
    }
  };
  using OrderedIndex = absl::btree_set<OrderedRef, OrderedLess>;
  OrderedRef OrderedRefOf(TimerRef ref) const;

  // Splits `id` at its group and resolves the group's code.
  IdProbe Probe(std::string_view id) const;
  TimerRef Find(const IdProbe& probe) const;
  // The code of the probe's group, adding the group to the table if it is new. RESOURCE_EXHAUSTED when the
  // table is full.
  absl::StatusOr<uint16_t> GroupCode(const IdProbe& probe);
  std::string_view GroupName(uint16_t code) const { return groups_[code].name; }
  // Whether record a's whole id orders before b's (group bytes, then the rest).
  bool WholeIdLess(TimerRef a, TimerRef b) const;
  TimerRef Find(std::string_view id) const { return Find(Probe(id)); }
  // Frees a live, unfiled timer: index, ordered index, pool.
  void Forget(TimerRef ref);
  TimerView ViewOf(TimerRef ref) const;
  // Files a timer whose deadline/ttl are set into Lawn or the wheel.
  void File(TimerRef ref, bool ttl_based);
  void Unfile(TimerRef ref);
  uint64_t DeadlineTick(uint64_t deadline_ns) const;
  // Sorts a tick's due timers and offers each to `admit`; returns the count reported to `sink`.
  size_t FireGroup(std::vector<TimerRef>& group, uint64_t now_ns, AdmitFn admit, FiredSink sink);
  // Fires (or, `skip`, re-arms without firing) one unfiled due timer; returns whether `sink` saw a firing.
  bool FireOne(TimerRef ref, uint64_t now_ns, bool skip, FiredSink sink);
  void Hold(TimerRef ref, uint16_t group);
  void Unhold(TimerRef ref);

  uint64_t tick_ns_;
  TimerPool pool_;
  enum class Order : uint8_t { kNone, kBuilding, kComplete };
  struct Group {
    std::string name;     // Its bytes, the trailing 0x00 included; "" for ids without a group and free codes.
    uint64_t timers = 0;  // Pending timers of the group in this shard; the code is free while 0.
    // Its timers in id order: none while kNone, some while kBuilding, all once kComplete.
    OrderedIndex ordered;
    Order order = Order::kNone;
    TimerRef build_cursor = 0;     // kBuilding: records below it have been scanned.
    TimerRef build_end = 0;        // kBuilding: the scan's end, the pool's high-water mark when it began.
    uint64_t order_used_ns = 0;    // The last RequestOrder.
  };
  // Whether starts and deletes of the group keep its ordered index.
  bool Ordered(uint16_t code) const { return keep_ordered_ && groups_[code].order != Order::kNone; }
  void InsertOrdered(uint16_t code, TimerRef ref);
  void EraseOrdered(uint16_t code, TimerRef ref);
  void DropOrder(Group& group);
  std::vector<Group> groups_;  // By code.
  absl::flat_hash_map<std::string, uint16_t> group_codes_;  // Name -> code, for groups with pending timers.
  // The code of ids without a group while any is pending, else -1. Without id_groups: 0, always (the one
  // group is not counted: nothing is kept per group on the hot path then).
  int32_t no_group_code_ = -1;
  std::vector<uint16_t> free_group_codes_;
  IdIndex index_;
  const bool keep_ordered_;
  const bool id_groups_;
  Lawn lawn_;
  TimingWheel wheel_;
  TtlRouter router_;
  struct FireKey {
    uint64_t deadline_ns;
    uint32_t id_hash;
    TimerRef ref;
  };
  struct HeldList {
    TimerRef head = kNoTimer;
    TimerRef tail = kNoTimer;
    size_t size = 0;
  };
  absl::flat_hash_map<uint16_t, HeldList> held_;  // Hold group -> its FIFO of held timers (none empty).
  size_t held_count_ = 0;
  size_t ordered_entries_ = 0;
  std::vector<TimerRef> group_;   // Scratch for Advance; reused so firing does not allocate.
  std::vector<FireKey> keys_;     // Sort keys of group_, so sorting touches neither records nor ids.
};

}  // namespace lawn
