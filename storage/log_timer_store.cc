#include "storage/log_timer_store.h"

#include <fcntl.h>
#include <malloc.h>
#include <pthread.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <map>
#include <optional>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "base/status_macros.h"
#include "storage/dir_lock.h"
#include "storage/log_state.h"
#include "storage/posix_file.h"
#include "storage/round_log.h"

namespace lawn {
namespace {

namespace fs = std::filesystem;
using logstore::Family;
using logstore::LogDelta;

// What CURRENT holds. RocksDB reads CURRENT as the name of its MANIFEST file and fails to open a dir where
// that file does not exist, so a build of format 2 (or RocksDB's tools) refuses this dir instead of starting
// an empty store beside it.
constexpr std::string_view kCurrentText =
    "lawn storage format 3 (storage.engine: log); not a RocksDB database\n";
constexpr char kLogDir[] = "log";
constexpr char kSnapshotPrefix[] = "snapshot-";
constexpr char kSnapshotSuffix[] = ".lawnsnap";
constexpr auto kLogGuardInterval = std::chrono::seconds(1);

}  // namespace

// Outside the anonymous namespace: LogTimerStore::Rep (external linkage) holds one, which GCC's
// -Wsubobject-linkage reports when this file is compiled inside a unity batch.
struct LogManifest {
  std::string snapshot;         // File name in the data dir; empty: no snapshot yet.
  uint64_t first_sequence = 1;  // The first log sequence the snapshot does not cover.
};

namespace {

absl::StatusOr<LogManifest> ParseManifest(const std::string& path, const std::string& text) {
  // "snapshot <file> <sequence>\n"
  LogManifest m;
  std::string word;
  std::string sequence;
  const size_t first_space = text.find(' ');
  const size_t second_space =
      first_space == std::string::npos ? first_space : text.find(' ', first_space + 1);
  bool ok = first_space != std::string::npos && second_space != std::string::npos && !text.empty() &&
            text.back() == '\n' && text.compare(0, first_space, "snapshot") == 0;
  if (ok) {
    m.snapshot = text.substr(first_space + 1, second_space - first_space - 1);
    sequence = text.substr(second_space + 1, text.size() - second_space - 2);
    ok = absl::SimpleAtoi(sequence, &m.first_sequence) && m.first_sequence > 0 &&
         m.snapshot.rfind(kSnapshotPrefix, 0) == 0 && m.snapshot.find('/') == std::string::npos;
  }
  if (!ok) {
    return absl::DataLossError(absl::StrCat(path, " is not a lawn manifest: \"", text.substr(0, 200), "\""));
  }
  return m;
}

// Reads the log in `log_dir` after the manifest's snapshot into `delta`, which keeps the segments mapped (no
// segment may be written over while it lives: the store's caller holds its mutex, or the delta is Open's,
// dropped before the first write, or nobody writes the dir). `end` (optional) receives where the log ends;
// `first_segment` the segment of the first record read (0: none).
absl::Status ReadLogAfter(const std::string& log_dir, const LogManifest& m, LogDelta* delta, RoundLogEnd* end,
                          uint64_t* first_segment) {
  RoundLogEnd local_end;
  uint64_t first = 0;
  std::vector<std::unique_ptr<MappedFile>> mapped;
  if (delta != nullptr) {
    // Room for the entries of every segment there (spares included: an estimate on the high side).
    uint64_t bytes = 0;
    std::error_code ec;
    for (fs::directory_iterator it(log_dir, ec); !ec && it != fs::directory_iterator(); it.increment(ec)) {
      std::error_code size_ec;
      const uint64_t size = it->is_regular_file(size_ec) ? it->file_size(size_ec) : 0;
      if (!size_ec) bytes += size;
    }
    delta->Reserve(bytes);
  }
  absl::Status read = ReadRoundLog(
      log_dir, m.first_sequence,
      [&](const RoundLogRecord& record) -> absl::Status {
        if (first == 0) first = record.segment;
        if (delta != nullptr && !delta->Add(record.payload, /*copy=*/false)) {
          return absl::DataLossError(absl::StrCat("log ", log_dir, ": record ", record.sequence, " (segment ",
                                                  record.segment, ") has a good CRC but does not decode"));
        }
        return absl::OkStatus();
      },
      &local_end, delta != nullptr ? &mapped : nullptr);
  for (std::unique_ptr<MappedFile>& file : mapped) delta->Keep(std::move(file));
  if (absl::IsNotFound(read)) {
    local_end = RoundLogEnd{0, m.first_sequence};
  } else if (!read.ok()) {
    return read;
  }
  if (end != nullptr) *end = local_end;
  if (first_segment != nullptr) *first_segment = first;
  return absl::OkStatus();
}

// Checks that `dir` holds this format (CURRENT and LAWN_FORMAT, when present) and reads its MANIFEST (none:
// no snapshot yet). Changes nothing.
absl::StatusOr<LogManifest> ReadManifest(const std::string& dir) {
  LAWN_ASSIGN_OR_RETURN(std::optional<std::string> current, ReadWholeFile(dir + "/CURRENT"));
  if (current && *current != kCurrentText) {
    return absl::FailedPreconditionError(
        absl::StrCat("data dir ", dir,
                     " holds a RocksDB store (storage format 1 or 2, storage.engine: rocksdb), which the log "
                     "engine does not open: lawnd with storage.engine: log migrates it first "
                     "(storage/store_migration.h); storage.engine: rocksdb or auto keeps it"));
  }
  LAWN_ASSIGN_OR_RETURN(std::optional<std::string> format, ReadWholeFile(dir + "/LAWN_FORMAT"));
  if (format && *format != absl::StrCat(LogTimerStore::kFormatVersion, "\n")) {
    return absl::FailedPreconditionError(absl::StrCat("data dir ", dir, " holds storage format \"",
                                                      format->substr(0, 40),
                                                      "\"; this build's log engine reads "
                                                      "format ",
                                                      LogTimerStore::kFormatVersion));
  }
  LogManifest manifest;
  LAWN_ASSIGN_OR_RETURN(std::optional<std::string> manifest_text, ReadWholeFile(dir + "/MANIFEST"));
  if (manifest_text) {
    LAWN_ASSIGN_OR_RETURN(manifest, ParseManifest(dir + "/MANIFEST", *manifest_text));
    std::error_code ec;
    if (!fs::exists(absl::StrCat(dir, "/", manifest.snapshot), ec)) {
      return absl::DataLossError(absl::StrCat("data dir ", dir, ": the snapshot ", manifest.snapshot,
                                              " that MANIFEST names is missing"));
    }
  }
  return manifest;
}

StoredTimer TimerOf(const StoreBatch::Entry& e) {
  return StoredTimer{e.key, e.deadline_unix_ns, e.ttl_ns, e.interval_ns, e.payload};
}

StoredExpiration ExpirationOf(const StoreBatch::Entry& e) {
  return StoredExpiration{e.delivery_id, TimerOf(e), e.fired_at_unix_ns, e.attempt};
}

// Hands a record of the state to the callback of its family.
void VisitRecord(const logstore::StateRecord& record, absl::FunctionRef<void(const StoredTimer&)> on_timer,
                 absl::FunctionRef<void(const StoredExpiration&)> on_expiration,
                 absl::FunctionRef<void(const logstore::StateRecord&)> on_staged) {
  const StoreBatch::Entry& e = record.entry();
  switch (logstore::FamilyOf(e.op)) {
    case Family::kTimers:
      on_timer(TimerOf(e));
      return;
    case Family::kExpirations:
      on_expiration(ExpirationOf(e));
      return;
    case Family::kIncoming:
      on_staged(record);
      return;
  }
}

}  // namespace

struct LogTimerStore::Rep {
  std::unique_ptr<DirLock> lock;  // First: released after everything below is closed.
  LogStoreOptions options;
  std::string log_dir;

