// lawn_bench: the timer engine (lawn::Shard) against two textbook baselines, a lazy-deletion binary heap
// (HeapTimers) and a std::multimap (MultimapTimers), each with a hash index by id.
//
// Benchmarks, named BM_<Op>_<Structure>_<Workload>/<pending>:
//   Op         Start | Delete | Expire, plus Memory (bytes per pending timer; its time is the build)
//   Structure  Engine | Heap | Multimap
//   Workload   FixedTtls (8 TTLs, 100 ms .. 30 s) | RandomTtls (uniform 1 ms .. 60 s, 1 ms steps)
//   pending    100000 | 1000000 | 10000000 timers held while the operation is measured
// Each reports `ns_per_timer` (CPU ns per started / deleted / fired timer; timing is paused around all
// restoring work) and items_per_second. Memory reports bytes_per_timer (malloc bytes in use, see
// memory_probe.h), rss_bytes_per_timer and, for the Engine, engine_bytes_per_timer (Shard::MemoryBytes) and
// lawn_fraction (share of the timers filed in Lawn buckets rather than the wheel).
//
// Setup: a "world" is one structure holding the steady-state population of a Plan (see workload.h), built by
// replaying the plan's starts on a fake clock (1 ms ticks, Advance called every tick). Building 1e7 timers
// takes seconds, so the current world is cached and shared by the benchmarks registered after its Memory
// benchmark, in the order Memory, Expire, Start, Delete; each leaves `pending` timers (the plan's ids)
// pending:
//   Expire  advances the clock tick by tick and fires; after each segment of ticks (about pending/100
//           firings) the fired timers are restarted with their TTL, untimed, so the population stays steady.
//   Start   starts a batch of 10'000 new random ids (TTLs drawn as at arrival), then deletes them untimed.
//   Delete  deletes a batch of 10'000 pending ids in scattered order, then restarts them untimed, in another
//           order (so that a later pass deletes from scattered places in the lists, not their fronts; before
//           2026-11-28 it did). It runs last because those restarts re-time the population (they all start
//           at the same instant).
// The world is rebuilt when a benchmark of another structure, workload or size runs, so any filter works.
//
// Usage (see compare.py):
//   lawn_bench --benchmark_format=json > out.json          # or --benchmark_out=out.json
//   lawn_bench --benchmark_filter='/100000$'                 # smallest size only
//   python3 bench/compare.py out.json
//
// Thread-safety: single-threaded; the benchmarks share the WorldCache owned by main.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <memory>
#include <numeric>
#include <random>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "bench/engine_timers.h"
#include "bench/heap_timers.h"
#include "bench/memory_probe.h"
#include "bench/multimap_timers.h"
#include "bench/workload.h"

