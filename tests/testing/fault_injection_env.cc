#include "tests/testing/fault_injection_env.h"

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "rocksdb/env.h"
#include "rocksdb/file_system.h"

namespace lawn {
namespace internal {

namespace {

std::string Normalize(const std::string& path) {
  std::string n = std::filesystem::path(path).lexically_normal().string();
  if (n.size() > 1 && n.back() == '/') n.pop_back();
  return n;
}

std::string DirOf(const std::string& normalized) {
  return std::filesystem::path(normalized).parent_path().string();
}

}  // namespace

// What the file system knows about one file written through it. Shared with the open file object so that a
// rename moves the state with the file.
struct FileState {
  uint64_t size = 0;              // Bytes written so far.
  uint64_t synced = 0;            // Bytes made durable by Sync/Fsync.
  bool dir_entry_synced = false;  // The file's name is durable (its directory was fsynced since creation).
  // Created after the cut: written for real so that RocksDB can read back what it "wrote" (else its
  // background jobs fail and stall shutdown), but the file never became durable and goes at the restore.
  bool created_after_cut = false;
  uint64_t created_seq = 0;  // FaultInjectionFs::seq_ when it was created.
};

class FaultInjectionFs final : public rocksdb::FileSystemWrapper {
 public:
  explicit FaultInjectionFs(const std::shared_ptr<rocksdb::FileSystem>& base) : FileSystemWrapper(base) {}

  const char* Name() const override { return "LawnFaultInjectionFs"; }

  bool dead() const {
    absl::MutexLock l(&mu_);
    return dead_;
  }
  void CutPower() {
    absl::MutexLock l(&mu_);
    dead_ = true;
  }
  void CutPowerAtSync(uint64_t n) {
    absl::MutexLock l(&mu_);
    syncs_before_cut_ = n == 0 ? 0 : n - 1;
    cut_armed_ = true;
  }
  // Called before a file or directory sync; false if the power is (now) out and the sync must be dropped.
  bool BeginSync() {
    absl::MutexLock l(&mu_);
    if (dead_) return false;
    if (cut_armed_) {
      if (syncs_before_cut_ == 0) {
        dead_ = true;
        cut_armed_ = false;
        return false;
      }
      --syncs_before_cut_;
    }
    return true;
  }
  void FailAppends(AppendFailure failure) { append_failure_.store(failure); }
  // The injected error for an append, or OK.
  rocksdb::IOStatus AppendError() const {
    switch (append_failure_.load()) {
      case AppendFailure::kNone:
        return rocksdb::IOStatus::OK();
      case AppendFailure::kIoError:
        return rocksdb::IOStatus::IOError("injected I/O error");
      case AppendFailure::kNoSpace:
        return rocksdb::IOStatus::NoSpace("injected: no space left on device");
    }
    return rocksdb::IOStatus::OK();
  }
  uint64_t file_syncs() const {
    absl::MutexLock l(&mu_);
    return file_syncs_;
  }

  absl::Status RestoreAfterPowerCut();

  // Hooks for the file and directory wrappers.
  void OnAppend(FileState& state, uint64_t end_offset) {
    absl::MutexLock l(&mu_);
    if (end_offset > state.size) state.size = end_offset;
  }
  uint64_t SizeOf(const FileState& state) const {
    absl::MutexLock l(&mu_);
    return state.size;
  }
  // A sync still running when the power went out did not finish: it counts for nothing.
  void OnSynced(FileState& state, uint64_t size_before_sync) {
    absl::MutexLock l(&mu_);
    if (dead_) return;
    if (size_before_sync > state.synced) state.synced = size_before_sync;
    ++file_syncs_;
  }
  void OnTruncated(FileState& state, uint64_t size) {
    absl::MutexLock l(&mu_);
    state.size = size;
    if (state.synced > size) state.synced = size;
  }
  // Before a directory sync: the sequence number it covers (entries created or renamed before it began),
  // or nullopt if the power is out.
  std::optional<uint64_t> BeginDirSync() {
    if (!BeginSync()) return std::nullopt;
    absl::MutexLock l(&mu_);
    return seq_;
  }
  void OnDirSynced(const std::string& dir, uint64_t covered_seq) {
    absl::MutexLock l(&mu_);
    if (dead_) return;
    for (auto& [name, state] : files_) {
      if (state->created_seq <= covered_seq && DirOf(name) == dir) state->dir_entry_synced = true;
    }
    std::erase_if(renames_, [&](const Rename& r) { return r.seq <= covered_seq && DirOf(r.to) == dir; });
  }

