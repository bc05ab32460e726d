#include "storage/round_log.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <optional>
#include <system_error>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "base/status_macros.h"
#include "storage/crc32c.h"
#include "storage/posix_file.h"

namespace lawn {
namespace {

constexpr std::string_view kSuffix = ".lawnlog";
constexpr uint64_t kMinSegmentBytes = 4096;

void PutFixed32(char* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<char>(v >> (8 * i));
}
void PutFixed64(char* p, uint64_t v) {
  for (int i = 0; i < 8; ++i) p[i] = static_cast<char>(v >> (8 * i));
}
uint32_t GetFixed32(const char* p) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(p[i]);
  return v;
}
uint64_t GetFixed64(const char* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(p[i]);
  return v;
}

// The offset of the first nonzero byte at or after `pos` (bytes.size() if none), eight bytes at a time: the
// unused rest of a 64 MiB segment is read at every recovery.
uint64_t NextNonzero(std::string_view bytes, uint64_t pos) {
  while (pos < bytes.size() && pos % 8 != 0 && bytes[pos] == 0) ++pos;
  if (pos < bytes.size() && bytes[pos] != 0) return pos;
  while (pos + 8 <= bytes.size()) {
    uint64_t word;
    std::memcpy(&word, bytes.data() + pos, 8);
    if (word != 0) break;
    pos += 8;
  }
  while (pos < bytes.size() && bytes[pos] == 0) ++pos;
  return pos;
}

// Writes all of `data` at `offset` (pwrite may write less than asked).
bool WriteAllAt(int fd, std::string_view data, uint64_t offset) {
  while (!data.empty()) {
    const ssize_t n = ::pwrite(fd, data.data(), data.size(), static_cast<off_t>(offset));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    data.remove_prefix(static_cast<size_t>(n));
    offset += static_cast<uint64_t>(n);
  }
  return true;
}

// The segment number of file `name`, if it is a segment's name.
std::optional<uint64_t> SegmentNumber(std::string_view name) {
  if (name.size() != 20 + kSuffix.size() || name.substr(20) != kSuffix) return std::nullopt;
  uint64_t n = 0;
  for (char c : name.substr(0, 20)) {
    if (c < '0' || c > '9') return std::nullopt;
    n = n * 10 + static_cast<uint64_t>(c - '0');
  }
  return n;
}

absl::StatusOr<std::vector<uint64_t>> ListSegments(const std::string& dir) {
  std::error_code ec;
  std::vector<uint64_t> numbers;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    if (auto n = SegmentNumber(entry.path().filename().string())) numbers.push_back(*n);
  }
  if (ec) {
    return ec == std::errc::no_such_file_or_directory
               ? absl::NotFoundError(absl::StrCat("round log ", dir, " does not exist"))
               : absl::UnavailableError(absl::StrCat("list round log ", dir, ": ", ec.message()));
  }
  std::sort(numbers.begin(), numbers.end());
  return numbers;
}

// The record at `pos` of segment `number`'s bytes, if it is a good one: whole, of this segment, CRC right.
std::optional<RoundLogRecord> RecordAt(std::string_view bytes, uint64_t number, uint64_t pos) {
  constexpr size_t kHeader = RoundLogWriter::kHeaderBytes;
  if (bytes.size() - pos < kHeader) return std::nullopt;
  const char* p = bytes.data() + pos;
  if (GetFixed64(p + 8) != number) return std::nullopt;
  const uint32_t length = GetFixed32(p + 4);
  if (length > bytes.size() - pos - kHeader) return std::nullopt;
  if (internal::Crc32c(std::string_view(p + 4, kHeader - 4 + length)) != GetFixed32(p)) return std::nullopt;
  return RoundLogRecord{number, pos, GetFixed64(p + 16), GetFixed64(p + 24),
                        std::string_view(p + kHeader, length)};
}

}  // namespace

std::string RoundLogSegmentName(uint64_t number) { return absl::StrFormat("%020u%s", number, kSuffix); }