  mutable absl::Mutex mu;
  std::unique_ptr<RoundLogWriter> writer ABSL_GUARDED_BY(mu);
  absl::Status failed ABSL_GUARDED_BY(mu);
  uint64_t synced ABSL_GUARDED_BY(mu) = 0;  // Every record up to this sequence is durable.
  bool syncing ABSL_GUARDED_BY(mu) = false;
  absl::CondVar synced_cv;
  // The snapshot in force and where the log after it starts.
  LogManifest manifest ABSL_GUARDED_BY(mu);
  uint64_t manifest_segment ABSL_GUARDED_BY(mu) = 0;  // Segment holding manifest.first_sequence.
  // Free space CheckSpace keeps besides min_free_disk_bytes: a segment and the snapshot's size (room for the
  // next rotation and the next snapshot). Read on the write path without mu.
  std::atomic<uint64_t> reserve{0};
  // The last snapshot's size, which the reserve holds beside a segment (0 before Open sets it).
  uint64_t SnapshotBytes() const {
    const uint64_t reserved = reserve.load();
    return reserved > options.segment_bytes ? reserved - options.segment_bytes : 0;
  }
  // The staging area (kIncoming records: each one's operation, encoded), by staging id, from the first
  // Recover on, which reads it; Write keeps it from then. ForEachIncoming (a cluster member's settle, at each
  // change of the partition map) reads it here: reading it from the files means folding the whole store, and
  // doing that under mu stalled every write for as long (seconds per million timers).
  std::optional<std::map<uint64_t, std::string>> incoming ABSL_GUARDED_BY(mu);

