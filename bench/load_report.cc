#include "bench/load_report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "absl/strings/str_cat.h"

namespace lawn {

namespace {

// Nearest rank: the smallest sample with at least q of the samples at or below it.
double Rank(const std::vector<double>& sorted, double q) {
  const size_t n = sorted.size();
  size_t k = static_cast<size_t>(std::ceil(q * static_cast<double>(n)));
  if (k == 0) k = 1;
  return sorted[std::min(k, n) - 1];
}

}  // namespace

Percentiles Summarize(std::vector<double>& samples) {
  Percentiles p;
  if (samples.empty()) return p;
  std::sort(samples.begin(), samples.end());
  p.count = samples.size();
  p.p50 = Rank(samples, 0.50);
  p.p99 = Rank(samples, 0.99);
  p.p999 = Rank(samples, 0.999);
  p.max = samples.back();
  p.min = samples.front();
  double sum = 0;
  for (double s : samples) sum += s;
  p.mean = sum / static_cast<double>(samples.size());
  return p;
}

void Report::Add(std::string_view key, std::string_view value) {
  fields_.push_back({std::string(key), std::string(value), true});
}

void Report::Add(std::string_view key, uint64_t value) {
  fields_.push_back({std::string(key), absl::StrCat(value), false});
}

void Report::Add(std::string_view key, double value) {
  char buf[64];
  // Small figures (seconds, CPU us per timer) keep three decimals; large ones (rates, latencies) one.
  std::snprintf(buf, sizeof buf, std::fabs(value) < 100 ? "%.3f" : "%.1f", value);
  fields_.push_back({std::string(key), buf, false});
}

void Report::AddPercentiles(std::string_view prefix, const Percentiles& p, bool with_p999) {
  const std::string k(prefix);
  Add(k + "_p50", p.p50);
  Add(k + "_p99", p.p99);
  if (with_p999) Add(k + "_p999", p.p999);
  Add(k + "_max", p.max);
}

std::string Report::Text() const {
  std::string out;
  for (const Field& f : fields_) absl::StrAppend(&out, out.empty() ? "" : " ", f.key, "=", f.value);
  return out;
}

std::string Report::Json() const {
  // Keys and values are ours (namespaces are [a-z0-9._-], modes and messages plain ASCII): quoting suffices,
  // but escape the two characters that would break the object anyway.
  auto quote = [](const std::string& s) {
    std::string q = "\"";
    for (char c : s) {
      if (c == '"' || c == '\\') q.push_back('\\');
      q.push_back(c);
    }
    return q + "\"";
  };
  std::string out = "{";
  for (size_t i = 0; i < fields_.size(); ++i) {
    const Field& f = fields_[i];
    absl::StrAppend(&out, i == 0 ? "" : ",", quote(f.key), ":", f.quoted ? quote(f.value) : f.value);
  }
  return out + "}";
}

}  // namespace lawn