void internal::AppendRoundLogRecord(std::string* out, uint64_t segment, uint64_t sequence,
                                    uint64_t synced_through, std::string_view payload) {
  const size_t start = out->size();
  out->resize(start + RoundLogWriter::kHeaderBytes);
  char* p = out->data() + start;
  PutFixed32(p + 4, static_cast<uint32_t>(payload.size()));
  PutFixed64(p + 8, segment);
  PutFixed64(p + 16, sequence);
  PutFixed64(p + 24, synced_through);
  out->append(payload.data(), payload.size());
  const std::string_view covered(out->data() + start + 4, out->size() - start - 4);
  PutFixed32(out->data() + start, Crc32c(covered));
}

// Writer

absl::StatusOr<std::unique_ptr<RoundLogWriter>> RoundLogWriter::Open(const RoundLogOptions& options,
                                                                     uint64_t first_segment,
                                                                     uint64_t next_sequence,
                                                                     uint64_t retired_below) {
  if (options.segment_bytes < kMinSegmentBytes || options.segment_bytes > (uint64_t{1} << 40)) {
    return absl::InvalidArgumentError(
        absl::StrCat("round log segment size ", options.segment_bytes, " bytes; allowed: 4 KiB to 1 TiB"));
  }
  if (first_segment == 0 || next_sequence == 0) {
    return absl::InvalidArgumentError("round log segment numbers and sequences start at 1");
  }
  std::error_code ec;
  std::filesystem::create_directories(options.dir, ec);
  if (ec) return absl::UnavailableError(absl::StrCat("create round log ", options.dir, ": ", ec.message()));
  LAWN_ASSIGN_OR_RETURN(std::vector<uint64_t> existing, ListSegments(options.dir));
  if (!existing.empty() && existing.back() >= first_segment) {
    return absl::FailedPreconditionError(absl::StrCat("round log ", options.dir, " already has segment ",
                                                      existing.back(), "; a writer starting at segment ",
                                                      first_segment, " would write over it"));
  }
  // The records a reader found may have been in the page cache only (a crash of the process, not of the
  // machine): they are made durable before anything is written after them, since the new records' "synced
  // through" says so. Only the last segment can hold unsynced records (leaving a segment syncs it).
  if (!existing.empty()) {
    const std::string last = options.dir + "/" + RoundLogSegmentName(existing.back());
    const int fd = ::open(last.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return FileError("open", last, errno);
    const bool synced = ::fdatasync(fd) == 0;
    const int err = errno;
    ::close(fd);
    if (!synced) return FileError("fdatasync", last, err);
  }
  const int dir_fd = ::open(options.dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir_fd < 0) return FileError("open", options.dir, errno);
  std::unique_ptr<RoundLogWriter> writer(new RoundLogWriter(options, dir_fd, first_segment, next_sequence));
  if (retired_below > 0) LAWN_RETURN_IF_ERROR(writer->RetireBelow(retired_below));
  LAWN_RETURN_IF_ERROR(writer->OpenSegment(first_segment, options.segment_bytes));
  return writer;
}

RoundLogWriter::RoundLogWriter(const RoundLogOptions& options, int dir_fd, uint64_t segment,
                               uint64_t next_sequence)
    : options_(options),
      dir_fd_(dir_fd),
      segment_(segment),
      next_sequence_(next_sequence),
      synced_through_(next_sequence - 1) {}

RoundLogWriter::~RoundLogWriter() {
  if (fd_ >= 0) ::close(fd_);
  ::close(dir_fd_);
}

absl::Status RoundLogWriter::Fail(absl::Status status) {
  if (failed_.ok()) failed_ = status;
  return status;
}

absl::Status RoundLogWriter::OpenSegment(uint64_t number, uint64_t capacity) {
  const std::string path = options_.dir + "/" + RoundLogSegmentName(number);
  bool reused = false;
  if (!spares_.empty()) {
    const std::string spare = options_.dir + "/" + RoundLogSegmentName(spares_.front());
    if (::rename(spare.c_str(), path.c_str()) != 0) return Fail(FileError("rename", spare, errno));
    spares_.pop_front();
    reused = true;
  }
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return Fail(FileError("open", path, errno));
  if (fd_ >= 0) ::close(fd_);
  fd_ = fd;
  segment_ = number;
  offset_ = 0;
  capacity_ = capacity;
  struct stat st;
  if (::fstat(fd_, &st) != 0) return Fail(FileError("stat", path, errno));
  // A new segment (or a spare of another size) is written full of zeros: blocks written once, so that the
  // syncs of the records written over them later have nothing but data to write.
  if (!reused || static_cast<uint64_t>(st.st_size) < capacity) {
    const std::string zeros(1 << 20, '\0');
    for (uint64_t at = 0; at < capacity; at += zeros.size()) {
      const uint64_t n = std::min<uint64_t>(zeros.size(), capacity - at);
      if (!WriteAllAt(fd_, std::string_view(zeros.data(), n), at))
        return Fail(FileError("write", path, errno));
    }
  }
  if (::fdatasync(fd_) != 0) return Fail(FileError("fdatasync", path, errno));
  if (::fsync(dir_fd_) != 0) return Fail(FileError("fsync", options_.dir, errno));
  return absl::OkStatus();
}

absl::StatusOr<uint64_t> RoundLogWriter::Append(std::string_view payload) {
  LAWN_RETURN_IF_ERROR(failed_);
  const uint64_t size = kHeaderBytes + payload.size();
  if (payload.size() > kMaxPayloadBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("round log record of ", payload.size(), " bytes; allowed up to ", kMaxPayloadBytes));
  }
  if (offset_ + size > capacity_) {
    // A record larger than a segment gets a segment of its own, of its size (rounded up to a MiB).
    constexpr uint64_t kMiB = uint64_t{1} << 20;
    const uint64_t capacity =
        size > options_.segment_bytes ? (size + kMiB - 1) / kMiB * kMiB : options_.segment_bytes;
    LAWN_RETURN_IF_ERROR(Sync());
    LAWN_RETURN_IF_ERROR(OpenSegment(segment_ + 1, capacity));
  }
  buffer_.clear();
  internal::AppendRoundLogRecord(&buffer_, segment_, next_sequence_, synced_through_, payload);
  if (!WriteAllAt(fd_, buffer_, offset_))
    return Fail(FileError("write", RoundLogSegmentName(segment_), errno));
  offset_ += size;
  return next_sequence_++;
}

