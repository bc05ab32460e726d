// lawn_crc32c_bench: throughput of the round log's CRC-32C (storage/crc32c.h), which every write computes
// once per record and every fold and recovery checks once per record, against the table version in the
// same run (BENCHMARKS.md section 48). Sizes: a unary round (300 B), the smallest buffer the three-lane
// path takes (1.5 KiB + 64), a batched round (5 KB), a large record (64 KiB).
//
//   build/bench/lawn_crc32c_bench --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
#include <benchmark/benchmark.h>

#include <cstdint>
#include <random>
#include <string>

#include "storage/crc32c.h"

namespace {

std::string RandomBytes(size_t n) {
  std::mt19937_64 rng(n);
  std::string s(n, '\0');
  for (char& c : s) c = static_cast<char>(rng());
  return s;
}

void BM_Crc32c(benchmark::State& state) {
  const std::string data = RandomBytes(static_cast<size_t>(state.range(0)));
  for (auto _ : state) benchmark::DoNotOptimize(lawn::internal::Crc32c(data));
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * state.range(0));
}

void BM_Crc32cTable(benchmark::State& state) {
  const std::string data = RandomBytes(static_cast<size_t>(state.range(0)));
  for (auto _ : state) benchmark::DoNotOptimize(lawn::internal::Crc32cPortable(data));
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * state.range(0));
}

BENCHMARK(BM_Crc32c)->Arg(300)->Arg(1600)->Arg(5000)->Arg(65536);
BENCHMARK(BM_Crc32cTable)->Arg(300)->Arg(5000);

}  // namespace

BENCHMARK_MAIN();