  // rocksdb::FileSystem
  rocksdb::IOStatus NewWritableFile(const std::string& f, const rocksdb::FileOptions& opts,
                                    std::unique_ptr<rocksdb::FSWritableFile>* r,
                                    rocksdb::IODebugContext* dbg) override;
  rocksdb::IOStatus ReopenWritableFile(const std::string& f, const rocksdb::FileOptions& opts,
                                       std::unique_ptr<rocksdb::FSWritableFile>* r,
                                       rocksdb::IODebugContext* dbg) override;
  rocksdb::IOStatus ReuseWritableFile(const std::string&, const std::string&, const rocksdb::FileOptions&,
                                      std::unique_ptr<rocksdb::FSWritableFile>*,
                                      rocksdb::IODebugContext*) override {
    // Only used with recycle_log_file_num > 0, which the store never sets.
    return rocksdb::IOStatus::NotSupported("FaultInjectionFs::ReuseWritableFile");
  }
  rocksdb::IOStatus NewDirectory(const std::string& name, const rocksdb::IOOptions& io_opts,
                                 std::unique_ptr<rocksdb::FSDirectory>* result,
                                 rocksdb::IODebugContext* dbg) override;
  rocksdb::IOStatus RenameFile(const std::string& src, const std::string& dst, const rocksdb::IOOptions& opts,
                               rocksdb::IODebugContext* dbg) override;
  rocksdb::IOStatus DeleteFile(const std::string& f, const rocksdb::IOOptions& opts,
                               rocksdb::IODebugContext* dbg) override {
    if (dead()) return rocksdb::IOStatus::OK();
    rocksdb::IOStatus s = target()->DeleteFile(f, opts, dbg);
    if (s.ok()) {
      absl::MutexLock l(&mu_);
      files_.erase(Normalize(f));
    }
    return s;
  }
  rocksdb::IOStatus Truncate(const std::string& f, size_t size, const rocksdb::IOOptions& opts,
                             rocksdb::IODebugContext* dbg) override {
    if (dead()) return rocksdb::IOStatus::OK();
    rocksdb::IOStatus s = target()->Truncate(f, size, opts, dbg);
    if (s.ok()) {
      absl::MutexLock l(&mu_);
      if (auto it = files_.find(Normalize(f)); it != files_.end()) {
        it->second->size = size;
        if (it->second->synced > size) it->second->synced = size;
      }
    }
    return s;
  }
  rocksdb::IOStatus LinkFile(const std::string& s, const std::string& t, const rocksdb::IOOptions& opts,
                             rocksdb::IODebugContext* dbg) override {
    if (dead()) return rocksdb::IOStatus::OK();
    return target()->LinkFile(s, t, opts, dbg);
  }
  rocksdb::IOStatus CreateDir(const std::string& d, const rocksdb::IOOptions& opts,
                              rocksdb::IODebugContext* dbg) override {
    if (dead()) return rocksdb::IOStatus::OK();
    return target()->CreateDir(d, opts, dbg);
  }
  rocksdb::IOStatus CreateDirIfMissing(const std::string& d, const rocksdb::IOOptions& opts,
                                       rocksdb::IODebugContext* dbg) override {
    if (dead()) return rocksdb::IOStatus::OK();
    return target()->CreateDirIfMissing(d, opts, dbg);
  }
  rocksdb::IOStatus DeleteDir(const std::string& d, const rocksdb::IOOptions& opts,
                              rocksdb::IODebugContext* dbg) override {
    if (dead()) return rocksdb::IOStatus::OK();
    return target()->DeleteDir(d, opts, dbg);
  }

