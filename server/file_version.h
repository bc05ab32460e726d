// FileVersion: what stat(2) says about a file, to notice that it changed without reading it. Used by the
// watchers of the tokens file and of the TLS files. A Kubernetes Secret update swaps a symlink, which stat
// follows, so the inode changes too; the modification time is in nanoseconds.
//
// Thread-safety: a plain value; Of() only calls stat.
#pragma once

#include <sys/stat.h>
#include <sys/types.h>

#include <cerrno>
#include <cstdint>
#include <string>

namespace lawn {

struct FileVersion {
  dev_t dev = 0;
  ino_t ino = 0;
  off_t size = 0;
  int64_t mtime_ns = 0;
  int error = 0;  // The errno of a failed stat (then the rest is 0), e.g. ENOENT for a missing file.

  bool operator==(const FileVersion&) const = default;

  static FileVersion Of(const std::string& path) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) return FileVersion{.error = errno};
    return {st.st_dev, st.st_ino, st.st_size, int64_t{st.st_mtim.tv_sec} * 1'000'000'000 + st.st_mtim.tv_nsec, 0};
  }
};

}  // namespace lawn
