// Percentiles of samples, random ids, and the one-line summary lawn_load prints.
//
// Thread-safety: Report and Rng are plain values, used by one thread at a time.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace lawn {

// Percentiles of a sample set (any unit; lawn_load uses microseconds). Empty input gives zeros.
struct Percentiles {
  uint64_t count = 0;
  double p50 = 0, p99 = 0, p999 = 0, max = 0, min = 0, mean = 0;
};
// Sorts `samples` in place (nearest-rank percentiles).
Percentiles Summarize(std::vector<double>& samples);

// splitmix64: a fast, seedable generator for ids and TTLs (not cryptographic; ids only need to be unique).
class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(seed) {}
  uint64_t Next() {
    uint64_t z = (state_ += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
  }
  // Uniform in [lo, hi] (hi - lo far below 2^64, so the modulo bias is negligible).
  uint64_t Uniform(uint64_t lo, uint64_t hi) { return lo + Next() % (hi - lo + 1); }
  // Overwrites `id` with 16 random bytes.
  void FillId(std::string* id) {
    id->resize(16);
    const uint64_t a = Next(), b = Next();
    for (int i = 0; i < 8; ++i) {
      (*id)[i] = static_cast<char>(a >> (8 * i));
      (*id)[8 + i] = static_cast<char>(b >> (8 * i));
    }
  }

 private:
  uint64_t state_;
};

// The summary line: fields in insertion order, printed as `key=value ...` or as one JSON object.
class Report {
 public:
  void Add(std::string_view key, std::string_view value);  // A string (quoted in JSON).
  void Add(std::string_view key, const char* value) { Add(key, std::string_view(value)); }
  void Add(std::string_view key, uint64_t value);
  void Add(std::string_view key, double value);
  // Adds <prefix>_p50 .. <prefix>_max (and _count) of `p`.
  void AddPercentiles(std::string_view prefix, const Percentiles& p, bool with_p999);
  std::string Text() const;
  std::string Json() const;

 private:
  struct Field {
    std::string key;
    std::string value;
    bool quoted;
  };
  std::vector<Field> fields_;
};

}  // namespace lawn
