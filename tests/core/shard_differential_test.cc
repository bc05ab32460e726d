// Randomized differential test of Shard against ReferenceShard (std::map / std::set), fixed seeds.
//
// Millions of random operations (start by TTL or absolute deadline incl. past ones, replace, delete,
// reschedule, recurring timers, advances by small and occasionally huge steps, tick changes) must produce
// identical statuses, identical Get results and identical expirations in identical order; nothing may fire
// before its deadline. Invariants and the full timer set are checked periodically.
#include <algorithm>
#include <cstdint>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "core/shard.h"
#include "gtest/gtest.h"
#include "tests/core/reference_shard.h"
#include "tests/core/shard_test_util.h"
#include "tests/testing/sanitized.h"

namespace lawn {
namespace {

using ::lawn::test::FiredCopy;
using ::lawn::test::kMs;
using ::lawn::test::kSec;
using ::lawn::test::kUs;
using ::lawn::test::ReferenceShard;
using ::lawn::test::Rng;

struct Config {
  uint64_t seed = 1;
  uint64_t ops = 100000;
  ShardOptions options{.id_groups = true};
  uint64_t start_ns = 0;
  uint32_t ids = 2000;          // Size of the id space: small enough that ids collide often.
  bool change_tick = false;     // Occasionally SetTick among 1 ms / 10 ms / 1 us.
  bool calm = false;            // No advance beyond 2 s: one-shot timers pile up (large Lawn buckets).
  uint64_t check_every = 20000; // Full comparison + CheckInvariants period.
};

class ShardDifferential {
 public:
  explicit ShardDifferential(const Config& config)
      : config_(config), shard_(config.options), model_(config.options.tick_ns), rng_(config.seed),
        now_(config.start_ns) {
    // Two thirds of the ids have a group (see Shard's "Groups"; with ShardOptions::id_groups), of 5 groups
    // whose codes are freed and reused as their timers come and go.
    for (uint32_t i = 0; i < config.ids; ++i) {
      const std::string id = "timer-" + std::to_string(i);
      ids_.push_back(i % 3 == 0 ? id : "g" + std::to_string(i % 5) + std::string(1, '\0') + id);
    }
    payloads_ = {"", "p", "payload-0123456789", std::string(40, 'x'), std::string(300, 'y')};
  }

  void Run() {
    for (op_ = 0; op_ < config_.ops; ++op_) {
      Step();
      if (::testing::Test::HasFatalFailure()) return;
      if (op_ % config_.check_every == 0) {
        FullCheck();
        if (::testing::Test::HasFatalFailure()) return;
      }
    }
    // Drain: everything left must come out exactly as the model says.
    for (int i = 0; i < 20 && model_.size() > 0; ++i) {
      AdvanceBy(rng_.Uniform(0, 4 * 24 * 3600 * kSec));
      if (::testing::Test::HasFatalFailure()) return;
    }
    FullCheck();
  }

  uint64_t fired() const { return fired_; }
  uint64_t advances() const { return advances_; }
  size_t max_lawn_pending() const { return max_lawn_pending_; }

 private:
  std::string Where() const {
    return "seed " + std::to_string(config_.seed) + " op " + std::to_string(op_) + " now " +
           std::to_string(now_) + " tick " + std::to_string(model_.tick_ns());
  }

  const std::string& RandomId() { return ids_[rng_.Uniform(0, ids_.size() - 1)]; }

  // An id for Start: biased towards free ids so long-lived timers do not turn every start into
  // ALREADY_EXISTS, while still hitting pending ids often.
  const std::string& IdForStart() {
    const std::string& first = RandomId();
    return model_.Get(first) == nullptr ? first : RandomId();
  }

  uint64_t FixedTtl() {
    static constexpr uint64_t kTtls[] = {1 * kMs, 5 * kMs, 10 * kMs, 100 * kMs,
                                         1 * kSec, 5 * kSec, 30 * kSec, 60 * kSec};
    return kTtls[rng_.Uniform(0, std::size(kTtls) - 1)];
  }

  uint64_t RandomTtl() {
    const uint64_t r = rng_.Uniform(0, 99);
    if (r < 50) return rng_.Uniform(1, 2 * kSec);
    if (r < 90) return rng_.Uniform(kMs, 60 * kSec);
    return rng_.Uniform(1, 3 * 24 * 3600 * kSec);
  }

