// Unit tests of TimerPool: slab allocation, free-list reuse, id/payload storage.
#include "core/timer_pool.h"

#include <algorithm>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace lawn {
namespace {

TEST(TimerPoolTest, AllocateReturnsRecordWithIdPayloadAndDefaults) {
  TimerPool pool;
  TimerRef ref = pool.Allocate("timer-1", "payload bytes", 0xabcdu);
  const TimerRecord& r = pool[ref];
  EXPECT_EQ(r.id(), "timer-1");
  EXPECT_EQ(r.payload(), "payload bytes");
  EXPECT_EQ(r.id_hash, 0xabcdu);
  EXPECT_EQ(r.deadline_ns, 0u);
  EXPECT_EQ(r.ttl_ns, 0u);
  EXPECT_EQ(r.interval_ns, 0u);
  EXPECT_EQ(r.prev, kNoTimer);
  EXPECT_EQ(r.next, kNoTimer);
  EXPECT_EQ(r.home, Home::kNone);
  EXPECT_EQ(pool.live(), 1u);
}

TEST(TimerPoolTest, IdAndPayloadRoundTripBinaryAndEmptyValues) {
  TimerPool pool;
  const std::string id_with_nul("a\0b\xff", 4);
  const std::string payload_with_nul("\0\0x\0", 4);
  TimerRef a = pool.Allocate(id_with_nul, payload_with_nul, 1);
  TimerRef b = pool.Allocate("only-id", "", 2);
  TimerRef c = pool.Allocate("x", std::string(100000, 'p'), 3);
  EXPECT_EQ(pool[a].id(), id_with_nul);
  EXPECT_EQ(pool[a].payload(), payload_with_nul);
  EXPECT_EQ(pool[b].id(), "only-id");
  EXPECT_EQ(pool[b].payload(), "");
  EXPECT_EQ(pool[c].id(), "x");
  EXPECT_EQ(pool[c].payload(), std::string(100000, 'p'));
}

TEST(TimerPoolTest, AllocateCopiesTheCallersBytes) {
  TimerPool pool;
  std::string id = "id-original";
  std::string payload = "payload-original";
  TimerRef ref = pool.Allocate(id, payload, 0);
  id.assign("XXXXXXXXXXX");
  payload.assign("YYYYYYYYYYYYYYYY");
  EXPECT_EQ(pool[ref].id(), "id-original");
  EXPECT_EQ(pool[ref].payload(), "payload-original");
}

TEST(TimerPoolTest, FreedRefIsReusedByNextAllocate) {
  TimerPool pool;
  TimerRef a = pool.Allocate("a", "pa", 0);
  TimerRef b = pool.Allocate("b", "pb", 0);
  ASSERT_NE(a, b);
  pool.Free(a);
  EXPECT_EQ(pool.live(), 1u);
  TimerRef c = pool.Allocate("c", "pc", 0);
  EXPECT_EQ(c, a);
  EXPECT_EQ(pool.live(), 2u);
  // The reused record is fresh: new bytes, default fields.
  EXPECT_EQ(pool[c].id(), "c");
  EXPECT_EQ(pool[c].payload(), "pc");
  EXPECT_EQ(pool[c].home, Home::kNone);
  EXPECT_EQ(pool[c].prev, kNoTimer);
  EXPECT_EQ(pool[c].next, kNoTimer);
  EXPECT_EQ(pool[b].id(), "b");
}

TEST(TimerPoolTest, FreeingManyRefsReusesAllBeforeGrowing) {
  TimerPool pool;
  std::vector<TimerRef> refs;
  for (int i = 0; i < 100; ++i) refs.push_back(pool.Allocate("id" + std::to_string(i), "", 0));
  std::vector<bool> freed(100, false);
  for (int i = 0; i < 100; i += 3) {
    pool.Free(refs[i]);
    freed[i] = true;
  }
  const size_t freed_count = 34;
  std::vector<TimerRef> again;
  for (size_t i = 0; i < freed_count; ++i) again.push_back(pool.Allocate("new", "", 0));
  for (TimerRef r : again) {
    auto it = std::find(refs.begin(), refs.end(), r);
    ASSERT_NE(it, refs.end()) << "ref " << r << " was not reused";
    EXPECT_TRUE(freed[it - refs.begin()]);
  }
  EXPECT_EQ(pool.live(), 100u);
}

TEST(TimerPoolTest, FreedRecordDefaultsAreRestoredAfterFieldsWereSet) {
  TimerPool pool;
  TimerRef a = pool.Allocate("a", "p", 0);
  pool[a].deadline_ns = 123;
  pool[a].ttl_ns = 45;
  pool[a].interval_ns = 6;
  pool.Free(a);
  TimerRef b = pool.Allocate("b", "q", 0);
  ASSERT_EQ(b, a);
  EXPECT_EQ(pool[b].deadline_ns, 0u);
  EXPECT_EQ(pool[b].ttl_ns, 0u);
  EXPECT_EQ(pool[b].interval_ns, 0u);
}

TEST(TimerPoolTest, SetPayloadReplacesPayloadAndKeepsId) {
  TimerPool pool;
  TimerRef ref = pool.Allocate("the-id", "short", 7);
  pool[ref].deadline_ns = 99;
  pool.SetPayload(ref, "a much longer payload than before");
  EXPECT_EQ(pool[ref].id(), "the-id");
  EXPECT_EQ(pool[ref].payload(), "a much longer payload than before");
  pool.SetPayload(ref, "s");
  EXPECT_EQ(pool[ref].id(), "the-id");
  EXPECT_EQ(pool[ref].payload(), "s");
  pool.SetPayload(ref, "");
  EXPECT_EQ(pool[ref].id(), "the-id");
  EXPECT_EQ(pool[ref].payload(), "");
  EXPECT_EQ(pool[ref].deadline_ns, 99u);
  EXPECT_EQ(pool[ref].id_hash, 7u);
}

TEST(TimerPoolTest, SetPayloadLeavesOtherRecordsAlone) {
  TimerPool pool;
  TimerRef a = pool.Allocate("a", "pa", 0);
  TimerRef b = pool.Allocate("b", "pb", 0);
  pool.SetPayload(a, std::string(1000, 'z'));
  EXPECT_EQ(pool[b].id(), "b");
  EXPECT_EQ(pool[b].payload(), "pb");
}

TEST(TimerPoolTest, GrowingBeyondOneChunkNeverMovesRecords) {
  TimerPool pool;
  TimerRef first = pool.Allocate("first", "p", 0);
  const TimerRecord* address = &pool[first];
  std::vector<TimerRef> refs;
  for (int i = 0; i < 70000; ++i) refs.push_back(pool.Allocate(std::to_string(i), "", 0));
  EXPECT_EQ(&pool[first], address);
  EXPECT_EQ(pool[first].id(), "first");
  for (int i = 0; i < 70000; i += 977) EXPECT_EQ(pool[refs[i]].id(), std::to_string(i));
  EXPECT_EQ(pool[refs.back()].id(), "69999");
  EXPECT_EQ(pool.live(), 70001u);
}

TEST(TimerPoolTest, MemoryBytesCountsBlobs) {
  TimerPool pool;
  TimerRef small = pool.Allocate("a", "", 0);
  size_t before = pool.MemoryBytes();
  TimerRef big = pool.Allocate("b", std::string(1 << 20, 'x'), 0);
  EXPECT_GE(pool.MemoryBytes(), before + (1u << 20));
  pool.Free(big);
  EXPECT_LT(pool.MemoryBytes(), before + (1u << 20));
  pool.Free(small);
}

}  // namespace
}  // namespace lawn