absl::Status RoundLogWriter::Sync() {
  LAWN_RETURN_IF_ERROR(failed_);
  if (::fdatasync(fd_) != 0) return Fail(FileError("fdatasync", RoundLogSegmentName(segment_), errno));
  synced_through_ = next_sequence_ - 1;
  return absl::OkStatus();
}

absl::StatusOr<std::pair<int, uint64_t>> RoundLogWriter::BeginSync() {
  LAWN_RETURN_IF_ERROR(failed_);
  const int fd = ::fcntl(fd_, F_DUPFD_CLOEXEC, 0);
  if (fd < 0) return Fail(FileError("dup", RoundLogSegmentName(segment_), errno));
  return std::pair<int, uint64_t>(fd, next_sequence_ - 1);
}

absl::Status RoundLogWriter::EndSync(uint64_t sequence, absl::Status result) {
  if (!result.ok()) return Fail(std::move(result));
  LAWN_RETURN_IF_ERROR(failed_);
  synced_through_ = std::max(synced_through_, sequence);
  return absl::OkStatus();
}

absl::Status RoundLogWriter::RetireBelow(uint64_t segment) {
  LAWN_RETURN_IF_ERROR(failed_);
  segment = std::min(segment, segment_);
  LAWN_ASSIGN_OR_RETURN(std::vector<uint64_t> existing, ListSegments(options_.dir));
  for (uint64_t n : existing) {
    if (n < retired_below_ || n >= segment) continue;
    if (std::find(spares_.begin(), spares_.end(), n) == spares_.end()) spares_.push_back(n);
  }
  retired_below_ = std::max(retired_below_, segment);
  while (spares_.size() > options_.spare_segments) {
    const std::string path = options_.dir + "/" + RoundLogSegmentName(spares_.front());
    if (::unlink(path.c_str()) != 0 && errno != ENOENT) return FileError("delete", path, errno);
    spares_.pop_front();
  }
  return absl::OkStatus();
}

// Reader