  // Applies the staging-area operations of `batch` (just written) to `incoming`, when it is kept.
  void NoteIncoming(const StoreBatch& batch) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    if (!incoming || !batch.has_incoming()) return;
    std::string_view rest = batch.data();
    StoreBatch::Entry e;
    while (!rest.empty()) {
      const char* begin = rest.data();
      if (!StoreBatch::DecodeNext(&rest, &e)) return;  // Not reached: the batch encoded itself.
      if (e.op == StoreBatch::Op::kPutIncoming) {
        (*incoming)[e.delivery_id].assign(begin, static_cast<size_t>(rest.data() - begin));
      } else if (e.op == StoreBatch::Op::kDeleteIncoming) {
        incoming->erase(e.delivery_id);
      }
    }
  }
  uint64_t segment_seen ABSL_GUARDED_BY(mu) = 0;
  // A snapshot requested or in progress: of the log before `fold_sequence`, the first record of
  // `fold_segment`.
  bool folding ABSL_GUARDED_BY(mu) = false;
  uint64_t fold_sequence ABSL_GUARDED_BY(mu) = 0;
  uint64_t fold_segment ABSL_GUARDED_BY(mu) = 0;
  bool stop ABSL_GUARDED_BY(mu) = false;
  // A checkpoint is copying the snapshot and the log after it: no snapshot starts (its end would retire
  // those segments); one that comes due meanwhile is started when the checkpoint ends.
  bool checkpointing ABSL_GUARDED_BY(mu) = false;
  std::optional<std::pair<uint64_t, uint64_t>> fold_after_checkpoint ABSL_GUARDED_BY(mu);
  absl::CondVar fold_cv;
  Stats stats ABSL_GUARDED_BY(mu);
  std::thread folder;
  // The log as Open read it, kept for the first Recover (which comes before any write) so that a start reads
  // the log once; dropped by it, or by the first write (no snapshot starts before either).
  std::unique_ptr<LogDelta> opened_delta ABSL_GUARDED_BY(mu);
  // The snapshot a restart may call for (MaybeFold of the segment Open started) is started after the first
  // Recover or write, so that recovery does not wait for it: (first sequence, segment) when one is due.
  std::optional<std::pair<uint64_t, uint64_t>> fold_after_open ABSL_GUARDED_BY(mu);

  void StartFoldAfterOpen() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    if (!fold_after_open) return;
    MaybeFold(fold_after_open->first, fold_after_open->second);
    fold_after_open.reset();
  }

  absl::Mutex epoch_mu;

  absl::Mutex guard_mu;
  std::chrono::steady_clock::time_point guard_checked_at ABSL_GUARDED_BY(guard_mu);
  uint64_t guard_free ABSL_GUARDED_BY(guard_mu) = 0;
  bool guard_valid ABSL_GUARDED_BY(guard_mu) = false;

  absl::Status Fail(absl::Status status) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    if (failed.ok()) failed = status;
    return status;
  }

  // Waits until every record up to `sequence` is durable, syncing as the group's leader if nobody is.
  absl::Status SyncThrough(uint64_t sequence) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    while (synced < sequence) {
      LAWN_RETURN_IF_ERROR(failed);
      if (syncing) {
        synced_cv.Wait(&mu);
        continue;
      }
      absl::StatusOr<std::pair<int, uint64_t>> begun = writer->BeginSync();
      if (!begun.ok()) return Fail(begun.status());
      syncing = true;
      mu.Unlock();
      const bool ok = ::fdatasync(begun->first) == 0;
      const int err = errno;
      ::close(begun->first);
      mu.Lock();
      syncing = false;
      absl::Status ended = writer->EndSync(
          begun->second, ok ? absl::OkStatus() : FileError("fdatasync", log_dir + " (current segment)", err));
      if (ended.ok()) {
        synced = std::max(synced, begun->second);
      } else {
        Fail(ended).IgnoreError();  // Kept in `failed`, returned below.
      }
      synced_cv.SignalAll();
    }
    return failed;
  }

  // After an append of record `sequence`: a new segment may start a snapshot.
  void NoteAppend(uint64_t sequence) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    const uint64_t segment = writer->segment();
    if (segment == segment_seen) return;
    segment_seen = segment;
    MaybeFold(sequence, segment);
  }

  // Starts a snapshot of the log before `sequence`, the first record of `segment` (which the writer has just
  // started: every segment before it is synced), if the log since the last snapshot is long enough (both
  // bounds of LogStoreOptions). Segments count as full: each restart starts a segment, so a lawnd restarted
  // often folds its short segments away too (Open calls this for the segment it starts).
  void MaybeFold(uint64_t sequence, uint64_t segment) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    const uint64_t log_bytes = (segment - manifest_segment) * options.segment_bytes;
    const uint64_t share = SnapshotBytes() / 100 * options.snapshot_log_percent;
    if (folding || log_bytes < std::max(options.snapshot_log_bytes, share)) return;
    if (checkpointing) {
      fold_after_checkpoint.emplace(sequence, segment);
      return;
    }
    folding = true;
    fold_sequence = sequence;
    fold_segment = segment;
    fold_cv.Signal();
  }

  // OK if the file system has `bytes` available beyond min_free_disk_bytes and `reserve` (what `reserve_for`
  // names, for the message); else RESOURCE_EXHAUSTED.
  absl::Status AdmitWrite(uint64_t bytes, uint64_t reserve,
                          std::string_view reserve_for = "for the next log segment and snapshot") {
    if (options.min_free_disk_bytes == 0) return absl::OkStatus();
    absl::MutexLock l(&guard_mu);
    const auto now = std::chrono::steady_clock::now();
    const uint64_t need = options.min_free_disk_bytes + reserve + bytes;
    // Writes inside a segment take no disk: free space changes at rotations and snapshots, which the
    // reserve covers, so a statvfs a second is enough; a refusal is always based on a fresh one.
    if (!guard_valid || now - guard_checked_at >= kLogGuardInterval || guard_free < need) {
      struct statvfs st;
      if (statvfs(options.path.c_str(), &st) != 0) return FileError("statvfs", options.path, errno);
      guard_free = static_cast<uint64_t>(st.f_bavail) * st.f_frsize;
      guard_checked_at = now;
      guard_valid = true;
    }
    if (guard_free < need) {
      return absl::ResourceExhaustedError(
          absl::StrCat("disk almost full: ", guard_free, " bytes free in ", options.path, ", need at least ",
                       options.min_free_disk_bytes, " (config key min_free_disk_bytes) plus ", reserve, " ",
                       std::string(reserve_for), " plus ", bytes, " for this write; nothing was written"));
    }
    return absl::OkStatus();
  }

  absl::Status ReadLog(const LogManifest& m, LogDelta* delta, RoundLogEnd* end, uint64_t* first_segment) {
    return ReadLogAfter(log_dir, m, delta, end, first_segment);
  }

  std::string SnapshotPath(const LogManifest& m) const {
    return m.snapshot.empty() ? "" : absl::StrCat(options.path, "/", m.snapshot);
  }

  // Calls `emit` for every record of the current state, in sort-key order: the snapshot with the log after
  // it (the one Open read, if nothing was written since, else read again). Waits for a snapshot in progress,
  // which would switch the files under it.
  absl::Status ForEachRecord(absl::FunctionRef<absl::Status(const logstore::StateRecord&)> emit,
                             absl::FunctionRef<bool(const absl::Status&)> on_corrupt)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    while (folding) synced_cv.Wait(&mu);
    std::unique_ptr<LogDelta> delta = std::move(opened_delta);
    if (delta == nullptr) {
      delta = std::make_unique<LogDelta>();
      LAWN_RETURN_IF_ERROR(ReadLog(manifest, delta.get(), nullptr, nullptr));
    }
    return logstore::MergeState(SnapshotPath(manifest), *delta, emit, on_corrupt);
  }

  absl::Status Fold(const LogManifest& from, uint64_t from_segment, uint64_t through,
                    uint64_t through_segment, LogManifest* to, uint64_t* bytes);
  void FoldLoop();
  absl::Status CopyForCheckpoint(const std::string& to, const LogManifest& m, uint64_t first_segment,
                                 uint64_t last_segment, uint64_t last_bytes);
};

