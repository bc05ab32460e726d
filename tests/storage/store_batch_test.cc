// StoreBatch: what goes in comes out of ForEach, in order, for every operation and extreme field values.
#include "storage/store_batch.h"

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace lawn {
namespace {

using Op = StoreBatch::Op;

struct EntryCopy {
  Op op;
  std::string key;
  uint64_t delivery_id;
  int64_t deadline_unix_ns;
  uint64_t ttl_ns;
  uint64_t interval_ns;
  std::string payload;
  int64_t fired_at_unix_ns;
  uint32_t attempt;
  bool operator==(const EntryCopy&) const = default;
};

std::vector<EntryCopy> Entries(const StoreBatch& b) {
  std::vector<EntryCopy> out;
  b.ForEach([&](const StoreBatch::Entry& e) {
    out.push_back({e.op, std::string(e.key), e.delivery_id, e.deadline_unix_ns, e.ttl_ns, e.interval_ns,
                   std::string(e.payload), e.fired_at_unix_ns, e.attempt});
  });
  return out;
}

constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
constexpr uint64_t kUMax = std::numeric_limits<uint64_t>::max();

TEST(StoreBatchTest, RoundTripsEveryOperationInOrder) {
  const std::string key("ns\0id\xff", 6);
  const std::string payload("\0\x80\xff payload", 11);
  const std::string big(100000, 'x');  // Length prefix needs three varint bytes.
  StoreBatch b;
  b.PutTimer(key, kMin, kUMax, 0, payload);
  b.PutTimer("", kMax, 0, kUMax, big);
  b.PutTimer("k", -1, 1, 127, "");
  b.DeleteTimer(key, kMin);
  b.DeleteTimer("k", -1);
  b.PutExpiration(kUMax, key, -5, 128, 16383, payload, kMin, std::numeric_limits<uint32_t>::max());
  b.PutExpiration(0, "", 0, 0, 0, "", kMax, 0);
  b.DeleteExpiration(kUMax);
  b.DeleteExpiration(0);
  b.PutIncoming(42, key, 7, 8, 9, payload, 10, 3);
  b.DeleteIncoming(kUMax);

  const std::vector<EntryCopy> want = {
      {Op::kPutTimer, key, 0, kMin, kUMax, 0, payload, 0, 0},
      {Op::kPutTimer, "", 0, kMax, 0, kUMax, big, 0, 0},
      {Op::kPutTimer, "k", 0, -1, 1, 127, "", 0, 0},
      {Op::kDeleteTimer, key, 0, kMin, 0, 0, "", 0, 0},
      {Op::kDeleteTimer, "k", 0, -1, 0, 0, "", 0, 0},
      {Op::kPutExpiration, key, kUMax, -5, 128, 16383, payload, kMin, std::numeric_limits<uint32_t>::max()},
      {Op::kPutExpiration, "", 0, 0, 0, 0, "", kMax, 0},
      {Op::kDeleteExpiration, "", kUMax, 0, 0, 0, "", 0, 0},
      {Op::kDeleteExpiration, "", 0, 0, 0, 0, "", 0, 0},
      {Op::kPutIncoming, key, 42, 7, 8, 9, payload, 10, 3},
      {Op::kDeleteIncoming, "", kUMax, 0, 0, 0, "", 0, 0},
  };
  EXPECT_EQ(Entries(b), want);
  EXPECT_EQ(b.count(), want.size());
  EXPECT_FALSE(b.empty());
}

TEST(StoreBatchTest, ClearEmptiesTheBatchForReuse) {
  StoreBatch b;
  b.PutTimer("a", 1, 2, 3, "p");
  b.Clear();
  EXPECT_TRUE(b.empty());
  EXPECT_EQ(b.count(), 0u);
  EXPECT_EQ(b.ByteSize(), 0u);
  EXPECT_TRUE(Entries(b).empty());
  b.DeleteTimer("b", 5);
  ASSERT_EQ(Entries(b).size(), 1u);
  EXPECT_EQ(Entries(b)[0].key, "b");
}

// Acks (expiration deletes) alone are not worth an fsync; anything else in the batch is.
TEST(StoreBatchTest, OnlyAckOnlyBatchesSkipTheSync) {
  StoreBatch b;
  EXPECT_FALSE(b.needs_sync());
  b.DeleteExpiration(7);
  b.DeleteExpiration(8);
  EXPECT_FALSE(b.needs_sync());
  b.DeleteTimer("k", 1);
  EXPECT_TRUE(b.needs_sync());
  b.Clear();
  EXPECT_FALSE(b.needs_sync());
  b.PutTimer("a", 1, 2, 3, "p");
  EXPECT_TRUE(b.needs_sync());
  b.Clear();
  b.PutExpiration(1, "a", 1, 2, 3, "p", 4, 0);
  EXPECT_TRUE(b.needs_sync());
}

}  // namespace
}  // namespace lawn
