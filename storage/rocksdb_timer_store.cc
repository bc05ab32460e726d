#include "storage/rocksdb_timer_store.h"

#include <sys/statvfs.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdarg>
#include <cstring>
#include <filesystem>
#include <optional>
#include <system_error>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "base/status_macros.h"
#include "rocksdb/cache.h"
#include "rocksdb/convenience.h"
#include "rocksdb/db.h"
#include "rocksdb/memtablerep.h"
#include "rocksdb/options.h"
#include "rocksdb/sst_file_manager.h"
#include "rocksdb/table.h"
#include "rocksdb/utilities/checkpoint.h"
#include "rocksdb/utilities/table_properties_collectors.h"
#include "rocksdb/write_batch.h"
#include "storage/dir_lock.h"
#include "storage/record_coding.h"
#include "storage/varint.h"

namespace lawn {

namespace {

constexpr char kPendingCf[] = "pending";
// Format version 1's timers, keyed by name; migrated into `pending` at the first open (MigrateFromV1).
constexpr char kV1TimersCf[] = "timers";
// Records migrated per (unsynced) write, at most; the last write, which sets the version, is synced.
constexpr uint32_t kMigrateBatchRecords = 16 * 1024;
constexpr size_t kMigrateBatchBytes = 16 << 20;
constexpr char kOutboxCf[] = "outbox";
constexpr char kMetaCf[] = "meta";
constexpr char kIncomingCf[] = "incoming";  // Cluster members only.
constexpr char kFormatVersionKey[] = "format_version";
constexpr char kBootEpochKey[] = "boot_epoch";

// Free-space guard: statvfs at most every kGuardInterval, and at the latest after kGuardMaxBytes written;
// at every admission once the estimate is within kGuardNearBytes of refusing.
constexpr auto kGuardInterval = std::chrono::milliseconds(100);
constexpr uint64_t kGuardMaxBytes = uint64_t{16} << 20;
constexpr uint64_t kGuardNearBytes = uint64_t{256} << 20;

std::string_view View(const rocksdb::Slice& s) { return {s.data(), s.size()}; }
// Debian's Abseil 20220623 has its own string_view type.
std::string Hex(std::string_view s) { return absl::BytesToHexString(absl::string_view(s.data(), s.size())); }

// The canonical code closest to a RocksDB status, for errors outside Write (which has its own rule).
absl::Status FromRocks(const rocksdb::Status& s, const std::string& context) {
  if (s.ok()) return absl::OkStatus();
  std::string msg = absl::StrCat(context, ": ", s.ToString());
  switch (s.code()) {
    case rocksdb::Status::kNotFound:
      return absl::NotFoundError(msg);
    case rocksdb::Status::kCorruption:
      return absl::DataLossError(msg);
    case rocksdb::Status::kInvalidArgument:
      return absl::InvalidArgumentError(msg);
    case rocksdb::Status::kNotSupported:
      return absl::UnimplementedError(msg);
    case rocksdb::Status::kAborted:
      return absl::AbortedError(msg);
    case rocksdb::Status::kIOError:
      if (s.IsNoSpace()) return absl::ResourceExhaustedError(msg);
      return absl::UnavailableError(msg);
    case rocksdb::Status::kBusy:
    case rocksdb::Status::kTimedOut:
    case rocksdb::Status::kTryAgain:
    case rocksdb::Status::kIncomplete:
    case rocksdb::Status::kShutdownInProgress:
      return absl::UnavailableError(msg);
    default:
      return absl::InternalError(msg);
  }
}

rocksdb::CompressionType PickCompression() {
  const std::vector<rocksdb::CompressionType> supported = rocksdb::GetSupportedCompressions();
  const bool has_lz4 =
      std::find(supported.begin(), supported.end(), rocksdb::kLZ4Compression) != supported.end();
  return has_lz4 ? rocksdb::kLZ4Compression : rocksdb::kNoCompression;
}

// Options for the two big column families; see "Space reclamation" in FORMAT.md for the reasons.
rocksdb::ColumnFamilyOptions RecordCfOptions(const std::shared_ptr<rocksdb::TableFactory>& table,
                                             rocksdb::CompressionType compression,
                                             uint64_t write_buffer_bytes) {
  rocksdb::ColumnFamilyOptions cf;
  cf.table_factory = table;
  cf.compression = compression;
  // Half the total each: a timer's put and the delete of its firing (an expiration's put and the delete of
  // its ack) that meet in one memtable cancel at the flush (only the tombstone is written), and flushes and
  // compactions stay off the two cores while a burst fires (BENCHMARKS.md section 18).
  cf.write_buffer_size = static_cast<size_t>(write_buffer_bytes / 2);
  cf.max_write_buffer_number = 2;
  // An append-only vector memtable, sorted once when it is flushed (on a background thread): lawnd never
  // reads these column families while running (only Recover scans them, at start), so the skiplist's ordered
  // inserts (a random-position insert per record, the largest single cost of a durable start) buy nothing.
  cf.memtable_factory = std::make_shared<rocksdb::VectorRepFactory>();
  cf.level_compaction_dynamic_level_bytes = true;
  cf.target_file_size_base = 32 << 20;
  cf.max_bytes_for_level_base = 128 << 20;
  // Any file older than a day is rewritten, so tombstones cannot linger next to long-lived timers forever.
  cf.periodic_compaction_seconds = 24 * 60 * 60;
  // A file in which half of any 32K consecutive entries are deletions is compacted at once.
  cf.table_properties_collector_factories.push_back(
      rocksdb::NewCompactOnDeletionCollectorFactory(/*sliding_window_size=*/32 * 1024,
                                                    /*deletion_trigger=*/16 * 1024, /*deletion_ratio=*/0.5));
  return cf;
}

// RocksDB's info log for a read-only open: none, since writing it (and rotating the last one to LOG.old.*)
// would change the dir.
class DiscardingLogger : public rocksdb::Logger {
 public:
  using rocksdb::Logger::Logv;
  void Logv(const char*, va_list) override {}
};

}  // namespace

struct RocksDbTimerStore::Rep {
  std::unique_ptr<DirLock> lock;  // First: released after everything below is closed.
  std::string path;
  bool read_only = false;
  uint64_t min_free_disk_bytes = 0;
  // Kept free on top of min_free_disk_bytes: what a flush of every memtable may write before it frees the WAL
  // it replaces (write_buffer_bytes). A checkpoint flushes first, too.
  uint64_t flush_reserve_bytes = 0;
  rocksdb::Env* env = nullptr;
  std::unique_ptr<rocksdb::DB> db;
  rocksdb::ColumnFamilyHandle* pending = nullptr;
  rocksdb::ColumnFamilyHandle* v1_timers = nullptr;  // Format version 1's `timers`, until it is migrated.
  std::optional<uint64_t> migrated_from_v1;          // Set by Open if it migrated format version 1.
  rocksdb::ColumnFamilyHandle* outbox = nullptr;
  rocksdb::ColumnFamilyHandle* meta = nullptr;
  rocksdb::ColumnFamilyHandle* incoming = nullptr;  // nullptr unless the store has a staging area.
  std::vector<rocksdb::ColumnFamilyHandle*> handles;  // All of them, for cleanup.