// Writes the checkpoint's files into `to` (a new dir): MANIFEST `m`, its snapshot, segments
// [first_segment, last_segment] of the log, the last one only up to `last_bytes` (what was appended when the
// checkpoint began; the reader takes the end of the copy for the log's end). Those segments are complete and
// unchanging meanwhile: records are only appended after `last_bytes`, and no snapshot retires them.
absl::Status LogTimerStore::Rep::CopyForCheckpoint(const std::string& to, const LogManifest& m,
                                                   uint64_t first_segment, uint64_t last_segment,
                                                   uint64_t last_bytes) {
  const std::string& from = options.path;
  uint64_t log_bytes = last_bytes;
  for (uint64_t n = first_segment; n < last_segment; ++n) {
    std::error_code ec;
    const uint64_t size = fs::file_size(absl::StrCat(log_dir, "/", RoundLogSegmentName(n)), ec);
    if (ec) return absl::UnavailableError(absl::StrCat("checkpoint: log segment ", n, ": ", ec.message()));
    log_bytes += size;
  }
  LAWN_RETURN_IF_ERROR(AdmitWrite(log_bytes, reserve.load()));
  std::error_code ec;
  fs::create_directories(absl::StrCat(to, "/", kLogDir), ec);
  if (ec) return absl::UnavailableError(absl::StrCat("create ", to, ": ", ec.message()));
  for (uint64_t n = first_segment; n <= last_segment; ++n) {
    const std::string name = RoundLogSegmentName(n);
    LAWN_ASSIGN_OR_RETURN(std::unique_ptr<MappedFile> segment,
                          MappedFile::Open(absl::StrCat(log_dir, "/", name)));
    std::string_view bytes = segment->bytes();
    if (n == last_segment) bytes = bytes.substr(0, last_bytes);
    LAWN_RETURN_IF_ERROR(WriteNewFile(absl::StrCat(to, "/", kLogDir, "/", name), bytes));
  }
  if (!m.snapshot.empty()) {
    const std::string source = absl::StrCat(from, "/", m.snapshot);
    const std::string target = absl::StrCat(to, "/", m.snapshot);
    // Snapshots are never written after their rename, so a link is a copy; another file system needs one.
    if (::link(source.c_str(), target.c_str()) != 0) {
      if (errno != EXDEV && errno != EPERM) return FileError("link", target, errno);
      LAWN_ASSIGN_OR_RETURN(std::unique_ptr<MappedFile> snapshot, MappedFile::Open(source));
      LAWN_RETURN_IF_ERROR(AdmitWrite(snapshot->bytes().size(), reserve.load()));
      LAWN_RETURN_IF_ERROR(WriteNewFile(target, snapshot->bytes()));
    }
    LAWN_RETURN_IF_ERROR(WriteNewFile(absl::StrCat(to, "/MANIFEST"),
                                      absl::StrCat("snapshot ", m.snapshot, " ", m.first_sequence, "\n")));
  }
  LAWN_RETURN_IF_ERROR(WriteNewFile(absl::StrCat(to, "/CURRENT"), kCurrentText));
  LAWN_RETURN_IF_ERROR(WriteNewFile(absl::StrCat(to, "/LAWN_FORMAT"), absl::StrCat(kFormatVersion, "\n")));
  {
    absl::MutexLock l(&epoch_mu);
    LAWN_ASSIGN_OR_RETURN(std::optional<std::string> epoch, ReadWholeFile(absl::StrCat(from, "/boot_epoch")));
    if (epoch) LAWN_RETURN_IF_ERROR(WriteNewFile(absl::StrCat(to, "/boot_epoch"), *epoch));
  }
  LAWN_RETURN_IF_ERROR(SyncDir(absl::StrCat(to, "/", kLogDir)));
  return SyncDir(to);
}

