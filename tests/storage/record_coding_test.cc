// The on-disk record codecs of FORMAT.md: round trips, ordering of outbox keys, and refusal of every input an
// encoder cannot produce (so corruption surfaces as DATA_LOSS instead of garbage timers).
#include "storage/record_coding.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "gtest/gtest.h"

namespace lawn::internal {
namespace {

constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
constexpr uint64_t kUMax = std::numeric_limits<uint64_t>::max();

TEST(RecordCodingTest, TimerValueRoundTripsExtremes) {
  for (int64_t deadline : {kMin, int64_t{-1}, int64_t{0}, int64_t{1}, kMax}) {
    for (uint64_t n : {uint64_t{0}, uint64_t{127}, uint64_t{128}, kUMax}) {
      const std::string payload("\0pay\xffload", 10);
      std::string v;
      AppendTimerValue(&v, deadline, n, kUMax - n, payload);
      StoredTimer t;
      ASSERT_TRUE(DecodeTimerValue(v, &t));
      EXPECT_EQ(t.deadline_unix_ns, deadline);
      EXPECT_EQ(t.ttl_ns, n);
      EXPECT_EQ(t.interval_ns, kUMax - n);
      EXPECT_EQ(t.payload, payload);
    }
  }
}

TEST(RecordCodingTest, TimerValueLayoutIsVersionThenVarintsThenPayload) {
  std::string v;
  AppendTimerValue(&v, -1, 300, 0, "xy");
  // 0x01 version; zigzag(-1) = 1; 300 = 0xac 0x02; 0; "xy".
  EXPECT_EQ(v, std::string("\x01\x01\xac\x02\x00xy", 7));
}

TEST(RecordCodingTest, ExpirationValueRoundTrips) {
  const std::string key("ns\0id", 5);
  std::string v;
  AppendExpirationValue(&v, key, kMin, 7, 8, std::string(300, 'p'), kMax,
                        std::numeric_limits<uint32_t>::max());
  StoredExpiration e;
  ASSERT_TRUE(DecodeExpirationValue(v, &e));
  EXPECT_EQ(e.timer.key, key);
  EXPECT_EQ(e.timer.deadline_unix_ns, kMin);
  EXPECT_EQ(e.timer.ttl_ns, 7u);
  EXPECT_EQ(e.timer.interval_ns, 8u);
  EXPECT_EQ(e.timer.payload, std::string(300, 'p'));
  EXPECT_EQ(e.fired_at_unix_ns, kMax);
  EXPECT_EQ(e.attempt, std::numeric_limits<uint32_t>::max());
}

TEST(RecordCodingTest, OutboxKeysSortLikeDeliveryIds) {
  std::mt19937_64 rng(42);
  std::vector<uint64_t> ids = {0, 1, 255, 256, 65535, 65536, kUMax - 1, kUMax};
  for (int i = 0; i < 200; ++i) ids.push_back(rng() >> (rng() % 64));
  std::vector<std::string> keys;
  for (uint64_t id : ids) {
    std::string k;
    AppendOutboxKey(&k, id);
    ASSERT_EQ(k.size(), kOutboxKeySize);
    uint64_t back = 0;
    ASSERT_TRUE(DecodeOutboxKey(k, &back));
    EXPECT_EQ(back, id);
    keys.push_back(k);
  }
  std::sort(ids.begin(), ids.end());
  std::sort(keys.begin(), keys.end());  // std::string compares bytes as unsigned, like RocksDB's comparator.
  for (size_t i = 0; i < ids.size(); ++i) {
    uint64_t id = 0;
    ASSERT_TRUE(DecodeOutboxKey(keys[i], &id));
    EXPECT_EQ(id, ids[i]);
  }
}

// Timer keys sort by deadline (signed: negative first) and, within one deadline, by the timer key's bytes.
TEST(RecordCodingTest, TimerKeysSortByDeadlineThenKey) {
  using namespace std::string_literals;
  std::mt19937_64 rng(7);
  std::vector<std::pair<int64_t, std::string>> timers = {{kMin, "ns\0a"s}, {-1, "ns\0a"s}, {0, "a\0\xff"s},
                                                         {0, "b\0"s},      {1, "ns\0a"s},  {kMax, "z\0z"s}};
  for (int i = 0; i < 200; ++i) {
    timers.emplace_back(static_cast<int64_t>(rng()) >> (rng() % 64), "k\0"s + std::to_string(rng() % 10));
  }
  std::vector<std::string> keys;
  for (const auto& [deadline, key] : timers) {
    std::string k;
    AppendTimerKey(&k, deadline, key);
    ASSERT_EQ(k.size(), kTimerKeyDeadlineSize + key.size());
    int64_t back = 0;
    std::string_view back_key;
    ASSERT_TRUE(DecodeTimerKey(k, &back, &back_key));
    EXPECT_EQ(back, deadline);
    EXPECT_EQ(back_key, key);
    keys.push_back(k);
  }
  std::sort(timers.begin(), timers.end());
  std::sort(keys.begin(), keys.end());
  for (size_t i = 0; i < keys.size(); ++i) {
    int64_t deadline = 0;
    std::string_view key;
    ASSERT_TRUE(DecodeTimerKey(keys[i], &deadline, &key));
    EXPECT_EQ(std::pair(deadline, std::string(key)), timers[i]);
  }
  int64_t deadline = 0;
  std::string_view key;
  EXPECT_FALSE(DecodeTimerKey(std::string(8, '\x80'), &deadline, &key)) << "a deadline without a key";
  EXPECT_FALSE(DecodeTimerKey("short", &deadline, &key));
}

TEST(RecordCodingTest, EveryTruncatedExpirationIsRejected) {
  std::string v;
  AppendExpirationValue(&v, std::string("ns\0id", 5), 1234567890123, 5, 6, "payload", 1234567890999, 3);
  for (size_t n = 0; n < v.size(); ++n) {
    StoredExpiration e;
    EXPECT_FALSE(DecodeExpirationValue(std::string_view(v).substr(0, n), &e))
        << "prefix of " << n << " bytes";
  }
  StoredExpiration e;
  EXPECT_FALSE(DecodeExpirationValue(v + "x", &e)) << "trailing byte";
}

TEST(RecordCodingTest, TimerValueCutInsideItsVarintsIsRejected) {
  std::string v;
  AppendTimerValue(&v, kMin, kUMax, kUMax, "");
  // The payload has no length, so only cuts inside the header can be detected.
  for (size_t n = 0; n < v.size(); ++n) {
    StoredTimer t;
    EXPECT_FALSE(DecodeTimerValue(std::string_view(v).substr(0, n), &t)) << "prefix of " << n << " bytes";
  }
}

TEST(RecordCodingTest, UnknownRecordVersionIsRejected) {
  std::string v;
  AppendTimerValue(&v, 1, 2, 3, "p");
  v[0] = 2;
  StoredTimer t;
  EXPECT_FALSE(DecodeTimerValue(v, &t));
}

}  // namespace
}  // namespace lawn::internal