namespace lawn {
namespace {

constexpr size_t kBatch = 10'000;  // Timers per Start / Delete iteration.
constexpr std::array<size_t, 3> kPendingCounts = {100'000, 1'000'000, 10'000'000};
constexpr std::array<Workload, 2> kWorkloads = {Workload::kFixedTtls, Workload::kRandomTtls};

template <typename T>
constexpr std::string_view kStructureName = "?";
template <>
constexpr std::string_view kStructureName<EngineTimers> = "Engine";
template <>
constexpr std::string_view kStructureName<HeapTimers> = "Heap";
template <>
constexpr std::string_view kStructureName<MultimapTimers> = "Multimap";

// A broken bench invariant (a structure refusing a valid operation) makes every figure meaningless: abort.
void Check(bool ok, const char* what) {
  if (ok) return;
  std::fprintf(stderr, "lawn_bench: check failed: %s\n", what);
  std::abort();
}

// Thread CPU time (the clock Google Benchmark's CPU column uses) summed over the timed regions, so a counter
// can hold plain nanoseconds per timer. (A kIsRate | kInvert counter would compute the same figure from the
// library's CPU time, but the console then prints it with an "s" unit, whatever the scale.)
class CpuStopwatch {
 public:
  void Start() { start_ns_ = ThreadCpuNs(); }
  void Stop() { total_ns_ += ThreadCpuNs() - start_ns_; }
  // A counter of nanoseconds per timer over everything timed so far.
  benchmark::Counter NsPer(double timers) const {
    return benchmark::Counter(timers > 0 ? static_cast<double>(total_ns_) / timers : 0.0);
  }

 private:
  static uint64_t ThreadCpuNs() {
    timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000 + static_cast<uint64_t>(ts.tv_nsec);
  }

  uint64_t start_ns_ = 0;
  uint64_t total_ns_ = 0;
};

struct WorldBase {
  virtual ~WorldBase() = default;
};

// One structure holding a plan's population, and the fake clock it lives on.
template <typename T>
struct World final : WorldBase {
  T timers;
  uint64_t now_ns = 0;
  uint64_t delete_cursor = 0;  // Position in the Delete benchmark's victim sequence.
};

// Replays the plan's starts in order, advancing the clock (and calling Advance) at every new tick.
template <typename T>
std::unique_ptr<World<T>> BuildWorld(const Plan& plan) {
  auto world = std::make_unique<World<T>>();
  size_t fired = 0;
  const auto count_fired = [&fired](const Fired&) { ++fired; };
  bool ok = true;
  uint64_t tick = 0;
  for (size_t i = 0; i < plan.pending; ++i) {
    if (plan.start_tick[i] != tick) {
      tick = plan.start_tick[i];
      fired += world->timers.Advance(tick * kTickNs, count_fired);
    }
    ok &= world->timers.Start(plan.ids[i], {}, plan.ttl_ticks[i] * kTickNs, tick * kTickNs);
  }
  world->now_ns = plan.end_tick * kTickNs;
  fired += world->timers.Advance(world->now_ns, count_fired);
  Check(ok, "a structure refused a start while building a world");
  Check(fired == 0 && world->timers.pending() == plan.pending,
        "the built world is not the plan's population");
  return world;
}

// Owns the current plan and the current world: one of each, so at most one big structure is alive.
class WorldCache {
 public:
  const Plan& GetPlan(Workload workload, size_t pending) {
    if (plan_ == nullptr || plan_->workload != workload || plan_->pending != pending) {
      DropWorld();
      plan_.reset();
      plan_ = MakePlan(workload, pending, 0x6c61776eULL ^ (static_cast<uint64_t>(workload) << 40) ^ pending);
    }
    return *plan_;
  }

  // The cached world for (T, workload, pending), built if it is not the current one.
  template <typename T>
  World<T>& GetWorld(Workload workload, size_t pending) {
    const Plan& plan = GetPlan(workload, pending);
    auto* world = dynamic_cast<World<T>*>(world_.get());
    if (world == nullptr) {
      DropWorld();
      world = &Adopt(BuildWorld<T>(plan));
    }
    world->timers.Compact();  // Drop what an earlier benchmark left stale (HeapTimers only).
    return *world;
  }

  template <typename T>
  World<T>& Adopt(std::unique_ptr<World<T>> world) {
    World<T>& ref = *world;
    world_ = std::move(world);
    return ref;
  }

  void DropWorld() { world_.reset(); }

 private:
  std::unique_ptr<Plan> plan_;
  std::unique_ptr<WorldBase> world_;  // Built from *plan_.
};

template <typename T>
void BM_Memory(benchmark::State& state, WorldCache& cache, Workload workload) {
  const size_t pending = static_cast<size_t>(state.range(0));
  const Plan& plan = cache.GetPlan(workload, pending);
  double heap_bytes = 0;
  double rss_bytes = 0;
  CpuStopwatch stopwatch;
  for (auto _ : state) {
    state.PauseTiming();
    cache.DropWorld();
    TrimHeap();
    const size_t heap_before = HeapBytesInUse();
    const size_t rss_before = RssBytes();
    state.ResumeTiming();
    stopwatch.Start();
    std::unique_ptr<World<T>> world = BuildWorld<T>(plan);
    stopwatch.Stop();
    state.PauseTiming();
    heap_bytes = static_cast<double>(HeapBytesInUse()) - static_cast<double>(heap_before);
    rss_bytes = static_cast<double>(RssBytes()) - static_cast<double>(rss_before);
    if constexpr (std::is_same_v<T, EngineTimers>) {
      const Shard& shard = world->timers.shard();
      state.counters["engine_bytes_per_timer"] = static_cast<double>(shard.MemoryBytes()) / pending;
      state.counters["lawn_fraction"] = static_cast<double>(shard.lawn_pending()) / pending;
      state.counters["lawn_buckets"] = static_cast<double>(shard.lawn_buckets());
    }
    cache.Adopt(std::move(world));
    state.ResumeTiming();
  }
  state.counters["bytes_per_timer"] = heap_bytes / pending;
  state.counters["rss_bytes_per_timer"] = rss_bytes / pending;
  state.counters["build_ns_per_timer"] = stopwatch.NsPer(static_cast<double>(state.iterations()) * pending);
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(pending));
}

template <typename T>
void BM_Expire(benchmark::State& state, WorldCache& cache, Workload workload) {
  const size_t pending = static_cast<size_t>(state.range(0));
  World<T>& world = cache.GetWorld<T>(workload, pending);
  // A segment of ticks fires about max(pending / 100, 2000) timers; then the fired ones are restarted.
  const double fired_per_tick = pending / TtlSampler(workload).MeanArrivalTicks();
  const double target = std::max(pending / 100.0, 2000.0);
  const uint64_t segment_ticks =
      std::max<uint64_t>(1, static_cast<uint64_t>(std::ceil(target / fired_per_tick)));

  struct Restart {
    std::array<char, kIdBytes> id;
    uint64_t ttl_ns;
  };
  std::vector<Restart> fired;
  fired.reserve(static_cast<size_t>(2 * target) + 1024);
  bool ids_ok = true;
  const auto sink = [&](const Fired& f) {
    Restart r;
    ids_ok &= f.timer.id.size() == kIdBytes;
    std::memcpy(r.id.data(), f.timer.id.data(), kIdBytes);
    r.ttl_ns = f.timer.ttl_ns;
    fired.push_back(r);
  };

  bool ok = true;
  uint64_t total_fired = 0;
  CpuStopwatch stopwatch;
  for (auto _ : state) {
    stopwatch.Start();
    for (uint64_t t = 0; t < segment_ticks; ++t) {
      world.now_ns += kTickNs;
      total_fired += world.timers.Advance(world.now_ns, sink);
    }
    stopwatch.Stop();
    state.PauseTiming();
    for (const Restart& r : fired) {
      ok &= world.timers.Start(std::string_view(r.id.data(), kIdBytes), {}, r.ttl_ns, world.now_ns);
    }
    fired.clear();
    state.ResumeTiming();
  }
  if (!ok || !ids_ok || world.timers.pending() != pending) {
    state.SkipWithError("restarting fired timers failed");
    return;
  }
  state.counters["ns_per_timer"] = stopwatch.NsPer(static_cast<double>(total_fired));
  state.counters["fired_per_tick"] =
      static_cast<double>(total_fired) / static_cast<double>(state.iterations() * segment_ticks);
  state.SetItemsProcessed(static_cast<int64_t>(total_fired));
}

// kRun: the engine's StartRun / DeleteRun (a run with its misses overlapped) instead of one call per timer.
template <typename T, bool kRun = false>
void BM_Start(benchmark::State& state, WorldCache& cache, Workload workload) {
  const size_t pending = static_cast<size_t>(state.range(0));
  World<T>& world = cache.GetWorld<T>(workload, pending);
  const TtlSampler sampler(workload);
  std::mt19937_64 rng(0x5354415254ULL ^ pending);
  IdBlock ids(kBatch);
  std::vector<uint64_t> ttl_ns(kBatch);
  const auto refill = [&] {
    ids.Fill(rng);  // Fresh ids every batch: reused ones would find the heap's lazily deleted nodes.
    for (uint64_t& ttl : ttl_ns) ttl = sampler.Arrival(rng) * kTickNs;
  };
  refill();
  bool ok = true;
  CpuStopwatch stopwatch;
  for (auto _ : state) {
    stopwatch.Start();
    if constexpr (kRun) {
      ok &= world.timers.StartRun(ids, ttl_ns.data(), kBatch, world.now_ns);
    } else {
      for (size_t i = 0; i < kBatch; ++i) ok &= world.timers.Start(ids[i], {}, ttl_ns[i], world.now_ns);
    }
    stopwatch.Stop();
    state.PauseTiming();
    for (size_t i = 0; i < kBatch; ++i) ok &= world.timers.Delete(ids[i]);
    refill();
    state.ResumeTiming();
  }
  if (!ok || world.timers.pending() != pending) {
    state.SkipWithError("a start or the untimed delete failed");
    return;
  }
  state.counters["ns_per_timer"] = stopwatch.NsPer(static_cast<double>(state.iterations()) * kBatch);
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(kBatch));
}

template <typename T, bool kRun = false>
void BM_Delete(benchmark::State& state, WorldCache& cache, Workload workload) {
  const size_t pending = static_cast<size_t>(state.range(0));
  World<T>& world = cache.GetWorld<T>(workload, pending);
  const Plan& plan = cache.GetPlan(workload, pending);
  // Victim k is plan timer (k * kStride) mod pending: a prime stride larger than any size visits every timer
  // once per `pending` victims, in scattered order. The batch's ids are copied to a contiguous buffer first
  // so the timed loop reads them as a request stream would, not with a cache miss of its own.
  constexpr uint64_t kStride = 2'654'435'761ULL;
  constexpr size_t kRestartStride = 7'919;  // Coprime with kBatch: k -> k * 7919 mod kBatch is a permutation.
  static_assert(std::gcd(kBatch, kRestartStride) == 1);
  IdBlock ids(kBatch);
  std::vector<uint64_t> ttl_ns(kBatch);
  const auto next_batch = [&] {
    for (size_t i = 0; i < kBatch; ++i) {
      const size_t victim =
          static_cast<size_t>((world.delete_cursor++ % pending) * (kStride % pending) % pending);
      ids.Set(i, plan.ids[victim]);
      ttl_ns[i] = plan.ttl_ticks[victim] * kTickNs;
    }
  };
  next_batch();
  bool ok = true;
  CpuStopwatch stopwatch;
  for (auto _ : state) {
    stopwatch.Start();
    if constexpr (kRun) {
      ok &= world.timers.DeleteRun(ids, kBatch);
    } else {
      for (size_t i = 0; i < kBatch; ++i) ok &= world.timers.Delete(ids[i]);
    }
    stopwatch.Stop();
    state.PauseTiming();
    // Restart in another order than the deletes': every timer restarted here goes to the end of its list, and
    // restarting in victim order would make the next pass over the population delete each list's first timer,
    // in the order the lists hold them (the case of deleting the oldest, not a scattered delete).
    for (size_t k = 0; k < kBatch; ++k) {
      const size_t i = k * kRestartStride % kBatch;
      ok &= world.timers.Start(ids[i], {}, ttl_ns[i], world.now_ns);
    }
    next_batch();
    state.ResumeTiming();
  }
  world.delete_cursor -= kBatch;  // The last prepared batch was not deleted.
  if (!ok || world.timers.pending() != pending) {
    state.SkipWithError("a delete or the untimed restart failed");
    return;
  }
  state.counters["ns_per_timer"] = stopwatch.NsPer(static_cast<double>(state.iterations()) * kBatch);
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(kBatch));
}

