#include "storage/dir_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "storage/posix_file.h"

namespace lawn {

namespace {

absl::StatusOr<int> LockFile(const std::string& dir, bool shared) {
  const std::string path = absl::StrCat(dir, "/", kDirLockFile);
  const int fd = shared ? ::open(path.c_str(), O_RDONLY | O_CLOEXEC)
                        : ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) {
    if (shared && errno == ENOENT) return -1;
    return FileError("open", path, errno);
  }
  if (::flock(fd, (shared ? LOCK_SH : LOCK_EX) | LOCK_NB) != 0) {
    const int err = errno;
    ::close(fd);
    if (err == EWOULDBLOCK) {
      return absl::UnavailableError(absl::StrCat("data dir ", dir, " is in use by another process (it holds ",
                                                 path, "): one lawnd per data dir"));
    }
    return FileError("flock", path, err);
  }
  return fd;
}

}  // namespace

absl::StatusOr<std::unique_ptr<DirLock>> DirLock::Acquire(const std::string& dir) {
  LAWN_ASSIGN_OR_RETURN(const int fd, LockFile(dir, /*shared=*/false));
  return std::unique_ptr<DirLock>(new DirLock(fd));
}

absl::StatusOr<std::unique_ptr<DirLock>> DirLock::AcquireShared(const std::string& dir) {
  LAWN_ASSIGN_OR_RETURN(const int fd, LockFile(dir, /*shared=*/true));
  return std::unique_ptr<DirLock>(new DirLock(fd));
}

DirLock::~DirLock() {
  // Closing the last descriptor of the description releases the flock (-1: a shared hold of a dir without a
  // lock file, nothing held).
  if (fd_ >= 0) ::close(fd_);
}

}  // namespace lawn