// Reads segments [from_segment, through_segment) after `from`'s snapshot and writes the snapshot of the log
// before `through`. Touches only files nobody writes: those segments were synced and left, and nothing
// retires them before this returns.
absl::Status LogTimerStore::Rep::Fold(const LogManifest& from, uint64_t from_segment, uint64_t through,
                                      uint64_t through_segment, LogManifest* to, uint64_t* bytes) {
  LogDelta delta;
  delta.Reserve((through_segment - from_segment) * options.segment_bytes);
  RoundLogScanner scanner(log_dir, from.first_sequence);
  for (uint64_t n = from_segment; n < through_segment; ++n) {
    const std::string path = absl::StrCat(log_dir, "/", RoundLogSegmentName(n));
    std::error_code ec;
    if (!fs::exists(path, ec)) {
      return absl::DataLossError(absl::StrCat("snapshot: log segment ", path, " is missing"));
    }
    LAWN_ASSIGN_OR_RETURN(std::unique_ptr<MappedFile> mapped, MappedFile::Open(path));
    std::string_view bytes_view = delta.Keep(std::move(mapped));
    LAWN_RETURN_IF_ERROR(scanner.Segment(n, bytes_view, [&](const RoundLogRecord& record) -> absl::Status {
      if (record.sequence >= through) return absl::OkStatus();
      if (!delta.Add(record.payload, /*copy=*/false)) {
        return absl::DataLossError(absl::StrCat("log ", log_dir, ": record ", record.sequence,
                                                " has a good CRC but does not decode"));
      }
      return absl::OkStatus();
    }));
  }
  if (through_segment > from_segment && scanner.End().next_sequence != through) {
    return absl::DataLossError(absl::StrCat("snapshot: the log before segment ", through_segment, " ends at ",
                                            scanner.End().next_sequence, ", not at ", through));
  }
  to->snapshot = absl::StrCat(kSnapshotPrefix, through, kSnapshotSuffix);
  to->first_sequence = through;
  const std::string tmp = absl::StrCat(options.path, "/", to->snapshot, ".tmp");
  {
    LAWN_ASSIGN_OR_RETURN(std::unique_ptr<logstore::SnapshotWriter> out,
                          logstore::SnapshotWriter::Create(tmp));
    LAWN_RETURN_IF_ERROR(logstore::MergeState(
        SnapshotPath(from), delta,
        [&](const logstore::StateRecord& record) { return out->AddEncoded(record.op()); },
        [](const absl::Status&) { return false; }));
    LAWN_RETURN_IF_ERROR(out->Finish(through));
    *bytes = out->bytes();
  }
  const std::string path = absl::StrCat(options.path, "/", to->snapshot);
  if (::rename(tmp.c_str(), path.c_str()) != 0) return FileError("rename", tmp, errno);
  LAWN_RETURN_IF_ERROR(SyncDir(options.path));
  return ReplaceFile(options.path, "MANIFEST", absl::StrCat("snapshot ", to->snapshot, " ", through, "\n"));
}