absl::Status RoundLogScanner::Segment(uint64_t number, std::string_view bytes,
                                      absl::FunctionRef<absl::Status(const RoundLogRecord&)> on_record) {
  if (previous_segment_ && number != *previous_segment_ + 1) {
    return absl::DataLossError(absl::StrCat("round log ", name_, ": segment ", *previous_segment_ + 1,
                                            " is missing between ", *previous_segment_, " and ", number));
  }
  previous_segment_ = number;
  bool ignore_rest = false;  // The rest of this segment is a crashed writer's unsynced records.
  uint64_t pos = 0;
  while (pos < bytes.size()) {
    std::optional<RoundLogRecord> record = RecordAt(bytes, number, pos);
    if (!record) {
      if (!bad_ || bad_segment_ != number) {
        bad_ = true;
        bad_segment_ = number;
        bad_offset_ = pos;
      }
      // Zeros (a segment's unwritten rest) are skipped in one step: a record's segment number, 8 bytes from
      // its start, is never 0, so no record starts more than 15 bytes before the next nonzero byte.
      const uint64_t next = NextNonzero(bytes, pos);
      pos = next > pos + 16 ? next - 15 : pos + 1;
      continue;
    }
    const uint64_t seq = record->sequence;
    // The sequence the log must go on with: the one after the last record, or at the start any up to the
    // first one the caller needs.
    const uint64_t wanted = last_ ? *last_ + 1 : first_sequence_;
    const bool takes = last_ ? seq == wanted : seq <= wanted;
    if (!takes && bad_ && number == bad_segment_ && record->synced_through < wanted && !ignore_rest) {
      ignore_rest = true;  // Never synced: the records after the bad bytes were not durable either.
    }
    if (ignore_rest && !takes) {
      if (record->synced_through >= wanted) {
        return absl::DataLossError(absl::StrCat("round log ", name_, ": record ", seq, " at segment ", number,
                                                " offset ", pos, " says record ", wanted,
                                                " was synced, but the bytes at segment ", bad_segment_,
                                                " offset ", bad_offset_, " where it should be are damaged"));
      }
      pos += RoundLogWriter::kHeaderBytes + record->payload.size();
      continue;
    }
    if (!takes) {
      const std::string where =
          bad_ ? absl::StrCat(" after the damaged bytes at segment ", bad_segment_, " offset ", bad_offset_)
               : "";
      return absl::DataLossError(absl::StrCat(
          "round log ", name_, ": record ", seq, " at segment ", number, " offset ", pos, where, " follows ",
          last_ ? absl::StrCat("record ", *last_)
                : absl::StrCat("the start, where record ", first_sequence_, " or earlier was expected"),
          ": records were lost"));
    }
    bad_ = false;
    ignore_rest = false;
    last_ = seq;
    if (seq >= first_sequence_) LAWN_RETURN_IF_ERROR(on_record(*record));
    pos += RoundLogWriter::kHeaderBytes + record->payload.size();
  }
  return absl::OkStatus();
}

RoundLogEnd RoundLogScanner::End() const {
  RoundLogEnd end;
  end.last_segment = previous_segment_.value_or(0);
  end.next_sequence = std::max(first_sequence_, last_ ? *last_ + 1 : first_sequence_);
  return end;
}

absl::Status ReadRoundLog(const std::string& dir, uint64_t first_sequence,
                          absl::FunctionRef<absl::Status(const RoundLogRecord&)> on_record, RoundLogEnd* end,
                          std::vector<std::unique_ptr<MappedFile>>* keep) {
  LAWN_ASSIGN_OR_RETURN(std::vector<uint64_t> segments, ListSegments(dir));
  RoundLogScanner scanner(dir, first_sequence);
  for (uint64_t number : segments) {
    const std::string path = dir + "/" + RoundLogSegmentName(number);
    LAWN_ASSIGN_OR_RETURN(std::unique_ptr<MappedFile> mapped, MappedFile::Open(path));
    LAWN_RETURN_IF_ERROR(scanner.Segment(number, mapped->bytes(), on_record));
    if (keep != nullptr) keep->push_back(std::move(mapped));
  }
  if (end != nullptr) *end = scanner.End();
  return absl::OkStatus();
}

}  // namespace lawn