  absl::Mutex epoch_mu;  // Serializes NextBootEpoch's read-modify-write.

  // Fail-stop after a failed write or WAL sync. RocksDB 7.8 as Debian builds it (assertions on) aborts the
  // process in WritableFileWriter::AssertFalseAndGetStatusForPrevError when the WAL is synced or flushed
  // after a failed WAL append; so once a write failed, no RocksDB write, sync or WAL flush is attempted again
  // (not even at close), and every later call returns the first error. Reopening recovers from the WAL.
  std::atomic<bool> failed{false};
  absl::Mutex failed_mu;
  absl::Status failed_status ABSL_GUARDED_BY(failed_mu);

  absl::Status Failed() {
    if (!failed.load(std::memory_order_acquire)) return absl::OkStatus();
    absl::MutexLock l(&failed_mu);
    return failed_status;
  }
  // Records the first write failure; returns the UNAVAILABLE status every later call will return.
  absl::Status Fail(const std::string& what, const rocksdb::Status& s) {
    absl::MutexLock l(&failed_mu);
    if (failed_status.ok()) {
      failed_status = absl::UnavailableError(
          absl::StrCat(what, ": ", s.ToString(), "; storage stopped, restart lawnd to recover from the WAL"));
      failed.store(true, std::memory_order_release);
    }
    return failed_status;
  }

  // Group commit of synced writes across writers (one per shard): a `sync` Write appends without syncing,
  // then waits for a WAL sync that started after its append. One writer at a time syncs (the leader) and the
  // sync covers every write appended before it began, so concurrent shards share each fsync instead of
  // queueing one after another in RocksDB's write groups. The last visible sequence number is published
  // only after a write's WAL append, so a sync that begins once it covers a write's sequence covers its
  // bytes.
  absl::Mutex sync_mu;
  absl::CondVar sync_cv;
  bool syncing ABSL_GUARDED_BY(sync_mu) = false;
  uint64_t synced_seq ABSL_GUARDED_BY(sync_mu) = 0;

  // Returns once every write up to sequence `seq` is on stable storage (or the first failure).
  absl::Status SyncTo(uint64_t seq) {
    absl::MutexLock l(&sync_mu);
    while (synced_seq < seq) {
      if (syncing) {
        sync_cv.Wait(&sync_mu);
        continue;
      }
      syncing = true;
      const uint64_t target = db->GetLatestSequenceNumber();
      sync_mu.Unlock();
      absl::Status st = Failed();
      if (st.ok()) {
        rocksdb::Status s = db->SyncWAL();
        if (!s.ok()) st = Fail("rocksdb WAL sync failed", s);
      }
      sync_mu.Lock();
      syncing = false;
      if (st.ok()) synced_seq = std::max(synced_seq, target);
      sync_cv.SignalAll();
      if (!st.ok()) return st;
    }
    return Failed();
  }

  // Free-space guard state.
  absl::Mutex guard_mu;
  // After work that used disk outside the guard's count (a checkpoint, a full compaction): read afresh.
  void InvalidateGuard() {
    absl::MutexLock l(&guard_mu);
    guard_valid = false;
  }
  std::chrono::steady_clock::time_point guard_checked_at ABSL_GUARDED_BY(guard_mu);
  uint64_t guard_free_bytes ABSL_GUARDED_BY(guard_mu) = 0;     // statvfs at guard_checked_at.
  uint64_t guard_written_since ABSL_GUARDED_BY(guard_mu) = 0;  // Bytes admitted since then.
  bool guard_valid ABSL_GUARDED_BY(guard_mu) = false;
  std::atomic<uint64_t> free_space_probes{0};  // statvfs calls (RocksDbTimerStore::free_space_probes).

