// DirLock: one process at a time per data dir. Each store (RocksDB's and the log's) and the migration between
// them hold `<dir>/lawn.lock` with flock(LOCK_EX) while they use the dir, so a second lawnd started on the
// same data dir is refused at start instead of writing beside the first. RocksDB's own LOCK covers only
// RocksDB; the log store had none, and a migration moves RocksDB's files while RocksDB is closed.
//
// Within one process a dir may be locked again while it is locked (each holder its own DirLock; the lock is
// released with the last): the migration holds the dir while it opens the stores in it, and tests open a
// store twice. The lock file is never removed or renamed; the kernel drops the lock when the process dies.
//
// Thread-safety: Acquire and the destructor are thread-safe.
#pragma once

#include <sys/types.h>

#include <memory>
#include <string>

#include "absl/status/statusor.h"

namespace lawn {

inline constexpr char kDirLockFile[] = "lawn.lock";

class DirLock {
 public:
  // Locks `dir` (which must exist). UNAVAILABLE if another process holds it (the message says so) or on
  // I/O errors.
  static absl::StatusOr<std::unique_ptr<DirLock>> Acquire(const std::string& dir);
  ~DirLock();
  DirLock(const DirLock&) = delete;
  DirLock& operator=(const DirLock&) = delete;

 private:
  DirLock(dev_t dev, ino_t ino) : dev_(dev), ino_(ino) {}
  dev_t dev_;  // The lock file's identity: the key of this process's holders.
  ino_t ino_;
};

}  // namespace lawn
