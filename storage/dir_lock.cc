#include "storage/dir_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <map>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "storage/posix_file.h"

namespace lawn {
namespace {

struct Held {
  int fd = -1;
  int holders = 0;
};

// This process's locked dirs, by the lock file's device and inode (so two spellings of one path are one dir).
absl::Mutex& RegistryMutex() {
  static absl::Mutex* mu = new absl::Mutex();
  return *mu;
}
std::map<std::pair<dev_t, ino_t>, Held>& Registry() {
  static auto* held = new std::map<std::pair<dev_t, ino_t>, Held>();
  return *held;
}

}  // namespace

absl::StatusOr<std::unique_ptr<DirLock>> DirLock::Acquire(const std::string& dir) {
  const std::string path = absl::StrCat(dir, "/", kDirLockFile);
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return FileError("open", path, errno);
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    return FileError("stat", path, err);
  }
  absl::MutexLock l(&RegistryMutex());
  Held& held = Registry()[{st.st_dev, st.st_ino}];
  if (held.holders > 0) {
    ::close(fd);  // This process holds it already, through the first descriptor.
  } else {
    if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
      const int err = errno;
      ::close(fd);
      Registry().erase({st.st_dev, st.st_ino});
      if (err == EWOULDBLOCK) {
        return absl::UnavailableError(absl::StrCat(
            "data dir ", dir, " is in use by another process (it holds ", path, "): one lawnd per data dir"));
      }
      return FileError("flock", path, err);
    }
    held.fd = fd;
  }
  ++held.holders;
  return std::unique_ptr<DirLock>(new DirLock(st.st_dev, st.st_ino));
}

DirLock::~DirLock() {
  absl::MutexLock l(&RegistryMutex());
  auto it = Registry().find({dev_, ino_});
  if (it == Registry().end() || --it->second.holders > 0) return;
  ::close(it->second.fd);  // Releases the flock.
  Registry().erase(it);
}

}  // namespace lawn
