// Small POSIX file helpers shared by the log engine's files (storage/round_log.h, storage/log_state.h,
// storage/log_timer_store.h) and the migration to it (storage/store_migration.h).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace lawn {

// The status for a failed system call `what` on `path` with errno `err`: RESOURCE_EXHAUSTED for a full disk
// (ENOSPC), which callers report as such, else UNAVAILABLE.
absl::Status FileError(std::string_view what, std::string_view path, int err);

// Creates `path` (which must not exist) holding `data`, and fdatasyncs it. The directory entry is not synced
// (sync the directory once its files are written).
absl::Status WriteNewFile(const std::string& path, std::string_view data);

// The whole file at `path`; nullopt if it does not exist.
absl::StatusOr<std::optional<std::string>> ReadWholeFile(const std::string& path);

// fsyncs the directory `dir` (so that the entries created, renamed or removed in it are durable).
absl::Status SyncDir(const std::string& dir);

// Replaces `dir`/`name` with `text` so that a crash leaves the old or the new content, never a mix: write a
// temporary file (`name`.tmp), sync it, rename it over, sync the dir.
absl::Status ReplaceFile(const std::string& dir, const std::string& name, std::string_view text);

// A file mapped read-only, its pages read in by the mmap call itself (MAP_POPULATE): reading a 64 MiB log
// segment into a fresh buffer took 0.3 s here, most of it page faults on the buffer. The bytes stay valid
// while the object lives, even if the file is deleted or renamed meanwhile; the file must not be truncated
// (no lawn file that is mapped ever is) and what is written to it meanwhile may show.
class MappedFile {
 public:
  static absl::StatusOr<std::unique_ptr<MappedFile>> Open(const std::string& path);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  std::string_view bytes() const { return {static_cast<const char*>(data_), size_}; }

 private:
  MappedFile(void* data, size_t size) : data_(data), size_(size) {}
  void* data_;
  size_t size_;
};

}  // namespace lawn
