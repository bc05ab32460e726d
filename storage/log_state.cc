#include "storage/log_state.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
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

// LogDelta

std::string_view LogDelta::Keep(std::string bytes) {
  buffers_.push_back(std::move(bytes));
  return buffers_.back();
}

std::string_view LogDelta::Keep(std::unique_ptr<MappedFile> mapped) {
  mappings_.push_back(std::move(mapped));
  return mappings_.back()->bytes();
}

bool LogDelta::Add(std::string_view payload, bool copy) {
  if (copy) payload = Keep(std::string(payload));
  // Decoded first, applied after: a record that does not decode changes nothing.
  decoded_.clear();
  for (std::string_view rest = payload; !rest.empty();) {
    const char* start = rest.data();
    StoreBatch::Entry e;
    if (!StoreBatch::DecodeNext(&rest, &e)) return false;
    decoded_.emplace_back(e, std::string_view(start, static_cast<size_t>(rest.data() - start)));
  }
  for (const auto& [e, op] : decoded_) {
    SortKeyOf(e, &scratch_);
    items_.push_back(Item{StoreKey(scratch_), op});
  }
  return true;
}

StoreBatch::Entry LogDelta::Item::entry() const {
  StoreBatch::Entry e;
  std::string_view rest = op;
  // The bytes decoded when Add took them, so this cannot fail.
  if (!StoreBatch::DecodeNext(&rest, &e)) std::abort();
  return e;
}

std::string_view LogDelta::StoreKey(std::string_view key) {
  constexpr size_t kChunkBytes = size_t{1} << 20;
  if (key.size() > key_chunk_size_ - key_chunk_used_) {
    key_chunk_size_ = std::max(kChunkBytes, key.size());
    key_chunks_.push_back(std::make_unique<char[]>(key_chunk_size_));
    key_chunk_used_ = 0;
  }
  char* out = key_chunks_.back().get() + key_chunk_used_;
  std::memcpy(out, key.data(), key.size());
  key_chunk_used_ += key.size();
  return {out, key.size()};
}

const std::vector<LogDelta::Item>& LogDelta::Sorted() {
  if (sorted_count_ == items_.size()) return items_;
  // Every sort key is at least 9 bytes (a family byte and 8 of deadline or id): its first 8, read as a
  // big-endian integer, order most pairs with one comparison.
  auto less = [](const Item& a, const Item& b) {
    const uint64_t pa = internal::LoadFixed64BigEndian(a.key.data());
    const uint64_t pb = internal::LoadFixed64BigEndian(b.key.data());
    if (pa != pb) return pa < pb;
    return a.key.substr(8) < b.key.substr(8);
  };
  // Stable: of the operations on one key, the last one added stays last (the sorted ones come before any
  // added after them).
  std::stable_sort(items_.begin(), items_.end(), less);
  size_t kept = 0;
  for (size_t i = 0; i < items_.size(); ++i) {
    if (i + 1 < items_.size() && items_[i + 1].key == items_[i].key) continue;  // A later one wins.
    items_[kept++] = items_[i];
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
  AddPut(&block_, put);
  ++records_;
  if (block_.ByteSize() >= kBlockBytes) return FlushBlock();
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
  LAWN_RETURN_IF_ERROR(WriteBlock(block_.data(), false));
  block_.Clear();
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

absl::Status ReadSnapshot(const std::string& path,
                          absl::FunctionRef<absl::Status(const StoreBatch::Entry&)> on_record,
                          absl::FunctionRef<bool(const absl::Status&)> on_damage, uint64_t* next_sequence) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return FileError("open", path, errno);
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  std::string block;
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
    block.assign(header + 4, 4);
    block.resize(4 + length);
    if (!ReadFull(fd, block.data() + 4, length, &got)) return FileError("read", path, errno);
    if (got < length) return damaged("a block cut short (the file ends)");
    if (internal::Crc32c(block) != crc) {
      // Skipping goes on at the block's length; if that was the damaged part, what follows fails its CRC
      // too, and the missing trailer ends the read with DATA_LOSS.
      absl::Status bad = damaged("a block whose CRC does not match");
      if (trailer || !on_damage(bad)) return bad;
      offset += 8 + length;
      continue;
    }
    std::string_view body = std::string_view(block).substr(4);
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
    absl::Status status;
    const bool decoded = StoreBatch::ForEachIn(body, [&](const StoreBatch::Entry& e) {
      ++records;
      if (status.ok() && IsPut(e.op)) status = on_record(e);
    });
    LAWN_RETURN_IF_ERROR(status);
    if (!decoded) {
      absl::Status bad = damaged("a block whose operations do not decode");
      if (!on_damage(bad)) return bad;
    }
    offset += 8 + length;
  }
}

absl::Status MergeState(const std::string& snapshot_path, LogDelta& delta,
                        absl::FunctionRef<absl::Status(std::string_view, const StoreBatch::Entry&)> emit,
                        absl::FunctionRef<bool(const absl::Status&)> on_damage) {
  const std::vector<LogDelta::Item>& items = delta.Sorted();
  size_t next = 0;
  // Emits the delta's items before `bound` (all when empty and `all`); tombstones are dropped.
  auto drain = [&](std::string_view bound, bool all) -> absl::Status {
    for (; next < items.size() && (all || items[next].key < bound); ++next) {
      if (items[next].put()) LAWN_RETURN_IF_ERROR(emit(items[next].key, items[next].entry()));
    }
    return absl::OkStatus();
  };
  if (!snapshot_path.empty()) {
    std::string key;
    uint64_t ignored = 0;
    LAWN_RETURN_IF_ERROR(ReadSnapshot(
        snapshot_path,
        [&](const StoreBatch::Entry& e) -> absl::Status {
          SortKeyOf(e, &key);
          LAWN_RETURN_IF_ERROR(drain(key, false));
          if (next < items.size() && items[next].key == key) {
            // The log changed this record after the snapshot: its last operation wins.
            if (items[next].put()) LAWN_RETURN_IF_ERROR(emit(items[next].key, items[next].entry()));
            ++next;
            return absl::OkStatus();
          }
          return emit(key, e);
        },
        on_damage, &ignored));
  }
  return drain({}, true);
}

}  // namespace lawn::logstore
