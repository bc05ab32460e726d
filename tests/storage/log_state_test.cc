// LogDelta (storage/log_state.h): after any sequence of records, Sorted() holds exactly the last operation on
// each sort key, in sort-key order, tombstones included, also when records are added after a Sorted() call;
// a record that does not decode changes nothing. SortKeyParts compare as the sort keys' bytes do. MergeState
// of a snapshot and a delta is the last operation on each record, puts only, in order, through a chain of
// snapshots.
#include "storage/log_state.h"

#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace lawn::logstore {
namespace {

// Appends the operation `e` to `batch`.
void AddOp(StoreBatch* batch, const StoreBatch::Entry& e) {
  StoreBatch& one = *batch;
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
}

// The operation's bytes, as a StoreBatch of it alone encodes them.
std::string OpBytes(const StoreBatch::Entry& e) {
  StoreBatch one;
  AddOp(&one, e);
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
        ASSERT_EQ(got[i].SortKey(), key) << "item " << i << " after record " << record;
        ASSERT_EQ(got[i].op(), op) << "item " << i << " after record " << record;
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

int Sign(int v) { return (v > 0) - (v < 0); }

// A random operation on a few keys that share long prefixes and differ in bytes above 0x7f, deadlines that
// share their first bytes or differ in sign, ids from a small range.
StoreBatch::Entry RandomOp(std::mt19937_64& rng, std::vector<std::string>* storage) {
  static const std::vector<std::string> kKeys = [] {
    std::vector<std::string> keys;
    const std::string ns = std::string("namespace-", 10) + '\0';
    for (const char* id : {"", "a", "ab", "abcdefgh", "abcdefgh1", "abcdefghijklmnop", "abcdefghijklmnoq"}) {
      keys.push_back(ns + id);
    }
    keys.push_back(ns + "abcdefgh\xff");
    keys.push_back(ns + "abcdefgh\x80zzzzzzzzz");
    keys.push_back(std::string("n\0", 2) + "x");
    return keys;
  }();
  StoreBatch::Entry e;
  e.op = static_cast<StoreBatch::Op>(1 + rng() % 6);
  e.key = kKeys[rng() % kKeys.size()];
  e.delivery_id = rng() % 12 + ((rng() % 4 == 0) ? uint64_t{1} << 63 : 0);
  e.deadline_unix_ns = static_cast<int64_t>(rng() % 5) - 2 + ((rng() % 2) ? int64_t{1} << 40 : 0);
  e.ttl_ns = rng() % 100;
  storage->push_back(std::to_string(rng()));
  e.payload = storage->back();
  e.fired_at_unix_ns = 7;
  e.attempt = 1;
  return e;
}

TEST(SortKeyPartsTest, CompareOrdersAsTheSortKeyBytes) {
  std::mt19937_64 rng(11);
  std::vector<std::string> storage;
  storage.reserve(4000);
  for (int i = 0; i < 2000; ++i) {
    const StoreBatch::Entry a = RandomOp(rng, &storage);
    const StoreBatch::Entry b = RandomOp(rng, &storage);
    std::string ka, kb;
    SortKeyOf(a, &ka);
    SortKeyOf(b, &kb);
    ASSERT_EQ(Sign(Compare(SortKeyParts::Of(a), SortKeyParts::Of(b))), Sign(ka.compare(kb))) << "case " << i;
    ASSERT_EQ(Sign(CompareBytes(a.key, b.key)), Sign(a.key.compare(b.key))) << "case " << i;
  }
}

TEST(MergeStateTest, ASnapshotWithTheDeltaOverItHoldsTheLastPutOfEachRecordInOrder) {
  std::mt19937_64 rng(5);
  std::map<std::string, std::string> want;  // Sort key -> the last operation's bytes, puts and deletes.
  std::string snapshot;                     // The last fold's file; none at first.
  const std::string base = ::testing::TempDir() + "/merge-state-" + std::to_string(::getpid()) + "-";
  for (int fold = 1; fold <= 6; ++fold) {
    LogDelta delta;
    std::vector<std::string> storage;
    storage.reserve(4000);
    for (int record = 0; record < 60; ++record) {
      StoreBatch batch;
      for (int i = 0, n = 1 + static_cast<int>(rng() % 8); i < n; ++i) {
        const StoreBatch::Entry e = RandomOp(rng, &storage);
        AddOp(&batch, e);
        std::string key;
        SortKeyOf(e, &key);
        want[key] = OpBytes(e);
      }
      ASSERT_TRUE(delta.Add(batch.data(), /*copy=*/true));
    }
    // This fold's snapshot, as LogTimerStore writes one: the records copied as they are.
    const std::string path = base + std::to_string(fold);
    auto writer = SnapshotWriter::Create(path);
    ASSERT_TRUE(writer.ok()) << writer.status();
    std::vector<std::pair<std::string, std::string>> got;  // (sort key, operation) in the order emitted.
    ASSERT_TRUE(MergeState(
                    snapshot, delta,
                    [&](const StateRecord& r) {
                      std::string key;
                      SortKeyOf(r.entry(), &key);
                      EXPECT_EQ(OpBytes(r.entry()), r.op());
                      got.emplace_back(key, std::string(r.op()));
                      return (*writer)->AddEncoded(r.op());
                    },
                    [](const absl::Status&) { return false; })
                    .ok());
    ASSERT_TRUE((*writer)->Finish(static_cast<uint64_t>(fold)).ok());
    std::vector<std::pair<std::string, std::string>> expected;
    for (const auto& [key, op] : want) {
      if (IsPut(static_cast<StoreBatch::Op>(op.front()))) expected.emplace_back(key, op);
    }
    ASSERT_EQ(got, expected) << "fold " << fold;
    if (!snapshot.empty()) std::remove(snapshot.c_str());
    snapshot = path;
  }
  // The last snapshot alone reads back as the state.
  std::vector<std::string> read;
  uint64_t next_sequence = 0;
  ASSERT_TRUE(ReadSnapshot(
                  snapshot,
                  [&](std::string_view op, const StoreBatch::Entry& e) {
                    EXPECT_EQ(OpBytes(e), op);
                    read.emplace_back(op);
                    return absl::OkStatus();
                  },
                  [](const absl::Status&) { return false; }, &next_sequence)
                  .ok());
  EXPECT_EQ(next_sequence, 6u);
  size_t puts = 0;
  for (const auto& [key, op] : want) puts += IsPut(static_cast<StoreBatch::Op>(op.front())) ? 1 : 0;
  EXPECT_EQ(read.size(), puts);
  std::remove(snapshot.c_str());
}

}  // namespace
}  // namespace lawn::logstore
