#include "storage/posix_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace lawn {

absl::Status FileError(std::string_view what, std::string_view path, int err) {
  const std::string message =
      absl::StrCat(std::string(what), " ", std::string(path), ": ", std::strerror(err));
  return err == ENOSPC ? absl::ResourceExhaustedError(message) : absl::UnavailableError(message);
}

absl::Status WriteNewFile(const std::string& path, std::string_view data) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) return FileError("create", path, errno);
  absl::Status status;
  while (!data.empty() && status.ok()) {
    const ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      status = FileError("write", path, n < 0 ? errno : EIO);
    } else {
      data.remove_prefix(static_cast<size_t>(n));
    }
  }
  if (status.ok() && ::fdatasync(fd) != 0) status = FileError("fdatasync", path, errno);
  ::close(fd);
  return status;
}

absl::StatusOr<std::optional<std::string>> ReadWholeFile(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return std::optional<std::string>();
    return FileError("open", path, errno);
  }
  std::string out;
  char chunk[1 << 16];
  while (true) {
    const ssize_t n = ::read(fd, chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = errno;
      ::close(fd);
      return FileError("read", path, err);
    }
    if (n == 0) break;
    out.append(chunk, static_cast<size_t>(n));
  }
  ::close(fd);
  return std::optional<std::string>(std::move(out));
}

absl::Status SyncDir(const std::string& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return FileError("open", dir, errno);
  const bool ok = ::fsync(fd) == 0;
  const int err = errno;
  ::close(fd);
  return ok ? absl::OkStatus() : FileError("fsync", dir, err);
}

absl::Status ReplaceFile(const std::string& dir, const std::string& name, std::string_view text) {
  const std::string path = absl::StrCat(dir, "/", name);
  const std::string tmp = path + ".tmp";
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return FileError("create", tmp, errno);
  const bool written = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  int err = written ? 0 : (errno != 0 ? errno : EIO);
  const bool synced = written && ::fdatasync(fd) == 0;
  if (written && !synced) err = errno;
  ::close(fd);
  if (!synced) return FileError(written ? "fdatasync" : "write", tmp, err);
  if (::rename(tmp.c_str(), path.c_str()) != 0) return FileError("rename", tmp, errno);
  return SyncDir(dir);
}

absl::StatusOr<std::unique_ptr<MappedFile>> MappedFile::Open(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return FileError("open", path, errno);
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    return FileError("stat", path, err);
  }
  const size_t size = static_cast<size_t>(st.st_size);
  void* data = nullptr;
  if (size > 0) {
    data = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, 0);
    if (data == MAP_FAILED) {
      const int err = errno;
      ::close(fd);
      return FileError("mmap", path, err);
    }
  }
  ::close(fd);
  return std::unique_ptr<MappedFile>(new MappedFile(data, size));
}

MappedFile::~MappedFile() {
  if (data_ != nullptr) ::munmap(data_, size_);
}

}  // namespace lawn