template <typename T>
void RegisterWorld(WorldCache& cache, Workload workload, size_t pending) {
  const std::string suffix = std::string(kStructureName<T>) + "_" + std::string(WorkloadName(workload));
  using Fn = void (*)(benchmark::State&, WorldCache&, Workload);
  std::vector<std::pair<const char*, Fn>> ops = {{
      {"Memory", &BM_Memory<T>},
      {"Expire", &BM_Expire<T>},
      {"Start", &BM_Start<T>},
      {"Delete", &BM_Delete<T>},
  }};
  if constexpr (std::is_same_v<T, EngineTimers>) {
    // The same operations as runs (EngineTimers::StartRun / DeleteRun): what lawnd's worker does with a
    // batch.
    ops.insert(ops.begin() + 3, {"StartRun", &BM_Start<T, true>});
    ops.emplace_back("DeleteRun", &BM_Delete<T, true>);
  }
  for (const auto& [op, fn] : ops) {
    const std::string name = std::string("BM_") + op + "_" + suffix;
    benchmark::RegisterBenchmark(name.c_str(), [&cache, workload, fn = fn](benchmark::State& state) {
      fn(state, cache, workload);
    })->Arg(static_cast<int64_t>(pending));
  }
}

}  // namespace
}  // namespace lawn

int main(int argc, char** argv) {
  lawn::WorldCache cache;
  // Grouped by world (workload, size, structure) so that each world is built once.
  for (lawn::Workload workload : lawn::kWorkloads) {
    for (size_t pending : lawn::kPendingCounts) {
      lawn::RegisterWorld<lawn::EngineTimers>(cache, workload, pending);
      lawn::RegisterWorld<lawn::HeapTimers>(cache, workload, pending);
      lawn::RegisterWorld<lawn::MultimapTimers>(cache, workload, pending);
    }
  }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
