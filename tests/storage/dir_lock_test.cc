// DirLock: the flock on `<dir>/lawn.lock` that keeps a second process out of a data dir, taken by both
// stores. Another open file description stands in for another process (flock locks
// belong to open file descriptions, so a second open() of the file in this process conflicts as another
// process's would); lawnd's DurabilityTest.ASecondLawndOnTheSameDataDirIsRefused runs two real processes.
#include "storage/dir_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <memory>
#include <string>

#include "gtest/gtest.h"
#include "storage/log_timer_store.h"
#include "storage/rocksdb_timer_store.h"
#include "tests/storage/storage_test_util.h"

namespace lawn {
namespace {

using storage_test::TempDir;

// Whether a fresh open file description of `dir`/lawn.lock could take the lock (as another process would).
bool OthersMayLock(const std::string& dir) {
  const int fd = ::open((dir + "/" + kDirLockFile).c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  EXPECT_GE(fd, 0);
  const bool locked = ::flock(fd, LOCK_EX | LOCK_NB) == 0;
  if (!locked) EXPECT_EQ(errno, EWOULDBLOCK);
  ::close(fd);
  return locked;
}

TEST(DirLockTest, HeldUntilReleasedAndNotTakenTwice) {
  TempDir dir;
  EXPECT_TRUE(OthersMayLock(dir.path()));
  absl::StatusOr<std::unique_ptr<DirLock>> first = DirLock::Acquire(dir.path());
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_FALSE(OthersMayLock(dir.path()));
  // Not even by this process, under another spelling of the dir.
  EXPECT_EQ(DirLock::Acquire(dir.path() + "/.").status().code(), absl::StatusCode::kUnavailable);
  first->reset();
  EXPECT_TRUE(OthersMayLock(dir.path()));
  EXPECT_TRUE(DirLock::Acquire(dir.path()).ok());
}

TEST(DirLockTest, ADirLockedElsewhereIsRefusedWithItsName) {
  TempDir dir;
  const int fd = ::open(dir.Sub(kDirLockFile).c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  ASSERT_EQ(::flock(fd, LOCK_EX | LOCK_NB), 0);
  absl::StatusOr<std::unique_ptr<DirLock>> refused = DirLock::Acquire(dir.path());
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kUnavailable) << refused.status();
  EXPECT_NE(refused.status().message().find("in use by another process"), std::string::npos)
      << refused.status();
  ::close(fd);
  EXPECT_TRUE(DirLock::Acquire(dir.path()).ok());
}

// Readers (lawn_dump) share the dir with each other, never with a store: a shared hold refuses the
// exclusive one and the other way round; a dir without a lock file is read without one, and none is created.
TEST(DirLockTest, SharedHoldsCoexistAndExcludeTheExclusiveOne) {
  TempDir dir;
  {
    absl::StatusOr<std::unique_ptr<DirLock>> none = DirLock::AcquireShared(dir.path());
    ASSERT_TRUE(none.ok()) << none.status();
    EXPECT_FALSE(std::filesystem::exists(dir.path() + "/" + kDirLockFile));
  }
  {
    absl::StatusOr<std::unique_ptr<DirLock>> exclusive = DirLock::Acquire(dir.path());
    ASSERT_TRUE(exclusive.ok()) << exclusive.status();
    const absl::Status refused = DirLock::AcquireShared(dir.path()).status();
    EXPECT_EQ(refused.code(), absl::StatusCode::kUnavailable) << refused;
    EXPECT_NE(refused.message().find("in use by another process"), std::string::npos) << refused;
  }
  absl::StatusOr<std::unique_ptr<DirLock>> first = DirLock::AcquireShared(dir.path());
  absl::StatusOr<std::unique_ptr<DirLock>> second = DirLock::AcquireShared(dir.path());
  ASSERT_TRUE(first.ok()) << first.status();
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_EQ(DirLock::Acquire(dir.path()).status().code(), absl::StatusCode::kUnavailable);
  EXPECT_FALSE(OthersMayLock(dir.path()));
  first->reset();
  second->reset();
  EXPECT_TRUE(OthersMayLock(dir.path()));
}

TEST(DirLockTest, BothStoresHoldTheirDataDirWhileOpen) {
  TempDir dir;
  {
    LogStoreOptions options;
    options.path = dir.Sub("log");
    options.min_free_disk_bytes = 0;
    absl::StatusOr<std::unique_ptr<LogTimerStore>> store = LogTimerStore::Open(options);
    ASSERT_TRUE(store.ok()) << store.status();
    EXPECT_FALSE(OthersMayLock(options.path));
  }
  EXPECT_TRUE(OthersMayLock(dir.Sub("log")));
  {
    RocksDbStoreOptions options;
    options.path = dir.Sub("rocks");
    options.min_free_disk_bytes = 0;
    absl::StatusOr<std::unique_ptr<RocksDbTimerStore>> store = RocksDbTimerStore::Open(options);
    ASSERT_TRUE(store.ok()) << store.status();
    EXPECT_FALSE(OthersMayLock(options.path));
  }
  EXPECT_TRUE(OthersMayLock(dir.Sub("rocks")));
  // Locked elsewhere: neither opens.
  const int fd = ::open(dir.Sub("log/lawn.lock").c_str(), O_RDWR | O_CLOEXEC);
  ASSERT_EQ(::flock(fd, LOCK_EX | LOCK_NB), 0);
  LogStoreOptions options;
  options.path = dir.Sub("log");
  EXPECT_EQ(LogTimerStore::Open(options).status().code(), absl::StatusCode::kUnavailable);
  ::close(fd);
}

}  // namespace
}  // namespace lawn
