// Burst probe: 1e6 timers of one TTL started over ~1.1 s (900 per ms), then Advance every 1 ms tick; reports
// the distribution of Advance durations (wall ns) while they fire.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>
#include "core/shard.h"
int main() {
  lawn::Shard shard;
  const uint64_t ms = 1'000'000;
  uint64_t now = ms;
  char id[16] = {};
  uint64_t n = 0;
  for (int tick = 0; tick < 1111; ++tick) {
    now += ms;
    shard.Advance(now, [](const lawn::Fired&) {});
    for (int i = 0; i < 900; ++i, ++n) {
      std::snprintf(id, sizeof id, "%015llu", (unsigned long long)(n * 2654435761ULL % 1000000007ULL));
      lawn::StartSpec s; s.id = std::string_view(id, 15); s.when = lawn::When::After(15'000 * ms);
      shard.Start(s, now);
    }
  }
  std::vector<double> us;
  size_t fired = 0;
  while (shard.pending() > 0) {
    now += ms;
    auto t0 = std::chrono::steady_clock::now();
    fired += shard.Advance(now, [](const lawn::Fired&) {});
    auto t1 = std::chrono::steady_clock::now();
    us.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
  }
  std::vector<double> firing(us.begin(), us.end());
  std::sort(firing.begin(), firing.end());
  auto q = [&](double p) { return firing[std::min(firing.size() - 1, size_t(p * firing.size()))]; };
  std::printf("fired %zu advances %zu p50 %.1f p99 %.1f max %.1f us\n", fired, firing.size(), q(0.5), q(0.99), firing.back());
}
