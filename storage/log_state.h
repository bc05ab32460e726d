// The state of storage.engine `log` (storage/log_timer_store.h) as sorted records, and its snapshot files.
//
// The log store keeps what format 2 keeps in RocksDB (storage/FORMAT.md), record for record: a pending timer
// per (deadline, key), an outbox entry per delivery id, a staged entry per staging id. Each is named by a
// sort key that orders them as format 2's column families do:
//
//   timers:       0x01 | deadline (8, big-endian, sign bit flipped) | key
//   expirations:  0x02 | delivery id (8, big-endian)
//   incoming:     0x03 | staging id (8, big-endian)
//
// A snapshot is that state at one log sequence: every record, as a put operation of StoreBatch's encoding, in
// sort-key order, in blocks of `crc32c (4) | length (4) | operations`, little-endian, the CRC over the length
// and the operations. The last block's length has its top bit set and holds only the trailer: "LAWNSNAP",
// the first log sequence the snapshot does not cover (8), and the number of records (8). A file without
// that trailer is not a snapshot: snapshots are written under a temporary name and renamed once synced.
//
// A LogDelta is a stretch of the log folded: for each sort key, the last operation on it. Merging a snapshot
// with the delta of the log that follows it gives the state at the delta's end (MergeState), which is both
// how a new snapshot is written and how the store is recovered.
//
// Thread-safety: none; each object is used by one thread.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "storage/posix_file.h"
#include "storage/store_batch.h"

namespace lawn::logstore {

enum class Family : char { kTimers = 1, kExpirations = 2, kIncoming = 3 };

// The sort key of the record `e` puts or deletes, in `out` (replaced).
void SortKeyOf(const StoreBatch::Entry& e, std::string* out);
// Which family `sort_key` names.
inline Family FamilyOf(std::string_view sort_key) { return static_cast<Family>(sort_key.front()); }
// Whether `op` puts a record (else it deletes one).
bool IsPut(StoreBatch::Op op);

class LogDelta {
 public:
  // Folds one log record (a StoreBatch's data()) into the delta. `payload` must stay valid as long as the
  // delta (the delta keeps views of its operations): view it into a buffer or mapping from Keep, or pass
  // copy = true. False if it does not decode (nothing of it applied).
  bool Add(std::string_view payload, bool copy);
  // Takes ownership of `bytes` (or a mapped file) and returns a view of them that lives as long as the delta.
  std::string_view Keep(std::string bytes);
  std::string_view Keep(std::unique_ptr<MappedFile> mapped);

  // The last operation on each sort key, sorted by key; a delete stays as a tombstone. `op` is that
  // operation's bytes in its record: entry() decodes it. Valid until the next Add.
  struct Item {
    std::string_view key;
    std::string_view op;
    bool put() const { return IsPut(static_cast<StoreBatch::Op>(op.front())); }
    StoreBatch::Entry entry() const;
  };
  const std::vector<Item>& Sorted();

 private:
  // A copy of `key` that lives as long as the delta, from chunks of 1 MiB: one allocation per key made
  // recovery allocation-bound (BENCHMARKS.md section 43).
  std::string_view StoreKey(std::string_view key);

  std::deque<std::string> buffers_;
  std::vector<std::unique_ptr<MappedFile>> mappings_;
  std::vector<std::unique_ptr<char[]>> key_chunks_;
  size_t key_chunk_size_ = 0;
  size_t key_chunk_used_ = 0;
  // Every operation added since the last Sorted, in log order, after the sorted ones. Sorted sorts them
  // stably and keeps the last of each key: a hash map of the last operation per key cost a fifth of lawnd's
  // CPU in a batched load (hashing, growing the table; BENCHMARKS.md section 44), and the records a log
  // touches are mostly distinct (a timer's start, its expiration, its ack are three keys).
  std::vector<Item> items_;
  size_t sorted_count_ = 0;  // items_[0, sorted_count_) are sorted, one per key.
  std::string scratch_;
  // One record's operations, decoded before any is applied (reused).
  std::vector<std::pair<StoreBatch::Entry, std::string_view>> decoded_;
};

// Writes a snapshot file at `path` (created or truncated). Add in strictly increasing sort-key order; Finish
// writes the trailer and fdatasyncs. The file is complete only after Finish returns OK.
class SnapshotWriter {
 public:
  static absl::StatusOr<std::unique_ptr<SnapshotWriter>> Create(const std::string& path);
  ~SnapshotWriter();
  SnapshotWriter(const SnapshotWriter&) = delete;
  SnapshotWriter& operator=(const SnapshotWriter&) = delete;

  absl::Status Add(const StoreBatch::Entry& put);
  absl::Status Finish(uint64_t next_sequence);
  uint64_t bytes() const { return offset_; }

 private:
  SnapshotWriter(std::string path, int fd) : path_(std::move(path)), fd_(fd) {}
  absl::Status FlushBlock();
  absl::Status WriteBlock(std::string_view body, bool trailer);

  const std::string path_;
  const int fd_;
  StoreBatch block_;
  std::string buffer_;
  uint64_t offset_ = 0;
  uint64_t records_ = 0;
};

// Reads the snapshot at `path` block by block, calling `on_record` for each record in order (stopping at its
// first error, which is returned). DATA_LOSS for a damaged block or a missing trailer; with `on_damage`
// returning true for such a block, its records are skipped and the read goes on. Sets `*next_sequence` from
// the trailer.
absl::Status ReadSnapshot(const std::string& path,
                          absl::FunctionRef<absl::Status(const StoreBatch::Entry&)> on_record,
                          absl::FunctionRef<bool(const absl::Status&)> on_damage, uint64_t* next_sequence);

// Calls `emit(sort_key, entry)` for every record of the snapshot at `snapshot_path` (none when empty) with
// `delta` applied over it, in sort-key order. Errors: ReadSnapshot's, and `emit`'s.
absl::Status MergeState(const std::string& snapshot_path, LogDelta& delta,
                        absl::FunctionRef<absl::Status(std::string_view, const StoreBatch::Entry&)> emit,
                        absl::FunctionRef<bool(const absl::Status&)> on_damage);

}  // namespace lawn::logstore