void LogTimerStore::Rep::FoldLoop() {
  // Named as lawnd names its own threads (server/thread_name.h), for top -H and perf.
  pthread_setname_np(pthread_self(), "lawn-fold");
  absl::MutexLock l(&mu);
  while (true) {
    while (!stop && !(folding && failed.ok())) fold_cv.Wait(&mu);
    if (stop) return;
    const LogManifest from = manifest;
    const uint64_t from_segment = manifest_segment;
    const uint64_t through = fold_sequence;
    const uint64_t through_segment = fold_segment;
    mu.Unlock();
    LogManifest to;
    uint64_t bytes = 0;
    // Room for the new snapshot beside the old one, at most the old one plus the log it folds, and for the
    // writers' next rotation: writing it then never takes what a write admitted by CheckSpace needs (a
    // snapshot refused for space is retried at the next segment; writers are refused before the disk fills).
    absl::Status status = AdmitWrite(
        0, options.segment_bytes + SnapshotBytes() + (through_segment - from_segment) * options.segment_bytes,
        "for the next log segment and this snapshot (at most the last one plus the log it folds)");
    if (status.ok()) status = Fold(from, from_segment, through, through_segment, &to, &bytes);
    if (!status.ok()) {
      std::error_code ec;
      fs::remove(absl::StrCat(options.path, "/", kSnapshotPrefix, through, kSnapshotSuffix, ".tmp"), ec);
    }
    mu.Lock();
    folding = false;
    synced_cv.SignalAll();  // WaitForSnapshot and Recover wait on it too.
    if (!status.ok()) {
      ++stats.snapshot_failures;
      stats.last_error = status.ToString();
      continue;
    }
    manifest = to;
    manifest_segment = through_segment;
    reserve.store(options.segment_bytes + bytes);
    ++stats.snapshots;
    // The segments before the new snapshot's are no longer needed; nor is the old snapshot.
    if (absl::Status retired = writer->RetireBelow(through_segment); !retired.ok()) {
      stats.last_error = retired.ToString();
    }
    if (!from.snapshot.empty()) {
      std::error_code ec;
      fs::remove(absl::StrCat(options.path, "/", from.snapshot), ec);
    }
  }
}

absl::StatusOr<DataDirStore> InspectDataDir(const std::string& path) {
  LAWN_ASSIGN_OR_RETURN(std::optional<std::string> current, ReadWholeFile(path + "/CURRENT"));
  if (!current) return DataDirStore::kNone;
  return *current == kCurrentText ? DataDirStore::kLog : DataDirStore::kRocksDb;
}

LogTimerStore::LogTimerStore(std::unique_ptr<Rep> rep) : rep_(std::move(rep)) {}

LogTimerStore::~LogTimerStore() {
  {
    absl::MutexLock l(&rep_->mu);
    rep_->stop = true;
    rep_->fold_cv.SignalAll();
  }
  // A snapshot in progress is finished first (its files are complete or a .tmp the next Open deletes).
  if (rep_->folder.joinable()) rep_->folder.join();
  absl::MutexLock l(&rep_->mu);
  if (rep_->failed.ok()) rep_->SyncThrough(rep_->writer->next_sequence() - 1).IgnoreError();
}

absl::StatusOr<std::unique_ptr<LogTimerStore>> LogTimerStore::Open(const LogStoreOptions& options) {
  if (options.path.empty()) return absl::InvalidArgumentError("log store: empty data dir path");
  std::error_code ec;
  fs::create_directories(options.path, ec);
  if (ec) return absl::UnavailableError(absl::StrCat("create ", options.path, ": ", ec.message()));
  auto rep = std::make_unique<Rep>();
  rep->options = options;
  rep->log_dir = absl::StrCat(options.path, "/", kLogDir);
  const std::string& dir = options.path;
  LAWN_ASSIGN_OR_RETURN(rep->lock, DirLock::Acquire(dir));

  LAWN_ASSIGN_OR_RETURN(const LogManifest manifest, ReadManifest(dir));
  LAWN_ASSIGN_OR_RETURN(std::optional<std::string> format, ReadWholeFile(dir + "/LAWN_FORMAT"));
  if (!format) {
    LAWN_RETURN_IF_ERROR(ReplaceFile(dir, "CURRENT", kCurrentText));
    LAWN_RETURN_IF_ERROR(ReplaceFile(dir, "LAWN_FORMAT", absl::StrCat(kFormatVersion, "\n")));
  }

  // Left-overs of snapshots cut short or replaced before a crash.
  for (const fs::directory_entry& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    const bool stale_snapshot = name.rfind(kSnapshotPrefix, 0) == 0 && name != manifest.snapshot;
    const bool temporary = name.size() > 4 && name.compare(name.size() - 4, 4, ".tmp") == 0;
    if (stale_snapshot || temporary) {
      std::error_code remove_ec;
      fs::remove(entry.path(), remove_ec);
    }
  }
  if (ec) return absl::UnavailableError(absl::StrCat("list ", dir, ": ", ec.message()));

  RoundLogEnd end;
  uint64_t first_segment = 0;
  auto delta = std::make_unique<LogDelta>();
  LAWN_RETURN_IF_ERROR(rep->ReadLog(manifest, delta.get(), &end, &first_segment));
  RoundLogOptions log_options;
  log_options.dir = rep->log_dir;
  log_options.segment_bytes = options.segment_bytes;
  // The segment holding the snapshot's first sequence; the ones below it are spares (or a crash came between
  // a snapshot and their retirement), one of which the writer's first segment reuses.
  const uint64_t manifest_segment = first_segment != 0 ? first_segment : end.last_segment + 1;
  LAWN_ASSIGN_OR_RETURN(
      std::unique_ptr<RoundLogWriter> writer,
      RoundLogWriter::Open(log_options, end.last_segment + 1,
                           std::max(end.next_sequence, manifest.first_sequence), manifest_segment));
  {
    absl::MutexLock l(&rep->mu);
    rep->manifest_segment = manifest_segment;
    rep->synced = writer->next_sequence() - 1;  // Open synced what it read.
    rep->segment_seen = writer->segment();
    rep->manifest = manifest;
    const uint64_t snapshot_bytes =
        manifest.snapshot.empty() ? 0 : fs::file_size(absl::StrCat(dir, "/", manifest.snapshot), ec);
    rep->reserve.store(options.segment_bytes + (ec ? 0 : snapshot_bytes));
    rep->writer = std::move(writer);
    rep->opened_delta = std::move(delta);
    rep->fold_after_open.emplace(rep->writer->next_sequence(), rep->writer->segment());
  }
  Rep* raw = rep.get();
  rep->folder = std::thread([raw] { raw->FoldLoop(); });
  return std::unique_ptr<LogTimerStore>(new LogTimerStore(std::move(rep)));
}

