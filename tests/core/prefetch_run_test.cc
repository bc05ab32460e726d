// Tests of RunPrefetched (core/prefetch_run.h): every operation runs once, in order, for any batch size
// (shorter and longer than its look-ahead), with each id hashed once, and a run's results are those of the
// same operations one call at a time, also when the run's operations change the ids it prefetches ahead.
#include "core/prefetch_run.h"

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "core/shard.h"
#include "gtest/gtest.h"
#include "tests/core/shard_test_util.h"

namespace lawn {
namespace {

using ::lawn::test::kSec;
using ::lawn::test::kT0;
using ::lawn::test::TtlSpec;

TEST(PrefetchRunTest, RunsEveryOperationOnceInOrderAndHashesEachIdOnce) {
  for (size_t n : {0, 1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 100}) {
    Shard shard;
    std::vector<size_t> hashed;
    std::vector<size_t> ran;
    RunPrefetched(
        shard, n,
        [&](size_t i) {
          hashed.push_back(i);
          return TimerIdHash("id-" + std::to_string(i));
        },
        [&](size_t i) {
          ran.push_back(i);
          // An operation runs after its id was hashed.
          EXPECT_GT(hashed.size(), i) << "n=" << n;
        });
    std::vector<size_t> expected(n);
    for (size_t i = 0; i < n; ++i) expected[i] = i;
    EXPECT_EQ(ran, expected) << "n=" << n;
    EXPECT_EQ(hashed, expected) << "n=" << n;
  }
}

TEST(PrefetchRunTest, ARunOfStartsAndDeletesAnswersAsSingleCallsDo) {
  // The ids repeat within the run: an operation changes what a later one (already prefetched) finds.
  std::vector<std::string> ids;
  for (int i = 0; i < 300; ++i) ids.push_back("t" + std::to_string(i % 37));
  Shard single;
  Shard run;
  for (int i = 0; i < 20; ++i) {
    ASSERT_TRUE(single.Start(TtlSpec("t" + std::to_string(i), (i + 1) * kSec), kT0).ok());
    ASSERT_TRUE(run.Start(TtlSpec("t" + std::to_string(i), (i + 1) * kSec), kT0).ok());
  }
  const auto op = [&](Shard& shard, size_t i) {
    // Deletes on even positions, starts on odd ones.
    return i % 2 == 0 ? shard.Delete(ids[i]) : shard.Start(TtlSpec(ids[i], (i % 7 + 1) * kSec), kT0);
  };
  std::vector<absl::StatusCode> expected;
  for (size_t i = 0; i < ids.size(); ++i) expected.push_back(op(single, i).code());
  std::vector<absl::StatusCode> got;
  RunPrefetched(
      run, ids.size(), [&](size_t i) { return TimerIdHash(ids[i]); },
      [&](size_t i) { got.push_back(op(run, i).code()); });
  EXPECT_EQ(got, expected);
  run.CheckInvariants();
  ASSERT_EQ(run.pending(), single.pending());
  single.ForEach([&](const TimerView& t) {
    const std::optional<TimerView> other = run.Get(t.Key());
    ASSERT_TRUE(other.has_value()) << t.Key();
    EXPECT_EQ(other->deadline_ns, t.deadline_ns) << t.Key();
  });
}

TEST(PrefetchRunTest, PrefetchStepsOnAnEmptyOrMissingIdChangeNothing) {
  Shard shard;
  for (auto step : {Shard::PrefetchStep::kIndex, Shard::PrefetchStep::kRecord, Shard::PrefetchStep::kLinks}) {
    shard.Prefetch(TimerIdHash("absent"), step);  // An empty shard: no index yet.
  }
  ASSERT_TRUE(shard.Start(TtlSpec("a", kSec), kT0).ok());
  ASSERT_TRUE(shard.Start(TtlSpec("b", kSec), kT0).ok());
  for (auto step : {Shard::PrefetchStep::kIndex, Shard::PrefetchStep::kRecord, Shard::PrefetchStep::kLinks}) {
    shard.Prefetch(TimerIdHash("absent"), step);
    shard.Prefetch(TimerIdHash("a"), step);
  }
  EXPECT_EQ(shard.pending(), 2u);
  shard.CheckInvariants();
}

}  // namespace
}  // namespace lawn
