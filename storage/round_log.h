// The round log of docs/durable-log.md (storage format 3, step 1 of its plan): an append-only log of records,
// one per shard round, in numbered segment files of one directory: storage.engine `log` writes one
// (storage/log_timer_store.h).
//
// A segment is `<number>.lawnlog` (20 decimal digits, numbers from 1). A record is
//
//   crc32c (4) | payload length (4) | segment number (8) | sequence (8) | synced through (8) | payload
//
// little-endian; the CRC-32C covers everything after it. Records follow each other from offset 0. Sequences
// run 1, 2, 3... across segments without a gap: that is how a reader tells a torn end from lost records.
// "Synced through" is the last sequence an fdatasync had made durable when the record was written.
//
// Why segments are written over: a segment file is full size before its first record (written with zeros
// when new, or a retired segment renamed), so an fdatasync of a record in it has no extent and no file size
// to update (BENCHMARKS.md section 33: about half the CPU of a sync that extends a file). The segment number
// in each record tells a record of this use of a file from a stale one of its previous use.
//
// Where a log ends. The reader takes good records (whole, of their segment, CRC right) in sequence order.
// Bad bytes where the next record should be are the end of what was written if nothing after them says
// otherwise. After a crash, what follows them can be:
// - nothing good: the end of the log (a torn last write);
// - later records of the same segment that were never synced (a power cut can keep a later unsynced write
//   and lose an earlier one): their "synced through" is below the missing sequence, and the rest of the
//   segment is ignored;
// - a record with the missing sequence: the writer reopened after the crash went on from there (a reopened
//   writer always starts a new segment, and leaving a segment syncs it, so a crashed writer's unsynced
//   records are all in its last segment).
// Anything else means records that were durable are gone: DATA_LOSS. (So damage to the unsynced end of a
// log looks like a torn write, as in RocksDB's WAL.)
//
// Thread-safety: a RoundLogWriter or RoundLogScanner is used by one thread at a time; ReadRoundLog reads a
// log nobody writes.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace lawn {

class MappedFile;  // storage/posix_file.h

struct RoundLogOptions {
  std::string dir;                       // Created if missing.
  uint64_t segment_bytes = 64ull << 20;  // Size of every segment file; a record must fit in one.
  size_t spare_segments = 2;             // Retired segments kept for reuse; more are deleted.
};

// One record as read back. `payload` is valid during the callback only.
struct RoundLogRecord {
  uint64_t segment = 0;
  uint64_t offset = 0;  // Of the record's header in its segment.
  uint64_t sequence = 0;
  uint64_t synced_through = 0;
  std::string_view payload;
};

// Where a log read by ReadRoundLog ended: what a writer reopening it continues with.
struct RoundLogEnd {
  uint64_t last_segment = 0;   // Largest segment number in the directory (0: none).
  uint64_t next_sequence = 1;  // The last good record's sequence plus one.
};

class RoundLogWriter {
 public:
  static constexpr size_t kHeaderBytes = 32;
  // The payload length field is 32 bits.
  static constexpr uint64_t kMaxPayloadBytes = 0xffffffffu;

  // Starts writing segment `first_segment` (>= 1) with sequence `next_sequence` (>= 1). Segments numbered
  // `first_segment` or more must not exist yet (FAILED_PRECONDITION: they would be written over); after a
  // ReadRoundLog, pass end.last_segment + 1 and end.next_sequence. The last existing segment is synced first
  // (what was read from it may have been in the page cache only). The segment is created full size and
  // synced, with the directory, before Open returns. Segments numbered below `retired_below` (0: none) hold
  // nothing needed any more, as after RetireBelow(retired_below): the first segment is one of them renamed
  // when there is one (a restart after a snapshot writes no 64 MiB of zeros), and spares beyond
  // spare_segments are deleted. INVALID_ARGUMENT for a segment size below 4 KiB or numbers of 0.
  static absl::StatusOr<std::unique_ptr<RoundLogWriter>> Open(const RoundLogOptions& options,
                                                              uint64_t first_segment, uint64_t next_sequence,
                                                              uint64_t retired_below = 0);
  ~RoundLogWriter();
  RoundLogWriter(const RoundLogWriter&) = delete;
  RoundLogWriter& operator=(const RoundLogWriter&) = delete;

  // Appends one record and returns its sequence. Not durable until Sync. A record that does not fit in the
  // rest of the segment goes to the next one: the current one is synced first (so a sync never makes a later
  // record durable before an earlier one), then the next is taken from the spares or created. A record
  // larger than segment_bytes gets a segment of its own, of its size. INVALID_ARGUMENT for a payload over
  // kMaxPayloadBytes (nothing written). An I/O error fails the writer: this call and
  // every later one return it (what reached the file is unknown; reopen after reading the log).
  absl::StatusOr<uint64_t> Append(std::string_view payload);

