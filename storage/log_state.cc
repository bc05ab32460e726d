#include "storage/log_state.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <new>
#include <utility>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "storage/crc32c.h"
#include "storage/posix_file.h"
#include "storage/varint.h"

namespace lawn::logstore {
namespace {

constexpr size_t kBlockBytes = 256 << 10;  // Operations per block before it is written.
constexpr uint32_t kTrailerFlag = 0x80000000u;
constexpr std::string_view kMagic = "LAWNSNAP";
constexpr size_t kTrailerBytes = 8 + 8 + 8;

void PutFixed32(std::string* out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out->push_back(static_cast<char>(v >> (8 * i)));
}
void PutFixed64(std::string* out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out->push_back(static_cast<char>(v >> (8 * i)));
}
uint64_t GetFixed(const char* p, int n) {
  uint64_t v = 0;
  for (int i = n - 1; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(p[i]);
  return v;
}

// Appends `put` to `batch` as the operation that stores it.
void AddPut(StoreBatch* batch, const StoreBatch::Entry& e) {
  switch (e.op) {
    case StoreBatch::Op::kPutTimer:
      batch->PutTimer(e.key, e.deadline_unix_ns, e.ttl_ns, e.interval_ns, e.payload);
      break;
    case StoreBatch::Op::kPutExpiration:
      batch->PutExpiration(e.delivery_id, e.key, e.deadline_unix_ns, e.ttl_ns, e.interval_ns, e.payload,
                           e.fired_at_unix_ns, e.attempt);
      break;
    case StoreBatch::Op::kPutIncoming:
      batch->PutIncoming(e.delivery_id, e.key, e.deadline_unix_ns, e.ttl_ns, e.interval_ns, e.payload,
                         e.fired_at_unix_ns, e.attempt);
      break;
    default:
      break;  // Deletes are never stored in a snapshot.
  }
}

// Reads exactly `n` bytes (fewer only at the end of the file). False on an I/O error (errno set).
bool ReadFull(int fd, char* p, size_t n, size_t* got) {
  *got = 0;
  while (*got < n) {
    const ssize_t r = ::read(fd, p + *got, n - *got);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return false;
    if (r == 0) break;
    *got += static_cast<size_t>(r);
  }
  return true;
}

}  // namespace

void SortKeyOf(const StoreBatch::Entry& e, std::string* out) {
  out->clear();
  switch (e.op) {
    case StoreBatch::Op::kPutTimer:
    case StoreBatch::Op::kDeleteTimer:
      out->push_back(static_cast<char>(Family::kTimers));
      internal::AppendFixed64BigEndian(out, static_cast<uint64_t>(e.deadline_unix_ns) ^ (uint64_t{1} << 63));
      out->append(e.key);
      break;
    case StoreBatch::Op::kPutExpiration:
    case StoreBatch::Op::kDeleteExpiration:
      out->push_back(static_cast<char>(Family::kExpirations));
      internal::AppendFixed64BigEndian(out, e.delivery_id);
      break;
    case StoreBatch::Op::kPutIncoming:
    case StoreBatch::Op::kDeleteIncoming:
      out->push_back(static_cast<char>(Family::kIncoming));
      internal::AppendFixed64BigEndian(out, e.delivery_id);
      break;
  }
}

bool IsPut(StoreBatch::Op op) {
  return op == StoreBatch::Op::kPutTimer || op == StoreBatch::Op::kPutExpiration ||
         op == StoreBatch::Op::kPutIncoming;
}

Family FamilyOf(StoreBatch::Op op) {
  switch (op) {
    case StoreBatch::Op::kPutTimer:
    case StoreBatch::Op::kDeleteTimer:
      return Family::kTimers;
    case StoreBatch::Op::kPutExpiration:
    case StoreBatch::Op::kDeleteExpiration:
      return Family::kExpirations;
    case StoreBatch::Op::kPutIncoming:
    case StoreBatch::Op::kDeleteIncoming:
      break;
  }
  return Family::kIncoming;
}

SortKeyParts SortKeyParts::Of(const StoreBatch::Entry& e) {
  const Family family = FamilyOf(e.op);
  if (family == Family::kTimers) {
    return {family, static_cast<uint64_t>(e.deadline_unix_ns) ^ (uint64_t{1} << 63), e.key};
  }
  return {family, e.delivery_id, {}};
}

// LogDelta

std::string_view LogDelta::Keep(std::string bytes) {
  buffers_.push_back(std::move(bytes));
  return buffers_.back();
}

std::string_view LogDelta::Keep(std::unique_ptr<MappedFile> mapped) {
  mappings_.push_back(std::move(mapped));
  return mappings_.back()->bytes();
}

// A fold holds one entry per operation it folds (millions): its size is the fold's memory and most of what
// the sort moves.
static_assert(sizeof(LogDelta::Item) == 32);

void LogDelta::Reserve(uint64_t log_bytes) {
  // lawnd's operations average well over 16 bytes (a start with a 16-byte id and no payload is about 45; an
  // ack, the smallest, about 4): an estimate on the high side reserves address space, and memory only as
  // the entries fill it. Where address space is short (strict overcommit), no reservation: the entries then
  // grow as they come.
  try {
    items_.reserve(items_.size() + static_cast<size_t>(log_bytes / 16));
  } catch (const std::bad_alloc&) {
    return;
  }
  // Transparent huge pages for the entries where the system allows them on request (Debian's default,
  // `madvise`): filling a fold's entries page-faulted once per 4 KiB, about 0.1 us per operation (section
  // 46); at most the last 2 MiB page is held beyond what is filled. Nothing happens where THP is off.
  constexpr uintptr_t kHugePage = uintptr_t{2} << 20;
  const uintptr_t begin = (reinterpret_cast<uintptr_t>(items_.data()) + kHugePage - 1) & ~(kHugePage - 1);
  const uintptr_t end = (reinterpret_cast<uintptr_t>(items_.data() + items_.capacity())) & ~(kHugePage - 1);
  if (end > begin) ::madvise(reinterpret_cast<void*>(begin), end - begin, MADV_HUGEPAGE);
}

namespace {

// How many bytes `a` and `b` share from the start, at most `limit`.
size_t CommonPrefixLength(std::string_view a, std::string_view b, size_t limit) {
  const size_t n = std::min({a.size(), b.size(), limit});
  size_t i = 0;
  while (i + 8 <= n && std::memcmp(a.data() + i, b.data() + i, 8) == 0) i += 8;
  while (i < n && a[i] == b[i]) ++i;
  return i;
}

// The 8 bytes of `key` from `offset` (zeros past its end) as a big-endian number. Two keys whose windows
// differ compare as their windows do; equal windows say nothing (a zero byte and the end look alike).
uint64_t BigEndianWindow(std::string_view key, size_t offset) {
  char window[8] = {};
  if (offset < key.size()) std::memcpy(window, key.data() + offset, std::min<size_t>(8, key.size() - offset));
  return internal::LoadFixed64BigEndian(window);
}

}  // namespace

bool LogDelta::Add(std::string_view payload, bool copy) {
  if (copy) payload = Keep(std::string(payload));
  // All or nothing: a record that does not decode takes back what it added.
  const size_t before = items_.size();
  for (std::string_view rest = payload; !rest.empty();) {
    const char* start = rest.data();
    StoreBatch::Entry e;
    // Sizes fit 32 bits: a record is far smaller. A delta of 2^32 operations would need 128 GiB of entries,
    // so its limit is never reached in practice; past it, the record is refused as one that does not decode.
    if (!StoreBatch::DecodeNext(&rest, &e) || next_seq_ == UINT32_MAX ||
        static_cast<size_t>(rest.data() - start) > UINT32_MAX) {
      items_.resize(before);
      return false;
    }
    const SortKeyParts parts = SortKeyParts::Of(e);
    // The key is a view into the operation's bytes, after at most 16 bytes of fixed fields (StoreBatch).
    const ptrdiff_t key_offset = parts.key.empty() ? 0 : parts.key.data() - start;
    if (key_offset < 0 || key_offset > UINT8_MAX) {
      items_.resize(before);
      return false;
    }
    Item& item = items_.emplace_back();
    item.number_ = parts.number;
    item.op_ = start;
    item.key_size_ = static_cast<uint32_t>(parts.key.size());
    item.op_size_ = static_cast<uint32_t>(rest.data() - start);
    item.seq_ = next_seq_++;
    item.key_offset_ = static_cast<uint8_t>(key_offset);
    item.family_ = parts.family;
  }
  return true;
}

StoreBatch::Entry LogDelta::Item::entry() const {
  StoreBatch::Entry e;
  std::string_view rest = op();
  // The bytes decoded when Add took them, so this cannot fail.
  if (!StoreBatch::DecodeNext(&rest, &e)) std::abort();
  return e;
}

std::string LogDelta::Item::SortKey() const {
  std::string key;
  SortKeyOf(entry(), &key);
  return key;
}

const std::vector<LogDelta::Item>& LogDelta::Sorted() {
  if (sorted_count_ == items_.size()) return items_;
  // In place (no buffer as large as the entries, as a stable sort takes), in two passes. First by what the
  // entries hold inline (family, number, then log order), reading no key: a key lies in the mapped log, a
  // cache miss away, and comparing keys throughout the sort made reading them most of its time.
  std::sort(items_.begin(), items_.end(), [](const Item& a, const Item& b) {
    if (a.family_ != b.family_) return a.family_ < b.family_;
    if (a.number_ != b.number_) return a.number_ < b.number_;
    return a.seq_ < b.seq_;
  });
  // Then each run of one family and number by key, log order kept among equal keys (the sort key's order:
  // family, number, key). Such runs are short (a batch of starts shares a deadline) and their keys lie close
  // together in the log, so each key is read once. A run's keys share a prefix (at least their namespace);
  // the 8 bytes after it go into number_ (equal within the run, put back after) so that most comparisons
  // read no key. Of equal keys the one added last wins.
  const size_t n = items_.size();
  // Keys are prefetched this many entries ahead of the run being sorted, so that reading a run's keys
  // overlaps the misses of the next runs' instead of waiting for each.
  constexpr size_t kPrefetchAhead = 128;
  size_t prefetched = 0;
  size_t kept = 0;
  for (size_t begin = 0; begin < n;) {
    size_t end = begin + 1;
    while (end < n && items_[end].family_ == items_[begin].family_ &&
           items_[end].number_ == items_[begin].number_) {
      ++end;
    }
    const uint64_t number = items_[begin].number_;
    size_t common = 0;
    if (end - begin > 1) {
      for (; prefetched < std::min(n, end + kPrefetchAhead); ++prefetched) {
        __builtin_prefetch(items_[prefetched].key().data());
      }
      const std::string_view first = items_[begin].key();
      common = first.size();
      for (size_t i = begin + 1; i < end; ++i) common = CommonPrefixLength(first, items_[i].key(), common);
      for (size_t i = begin; i < end; ++i) items_[i].number_ = BigEndianWindow(items_[i].key(), common);
      std::sort(items_.begin() + static_cast<ptrdiff_t>(begin), items_.begin() + static_cast<ptrdiff_t>(end),
                [common](const Item& a, const Item& b) {
                  if (a.number_ != b.number_) return a.number_ < b.number_;
                  const int c = CompareBytes(a.key().substr(common), b.key().substr(common));
                  return c != 0 ? c < 0 : a.seq_ < b.seq_;
                });
    }
    for (size_t i = begin; i < end; ++i) {
      if (i + 1 < end && items_[i + 1].number_ == items_[i].number_ &&
          CompareBytes(items_[i + 1].key().substr(common), items_[i].key().substr(common)) == 0) {
        continue;
      }
      items_[kept] = items_[i];
      items_[kept++].number_ = number;
    }
    begin = end;
  }
  items_.resize(kept);
  sorted_count_ = kept;
  return items_;
}

// SnapshotWriter

absl::StatusOr<std::unique_ptr<SnapshotWriter>> SnapshotWriter::Create(const std::string& path) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return FileError("create", path, errno);
  return std::unique_ptr<SnapshotWriter>(new SnapshotWriter(path, fd));
}

SnapshotWriter::~SnapshotWriter() { ::close(fd_); }

absl::Status SnapshotWriter::Add(const StoreBatch::Entry& put) {
  scratch_.Clear();
  AddPut(&scratch_, put);
  return AddEncoded(scratch_.data());
}

absl::Status SnapshotWriter::AddEncoded(std::string_view put) {
  block_.append(put);
  ++records_;
  if (block_.size() >= kBlockBytes) return FlushBlock();
  return absl::OkStatus();
}

// Writes `body` as one block (a trailer if `trailer`).
absl::Status SnapshotWriter::WriteBlock(std::string_view body, bool trailer) {
  buffer_.clear();
  PutFixed32(&buffer_, 0);
  PutFixed32(&buffer_, static_cast<uint32_t>(body.size()) | (trailer ? kTrailerFlag : 0));
  buffer_.append(body);
  const uint32_t crc = internal::Crc32c(std::string_view(buffer_).substr(4));
  for (int i = 0; i < 4; ++i) buffer_[i] = static_cast<char>(crc >> (8 * i));
  std::string_view rest = buffer_;
  while (!rest.empty()) {
    const ssize_t n = ::write(fd_, rest.data(), rest.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return FileError("write", path_, n < 0 ? errno : EIO);
    rest.remove_prefix(static_cast<size_t>(n));
  }
  offset_ += buffer_.size();
  return absl::OkStatus();
}

absl::Status SnapshotWriter::FlushBlock() {
  LAWN_RETURN_IF_ERROR(WriteBlock(block_, false));
  block_.clear();
  return absl::OkStatus();
}

absl::Status SnapshotWriter::Finish(uint64_t next_sequence) {
  if (!block_.empty()) LAWN_RETURN_IF_ERROR(FlushBlock());
  std::string trailer(kMagic);
  PutFixed64(&trailer, next_sequence);
  PutFixed64(&trailer, records_);
  LAWN_RETURN_IF_ERROR(WriteBlock(trailer, true));
  if (::fdatasync(fd_) != 0) return FileError("fdatasync", path_, errno);
  return absl::OkStatus();
}

// Reading

absl::Status ReadSnapshot(
    const std::string& path,
    absl::FunctionRef<absl::Status(std::string_view, const StoreBatch::Entry&)> on_record,
    absl::FunctionRef<bool(const absl::Status&)> on_damage, uint64_t* next_sequence) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return FileError("open", path, errno);
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  // Not a std::string: growing one zero-fills it, a memset of each block before the read overwrites it.
  std::unique_ptr<char[]> block;
  size_t block_capacity = 0;
  uint64_t offset = 0;
  uint64_t records = 0;
  auto damaged = [&](std::string_view why) {
    return absl::DataLossError(
        absl::StrCat("snapshot ", path, ": ", std::string(why), " at offset ", offset));
  };
  while (true) {
    char header[8];
    size_t got = 0;
    if (!ReadFull(fd, header, sizeof header, &got)) return FileError("read", path, errno);
    if (got < sizeof header) return damaged("no trailer (the file ends)");
    const uint32_t crc = static_cast<uint32_t>(GetFixed(header, 4));
    const uint32_t length_word = static_cast<uint32_t>(GetFixed(header + 4, 4));
    const bool trailer = (length_word & kTrailerFlag) != 0;
    const uint32_t length = length_word & ~kTrailerFlag;
    if (length > (64u << 20)) return damaged(absl::StrCat("a block length of ", length, " bytes"));
    if (block_capacity < 4 + size_t{length}) {
      block_capacity = std::max<size_t>(4 + size_t{length}, 2 * block_capacity);
      block.reset(new char[block_capacity]);
    }
    std::memcpy(block.get(), header + 4, 4);
    if (!ReadFull(fd, block.get() + 4, length, &got)) return FileError("read", path, errno);
    if (got < length) return damaged("a block cut short (the file ends)");
    if (internal::Crc32c(std::string_view(block.get(), 4 + size_t{length})) != crc) {
      // Skipping goes on at the block's length; if that was the damaged part, what follows fails its CRC
      // too, and the missing trailer ends the read with DATA_LOSS.
      absl::Status bad = damaged("a block whose CRC does not match");
      if (trailer || !on_damage(bad)) return bad;
      offset += 8 + length;
      continue;
    }
    std::string_view body(block.get() + 4, length);
    if (trailer) {
      if (body.size() != kTrailerBytes || body.substr(0, 8) != kMagic) return damaged("a malformed trailer");
      const uint64_t want = GetFixed(body.data() + 16, 8);
      if (want != records) {
        return damaged(
            absl::StrCat("a trailer that counts ", want, " records where the blocks hold ", records));
      }
      *next_sequence = GetFixed(body.data() + 8, 8);
      return absl::OkStatus();
    }
    bool decoded = true;
    for (std::string_view rest = body; !rest.empty();) {
      const char* start = rest.data();
      StoreBatch::Entry e;
      if (!StoreBatch::DecodeNext(&rest, &e)) {
        decoded = false;
        break;
      }
      ++records;
      if (IsPut(e.op)) {
        LAWN_RETURN_IF_ERROR(on_record(std::string_view(start, static_cast<size_t>(rest.data() - start)), e));
      }
    }
    if (!decoded) {
      absl::Status bad = damaged("a block whose operations do not decode");
      if (!on_damage(bad)) return bad;
    }
    offset += 8 + length;
  }
}

const StoreBatch::Entry& StateRecord::entry() const {
  if (decoded_ == nullptr) {
    std::string_view rest = op_;
    // Bytes that decoded when the delta or the snapshot read them, so this cannot fail.
    if (!StoreBatch::DecodeNext(&rest, &entry_)) std::abort();
    decoded_ = &entry_;
  }
  return *decoded_;
}

absl::Status MergeState(const std::string& snapshot_path, LogDelta& delta,
                        absl::FunctionRef<absl::Status(const StateRecord&)> emit,
                        absl::FunctionRef<bool(const absl::Status&)> on_damage) {
  const std::vector<LogDelta::Item>& items = delta.Sorted();
  size_t next = 0;
  auto emit_item = [&](const LogDelta::Item& item) {
    return item.put() ? emit(StateRecord(item.op())) : absl::OkStatus();  // Tombstones are dropped.
  };
  if (!snapshot_path.empty()) {
    uint64_t ignored = 0;
    LAWN_RETURN_IF_ERROR(ReadSnapshot(
        snapshot_path,
        [&](std::string_view op, const StoreBatch::Entry& e) -> absl::Status {
          const SortKeyParts parts = SortKeyParts::Of(e);
          // The delta's items before this record, then the record or (when the log changed it after the
          // snapshot) the last operation on it.
          int order = -1;
          for (; next < items.size() && (order = Compare(items[next].parts(), parts)) < 0; ++next) {
            LAWN_RETURN_IF_ERROR(emit_item(items[next]));
          }
          if (next < items.size() && order == 0) return emit_item(items[next++]);
          return emit(StateRecord(op, &e));
        },
        on_damage, &ignored));
  }
  for (; next < items.size(); ++next) LAWN_RETURN_IF_ERROR(emit_item(items[next]));
  return absl::OkStatus();
}

}  // namespace lawn::logstore