 private:
  struct Rename {
    std::string from;
    std::string to;
    std::optional<std::string> old_to_contents;  // What `to` held before, if it existed.
    uint64_t seq = 0;
  };

  std::shared_ptr<FileState> Track(const std::string& normalized, FileState initial) {
    auto state = std::make_shared<FileState>(initial);
    absl::MutexLock l(&mu_);
    state->created_seq = ++seq_;
    files_[normalized] = state;
    return state;
  }

  std::atomic<AppendFailure> append_failure_{AppendFailure::kNone};
  mutable absl::Mutex mu_;
  bool dead_ ABSL_GUARDED_BY(mu_) = false;
  bool cut_armed_ ABSL_GUARDED_BY(mu_) = false;  // CutPowerAtSync pending.
  uint64_t syncs_before_cut_ ABSL_GUARDED_BY(mu_) = 0;
  // Orders file creations and renames against directory syncs: a directory sync makes durable only the
  // entries that existed when it began.
  uint64_t seq_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t file_syncs_ ABSL_GUARDED_BY(mu_) = 0;
  std::map<std::string, std::shared_ptr<FileState>> files_ ABSL_GUARDED_BY(mu_);
  std::vector<Rename> renames_ ABSL_GUARDED_BY(mu_);  // Not yet made durable by a directory fsync.
};

namespace {

// Accepts and forgets everything: a file opened by a machine that has lost power.
class VoidWritableFile final : public rocksdb::FSWritableFile {
 public:
  rocksdb::IOStatus Append(const rocksdb::Slice& data, const rocksdb::IOOptions&,
                           rocksdb::IODebugContext*) override {
    size_ += data.size();
    return rocksdb::IOStatus::OK();
  }
  rocksdb::IOStatus Append(const rocksdb::Slice& data, const rocksdb::IOOptions& o,
                           const rocksdb::DataVerificationInfo&, rocksdb::IODebugContext* d) override {
    return Append(data, o, d);
  }
  rocksdb::IOStatus Close(const rocksdb::IOOptions&, rocksdb::IODebugContext*) override {
    return rocksdb::IOStatus::OK();
  }
  rocksdb::IOStatus Flush(const rocksdb::IOOptions&, rocksdb::IODebugContext*) override {
    return rocksdb::IOStatus::OK();
  }
  rocksdb::IOStatus Sync(const rocksdb::IOOptions&, rocksdb::IODebugContext*) override {
    return rocksdb::IOStatus::OK();
  }
  uint64_t GetFileSize(const rocksdb::IOOptions&, rocksdb::IODebugContext*) override { return size_; }

 private:
  uint64_t size_ = 0;
};

// Forwards to the real file while the power is on, recording sizes and syncs in a FileState.
class TrackingWritableFile final : public rocksdb::FSWritableFileOwnerWrapper {
 public:
  TrackingWritableFile(std::unique_ptr<rocksdb::FSWritableFile> file, FaultInjectionFs* fs,
                       std::shared_ptr<FileState> state)
      : FSWritableFileOwnerWrapper(std::move(file)), fs_(fs), state_(std::move(state)) {}

