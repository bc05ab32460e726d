// MemoryTimerStore's test hooks: injected write failures and simulated power cuts.
#include "tests/testing/memory_timer_store.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "storage/store_batch.h"
#include "tests/storage/storage_test_util.h"

namespace lawn {
namespace {

using storage_test::Key;
using storage_test::TimerKeys;

StoreBatch PutOne(const std::string& id) {
  StoreBatch b;
  b.PutTimer(Key("ns", id), 1, 0, 0, "");
  return b;
}

TEST(MemoryTimerStoreTest, InjectedFailureIsReturnedAndChangesNothing) {
  MemoryTimerStore store;
  ASSERT_TRUE(store.Write(PutOne("a"), SyncMode::kSync).ok());
  store.FailWritesWith(absl::UnavailableError("disk on fire"));
  EXPECT_EQ(store.Write(PutOne("b"), SyncMode::kSync).code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(store.Sync().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(store.NextBootEpoch().status().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(TimerKeys(store), std::vector<std::string>{Key("ns", "a")});
  store.FailWritesWith(absl::OkStatus());
  EXPECT_TRUE(store.Write(PutOne("b"), SyncMode::kSync).ok());
  EXPECT_EQ(store.timer_count(), 2u);
}

TEST(MemoryTimerStoreTest, DropUnsyncedWritesKeepsWhatWasSynced) {
  MemoryTimerStore store(MemoryStoreOptions{.simulate_power_loss = true});
  ASSERT_TRUE(store.Write(PutOne("a"), SyncMode::kNoSync).ok());
  ASSERT_TRUE(store.Write(PutOne("b"), SyncMode::kSync).ok());
  ASSERT_TRUE(store.Write(PutOne("c"), SyncMode::kNoSync).ok());
  ASSERT_TRUE(store.Sync().ok());
  ASSERT_TRUE(store.Write(PutOne("d"), SyncMode::kNoSync).ok());
  ASSERT_TRUE(store.NextBootEpoch().ok());
  store.DropUnsyncedWrites();
  EXPECT_EQ(TimerKeys(store), (std::vector<std::string>{Key("ns", "a"), Key("ns", "b"), Key("ns", "c")}));
  EXPECT_EQ(*store.NextBootEpoch(), 2u);  // The epoch is written synchronously.
}

TEST(MemoryTimerStoreTest, SyncCountCountsOnlySyncedWritesAndSyncs) {
  MemoryTimerStore store;
  ASSERT_TRUE(store.Write(PutOne("a"), SyncMode::kNoSync).ok());
  EXPECT_EQ(store.sync_count(), 0u);
  ASSERT_TRUE(store.Write(PutOne("b"), SyncMode::kSync).ok());
  ASSERT_TRUE(store.Sync().ok());
  EXPECT_EQ(store.sync_count(), 2u);
}

}  // namespace
}  // namespace lawn