  ~Rep() {
    if (db == nullptr) return;
    // A clean shutdown makes every acknowledged write durable. Errors are ignored: there is nobody left to
    // tell, and the next Open recovers from the WAL as after a crash.
    if (!failed.load() && !read_only) db->FlushWAL(/*sync=*/true).PermitUncheckedError();
    for (rocksdb::ColumnFamilyHandle* h : handles) db->DestroyColumnFamilyHandle(h).PermitUncheckedError();
    db->Close().PermitUncheckedError();
  }

  absl::Status StatFree(uint64_t* free_bytes) {
    free_space_probes.fetch_add(1, std::memory_order_relaxed);
    struct statvfs st;
    if (statvfs(path.c_str(), &st) != 0) {
      return absl::UnavailableError(absl::StrCat("statvfs(", path, "): ", std::strerror(errno)));
    }
    *free_bytes = static_cast<uint64_t>(st.f_bavail) * st.f_frsize;
    return absl::OkStatus();
  }

  // Admits a write of `bytes` or refuses it. The estimate of free space between two statvfs calls assumes
  // every admitted byte consumed disk; a flush writes up to flush_reserve_bytes more, and compactions more
  // again, which min_free_disk_bytes covers.
  // With `reserve` false it only checks (TimerStore::CheckSpace), counting nothing as written.
  absl::Status AdmitWrite(uint64_t bytes, bool reserve = true) {
    if (min_free_disk_bytes == 0) return absl::OkStatus();
    absl::MutexLock l(&guard_mu);
    const auto now = std::chrono::steady_clock::now();
    auto estimate = [&] { return guard_free_bytes - std::min(guard_written_since, guard_free_bytes); };
    const uint64_t keep = min_free_disk_bytes + flush_reserve_bytes;
    auto enough = [&](uint64_t free) { return free >= bytes && free - bytes >= keep; };
    // Only bytes written count towards kGuardMaxBytes: a check's headroom (CheckSpace, 32 MiB per shard
    // round) is not written, and counting it made every round statvfs. Near the limit every admission reads
    // afresh, so a check that passed is not contradicted by the write right after it (a refusal at write
    // time is fatal for the runtime) unless far more than the estimate's error was used meanwhile.
    const bool stale = !guard_valid || now - guard_checked_at >= kGuardInterval ||
                       guard_written_since + (reserve ? bytes : 0) > kGuardMaxBytes ||
                       !enough(estimate() - std::min(estimate(), kGuardNearBytes));
    // A refusal is always based on a fresh statvfs: compaction may have freed space since the last one.
    if (stale) {
      LAWN_RETURN_IF_ERROR(StatFree(&guard_free_bytes));
      guard_checked_at = now;
      guard_written_since = 0;
      guard_valid = true;
    }
    const uint64_t free = estimate();
    if (!enough(free)) {
      return absl::ResourceExhaustedError(absl::StrCat(
          "disk almost full: ", free, " bytes free in ", path, ", need at least ", min_free_disk_bytes,
          " (config key min_free_disk_bytes) plus ", flush_reserve_bytes,
          " to flush the memtables (write_buffer_bytes) plus ", bytes, " for this write; nothing was written"));
    }
    if (reserve) guard_written_since += bytes;
    return absl::OkStatus();
  }

  // Iterates `cf` in key order within `snapshot`, calling `visit(key, value)` until it returns an error.
  template <typename Visit>
  absl::Status Scan(rocksdb::ColumnFamilyHandle* cf, const rocksdb::Snapshot* snapshot, Visit visit) {
    rocksdb::ReadOptions ro;
    ro.snapshot = snapshot;
    ro.fill_cache = false;        // A full scan would only evict the working set.
    ro.readahead_size = 4 << 20;  // Large sequential reads.
    ro.total_order_seek = true;
    std::unique_ptr<rocksdb::Iterator> it(db->NewIterator(ro, cf));
    for (it->SeekToFirst(); it->Valid(); it->Next()) {
      LAWN_RETURN_IF_ERROR(visit(View(it->key()), View(it->value())));
    }
    return FromRocks(it->status(), absl::StrCat("recover: scan of column family ", cf->GetName()));
  }