  rocksdb::IOStatus Append(const rocksdb::Slice& data, const rocksdb::IOOptions& o,
                           rocksdb::IODebugContext* d) override {
    if (Dropped()) return rocksdb::IOStatus::OK();
    const uint64_t end = fs_->SizeOf(*state_) + data.size();
    if (rocksdb::IOStatus injected = fs_->AppendError(); !injected.ok()) return injected;
    rocksdb::IOStatus s = target()->Append(data, o, d);
    if (s.ok()) fs_->OnAppend(*state_, end);
    return s;
  }
  rocksdb::IOStatus Append(const rocksdb::Slice& data, const rocksdb::IOOptions& o,
                           const rocksdb::DataVerificationInfo& v, rocksdb::IODebugContext* d) override {
    if (Dropped()) return rocksdb::IOStatus::OK();
    const uint64_t end = fs_->SizeOf(*state_) + data.size();
    if (rocksdb::IOStatus injected = fs_->AppendError(); !injected.ok()) return injected;
    rocksdb::IOStatus s = target()->Append(data, o, v, d);
    if (s.ok()) fs_->OnAppend(*state_, end);
    return s;
  }
  rocksdb::IOStatus PositionedAppend(const rocksdb::Slice& data, uint64_t offset, const rocksdb::IOOptions& o,
                                     rocksdb::IODebugContext* d) override {
    if (Dropped()) return rocksdb::IOStatus::OK();
    if (rocksdb::IOStatus injected = fs_->AppendError(); !injected.ok()) return injected;
    rocksdb::IOStatus s = target()->PositionedAppend(data, offset, o, d);
    if (s.ok()) fs_->OnAppend(*state_, offset + data.size());
    return s;
  }
  rocksdb::IOStatus PositionedAppend(const rocksdb::Slice& data, uint64_t offset, const rocksdb::IOOptions& o,
                                     const rocksdb::DataVerificationInfo& v,
                                     rocksdb::IODebugContext* d) override {
    if (Dropped()) return rocksdb::IOStatus::OK();
    if (rocksdb::IOStatus injected = fs_->AppendError(); !injected.ok()) return injected;
    rocksdb::IOStatus s = target()->PositionedAppend(data, offset, o, v, d);
    if (s.ok()) fs_->OnAppend(*state_, offset + data.size());
    return s;
  }
  rocksdb::IOStatus Truncate(uint64_t size, const rocksdb::IOOptions& o,
                             rocksdb::IODebugContext* d) override {
    if (Dropped()) return rocksdb::IOStatus::OK();
    rocksdb::IOStatus s = target()->Truncate(size, o, d);
    if (s.ok()) fs_->OnTruncated(*state_, size);
    return s;
  }
  rocksdb::IOStatus Sync(const rocksdb::IOOptions& o, rocksdb::IODebugContext* d) override {
    return SyncWith([&] { return target()->Sync(o, d); });
  }
  rocksdb::IOStatus Fsync(const rocksdb::IOOptions& o, rocksdb::IODebugContext* d) override {
    return SyncWith([&] { return target()->Fsync(o, d); });
  }
  rocksdb::IOStatus RangeSync(uint64_t offset, uint64_t nbytes, const rocksdb::IOOptions& o,
                              rocksdb::IODebugContext* d) override {
    // sync_file_range: starts writeback, promises nothing about durability, so nothing is recorded.
    if (fs_->dead()) return rocksdb::IOStatus::OK();
    return target()->RangeSync(offset, nbytes, o, d);
  }
  // Close is forwarded even after a cut: the real file must release its descriptor, and PosixWritableFile's
  // Close only trims preallocated space beyond what was appended (appends after the cut never arrive).

 private:
  bool Dropped() const { return !state_->created_after_cut && fs_->dead(); }

  template <typename F>
  rocksdb::IOStatus SyncWith(F sync) {
    if (!fs_->BeginSync()) return rocksdb::IOStatus::OK();
    // Only bytes appended before the sync began are sure to be covered by it.
    const uint64_t size = fs_->SizeOf(*state_);
    rocksdb::IOStatus s = sync();
    if (s.ok()) fs_->OnSynced(*state_, size);
    return s;
  }

  FaultInjectionFs* fs_;
  std::shared_ptr<FileState> state_;
};

class TrackingDirectory final : public rocksdb::FSDirectory {
 public:
  TrackingDirectory(std::unique_ptr<rocksdb::FSDirectory> dir, FaultInjectionFs* fs, std::string name)
      : dir_(std::move(dir)), fs_(fs), name_(std::move(name)) {}