namespace lawn {
namespace {

TEST(TimerPoolTest, SetPayloadMovesBetweenInlineAndHeapStorage) {
  TimerPool pool;
  const TimerRef ref = pool.Allocate("id-12345", "small", 7);  // 13 bytes: inline.
  EXPECT_TRUE(pool[ref].is_inline());
  const std::string big(100, 'b');
  pool.SetPayload(ref, big);  // To the heap.
  EXPECT_FALSE(pool[ref].is_inline());
  EXPECT_EQ(pool[ref].id(), "id-12345");
  EXPECT_EQ(pool[ref].payload(), big);
  pool.SetPayload(ref, "tiny");  // Back inline.
  EXPECT_TRUE(pool[ref].is_inline());
  EXPECT_EQ(pool[ref].id(), "id-12345");
  EXPECT_EQ(pool[ref].payload(), "tiny");
  pool.SetPayload(ref, std::string(200, 'c'));  // Heap to a bigger heap block.
  EXPECT_EQ(pool[ref].payload(), std::string(200, 'c'));
  EXPECT_EQ(pool[ref].id(), "id-12345");
  pool.Free(ref);
  EXPECT_EQ(pool.live(), 0u);
}

TEST(TimerPoolTest, SeventeenBytesFitInlineAndEighteenDoNot) {
  TimerPool pool;
  const TimerRef a = pool.Allocate(std::string(16, 'x'), "1", 1);
  const TimerRef b = pool.Allocate(std::string(16, 'y'), "z2", 2, 7);
  EXPECT_TRUE(pool[a].is_inline());
  EXPECT_FALSE(pool[b].is_inline());
  EXPECT_EQ(pool[a].id(), std::string(16, 'x'));
  EXPECT_EQ(pool[a].payload(), "1");
  EXPECT_EQ(pool[b].id(), std::string(16, 'y'));
  EXPECT_EQ(pool[b].payload(), "z2");
  EXPECT_EQ(pool[a].group, 0);
  EXPECT_EQ(pool[b].group, 7);
  pool.SetPayload(b, "");  // Back inline; the group stays.
  EXPECT_TRUE(pool[b].is_inline());
  EXPECT_EQ(pool[b].group, 7);
  EXPECT_EQ(pool[b].id(), std::string(16, 'y'));
}

TEST(TimerPoolTest, TheLongestIdAfterItsGroupIsKept) {
  TimerPool pool;
  const std::string id(TimerRecord::kMaxIdBytes, 'i');
  const TimerRef ref = pool.Allocate(id, "p", 3);
  EXPECT_EQ(pool[ref].id(), id);
  EXPECT_EQ(pool[ref].payload(), "p");
  pool.Free(ref);
}

}  // namespace
}  // namespace lawn
