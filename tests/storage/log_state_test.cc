// LogDelta (storage/log_state.h): after any sequence of records, Sorted() holds exactly the last operation on
// each sort key, in sort-key order, tombstones included, also when records are added after a Sorted() call;
// a record that does not decode changes nothing.
#include "storage/log_state.h"

#include <cstdint>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace lawn::logstore {
namespace {

// The operation's bytes, as a StoreBatch of it alone encodes them.
std::string OpBytes(const StoreBatch::Entry& e) {
  StoreBatch one;
  switch (e.op) {
    case StoreBatch::Op::kPutTimer:
      one.PutTimer(e.key, e.deadline_unix_ns, e.ttl_ns, e.interval_ns, e.payload);
      break;
    case StoreBatch::Op::kDeleteTimer:
      one.DeleteTimer(e.key, e.deadline_unix_ns);
      break;
    case StoreBatch::Op::kPutExpiration:
      one.PutExpiration(e.delivery_id, e.key, e.deadline_unix_ns, e.ttl_ns, e.interval_ns, e.payload,
                        e.fired_at_unix_ns, e.attempt);
      break;
    case StoreBatch::Op::kDeleteExpiration:
      one.DeleteExpiration(e.delivery_id);
      break;
    case StoreBatch::Op::kPutIncoming:
      one.PutIncoming(e.delivery_id, e.key, e.deadline_unix_ns, e.ttl_ns, e.interval_ns, e.payload,
                      e.fired_at_unix_ns, e.attempt);
      break;
    case StoreBatch::Op::kDeleteIncoming:
      one.DeleteIncoming(e.delivery_id);
      break;
  }
  return std::string(one.data());
}

TEST(LogDeltaTest, SortedHoldsTheLastOperationOnEachKeyInKeyOrder) {
  std::mt19937_64 rng(7);
  LogDelta delta;
  std::map<std::string, std::string> want;  // Sort key -> the last operation's bytes.
  using namespace std::string_literals;
  const std::vector<std::string> keys = {"a\0x"s, "a\0y"s, "b\0x"s, "bb\0long-id-beyond-sixteen-bytes"s};
  for (int record = 0; record < 400; ++record) {
    StoreBatch batch;
    const int ops = 1 + static_cast<int>(rng() % 5);
    for (int i = 0; i < ops; ++i) {
      const std::string key = keys[rng() % keys.size()];
      // Few distinct deadlines and ids, so that keys repeat within and across records; some deadlines
      // negative or sharing their first bytes, to exercise the comparison past the 8-byte prefix.
      const int64_t deadline = static_cast<int64_t>(rng() % 6) - 2 + ((rng() % 2) ? int64_t{1} << 40 : 0);
      const uint64_t id = rng() % 8;
      switch (rng() % 6) {
        case 0:
          batch.PutTimer(key, deadline, rng() % 100, 0, std::to_string(record));
          break;
        case 1:
          batch.DeleteTimer(key, deadline);
          break;
        case 2:
          batch.PutExpiration(id, key, deadline, 1, 2, std::to_string(record), 3, 4);
          break;
        case 3:
          batch.DeleteExpiration(id);
          break;
        case 4:
          batch.PutIncoming(id, key, deadline, 1, 2, std::to_string(record), 3, 4);
          break;
        case 5:
          batch.DeleteIncoming(id);
          break;
      }
    }
    ASSERT_TRUE(delta.Add(batch.data(), /*copy=*/true));
    batch.ForEach([&](const StoreBatch::Entry& e) {
      std::string key;
      SortKeyOf(e, &key);
      want[key] = OpBytes(e);
    });
    if (record % 37 == 0 || record == 399) {
      const std::vector<LogDelta::Item>& got = delta.Sorted();
      ASSERT_EQ(got.size(), want.size()) << "after record " << record;
      size_t i = 0;
      for (const auto& [key, op] : want) {
        ASSERT_EQ(got[i].key, key) << "item " << i << " after record " << record;
        ASSERT_EQ(got[i].op, op) << "item " << i << " after record " << record;
        ASSERT_EQ(got[i].put(), IsPut(got[i].entry().op));
        ++i;
      }
    }
  }
}

TEST(LogDeltaTest, ARecordThatDoesNotDecodeChangesNothing) {
  LogDelta delta;
  StoreBatch good;
  good.PutTimer(std::string("n\0a", 3), 5, 1, 0, "p");
  ASSERT_TRUE(delta.Add(good.data(), /*copy=*/true));
  StoreBatch second;
  second.DeleteTimer(std::string("n\0a", 3), 5);
  second.PutTimer(std::string("n\0b", 3), 6, 1, 0, "q");
  // The first operation whole, the second cut short.
  const std::string cut(second.data().substr(0, second.data().size() - 2));
  EXPECT_FALSE(delta.Add(cut, /*copy=*/true));
  const std::vector<LogDelta::Item>& got = delta.Sorted();
  ASSERT_EQ(got.size(), 1u);
  EXPECT_TRUE(got[0].put());
  EXPECT_EQ(got[0].entry().payload, "p");
}

}  // namespace
}  // namespace lawn::logstore