  // Mostly coarse intervals: recurring timers never leave on their own, and tiny intervals fire at every
  // Advance (exercising coalescing, but costing time).
  uint64_t RandomInterval() {
    static constexpr uint64_t kIntervals[] = {10 * kMs, 100 * kMs, 1 * kSec, 5 * kSec, 30 * kSec};
    const uint64_t r = rng_.Uniform(0, 99);
    if (r < 75) return kIntervals[rng_.Uniform(0, std::size(kIntervals) - 1)];
    if (r < 95) return rng_.Uniform(kMs, 2 * kSec);
    return rng_.Uniform(1, kMs);
  }

  // An absolute deadline around now: often past (incl. exactly now and 0), mostly future.
  uint64_t RandomDeadline() {
    const uint64_t r = rng_.Uniform(0, 99);
    if (r < 5) return now_;
    if (r < 7) return 0;
    if (r < 30) return now_ - std::min(now_, rng_.Uniform(0, 5 * kSec));
    if (r < 40) return now_ + rng_.Uniform(0, 20 * kMs);  // Within the current tick or two.
    return now_ + rng_.Uniform(0, 60 * kSec);
  }

  When RandomWhen(bool allow_deadline) {
    if (allow_deadline && rng_.Percent(30)) return When::At(RandomDeadline());
    return When::After(rng_.Percent(75) ? FixedTtl() : RandomTtl());
  }

  void Step() {
    // A prefetch step for some id before every operation, as a batch's RunPrefetched gives them: they read
    // the shard (its index chunk, records, their neighbours) and must never change what it answers. Under a
    // sanitizer this also checks that those reads stay inside live memory.
    shard_.Prefetch(TimerIdHash(RandomId()), static_cast<Shard::PrefetchStep>(rng_.Uniform(0, 2)));
    const uint64_t r = rng_.Uniform(0, 999);
    if (r < 375) {
      DoStart(RandomWhen(/*allow_deadline=*/true), 0);
    } else if (r < 380) {
      DoStart(RandomWhen(/*allow_deadline=*/true), RandomInterval());
    } else if (r < 470) {
      DoDelete(RandomId());
    } else if (r < 570) {
      DoReschedule(RandomId(), RandomWhen(/*allow_deadline=*/true));
    } else if (r < 610) {
      CheckGet(RandomId());
    } else if (r < 985) {
      AdvanceBy(RandomStep());
    } else if (r < 990) {
      DoInvalid();
    } else if (config_.change_tick && r < 993) {
      static constexpr uint64_t kTicks[] = {kMs, 10 * kMs, kUs};
      const uint64_t tick = kTicks[rng_.Uniform(0, 2)];
      shard_.SetTick(tick, now_);
      model_.SetTick(tick);
      ASSERT_EQ(shard_.tick_ns(), tick) << Where();
    } else {
      CheckNextDeadline();
    }
  }

  // Mostly below a few ticks; rarely minutes or days, which cascade the upper wheel levels (and empty the
  // shard of one-shot timers, so they must stay rare for Lawn buckets to fill up in between).
  uint64_t RandomStep() {
    const uint64_t r = rng_.Uniform(0, 9999);
    if (r < 1500) return 0;
    if (r < 7500) return rng_.Uniform(0, 3 * kMs);
    if (r < 9500 || (config_.calm && r < 9990)) return rng_.Uniform(0, 50 * kMs);
    if (config_.calm) return rng_.Uniform(0, 2 * kSec);
    if (r < 9985) return rng_.Uniform(0, 2 * kSec);
    if (r < 9998) return rng_.Uniform(0, 600 * kSec);
    return rng_.Uniform(0, 2 * 24 * 3600 * kSec);
  }

  void DoStart(When when, uint64_t interval_ns) {
    const std::string& id = IdForStart();
    const std::string& payload = payloads_[rng_.Uniform(0, payloads_.size() - 1)];
    const bool replace = rng_.Percent(25);
    StartSpec spec{id, payload, when, interval_ns, replace};
    const absl::Status status = shard_.Start(spec, now_);
    const absl::StatusCode expected = model_.Start(id, payload, when, interval_ns, replace, now_);
    ASSERT_EQ(status.code(), expected) << Where() << " Start " << id << ": " << status;
    CheckGet(id);
  }

