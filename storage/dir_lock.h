// DirLock: one process at a time per data dir. Each store (RocksDB's and the log's) holds `<dir>/lawn.lock`
// with flock(LOCK_EX) while it is open, and the migration between them while it switches their files, so a
// second lawnd started on the same data dir is refused at start instead of writing beside the first.
// RocksDB's own LOCK covers only RocksDB; the log store had none.
//
// flock locks belong to an open file description, so a second Acquire of a locked dir fails even in the same
// process: whoever holds a dir must not open a store in it. The lock file is never removed or renamed (a
// renamed file would take the lock with it); the kernel drops the lock when the process dies.
//
// Thread-safety: a DirLock is not shared; Acquire and AcquireShared may be called from any thread.
#pragma once

#include <memory>
#include <string>

#include "absl/status/statusor.h"

namespace lawn {

inline constexpr char kDirLockFile[] = "lawn.lock";

class DirLock {
 public:
  // Locks `dir` (which must exist). UNAVAILABLE if it is locked already (the message says the dir is in use
  // by another process) or on I/O errors.
  static absl::StatusOr<std::unique_ptr<DirLock>> Acquire(const std::string& dir);
  // For a reader that changes nothing (lawn_dump): a shared lock on `dir`'s lock file, so that no lawnd
  // opens the dir while it reads (Acquire fails meanwhile), without creating the file or writing anything.
  // UNAVAILABLE (as Acquire's) while a store has the dir open. A dir without a lock file (written before it
  // existed) is not locked: the result then holds nothing.
  static absl::StatusOr<std::unique_ptr<DirLock>> AcquireShared(const std::string& dir);
  ~DirLock();  // Unlocks.
  DirLock(const DirLock&) = delete;
  DirLock& operator=(const DirLock&) = delete;

 private:
  explicit DirLock(int fd) : fd_(fd) {}
  int fd_;
};

}  // namespace lawn
