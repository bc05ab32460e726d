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

#include <algorithm>
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
#include "storage/varint.h"

namespace lawn::logstore {

enum class Family : char { kTimers = 1, kExpirations = 2, kIncoming = 3 };

// The sort key of the record `e` puts or deletes, in `out` (replaced).
void SortKeyOf(const StoreBatch::Entry& e, std::string* out);
// The family of the record `op` puts or deletes.
Family FamilyOf(StoreBatch::Op op);
// Whether `op` puts a record (else it deletes one).
bool IsPut(StoreBatch::Op op);

// A record's sort key in parts, compared as the bytes of SortKeyOf are without building them: the family, the
// 8 big-endian bytes as a number, and (timers only) the timer's key.
struct SortKeyParts {
  Family family;
  uint64_t number;       // The deadline with its sign bit flipped, or the delivery or staging id.
  std::string_view key;  // Empty for expirations and staged records.
  static SortKeyParts Of(const StoreBatch::Entry& e);
};
// <0, 0, >0 as `a` is before, equal to or after `b` bytewise (as std::string_view::compare), 8 bytes at a
// time inline: the keys a fold compares share long prefixes (a namespace), and a call to memcmp per
// comparison was a tenth of the fold's time.
inline int CompareBytes(std::string_view a, std::string_view b) {
  const size_t n = std::min(a.size(), b.size());
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const uint64_t x = internal::LoadFixed64BigEndian(a.data() + i);
    const uint64_t y = internal::LoadFixed64BigEndian(b.data() + i);
    if (x != y) return x < y ? -1 : 1;
  }
  for (; i < n; ++i) {
    const auto x = static_cast<unsigned char>(a[i]), y = static_cast<unsigned char>(b[i]);
    if (x != y) return x < y ? -1 : 1;
  }
  return a.size() == b.size() ? 0 : (a.size() < b.size() ? -1 : 1);
}

// <0, 0, >0 as `a`'s sort key is before, equal to or after `b`'s.
inline int Compare(const SortKeyParts& a, const SortKeyParts& b) {
  if (a.family != b.family) return a.family < b.family ? -1 : 1;
  if (a.number != b.number) return a.number < b.number ? -1 : 1;
  return CompareBytes(a.key, b.key);
}

class LogDelta {
 public:
  // Folds one log record (a StoreBatch's data()) into the delta. `payload` must stay valid as long as the
  // delta (the delta keeps views of its operations): view it into a buffer or mapping from Keep, or pass
  // copy = true. False if it does not decode (nothing of it applied).
  bool Add(std::string_view payload, bool copy);
  // Takes ownership of `bytes` (or a mapped file) and returns a view of them that lives as long as the delta.
  std::string_view Keep(std::string bytes);
  std::string_view Keep(std::unique_ptr<MappedFile> mapped);
  // Room for about `log_bytes` of records to come (an estimate: the delta grows past it if need be), so that
  // a fold of a known stretch of log does not copy its entries each time they double.
  void Reserve(uint64_t log_bytes);

  // The last operation on each sort key, sorted by key; a delete stays as a tombstone. Views of its operation
  // in its record (op(); entry() decodes it) and of the timer's key in it: no key is copied (a copy per
  // operation made the fold allocation-bound, BENCHMARKS.md section 43; 32 bytes per operation).
  class Item {
   public:
    SortKeyParts parts() const { return {family_, number_, key()}; }
    std::string_view key() const { return {op_ + key_offset_, key_size_}; }
    std::string_view op() const { return {op_, op_size_}; }
    bool put() const { return IsPut(static_cast<StoreBatch::Op>(*op_)); }
    StoreBatch::Entry entry() const;
    std::string SortKey() const;  // SortKeyOf(entry()), for tests.

   private:
    friend class LogDelta;
    uint64_t number_;
    const char* op_;
    uint32_t key_size_;
    uint32_t op_size_;
    uint32_t seq_;  // Order of addition: of the operations on one key, the last one added wins.
    uint8_t
        key_offset_;  // The key's first byte in op_ (an operation's fixed fields before it take at most 16).
    Family family_;
  };
  const std::vector<Item>& Sorted();

 private:
  std::deque<std::string> buffers_;
  std::vector<std::unique_ptr<MappedFile>> mappings_;
  // Every operation added since the last Sorted, in log order, after the sorted ones. Sorted sorts them and
  // keeps the last of each key: a hash map of the last operation per key cost a fifth of lawnd's CPU in a
  // batched load (hashing, growing the table; BENCHMARKS.md section 44), and the records a log touches are
  // mostly distinct (a timer's start, its expiration, its ack are three keys).
  std::vector<Item> items_;
  size_t sorted_count_ = 0;  // items_[0, sorted_count_) are sorted, one per key.
  uint32_t next_seq_ = 0;
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
  // Adds a put operation already encoded (a record of another snapshot or of the log), copied as it is.
  absl::Status AddEncoded(std::string_view put);
  absl::Status Finish(uint64_t next_sequence);
  uint64_t bytes() const { return offset_; }

 private:
  SnapshotWriter(std::string path, int fd) : path_(std::move(path)), fd_(fd) {}
  absl::Status FlushBlock();
  absl::Status WriteBlock(std::string_view body, bool trailer);

  const std::string path_;
  const int fd_;
  std::string block_;  // Encoded put operations, up to a block.
  StoreBatch scratch_;
  std::string buffer_;
  uint64_t offset_ = 0;
  uint64_t records_ = 0;
};

// Reads the snapshot at `path` block by block, calling `on_record(op, entry)` for each record in order, with
// its encoded put operation and that decoded (stopping at its first error, which is returned). DATA_LOSS for
// a damaged block or a missing trailer; with `on_damage` returning true for such a block, its records are
// skipped and the read goes on. Sets `*next_sequence` from the trailer.
absl::Status ReadSnapshot(
    const std::string& path,
    absl::FunctionRef<absl::Status(std::string_view, const StoreBatch::Entry&)> on_record,
    absl::FunctionRef<bool(const absl::Status&)> on_damage, uint64_t* next_sequence);

// A record of the merged state: its put operation's bytes, decoded when asked (a fold copies them as they
// are).
class StateRecord {
 public:
  // `decoded`, if given, is `op` decoded and outlives this.
  explicit StateRecord(std::string_view op, const StoreBatch::Entry* decoded = nullptr)
      : op_(op), decoded_(decoded) {}
  StateRecord(const StateRecord&) = delete;
  StateRecord& operator=(const StateRecord&) = delete;

  std::string_view op() const { return op_; }
  const StoreBatch::Entry& entry() const;

 private:
  std::string_view op_;
  mutable const StoreBatch::Entry* decoded_;
  mutable StoreBatch::Entry entry_{};
};

// Calls `emit` for every record of the snapshot at `snapshot_path` (none when empty) with `delta` applied
// over it, in sort-key order. Errors: ReadSnapshot's, and `emit`'s.
absl::Status MergeState(const std::string& snapshot_path, LogDelta& delta,
                        absl::FunctionRef<absl::Status(const StateRecord&)> emit,
                        absl::FunctionRef<bool(const absl::Status&)> on_damage);

}  // namespace lawn::logstore