  void DoDelete(const std::string& id) {
    const absl::Status status = shard_.Delete(id);
    ASSERT_EQ(status.code(), model_.Delete(id)) << Where() << " Delete " << id << ": " << status;
    CheckGet(id);
  }

  void DoReschedule(const std::string& id, When when) {
    const absl::Status status = shard_.Reschedule(id, when, now_);
    ASSERT_EQ(status.code(), model_.Reschedule(id, when, now_)) << Where() << " Reschedule " << id << ": "
                                                                << status;
    CheckGet(id);
  }

  // Inputs the contract rejects: an empty id, a zero TTL (on an id that is not pending, so the code is
  // unambiguous), a reschedule by zero TTL of a pending timer.
  void DoInvalid() {
    const std::string& id = RandomId();
    absl::Status status;
    switch (rng_.Uniform(0, 2)) {
      case 0:
        status = shard_.Start(StartSpec{"", "p", When::After(kSec), 0, rng_.Percent(50)}, now_);
        break;
      case 1:
        if (model_.Get(id) != nullptr) return;
        status = shard_.Start(StartSpec{id, "p", When::After(0), 0, rng_.Percent(50)}, now_);
        break;
      default:
        if (model_.Get(id) == nullptr) return;
        status = shard_.Reschedule(id, When::After(0), now_);
    }
    ASSERT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << Where() << " " << status;
    CheckGet(id);
  }

  void AdvanceBy(uint64_t step) {
    now_ += step;
    ++advances_;
    std::vector<FiredCopy> got;
    const size_t count = shard_.Advance(now_, [&](const Fired& f) {
      got.push_back({f.timer.Key(), std::string(f.timer.payload), f.timer.deadline_ns,
                     f.timer.interval_ns, f.next_deadline_ns});
    });
    ASSERT_EQ(count, got.size()) << Where() << " Advance's count differs from the sink calls";
    const std::vector<FiredCopy> want = model_.Advance(now_);
    for (const FiredCopy& f : got) ASSERT_LE(f.deadline_ns, now_) << Where() << " fired early: " << f;
    if (got != want) {
      size_t i = 0;
      while (i < got.size() && i < want.size() && got[i] == want[i]) ++i;
      std::string detail = " first difference at position " + std::to_string(i) + ": got ";
      detail += i < got.size() ? ::testing::PrintToString(got[i]) : "<nothing>";
      detail += " want ";
      detail += i < want.size() ? ::testing::PrintToString(want[i]) : "<nothing>";
      if (i < want.size()) {
        const std::string& id = want[i].id;
        const std::optional<TimerView> v = shard_.Get(id);
        detail += "; shard still has " + id + ": " +
                  (v ? "deadline " + std::to_string(v->deadline_ns) : std::string("no"));
      }
      FAIL() << Where() << " Advance: got " << got.size() << " expirations, want " << want.size() << detail;
    }
    fired_ += got.size();
    max_lawn_pending_ = std::max(max_lawn_pending_, shard_.lawn_pending());
    ASSERT_EQ(shard_.pending(), model_.size()) << Where();
    ASSERT_LE(shard_.lawn_buckets(), config_.options.max_lawn_buckets) << Where();
  }

  void CheckGet(const std::string& id) {
    const std::optional<TimerView> v = shard_.Get(id);
    const ReferenceShard::Entry* e = model_.Get(id);
    ASSERT_EQ(v.has_value(), e != nullptr) << Where() << " Get " << id;
    if (e == nullptr) return;
    ASSERT_EQ(v->Key(), id) << Where();
    ASSERT_EQ(v->payload, e->payload) << Where() << " Get " << id;
    ASSERT_EQ(v->deadline_ns, e->deadline_ns) << Where() << " Get " << id;
    ASSERT_EQ(v->interval_ns, e->interval_ns) << Where() << " Get " << id;
    if (e->ttl_ns) {
      ASSERT_EQ(v->ttl_ns, *e->ttl_ns) << Where() << " Get " << id;
    }
  }

  // NextDeadlineNs is a lower bound: never later than the first instant at which something is due. With the
  // wheel empty nothing can cascade, so it is exactly that instant.
  void CheckNextDeadline() {
    const std::optional<uint64_t> next = shard_.NextDeadlineNs();
    const std::optional<uint64_t> due = model_.EarliestDueNs();
    ASSERT_EQ(next.has_value(), due.has_value()) << Where();
    if (due) {
      ASSERT_LE(*next, std::max(now_, *due)) << Where() << " NextDeadlineNs is too late";
      if (shard_.wheel_pending() == 0) {
        ASSERT_EQ(*next, *due) << Where() << " NextDeadlineNs with only Lawn timers";
      }
    }
  }

