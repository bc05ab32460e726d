// HistogramBatch (server/histogram_batch.h) against prometheus-cpp itself: a batch observed with one
// ObserveMultiple must leave a histogram exactly as observing each value alone would, boundaries included.
#include "server/histogram_batch.h"

#include <vector>

#include "gtest/gtest.h"
#include "prometheus/client_metric.h"
#include "prometheus/histogram.h"

namespace lawn {
namespace {

void ExpectSame(prometheus::Histogram& batched, prometheus::Histogram& one_by_one) {
  const prometheus::ClientMetric a = batched.Collect();
  const prometheus::ClientMetric b = one_by_one.Collect();
  EXPECT_EQ(a.histogram.sample_count, b.histogram.sample_count);
  EXPECT_DOUBLE_EQ(a.histogram.sample_sum, b.histogram.sample_sum);
  ASSERT_EQ(a.histogram.bucket.size(), b.histogram.bucket.size());
  for (size_t i = 0; i < a.histogram.bucket.size(); ++i) {
    EXPECT_EQ(a.histogram.bucket[i].cumulative_count, b.histogram.bucket[i].cumulative_count)
        << "bucket " << i;
  }
}

TEST(HistogramBatchTest, ObservesLikeOneObservePerValueBoundariesIncluded) {
  const std::vector<double> bounds = {0.001, 0.01, 0.1, 1};
  prometheus::Histogram batched(bounds);
  prometheus::Histogram one_by_one(bounds);
  HistogramBatch batch(bounds);
  // Below, on and between the bounds, and above the last (the +Inf bucket).
  const std::vector<double> values = {0, 0.0005, 0.001, 0.002, 0.01, 0.05, 0.1, 0.1000001, 1, 2, 300};
  for (double v : values) {
    batch.Add(v);
    one_by_one.Observe(v);
  }
  EXPECT_EQ(batch.size(), values.size());
  batch.ObserveInto(batched);
  EXPECT_EQ(batch.size(), 0u);
  ExpectSame(batched, one_by_one);

  // It starts over after each observation: a second batch adds only its own values.
  for (double v : {0.001, 5.0}) {
    batch.Add(v);
    one_by_one.Observe(v);
  }
  batch.ObserveInto(batched);
  ExpectSame(batched, one_by_one);
  EXPECT_EQ(batched.Collect().histogram.sample_count, values.size() + 2);
}

TEST(HistogramBatchTest, AnEmptyBatchObservesNothing) {
  const std::vector<double> bounds = {1};
  prometheus::Histogram histogram(bounds);
  HistogramBatch batch(bounds);
  batch.ObserveInto(histogram);
  EXPECT_EQ(histogram.Collect().histogram.sample_count, 0u);
}

}  // namespace
}  // namespace lawn