absl::Status LogTimerStore::ReadWithoutOpening(const std::string& path,
                                               absl::FunctionRef<void(const StoredTimer&)> on_timer,
                                               absl::FunctionRef<void(const StoredExpiration&)> on_expiration,
                                               absl::FunctionRef<void(const StoredExpiration&)> on_staged) {
  std::error_code ec;
  if (!fs::exists(path + "/CURRENT", ec)) {
    return absl::NotFoundError(absl::StrCat(path, " holds no store (no CURRENT)"));
  }
  LAWN_ASSIGN_OR_RETURN(std::unique_ptr<DirLock> lock, DirLock::AcquireShared(path));
  LAWN_ASSIGN_OR_RETURN(const LogManifest manifest, ReadManifest(path));
  LogDelta delta;
  LAWN_RETURN_IF_ERROR(ReadLogAfter(absl::StrCat(path, "/", kLogDir), manifest, &delta, nullptr, nullptr));
  // The state comes in sort-key order: every timer, then every outbox entry, then every staged one.
  return logstore::MergeState(
      manifest.snapshot.empty() ? "" : absl::StrCat(path, "/", manifest.snapshot), delta,
      [&](const logstore::StateRecord& record) {
        VisitRecord(record, on_timer, on_expiration,
                    [&](const logstore::StateRecord& staged) { on_staged(ExpirationOf(staged.entry())); });
        return absl::OkStatus();
      },
      [](const absl::Status&) { return false; });
}

absl::Status LogTimerStore::Write(const StoreBatch& batch, SyncMode mode) {
  if (batch.empty()) return absl::OkStatus();
  Rep& r = *rep_;
  // Only the room a write can take: appends inside a segment take none, a rotation at most a segment. The
  // snapshot's share of the reserve is CheckSpace's (lawnd checks each round with it, and headroom, before
  // applying it): a snapshot that ends between that check and this write raises the reserve by its size,
  // and a write refused here fails the store (the round is already applied).
  LAWN_RETURN_IF_ERROR(r.AdmitWrite(batch.ByteSize(), r.options.segment_bytes, "for the next log segment"));
  absl::MutexLock l(&r.mu);
  LAWN_RETURN_IF_ERROR(r.failed);
  r.opened_delta.reset();
  r.StartFoldAfterOpen();
  absl::StatusOr<uint64_t> sequence = r.writer->Append(batch.data());
  if (!sequence.ok()) {
    // A record too large for a segment was not written and fails nothing else.
    return absl::IsInvalidArgument(sequence.status()) ? sequence.status() : r.Fail(sequence.status());
  }
  r.NoteAppend(*sequence);
  r.NoteIncoming(batch);
  if (mode == SyncMode::kNoSync || !batch.needs_sync()) return absl::OkStatus();
  return r.SyncThrough(*sequence);
}

absl::Status LogTimerStore::CheckSpace(uint64_t bytes) {
  return rep_->AdmitWrite(bytes, rep_->reserve.load(std::memory_order_relaxed));
}

absl::Status LogTimerStore::Sync() {
  absl::MutexLock l(&rep_->mu);
  LAWN_RETURN_IF_ERROR(rep_->failed);
  return rep_->SyncThrough(rep_->writer->next_sequence() - 1);
}

absl::StatusOr<uint64_t> LogTimerStore::DataBytes() const {
  std::error_code ec;
  uint64_t total = 0;
  fs::recursive_directory_iterator it(rep_->options.path, ec);
  for (; !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    std::error_code file_ec;
    if (it.depth() == 0 && it->path().filename() == TimerStore::kCheckpointsDir &&
        it->is_directory(file_ec)) {
      it.disable_recursion_pending();
      continue;
    }
    if (it->is_regular_file(file_ec)) total += it->file_size(file_ec);
  }
  if (ec) return absl::UnavailableError(absl::StrCat("measure ", rep_->options.path, ": ", ec.message()));
  return total;
}

