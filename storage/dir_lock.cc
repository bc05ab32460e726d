#include "storage/dir_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>

#include "absl/strings/str_cat.h"
#include "storage/posix_file.h"

namespace lawn {

absl::StatusOr<std::unique_ptr<DirLock>> DirLock::Acquire(const std::string& dir) {
  const std::string path = absl::StrCat(dir, "/", kDirLockFile);
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return FileError("open", path, errno);
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    const int err = errno;
    ::close(fd);
    if (err == EWOULDBLOCK) {
      return absl::UnavailableError(absl::StrCat("data dir ", dir, " is in use by another process (it holds ",
                                                 path, "): one lawnd per data dir"));
    }
    return FileError("flock", path, err);
  }
  return std::unique_ptr<DirLock>(new DirLock(fd));
}

DirLock::~DirLock() { ::close(fd_); }  // Closing the last descriptor of the description releases the flock.

}  // namespace lawn
