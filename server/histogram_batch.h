// HistogramBatch: values for one Prometheus histogram gathered on a hot path and observed together.
//
// prometheus-cpp 1.0's Histogram::Observe locks a mutex per value; ObserveMultiple takes a whole batch's
// bucket counts and sum under one lock. A shard worker's round of firings and a subscriber's response of
// expirations are observed this way, so the lock is taken once per round or response, not per expiration.
//
// Thread-compatible: one owner at a time.
#pragma once

#include <algorithm>
#include <cstddef>
#include <functional>
#include <vector>

#include "prometheus/histogram.h"

namespace lawn {

class HistogramBatch {
 public:
  // `bounds`: the histogram's bucket boundaries, ascending, as it was registered with (kept by reference).
  explicit HistogramBatch(const std::vector<double>& bounds) : bounds_(bounds), counts_(bounds.size() + 1) {}

  void Add(double value) {
    // Prometheus buckets are "less than or equal": a value on a boundary counts in that boundary's bucket.
    const auto bucket = std::upper_bound(bounds_.begin(), bounds_.end(), value, std::less_equal<double>());
    counts_[static_cast<size_t>(bucket - bounds_.begin())] += 1;
    sum_ += value;
    ++added_;
  }
  size_t size() const { return added_; }

  // Observes what was added since the last call into `histogram` (nothing if nothing was), and starts over.
  void ObserveInto(prometheus::Histogram& histogram) {
    if (added_ == 0) return;
    histogram.ObserveMultiple(counts_, sum_);
    std::fill(counts_.begin(), counts_.end(), 0.0);
    sum_ = 0;
    added_ = 0;
  }

 private:
  const std::vector<double>& bounds_;
  std::vector<double> counts_;  // Per bucket, the last one for values above every bound (+Inf).
  double sum_ = 0;
  size_t added_ = 0;
};

}  // namespace lawn