absl::Status LogTimerStore::Recover(absl::FunctionRef<void(const StoredTimer&)> on_timer,
                                    absl::FunctionRef<void(const StoredExpiration&)> on_expiration,
                                    absl::FunctionRef<bool(const absl::Status&)> on_corrupt) {
  Rep& r = *rep_;
  absl::MutexLock l(&r.mu);
  std::map<uint64_t, std::string> incoming;
  const absl::Status status = r.ForEachRecord(
      [&](const logstore::StateRecord& record) {
        VisitRecord(record, on_timer, on_expiration, [&](const logstore::StateRecord& staged) {
          incoming[staged.entry().delivery_id] = std::string(staged.op());
        });
        return absl::OkStatus();
      },
      on_corrupt);
  if (status.ok()) r.incoming = std::move(incoming);
  // The log read into memory is freed: give it back to the system rather than keep it in malloc's pools for
  // the life of the process (it was about the size of the state recovered).
  ::malloc_trim(0);
  r.StartFoldAfterOpen();
  return status;
}

absl::Status LogTimerStore::ForEachIncoming(absl::FunctionRef<void(const StoredExpiration&)> on_staged) {
  Rep& r = *rep_;
  absl::MutexLock l(&r.mu);
  auto visit = [&](const StoreBatch::Entry& e) { on_staged(ExpirationOf(e)); };
  if (r.incoming) {
    for (const auto& [id, op] : *r.incoming) {
      std::string_view rest = op;
      StoreBatch::Entry e;
      if (StoreBatch::DecodeNext(&rest, &e)) visit(e);
    }
    return absl::OkStatus();
  }
  return r.ForEachRecord(
      [&](const logstore::StateRecord& record) {
        if (logstore::FamilyOf(static_cast<StoreBatch::Op>(record.op().front())) == Family::kIncoming) {
          visit(record.entry());
        }
        return absl::OkStatus();
      },
      [](const absl::Status&) { return false; });
}

absl::StatusOr<uint64_t> LogTimerStore::NextBootEpoch() {
  Rep& r = *rep_;
  absl::MutexLock l(&r.epoch_mu);
  const std::string path = r.options.path + "/boot_epoch";
  LAWN_ASSIGN_OR_RETURN(std::optional<std::string> text, ReadWholeFile(path));
  uint64_t epoch = 0;
  if (text && !absl::SimpleAtoi(*text, &epoch)) {  // SimpleAtoi allows the newline around the number.
    return absl::DataLossError(absl::StrCat(path, " is not a number: \"", text->substr(0, 40), "\""));
  }
  ++epoch;
  LAWN_RETURN_IF_ERROR(ReplaceFile(r.options.path, "boot_epoch", absl::StrCat(epoch, "\n")));
  return epoch;
}

absl::Status LogTimerStore::Checkpoint(const std::string& dir) {
  Rep& r = *rep_;
  std::error_code ec;
  if (fs::exists(dir, ec))
    return absl::FailedPreconditionError(absl::StrCat("checkpoint dir ", dir, " already exists"));
  LogManifest m;
  uint64_t first_segment = 0;
  uint64_t last_segment = 0;
  uint64_t last_bytes = 0;
  {
    absl::MutexLock l(&r.mu);
    while ((r.folding || r.checkpointing) && r.failed.ok()) r.synced_cv.Wait(&r.mu);
    LAWN_RETURN_IF_ERROR(r.failed);
    r.checkpointing = true;
    m = r.manifest;
    first_segment = r.manifest_segment;
    last_segment = r.writer->segment();
    last_bytes = r.writer->offset();
  }
  const std::string tmp = dir + ".tmp";
  fs::remove_all(tmp, ec);
  absl::Status status = r.CopyForCheckpoint(tmp, m, first_segment, last_segment, last_bytes);
  if (status.ok() && ::rename(tmp.c_str(), dir.c_str()) != 0) status = FileError("rename", tmp, errno);
  if (status.ok()) {
    const std::string parent = fs::path(dir).parent_path().string();
    status = SyncDir(parent.empty() ? "." : parent);
  }
  if (!status.ok()) fs::remove_all(tmp, ec);
  absl::MutexLock l(&r.mu);
  r.checkpointing = false;
  r.synced_cv.SignalAll();
  if (r.fold_after_checkpoint) {
    const auto [sequence, segment] = *r.fold_after_checkpoint;
    r.fold_after_checkpoint.reset();
    r.MaybeFold(sequence, segment);
  }
  return status;
}

LogTimerStore::Stats LogTimerStore::stats() const {
  absl::MutexLock l(&rep_->mu);
  Stats s = rep_->stats;
  s.snapshot_sequence = rep_->manifest.first_sequence;
  s.log_segment = rep_->writer->segment();
  return s;
}

TimerStore::BackgroundStats LogTimerStore::Background() const {
  absl::MutexLock l(&rep_->mu);
  return BackgroundStats{rep_->stats.snapshots, rep_->stats.snapshot_failures, rep_->stats.last_error,
                         (rep_->writer->segment() - rep_->manifest_segment) * rep_->options.segment_bytes +
                             rep_->writer->offset(),
                         rep_->SnapshotBytes()};
}

void LogTimerStore::WaitForSnapshot() {
  absl::MutexLock l(&rep_->mu);
  while (rep_->folding) rep_->synced_cv.Wait(&rep_->mu);
}

}  // namespace lawn
