// Unit tests of TtlRouter: when a TTL counts as regular.
#include "core/ttl_router.h"

#include <cstdint>

#include "gtest/gtest.h"

namespace lawn {
namespace {

constexpr uint64_t kSecond = 1'000'000'000;

TEST(TtlRouterTest, TtlBecomesRegularAfterPromoteAfterSightings) {
  TtlRouter router(3);
  EXPECT_FALSE(router.Observe(5 * kSecond));
  EXPECT_FALSE(router.Observe(5 * kSecond));
  EXPECT_TRUE(router.Observe(5 * kSecond));
  EXPECT_TRUE(router.Observe(5 * kSecond));
  EXPECT_TRUE(router.Observe(5 * kSecond));
}

TEST(TtlRouterTest, DefaultPromoteAfterTwoMakesSecondSightingRegular) {
  TtlRouter router(2);
  EXPECT_FALSE(router.Observe(30 * kSecond));
  EXPECT_TRUE(router.Observe(30 * kSecond));
}

TEST(TtlRouterTest, PromoteAfterOneMakesEveryTtlRegularAtOnce) {
  TtlRouter router(1);
  EXPECT_TRUE(router.Observe(1));
  EXPECT_TRUE(router.Observe(kSecond));
  EXPECT_TRUE(router.Observe(123456789));
}

TEST(TtlRouterTest, DistinctTtlsAreCountedSeparately) {
  TtlRouter router(2);
  EXPECT_FALSE(router.Observe(1 * kSecond));
  EXPECT_FALSE(router.Observe(2 * kSecond));
  EXPECT_TRUE(router.Observe(1 * kSecond));
  EXPECT_TRUE(router.Observe(2 * kSecond));
}

TEST(TtlRouterTest, StreamOfOneOffTtlsNeverLooksRegular) {
  TtlRouter router(2);
  int regular = 0;
  for (uint64_t i = 0; i < 100000; ++i) regular += router.Observe(1'000'000 + 7919 * i);
  EXPECT_EQ(regular, 0);
}

}  // namespace
}  // namespace lawn