  // The store's format version: kFormatVersion, or 1 (to be migrated); a new store is given kFormatVersion.
  absl::StatusOr<int> CheckFormat(const std::vector<std::string>& unknown_cfs);
  // Format version 1 kept timers keyed by name (`timers`); this copies them into `pending`, keyed by
  // deadline, sets the version (the one synced write, which also makes the copies before it durable) and
  // drops `timers`. `timers` is not changed before that, so a migration cut short is simply done again: it
  // writes the same keys and values, and nothing else writes before Open returns.
  absl::Status MigrateFromV1();
  // Drops format version 1's `timers` column family, once it is migrated or was left empty.
  absl::Status DropV1Timers();
};

RocksDbTimerStore::RocksDbTimerStore(std::unique_ptr<Rep> rep) : rep_(std::move(rep)) {}

RocksDbTimerStore::~RocksDbTimerStore() = default;

absl::StatusOr<std::unique_ptr<RocksDbTimerStore>> RocksDbTimerStore::Open(
    const RocksDbStoreOptions& options) {
  return Open(options, *rocksdb::Env::Default());
}

absl::StatusOr<std::unique_ptr<RocksDbTimerStore>> RocksDbTimerStore::Open(const RocksDbStoreOptions& options,
                                                                           rocksdb::Env& env) {
  if (options.path.empty()) return absl::InvalidArgumentError("storage path is empty; set the data dir");
  if (options.write_buffer_bytes < RocksDbStoreOptions::kMinWriteBufferBytes) {
    return absl::InvalidArgumentError(absl::StrCat("write buffer of ", options.write_buffer_bytes,
                                                   " bytes is too small; the store needs ",
                                                   RocksDbStoreOptions::kMinWriteBufferBytes, " or more"));
  }
  auto rep = std::make_unique<Rep>();
  rep->path = options.path;
  rep->min_free_disk_bytes = options.min_free_disk_bytes;
  rep->flush_reserve_bytes = options.write_buffer_bytes;
  rep->env = &env;

  rep->read_only = options.read_only;

  std::error_code ec;
  if (options.read_only) {
    if (!rep->env->FileExists(options.path + "/CURRENT").ok()) {
      return absl::NotFoundError(absl::StrCat(options.path, " holds no store (no CURRENT)"));
    }
    LAWN_ASSIGN_OR_RETURN(rep->lock, DirLock::AcquireShared(options.path));
  } else {
    std::filesystem::create_directories(options.path, ec);
    if (ec) return absl::UnavailableError(absl::StrCat("create data dir ", options.path, ": ", ec.message()));
    LAWN_ASSIGN_OR_RETURN(rep->lock, DirLock::Acquire(options.path));
  }

  rocksdb::DBOptions db_options;
  db_options.env = rep->env;
  db_options.create_if_missing = !options.read_only;
  db_options.create_missing_column_families = !options.read_only;
  if (options.read_only) db_options.info_log = std::make_shared<DiscardingLogger>();
  db_options.max_background_jobs = 2;
  db_options.bytes_per_sync = 1 << 20;
  db_options.wal_bytes_per_sync = 1 << 20;
  // Concurrent writers form groups; each group's WAL write (and fsync, for synced writes) is done once by its
  // leader. Pipelining lets the next group's WAL write overlap this group's memtable inserts.
  db_options.enable_pipelined_write = true;
  // The vector memtable (RecordCfOptions) takes one writer at a time.
  db_options.allow_concurrent_memtable_write = false;
  // WAL files are freed once every column family with data in them has flushed; this bound forces the
  // flush of a quiet column family (meta) that would otherwise pin old WALs.
  db_options.max_total_wal_size = options.write_buffer_bytes;
  db_options.db_write_buffer_size = static_cast<size_t>(options.write_buffer_bytes);
  db_options.recycle_log_file_num = 0;
  db_options.max_manifest_file_size = 16 << 20;
  db_options.keep_log_file_num = 3;
  db_options.max_log_file_size = 8 << 20;
  // Enables automatic recovery from out-of-space background errors.
  db_options.sst_file_manager.reset(rocksdb::NewSstFileManager(rep->env));

  rocksdb::BlockBasedTableOptions table_options;
  table_options.block_cache = rocksdb::NewLRUCache(options.block_cache_bytes);
  table_options.block_size = 16 << 10;  // Recovery scans everything; larger blocks read faster.
  // No filter policy: timers are only ever scanned, never looked up by key.
  auto table = std::shared_ptr<rocksdb::TableFactory>(rocksdb::NewBlockBasedTableFactory(table_options));
  const rocksdb::ColumnFamilyOptions record_cf =
      RecordCfOptions(table, PickCompression(), options.write_buffer_bytes);
  rocksdb::ColumnFamilyOptions meta_cf;  // Also used for "default", which lawn leaves empty.
  meta_cf.table_factory = table;
  meta_cf.compression = rocksdb::kNoCompression;
  meta_cf.write_buffer_size = 1 << 20;

  // An existing store is opened with every column family it has (RocksDB refuses otherwise); unknown ones
  // are reported after the format version check, which explains them better.
  const bool new_db = !rep->env->FileExists(options.path + "/CURRENT").ok();
  std::vector<std::string> existing;
  if (!new_db) {
    LAWN_RETURN_IF_ERROR(FromRocks(rocksdb::DB::ListColumnFamilies(db_options, options.path, &existing),
                                   absl::StrCat("open ", options.path)));
  }
  std::vector<rocksdb::ColumnFamilyDescriptor> descriptors = {
      {rocksdb::kDefaultColumnFamilyName, meta_cf},
      {kPendingCf, record_cf},
      {kOutboxCf, record_cf},
      {kMetaCf, meta_cf},
  };
  std::vector<std::string> unknown_cfs;
  auto exists = [&](const char* name) {
    return std::find(existing.begin(), existing.end(), name) != existing.end();
  };
  const bool has_incoming = exists(kIncomingCf);
  if (has_incoming || (options.staging && !options.read_only))
    descriptors.push_back({kIncomingCf, record_cf});
  const bool has_v1_timers = exists(kV1TimersCf);
  const bool has_pending = exists(kPendingCf);
  // A read-only open cannot migrate format version 1 (nor tell it from a dir of no lawn store's yet).
  auto refuse_version_1 = [&options] {
    return absl::FailedPreconditionError(
        absl::StrCat("data dir ", options.path,
                     " holds storage format version 1: start lawnd on it once "
                     "to migrate it to version ",
                     kFormatVersion, ", then read it"));
  };
  if (options.read_only && !has_pending) return refuse_version_1();
  if (has_v1_timers) descriptors.push_back({kV1TimersCf, record_cf});
  for (const std::string& name : existing) {
    if (name == rocksdb::kDefaultColumnFamilyName || name == kPendingCf || name == kOutboxCf ||
        name == kMetaCf || name == kIncomingCf || name == kV1TimersCf) {
      continue;
    }
    unknown_cfs.push_back(name);
    descriptors.emplace_back(name, rocksdb::ColumnFamilyOptions());
  }

  rocksdb::DB* raw_db = nullptr;
  rocksdb::Status s =
      options.read_only
          ? rocksdb::DB::OpenForReadOnly(db_options, options.path, descriptors, &rep->handles, &raw_db)
          : rocksdb::DB::Open(db_options, options.path, descriptors, &rep->handles, &raw_db);
  if (!s.ok()) {
    absl::Status st = FromRocks(s, absl::StrCat("open ", options.path));
    // Lock held by another process, unreadable dir, ...: all "cannot use it now".
    if (s.IsIOError()) return absl::UnavailableError(st.message());
    return st;
  }
  rep->db.reset(raw_db);
  rep->pending = rep->handles[1];
  rep->outbox = rep->handles[2];
  rep->meta = rep->handles[3];
  size_t next_handle = 4;
  if (has_incoming || (options.staging && !options.read_only)) rep->incoming = rep->handles[next_handle++];
  if (has_v1_timers) rep->v1_timers = rep->handles[next_handle++];
  absl::StatusOr<int> version = rep->CheckFormat(unknown_cfs);
  if (!version.ok()) return version.status();
  if (options.read_only) {
    if (*version == 1) return refuse_version_1();
    return std::unique_ptr<RocksDbTimerStore>(new RocksDbTimerStore(std::move(rep)));
  }
  if (options.staging && !has_incoming && !new_db) {
    // A cluster member's store has its staging area from its first start. One without it that holds timers
    // or expirations was a single lawnd's: as a member it would keep only the partitions the cluster gives
    // it (the start-up settle deletes the rest), so it is refused, untouched.
    auto holds_records = [&](rocksdb::ColumnFamilyHandle* cf) {
      if (cf == nullptr) return false;
      std::unique_ptr<rocksdb::Iterator> it(rep->db->NewIterator(rocksdb::ReadOptions(), cf));
      it->SeekToFirst();
      return it->Valid();
    };
    if (holds_records(*version == 1 ? rep->v1_timers : rep->pending) || holds_records(rep->outbox)) {
      // Left as it was: without what this open created (a version 1 store gets `pending` only when migrated).
      rep->db->DropColumnFamily(rep->incoming).PermitUncheckedError();
      if (*version == 1 && !has_pending) rep->db->DropColumnFamily(rep->pending).PermitUncheckedError();
      return absl::FailedPreconditionError(absl::StrCat(
          "data dir ", options.path, " holds the timers of a lawnd that ran alone; a cluster member must start on "
          "an empty data dir (the cluster would keep only the partitions it gives this member). Start this "
          "lawnd without its cluster section, or move its timers with a client"));
    }
  }
  if (*version == 1) LAWN_RETURN_IF_ERROR(rep->MigrateFromV1());
  if (rep->v1_timers != nullptr) LAWN_RETURN_IF_ERROR(rep->DropV1Timers());
  return std::unique_ptr<RocksDbTimerStore>(new RocksDbTimerStore(std::move(rep)));
}

absl::StatusOr<int> RocksDbTimerStore::Rep::CheckFormat(const std::vector<std::string>& unknown_cfs) {
  std::string version;
  rocksdb::Status s = db->Get(rocksdb::ReadOptions(), meta, kFormatVersionKey, &version);
  if (s.ok()) {
    if (version != std::to_string(kFormatVersion) && version != "1") {
      return absl::FailedPreconditionError(absl::StrCat(
          "data dir ", path, " has storage format version \"", absl::CHexEscape(version),
          "\"; this lawnd supports format version ", kFormatVersion,
          " and migrates version 1 (use the lawnd release that wrote it, or move the data dir away)"));
    }
    if (!unknown_cfs.empty()) {
      return absl::FailedPreconditionError(absl::StrCat("data dir ", path, " has unknown column family \"",
                                                        unknown_cfs.front(), "\"; not a lawn store?"));
    }
    return version == "1" ? 1 : kFormatVersion;
  }
  if (!s.IsNotFound()) return FromRocks(s, absl::StrCat("open ", path, ": read format_version"));
  // No version: a new store, or one whose creation was cut short before the version was written (it then
  // holds no records). Anything else is not ours.
  auto empty = [&](rocksdb::ColumnFamilyHandle* cf) {
    std::unique_ptr<rocksdb::Iterator> it(db->NewIterator(rocksdb::ReadOptions(), cf));
    it->SeekToFirst();
    return !it->Valid() && it->status().ok();
  };
  if (!unknown_cfs.empty() || !empty(pending) || (v1_timers != nullptr && !empty(v1_timers)) ||
      !empty(outbox) || !empty(meta)) {
    return absl::FailedPreconditionError(absl::StrCat(
        "data dir ", path, " holds a RocksDB database without a lawn format_version; not a lawn store?"));
  }
  if (read_only) return kFormatVersion;  // An empty store: nothing to read, and nothing may be written.
  rocksdb::WriteOptions wo;
  wo.sync = true;
  // A failed write stops the store (Fail): closing it must not sync the WAL after a failed append.
  if (rocksdb::Status put = db->Put(wo, meta, kFormatVersionKey, std::to_string(kFormatVersion)); !put.ok()) {
    return Fail(absl::StrCat("open ", path, ": write format_version"), put);
  }
  return kFormatVersion;
}

absl::Status RocksDbTimerStore::Rep::MigrateFromV1() {
  uint64_t migrated = 0;
  rocksdb::WriteBatch wb;
  // Each write goes through the free-space guard, and a failed one stops the store like any failed write
  // (RocksDB 7.8 aborts on a WAL sync after a failed append, and closing the store syncs).
  auto write = [&](bool sync) -> absl::Status {
    if (absl::Status admitted = AdmitWrite(wb.GetDataSize()); !admitted.ok()) {
      return absl::Status(admitted.code(), absl::StrCat("open ", path,
                                                        ": migrate format version 1 (needs free space "
                                                        "like any write): ",
                                                        admitted.message()));
    }
    rocksdb::WriteOptions wo;
    wo.sync = sync;
    rocksdb::Status s = db->Write(wo, &wb);
    if (!s.ok()) return Fail(absl::StrCat("open ", path, ": migrate format version 1"), s);
    wb.Clear();
    return absl::OkStatus();
  };
  if (v1_timers != nullptr) {
    const std::string context = absl::StrCat("open ", path, ": migrate format version 1");
    std::unique_ptr<rocksdb::Iterator> it(db->NewIterator(rocksdb::ReadOptions(), v1_timers));
    std::string key;
    for (it->SeekToFirst(); it->Valid(); it->Next()) {
      // A record that does not decode keeps its value under the lowest deadline: Recover reports it as
      // it reported it before (DATA_LOSS, or skipped with --skip-corrupt-records).
      StoredTimer t;
      const int64_t deadline =
          internal::DecodeTimerValue(View(it->value()), &t) ? t.deadline_unix_ns : INT64_MIN;
      key.clear();
      internal::AppendTimerKey(&key, deadline, View(it->key()));
      LAWN_RETURN_IF_ERROR(FromRocks(wb.Put(pending, key, it->value()), context));
      ++migrated;
      if (wb.Count() >= kMigrateBatchRecords || wb.GetDataSize() >= kMigrateBatchBytes) {
        LAWN_RETURN_IF_ERROR(write(/*sync=*/false));
      }
    }
    LAWN_RETURN_IF_ERROR(FromRocks(it->status(), context));
  }
  LAWN_RETURN_IF_ERROR(FromRocks(wb.Put(meta, kFormatVersionKey, std::to_string(kFormatVersion)),
                                 absl::StrCat("open ", path, ": write format_version")));
  LAWN_RETURN_IF_ERROR(write(/*sync=*/true));
  migrated_from_v1 = migrated;
  return absl::OkStatus();
}

absl::Status RocksDbTimerStore::Rep::DropV1Timers() {
  const std::string context = absl::StrCat("open ", path, ": drop format version 1's timers");
  LAWN_RETURN_IF_ERROR(FromRocks(db->DropColumnFamily(v1_timers), context));
  handles.erase(std::remove(handles.begin(), handles.end(), v1_timers), handles.end());
  LAWN_RETURN_IF_ERROR(FromRocks(db->DestroyColumnFamilyHandle(v1_timers), context));
  v1_timers = nullptr;
  return absl::OkStatus();
}

// TimerStore

absl::Status RocksDbTimerStore::Write(const StoreBatch& batch, SyncMode mode) {
  if (batch.empty()) return mode == SyncMode::kSync ? Sync() : rep_->Failed();
  Rep& r = *rep_;
  LAWN_RETURN_IF_ERROR(r.Failed());
  // Per operation RocksDB adds a tag, a column family id and two length varints; 16 bytes covers them.
  rocksdb::WriteBatch wb(batch.ByteSize() + 16 * batch.count() + 12);
  std::string value;
  std::string key;
  rocksdb::Status put_status;
  batch.ForEach([&](const StoreBatch::Entry& e) {
    if (!put_status.ok()) return;
    value.clear();
    key.clear();
    switch (e.op) {
      case StoreBatch::Op::kPutTimer:
        internal::AppendTimerValue(&value, e.deadline_unix_ns, e.ttl_ns, e.interval_ns, e.payload);
        internal::AppendTimerKey(&key, e.deadline_unix_ns, e.key);
        put_status = wb.Put(r.pending, key, value);
        break;
      case StoreBatch::Op::kDeleteTimer:
        internal::AppendTimerKey(&key, e.deadline_unix_ns, e.key);
        put_status = wb.Delete(r.pending, key);
        break;
      case StoreBatch::Op::kPutExpiration:
        internal::AppendOutboxKey(&key, e.delivery_id);
        internal::AppendExpirationValue(&value, e.key, e.deadline_unix_ns, e.ttl_ns, e.interval_ns, e.payload,
                                        e.fired_at_unix_ns, e.attempt);
        put_status = wb.Put(r.outbox, key, value);
        break;
      case StoreBatch::Op::kDeleteExpiration:
        internal::AppendOutboxKey(&key, e.delivery_id);
        put_status = wb.Delete(r.outbox, key);
        break;
      case StoreBatch::Op::kPutIncoming:
      case StoreBatch::Op::kDeleteIncoming:
        if (r.incoming == nullptr) {
          put_status = rocksdb::Status::InvalidArgument("this store has no staging area (not a cluster member)");
          break;
        }
        internal::AppendOutboxKey(&key, e.delivery_id);
        if (e.op == StoreBatch::Op::kDeleteIncoming) {
          put_status = wb.Delete(r.incoming, key);
          break;
        }
        internal::AppendExpirationValue(&value, e.key, e.deadline_unix_ns, e.ttl_ns, e.interval_ns, e.payload,
                                        e.fired_at_unix_ns, e.attempt);
        put_status = wb.Put(r.incoming, key, value);
        break;
    }
  });
  if (!put_status.ok()) return FromRocks(put_status, "write: build batch");
  LAWN_RETURN_IF_ERROR(r.AdmitWrite(wb.GetDataSize()));
  // Never synced by RocksDB itself: a `sync` write is made durable by the shared group commit (Rep::SyncTo).
  rocksdb::WriteOptions wo;
  wo.sync = false;
  rocksdb::Status s = r.db->Write(wo, &wb);
  if (!s.ok()) return r.Fail("rocksdb write failed", s);
  if (mode != SyncMode::kSync) return absl::OkStatus();
  return r.SyncTo(r.db->GetLatestSequenceNumber());
}

absl::Status RocksDbTimerStore::CheckSpace(uint64_t bytes) {
  LAWN_RETURN_IF_ERROR(rep_->Failed());
  return rep_->AdmitWrite(bytes, /*reserve=*/false);
}

std::optional<uint64_t> RocksDbTimerStore::migrated_from_v1() const { return rep_->migrated_from_v1; }

uint64_t RocksDbTimerStore::free_space_probes() const {
  return rep_->free_space_probes.load(std::memory_order_relaxed);
}

absl::Status RocksDbTimerStore::Sync() {
  LAWN_RETURN_IF_ERROR(rep_->Failed());
  rocksdb::Status s = rep_->db->FlushWAL(/*sync=*/true);
  if (!s.ok()) return rep_->Fail("rocksdb WAL sync failed", s);
  return absl::OkStatus();
}

absl::Status RocksDbTimerStore::Recover(absl::FunctionRef<void(const StoredTimer&)> on_timer,
                                        absl::FunctionRef<void(const StoredExpiration&)> on_expiration,
                                        absl::FunctionRef<bool(const absl::Status&)> on_corrupt) {
  Rep& r = *rep_;
  // One snapshot for both column families: a concurrent expiry (timer out, outbox entry in) is seen either
  // entirely or not at all.
  const rocksdb::Snapshot* snapshot = r.db->GetSnapshot();
  auto release = [&] { r.db->ReleaseSnapshot(snapshot); };
  absl::Status st = r.Scan(r.pending, snapshot, [&](std::string_view key, std::string_view value) {
    StoredTimer t;
    int64_t key_deadline = 0;
    const bool key_ok = internal::DecodeTimerKey(key, &key_deadline, &t.key);
    if (!key_ok || !internal::DecodeTimerValue(value, &t) || t.deadline_unix_ns != key_deadline) {
      const std::string which = key_ok
                                    ? absl::StrCat("key 0x", Hex(t.key), " (deadline ", key_deadline, ")")
                                    : absl::StrCat("stored key 0x", Hex(key), " (not a deadline and a key)");
      absl::Status corrupt = absl::DataLossError(
          absl::StrCat("pending record with ", which, " cannot be decoded (value 0x",
                       Hex(value.substr(0, 64)), value.size() > 64 ? "..." : "", ", ", value.size(),
                       " bytes: not a timer record of FORMAT.md with the deadline of its key)"));
      return on_corrupt(corrupt) ? absl::OkStatus() : corrupt;
    }
    on_timer(t);
    return absl::OkStatus();
  });
  if (st.ok()) {
    st = r.Scan(r.outbox, snapshot, [&](std::string_view key, std::string_view value) {
      StoredExpiration e;
      const bool key_ok = internal::DecodeOutboxKey(key, &e.delivery_id);
      if (!key_ok || !internal::DecodeExpirationValue(value, &e)) {
        absl::Status corrupt = absl::DataLossError(absl::StrCat(
            "outbox record with key 0x", Hex(key), " cannot be decoded (",
            key_ok ? "value is not an expiration record" : "key is not an 8-byte delivery id",
            " of FORMAT.md, value ", value.size(), " bytes)"));
        return on_corrupt(corrupt) ? absl::OkStatus() : corrupt;
      }
      on_expiration(e);
      return absl::OkStatus();
    });
  }
  release();
  return st;
}

absl::Status RocksDbTimerStore::ForEachIncoming(
    absl::FunctionRef<void(const StoredExpiration&)> on_staged) {
  Rep& r = *rep_;
  if (r.incoming == nullptr) return absl::OkStatus();
  return r.Scan(r.incoming, nullptr, [&](std::string_view key, std::string_view value) {
    StoredExpiration e;
    if (!internal::DecodeOutboxKey(key, &e.delivery_id) || !internal::DecodeExpirationValue(value, &e)) {
      return absl::DataLossError(absl::StrCat("incoming record with key 0x", Hex(key), " cannot be decoded (",
                                              value.size(), " bytes: not an expiration record of FORMAT.md)"));
    }
    on_staged(e);
    return absl::OkStatus();
  });
}

absl::StatusOr<uint64_t> RocksDbTimerStore::NextBootEpoch() {
  Rep& r = *rep_;
  LAWN_RETURN_IF_ERROR(r.Failed());
  absl::MutexLock l(&r.epoch_mu);
  std::string value;
  uint64_t epoch = 0;
  rocksdb::Status s = r.db->Get(rocksdb::ReadOptions(), r.meta, kBootEpochKey, &value);
  if (s.ok()) {
    if (!internal::DecodeFixed64BigEndian(value, &epoch)) {
      return absl::DataLossError(absl::StrCat("meta boot_epoch is not 8 bytes: 0x", Hex(value)));
    }
  } else if (!s.IsNotFound()) {
    return FromRocks(s, "read boot_epoch");
  }
  ++epoch;
  value.clear();
  internal::AppendFixed64BigEndian(&value, epoch);
  rocksdb::WriteOptions wo;
  wo.sync = true;
  s = r.db->Put(wo, r.meta, kBootEpochKey, value);
  if (!s.ok()) return r.Fail("write boot_epoch", s);
  return epoch;
}

absl::Status RocksDbTimerStore::SetBootEpoch(uint64_t last) {
  Rep& r = *rep_;
  LAWN_RETURN_IF_ERROR(r.Failed());
  absl::MutexLock l(&r.epoch_mu);
  std::string value;
  internal::AppendFixed64BigEndian(&value, last);
  rocksdb::WriteOptions wo;
  wo.sync = true;
  const rocksdb::Status s = r.db->Put(wo, r.meta, kBootEpochKey, value);
  if (!s.ok()) return r.Fail("write boot_epoch", s);
  return absl::OkStatus();
}

absl::StatusOr<uint64_t> RocksDbTimerStore::DataBytes() const {
  // The error_code overloads throughout: no filesystem_error may escape storage/.
  std::error_code ec;
  uint64_t total = 0;
  std::filesystem::recursive_directory_iterator it(rep_->path, ec);
  for (; !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
    std::error_code file_ec;
    // Checkpoints (backups) live in <data dir>/checkpoints and share files by hard link: not the store's
    // size.
    if (it.depth() == 0 && it->path().filename() == kCheckpointsDir && it->is_directory(file_ec)) {
      it.disable_recursion_pending();
      continue;
    }
    if (!it->is_regular_file(file_ec)) continue;
    const uintmax_t size = it->file_size(file_ec);
    if (!file_ec) total += size;  // A file deleted meanwhile by compaction simply does not count.
  }
  if (ec) return absl::UnavailableError(absl::StrCat("list ", rep_->path, ": ", ec.message()));
  return total;
}

absl::Status RocksDbTimerStore::CompactAll() {
  Rep& r = *rep_;
  LAWN_RETURN_IF_ERROR(r.Failed());
  rocksdb::FlushOptions fo;
  fo.wait = true;
  fo.allow_write_stall = true;
  LAWN_RETURN_IF_ERROR(FromRocks(r.db->Flush(fo, {r.pending, r.outbox, r.meta}), "compact: flush"));
  rocksdb::CompactRangeOptions cro;
  cro.bottommost_level_compaction = rocksdb::BottommostLevelCompaction::kForce;
  for (rocksdb::ColumnFamilyHandle* cf : {r.pending, r.outbox, r.meta}) {
    LAWN_RETURN_IF_ERROR(FromRocks(r.db->CompactRange(cro, cf, nullptr, nullptr),
                                   absl::StrCat("compact column family ", cf->GetName())));
  }
  r.InvalidateGuard();
  return absl::OkStatus();
}

absl::Status RocksDbTimerStore::Checkpoint(const std::string& dir) {
  std::error_code ec;
  if (std::filesystem::exists(dir, ec)) {
    return absl::FailedPreconditionError(absl::StrCat("checkpoint dir ", dir, " already exists"));
  }
  LAWN_RETURN_IF_ERROR(rep_->Failed());  // A checkpoint flushes the WAL.
  rocksdb::Checkpoint* raw = nullptr;
  LAWN_RETURN_IF_ERROR(FromRocks(rocksdb::Checkpoint::Create(rep_->db.get(), &raw), "checkpoint"));
  std::unique_ptr<rocksdb::Checkpoint> checkpoint(raw);
  rocksdb::Status s = checkpoint->CreateCheckpoint(dir);
  rep_->InvalidateGuard();  // It copied the WAL and MANIFEST (and any SST it could not hard-link).
  if (!s.ok()) return absl::UnavailableError(absl::StrCat("checkpoint to ", dir, ": ", s.ToString()));
  return absl::OkStatus();
}

}  // namespace lawn