  // Makes every appended record durable (fdatasync of the current segment; earlier segments were synced when
  // they were left).
  absl::Status Sync();

  // A group commit by a thread other than the writer's (storage/log_timer_store.h): BeginSync, under the lock
  // that serializes the writer, returns a duplicate of the current segment's descriptor (the caller
  // fdatasyncs and closes it without the lock, while records are appended) and the last sequence appended;
  // EndSync, under the lock again, records the outcome (a failure fails the writer). Records of a segment
  // left meanwhile were synced when it was left, so the sync covers every record up to that sequence.
  absl::StatusOr<std::pair<int, uint64_t>> BeginSync();
  absl::Status EndSync(uint64_t sequence, absl::Status result);

  // Segments numbered below `segment` hold nothing needed any more (a snapshot covers them): up to
  // spare_segments of them are kept to be written over, the rest deleted. The current segment is never
  // retired.
  absl::Status RetireBelow(uint64_t segment);

  uint64_t segment() const { return segment_; }
  uint64_t offset() const { return offset_; }
  uint64_t next_sequence() const { return next_sequence_; }

 private:
  RoundLogWriter(const RoundLogOptions& options, int dir_fd, uint64_t segment, uint64_t next_sequence);
  // Creates or reuses segment `number` with room for `capacity` bytes, synced with the dir.
  absl::Status OpenSegment(uint64_t number, uint64_t capacity);
  absl::Status Fail(absl::Status status);

  const RoundLogOptions options_;
  const int dir_fd_;
  int fd_ = -1;
  uint64_t segment_;
  uint64_t offset_ = 0;
  uint64_t capacity_ = 0;  // Of the current segment: segment_bytes, or more for an oversized record.
  uint64_t next_sequence_;
  uint64_t synced_through_;      // Last sequence made durable by an fdatasync (next_sequence - 1 at Open).
  uint64_t retired_below_ = 0;   // Segments below this were handed to RetireBelow already.
  std::deque<uint64_t> spares_;  // Retired segment numbers whose files are kept, oldest first.
  std::string buffer_;           // Header and payload of the record being written, reused.
  absl::Status failed_;
};

// Reads the log in `dir` from its lowest segment, calling `on_record` for each record with a sequence of at
// least `first_sequence` (the first one the caller needs; 1 for a whole log), in order; an error from
// `on_record` stops the read and is returned. DATA_LOSS for lost records (see the file comment: also when the
// first good record comes after `first_sequence`) or a missing segment between two present ones; NOT_FOUND if
// `dir` does not exist. Fills `end` when OK (next_sequence is at least `first_sequence`). With `keep`, the
// segments read are kept mapped in it, so that the payloads stay valid as long as it holds them (the log
// store's fold keeps views of them instead of copies); the segments must not be written over meanwhile.
absl::Status ReadRoundLog(const std::string& dir, uint64_t first_sequence,
                          absl::FunctionRef<absl::Status(const RoundLogRecord&)> on_record, RoundLogEnd* end,
                          std::vector<std::unique_ptr<MappedFile>>* keep = nullptr);

// The file name of segment `number`.
std::string RoundLogSegmentName(uint64_t number);

// ReadRoundLog's rules over segments given in memory: Segment() for each, in increasing number, then End().
// ReadRoundLog reads the files into one; the fuzz target feeds one directly.
class RoundLogScanner {
 public:
  // `name` names the log in messages; `first_sequence` as for ReadRoundLog.
  RoundLogScanner(std::string name, uint64_t first_sequence)
      : name_(std::move(name)), first_sequence_(first_sequence) {}

  // The next segment's bytes (the whole file); `on_record` as for ReadRoundLog. DATA_LOSS or on_record's
  // error stop the scan: do not call again after an error.
  absl::Status Segment(uint64_t number, std::string_view bytes,
                       absl::FunctionRef<absl::Status(const RoundLogRecord&)> on_record);
  RoundLogEnd End() const;

 private:
  const std::string name_;
  const uint64_t first_sequence_;
  std::optional<uint64_t> previous_segment_;
  std::optional<uint64_t> last_;  // Sequence of the last record taken.
  // Whether bad bytes came after it; bad_segment_, bad_offset_: the first of them in the latest segment that
  // has any (the unused end of a segment the writer left is bad bytes too, followed by the next segment).
  bool bad_ = false;
  uint64_t bad_segment_ = 0;
  uint64_t bad_offset_ = 0;
};

namespace internal {
// Appends the bytes of one record to `out` (what RoundLogWriter::Append writes; for tests and the fuzz
// target).
void AppendRoundLogRecord(std::string* out, uint64_t segment, uint64_t sequence, uint64_t synced_through,
                          std::string_view payload);
}  // namespace internal

}  // namespace lawn