  rocksdb::IOStatus Fsync(const rocksdb::IOOptions& o, rocksdb::IODebugContext* d) override {
    const std::optional<uint64_t> covered = fs_->BeginDirSync();
    if (!covered.has_value()) return rocksdb::IOStatus::OK();
    rocksdb::IOStatus s = dir_->Fsync(o, d);
    if (s.ok()) fs_->OnDirSynced(name_, *covered);
    return s;
  }
  rocksdb::IOStatus FsyncWithDirOptions(const rocksdb::IOOptions& o, rocksdb::IODebugContext* d,
                                        const rocksdb::DirFsyncOptions& opts) override {
    const std::optional<uint64_t> covered = fs_->BeginDirSync();
    if (!covered.has_value()) return rocksdb::IOStatus::OK();
    rocksdb::IOStatus s = dir_->FsyncWithDirOptions(o, d, opts);
    if (s.ok()) fs_->OnDirSynced(name_, *covered);
    return s;
  }
  rocksdb::IOStatus Close(const rocksdb::IOOptions& o, rocksdb::IODebugContext* d) override {
    return dir_->Close(o, d);
  }
  size_t GetUniqueId(char* id, size_t max_size) const override { return dir_->GetUniqueId(id, max_size); }

 private:
  std::unique_ptr<rocksdb::FSDirectory> dir_;
  FaultInjectionFs* fs_;
  std::string name_;
};

}  // namespace

rocksdb::IOStatus FaultInjectionFs::NewWritableFile(const std::string& f, const rocksdb::FileOptions& opts,
                                                    std::unique_ptr<rocksdb::FSWritableFile>* r,
                                                    rocksdb::IODebugContext* dbg) {
  const bool existed = target()->FileExists(f, rocksdb::IOOptions(), dbg).ok();
  const bool after_cut = dead();
  if (after_cut && existed) {
    // Truncating an existing file would destroy data that may be durable.
    *r = std::make_unique<VoidWritableFile>();
    return rocksdb::IOStatus::OK();
  }
  rocksdb::IOStatus s = target()->NewWritableFile(f, opts, r, dbg);
  if (!s.ok()) return s;
  // Reusing an existing name truncates the file, but the name itself was already durable.
  auto state =
      Track(Normalize(f),
            FileState{.size = 0, .synced = 0, .dir_entry_synced = existed, .created_after_cut = after_cut});
  *r = std::make_unique<TrackingWritableFile>(std::move(*r), this, std::move(state));
  return s;
}

rocksdb::IOStatus FaultInjectionFs::ReopenWritableFile(const std::string& f, const rocksdb::FileOptions& opts,
                                                       std::unique_ptr<rocksdb::FSWritableFile>* r,
                                                       rocksdb::IODebugContext* dbg) {
  if (dead()) {
    *r = std::make_unique<VoidWritableFile>();
    return rocksdb::IOStatus::OK();
  }
  const bool existed = target()->FileExists(f, rocksdb::IOOptions(), dbg).ok();
  rocksdb::IOStatus s = target()->ReopenWritableFile(f, opts, r, dbg);
  if (!s.ok()) return s;
  const std::string name = Normalize(f);
  std::shared_ptr<FileState> state;
  {
    absl::MutexLock l(&mu_);
    if (auto it = files_.find(name); it != files_.end()) state = it->second;
  }
  if (state == nullptr) {
    // Not written through us before: whatever it holds is treated as durable.
    uint64_t size = 0;
    if (existed) {
      rocksdb::IOStatus size_status = target()->GetFileSize(f, rocksdb::IOOptions(), &size, dbg);
      if (!size_status.ok()) return size_status;
    }
    state = Track(name, FileState{.size = size, .synced = size, .dir_entry_synced = existed});
  }
  *r = std::make_unique<TrackingWritableFile>(std::move(*r), this, std::move(state));
  return s;
}

rocksdb::IOStatus FaultInjectionFs::NewDirectory(const std::string& name, const rocksdb::IOOptions& io_opts,
                                                 std::unique_ptr<rocksdb::FSDirectory>* result,
                                                 rocksdb::IODebugContext* dbg) {
  rocksdb::IOStatus s = target()->NewDirectory(name, io_opts, result, dbg);
  if (!s.ok()) return s;
  *result = std::make_unique<TrackingDirectory>(std::move(*result), this, Normalize(name));
  return s;
}

rocksdb::IOStatus FaultInjectionFs::RenameFile(const std::string& src, const std::string& dst,
                                               const rocksdb::IOOptions& opts, rocksdb::IODebugContext* dbg) {
  if (dead()) return rocksdb::IOStatus::OK();
  // Keep what the rename overwrites (CURRENT, OPTIONS: small files) so that the cut can bring it back.
  Rename rename{.from = Normalize(src), .to = Normalize(dst), .old_to_contents = std::nullopt};
  if (target()->FileExists(dst, opts, dbg).ok()) {
    std::string contents;
    rocksdb::IOStatus read = rocksdb::ReadFileToString(target(), dst, &contents);
    if (!read.ok()) return read;
    rename.old_to_contents = std::move(contents);
  }
  rocksdb::IOStatus s = target()->RenameFile(src, dst, opts, dbg);
  if (!s.ok()) return s;
  absl::MutexLock l(&mu_);
  files_.erase(rename.to);
  if (auto it = files_.find(rename.from); it != files_.end()) {
    files_[rename.to] = it->second;
    files_.erase(it);
  }
  rename.seq = ++seq_;
  renames_.push_back(std::move(rename));
  return s;
}

absl::Status FaultInjectionFs::RestoreAfterPowerCut() {
  absl::MutexLock l(&mu_);
  if (!dead_) return absl::FailedPreconditionError("RestoreAfterPowerCut without CutPower");
  rocksdb::FileSystem* fs = target();
  const rocksdb::IOOptions io;
  auto fail = [](const std::string& what, const rocksdb::IOStatus& s) {
    return absl::InternalError("fault injection: " + what + ": " + s.ToString());
  };
  // 1. Undo renames whose directory was never fsynced afterwards, newest first.
  for (auto it = renames_.rbegin(); it != renames_.rend(); ++it) {
    if (fs->FileExists(it->to, io, nullptr).ok()) {
      rocksdb::IOStatus s = fs->RenameFile(it->to, it->from, io, nullptr);
      if (!s.ok()) return fail("undo rename " + it->to, s);
      if (auto f = files_.find(it->to); f != files_.end()) {
        files_[it->from] = f->second;
        files_.erase(f);
      }
    }
    if (it->old_to_contents.has_value()) {
      rocksdb::IOStatus s =
          rocksdb::WriteStringToFile(fs, *it->old_to_contents, it->to, /*should_sync=*/true);
      if (!s.ok()) return fail("restore " + it->to, s);
    }
  }
  renames_.clear();
  // 2. Files whose name never became durable vanish; the others lose their unsynced tails.
  for (const auto& [name, state] : files_) {
    if (!fs->FileExists(name, io, nullptr).ok()) continue;
    if (!state->dir_entry_synced) {
      rocksdb::IOStatus s = fs->DeleteFile(name, io, nullptr);
      if (!s.ok()) return fail("delete " + name, s);
      continue;
    }
    uint64_t size = 0;
    rocksdb::IOStatus s = fs->GetFileSize(name, io, &size, nullptr);
    if (!s.ok()) return fail("size of " + name, s);
    if (size > state->synced) {
      // PosixFileSystem does not implement Truncate; the files are plain files on the real disk.
      std::error_code ec;
      std::filesystem::resize_file(name, state->synced, ec);
      if (ec) return absl::InternalError("fault injection: truncate " + name + ": " + ec.message());
    }
  }
  files_.clear();
  dead_ = false;
  cut_armed_ = false;
  return absl::OkStatus();
}

}  // namespace internal

FaultInjectionEnv::FaultInjectionEnv()
    : fs_(std::make_shared<internal::FaultInjectionFs>(rocksdb::FileSystem::Default())),
      env_(rocksdb::NewCompositeEnv(fs_)) {}

FaultInjectionEnv::~FaultInjectionEnv() = default;

void FaultInjectionEnv::CutPower() { fs_->CutPower(); }

void FaultInjectionEnv::CutPowerAtSync(uint64_t n) { fs_->CutPowerAtSync(n); }

bool FaultInjectionEnv::powered() const { return !fs_->dead(); }

absl::Status FaultInjectionEnv::RestoreAfterPowerCut() { return fs_->RestoreAfterPowerCut(); }

uint64_t FaultInjectionEnv::file_syncs() const { return fs_->file_syncs(); }

void FaultInjectionEnv::FailAppends(AppendFailure failure) { fs_->FailAppends(failure); }

}  // namespace lawn
