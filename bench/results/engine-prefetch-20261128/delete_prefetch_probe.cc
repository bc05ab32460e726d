#include <chrono>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>
#include <time.h>
#include "core/shard.h"

using namespace lawn;
static double cpu_ns() { timespec t; clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t); return t.tv_sec * 1e9 + t.tv_nsec; }

template <size_t A, size_t B, size_t C, typename HashAt, typename Op>
void Run(const Shard& shard, size_t n, HashAt&& hash_at, Op&& op) {
  constexpr size_t kRing = 32;
  uint32_t hashes[kRing];
  for (size_t lead = 0; lead < n + A; ++lead) {
    if (lead < n) { hashes[lead % kRing] = hash_at(lead); shard.Prefetch(hashes[lead % kRing], Shard::PrefetchStep::kIndex); }
    if (B && lead >= A - B && lead - (A - B) < n) shard.Prefetch(hashes[(lead - (A - B)) % kRing], Shard::PrefetchStep::kRecord);
    if (C && lead >= A - C && lead - (A - C) < n) shard.Prefetch(hashes[(lead - (A - C)) % kRing], Shard::PrefetchStep::kLinks);
    if (lead >= A) op(lead - A);
  }
}

int main(int argc, char** argv) {
  const size_t N = 1000000, K = 10000;
  std::mt19937_64 rng(1);
  std::vector<std::string> ids(N);
  for (auto& s : ids) { s.resize(16); for (auto& c : s) c = char(rng()); }
  Shard shard;
  uint64_t now = 0;
  for (size_t i = 0; i < N; ++i) {
    StartSpec spec; spec.id = ids[i]; spec.when = When::After((1 + rng() % 60000) * 1000000ull);
    shard.Start(spec, now);
    if (i % 17 == 0) { now += 1000000; shard.Advance(now, [](const Fired&) {}); }
  }
  std::vector<size_t> victims(K);
  std::vector<std::string> modes(argv + 1, argv + argc);
  std::vector<double> totals(modes.size()); size_t ops = 0;
  for (int rep = 0; rep < 300; ++rep) {
    const std::string& mode = modes[rep % modes.size()];
    for (auto& v : victims) v = rng() % N;
    std::vector<std::string> vs(K); for (size_t i = 0; i < K; ++i) vs[i] = ids[victims[i]];
    std::vector<uint64_t> ttl(K); for (auto& t : ttl) t = (1 + rng() % 60000) * 1000000ull;
    double t0 = cpu_ns();
    size_t okc = 0;
    auto del = [&](size_t i) { okc += shard.Delete(vs[i]).ok(); };
    auto h = [&](size_t i) { return TimerIdHash(vs[i]); };
    if (mode == "plain") for (size_t i = 0; i < K; ++i) del(i);
    else if (mode == "hash") for (size_t i = 0; i < K; ++i) { volatile uint32_t x = h(i); (void)x; del(i); }
    else if (mode == "blk") { for (size_t b = 0; b < K; b += 32) { size_t e = std::min(K, b + 32); uint32_t hs[32];
      for (size_t i = b; i < e; ++i) { hs[i-b] = h(i); shard.Prefetch(hs[i-b], Shard::PrefetchStep::kIndex); }
      for (size_t i = b; i < e; ++i) shard.Prefetch(hs[i-b], Shard::PrefetchStep::kRecord);
      for (size_t i = b; i < e; ++i) shard.Prefetch(hs[i-b], Shard::PrefetchStep::kLinks);
      for (size_t i = b; i < e; ++i) del(i); } }
    else if (mode == "blkmiss") { for (size_t b = 0; b < K; b += 32) { size_t e = std::min(K, b + 32); uint32_t hs[32];
      for (size_t i = b; i < e; ++i) { hs[i-b] = h(i); shard.Prefetch(hs[i-b], Shard::PrefetchStep::kIndex); }
      for (size_t i = b; i < e; ++i) del(i); } }
    else if (mode == "i8") Run<8, 0, 0>(shard, K, h, del);
    else if (mode == "i16") Run<16, 0, 0>(shard, K, h, del);
    else if (mode == "i8r4") Run<8, 4, 0>(shard, K, h, del);
    else if (mode == "i8r4l2") Run<8, 4, 2>(shard, K, h, del);
    else if (mode == "i12r6l3") Run<12, 6, 3>(shard, K, h, del);
    else if (mode == "i16r8l4") Run<16, 8, 4>(shard, K, h, del);
    else if (mode == "i24r12l6") Run<24, 16, 8>(shard, K, h, del);
    double t1 = cpu_ns();
    if (okc != K) { /* duplicates in victims */ }
    totals[rep % modes.size()] += t1 - t0; ops += K;
    for (size_t i = 0; i < K; ++i) { StartSpec spec; spec.id = vs[i]; spec.when = When::After(ttl[i]); spec.replace = true; shard.Start(spec, now); }
  }
  for (size_t m = 0; m < modes.size(); ++m) printf("%s %.1f ns/delete\n", modes[m].c_str(), totals[m] * modes.size() / ops);
}