  void FullCheck() {
    shard_.CheckInvariants();
    ASSERT_EQ(shard_.pending(), model_.size()) << Where();
    ASSERT_EQ(shard_.lawn_pending() + shard_.wheel_pending(), shard_.pending()) << Where();
    ASSERT_LE(shard_.lawn_buckets(), config_.options.max_lawn_buckets) << Where();
    size_t visited = 0;
    bool all_match = true;
    std::string mismatch;
    shard_.ForEach([&](const TimerView& v) {
      ++visited;
      const ReferenceShard::Entry* e = model_.Get(v.Key());
      if (e == nullptr || e->deadline_ns != v.deadline_ns || e->payload != v.payload ||
          e->interval_ns != v.interval_ns) {
        if (all_match) mismatch = v.Key();
        all_match = false;
      }
    });
    ASSERT_TRUE(all_match) << Where() << " ForEach disagrees with the model on " << mismatch;
    ASSERT_EQ(visited, model_.size()) << Where();
    CheckNextDeadline();
  }

  Config config_;
  Shard shard_;
  ReferenceShard model_;
  Rng rng_;
  uint64_t now_;
  uint64_t op_ = 0;
  uint64_t fired_ = 0;
  uint64_t advances_ = 0;
  size_t max_lawn_pending_ = 0;
  std::vector<std::string> ids_;
  std::vector<std::string> payloads_;
};

// Under AddressSanitizer (CI's ASan+UBSan step builds at -Og) these runs took 10x their time in the test
// command's build (CalmClock: 73 s against 7 s), 4 minutes of CPU for the four largest. A quarter of the
// operations still covers every kind of step many thousands of times and several full checks, which is what
// a memory error needs to show; the test command's build runs them all.
constexpr uint64_t kOpsDivisor = ::lawn::testing::kSanitized ? 4 : 1;

void RunDifferential(Config config) {
  config.ops /= kOpsDivisor;
  ShardDifferential d(config);
  d.Run();
  // Guard against a vacuous run.
  EXPECT_GT(d.fired(), config.ops / 20);
  EXPECT_GT(d.max_lawn_pending(), 0u) << "Lawn was never exercised";
  std::cout << "[   INFO   ] " << config.ops << " ops, " << d.advances() << " advances, " << d.fired()
            << " expirations, up to " << d.max_lawn_pending() << " timers in Lawn\n";
}

TEST(ShardDifferentialTest, OneMsTickMatchesReference) {
  Config config;
  config.seed = 0x5eed0001;
  config.ops = 800000;
  config.start_ns = 1'000'000 * kSec;
  RunDifferential(config);
}

TEST(ShardDifferentialTest, TenMsTickFewBucketsEagerPromotionMatchesReference) {
  Config config;
  config.seed = 0x5eed0002;
  config.ops = 600000;
  config.options.tick_ns = 10 * kMs;
  config.options.max_lawn_buckets = 4;
  config.options.lawn_promote_after = 1;
  config.ids = 5000;
  RunDifferential(config);
}

TEST(ShardDifferentialTest, TickChangesMidFlightMatchReference) {
  Config config;
  config.seed = 0x5eed0003;
  config.ops = 700000;
  config.start_ns = 123'456'789'012'345;
  config.change_tick = true;
  config.ids = 3000;
  RunDifferential(config);
}

TEST(ShardDifferentialTest, CalmClockManyTimersMatchesReference) {
  Config config;
  config.seed = 0x5eed0005;
  config.ops = 300000;
  config.start_ns = 5 * kSec;
  config.ids = 20000;
  config.calm = true;
  RunDifferential(config);
}

TEST(ShardDifferentialTest, OneUsTickSmallIdSpaceMatchesReference) {
  Config config;
  config.seed = 0x5eed0004;
  config.ops = 400000;
  config.options.tick_ns = kUs;
  config.options.lawn_promote_after = 3;
  config.options.id_groups = false;  // The same ids, 0x00 bytes and all, as plain ids.
  config.start_ns = 77 * kSec + 3;
  config.ids = 300;
  RunDifferential(config);
}

}  // namespace
}  // namespace lawn
