// StoreBatch: a list of storage operations to apply atomically, encoded into one reusable buffer so that
// filling it does not allocate per operation once the buffer has grown.
//
// Thread-safety: none; a batch belongs to one shard worker.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "absl/functional/function_ref.h"

namespace lawn {

class StoreBatch {
 public:
  enum class Op : uint8_t {
    kPutTimer = 1,
    kDeleteTimer = 2,
    kPutExpiration = 3,
    kDeleteExpiration = 4,
    // The staging area of a cluster member (the `incoming` column family): expirations handed over by another
    // member with their partition, kept until the partition is this member's. delivery_id is the staging id.
    kPutIncoming = 5,
    kDeleteIncoming = 6,
  };

  // One decoded operation; views into the batch's buffer. Fields not used by `op` are zero/empty.
  struct Entry {
    Op op;
    std::string_view key;  // Timer key (namespace \0 id); for expirations the timer's key.
    uint64_t delivery_id = 0;
    // For DeleteTimer, the deadline of the record to delete.
    int64_t deadline_unix_ns = 0;
    uint64_t ttl_ns = 0;
    uint64_t interval_ns = 0;
    std::string_view payload;
    int64_t fired_at_unix_ns = 0;
    uint32_t attempt = 0;
  };

  void PutTimer(std::string_view key, int64_t deadline_unix_ns, uint64_t ttl_ns, uint64_t interval_ns,
                std::string_view payload);
  // A timer's record is found by its deadline and key together (storage/FORMAT.md): `deadline_unix_ns` is the
  // one its last PutTimer stored. Moving a timer to another deadline is DeleteTimer(old) then PutTimer(new).
  void DeleteTimer(std::string_view key, int64_t deadline_unix_ns);
  void PutExpiration(uint64_t delivery_id, std::string_view key, int64_t deadline_unix_ns, uint64_t ttl_ns,
                     uint64_t interval_ns, std::string_view payload, int64_t fired_at_unix_ns,
                     uint32_t attempt);
  void DeleteExpiration(uint64_t delivery_id);
  void PutIncoming(uint64_t staging_id, std::string_view key, int64_t deadline_unix_ns, uint64_t ttl_ns,
                   uint64_t interval_ns, std::string_view payload, int64_t fired_at_unix_ns, uint32_t attempt);
  void DeleteIncoming(uint64_t staging_id);

  // Appends every operation of `other`, after this batch's own.
  void Append(const StoreBatch& other) {
    rep_.append(other.rep_);
    count_ += other.count_;
    needs_sync_ = needs_sync_ || other.needs_sync_;
    has_incoming_ = has_incoming_ || other.has_incoming_;
  }

  void Clear() {
    rep_.clear();
    count_ = 0;
    needs_sync_ = false;
    has_incoming_ = false;
  }
  bool empty() const { return count_ == 0; }
  // Whether a `sync` write of this batch must reach stable storage before it is acknowledged: false when it
  // holds only expiration deletes (acks), whose loss in a crash means a redelivery, which at-least-once allows.
  bool needs_sync() const { return needs_sync_; }
  size_t count() const { return count_; }
  // Whether it puts or deletes a record of the staging area (PutIncoming, DeleteIncoming).
  bool has_incoming() const { return has_incoming_; }
  size_t ByteSize() const { return rep_.size(); }

  // Calls `visit` for each operation in the order added.
  void ForEach(absl::FunctionRef<void(const Entry&)> visit) const;

  // The encoded operations: what storage.engine `log` writes as one record (storage/log_timer_store.h).
  std::string_view data() const { return rep_; }
  // Decodes `data` as data() encoded it, calling `visit` for each operation. False if it is not such an
  // encoding (after visiting the operations before the damage); never aborts, for bytes read from disk.
  static bool ForEachIn(std::string_view data, absl::FunctionRef<void(const Entry&)> visit);
  // Decodes the first operation of `*data` into `*e` and removes its bytes from `*data` (so the caller can
  // keep a view of one operation's bytes, and decode it again later with ForEachIn). False if `*data` does
  // not start with a whole operation (then `*data` and `*e` are unspecified).
  static bool DecodeNext(std::string_view* data, Entry* e);

 private:
  void PutRecord(Op op, uint64_t id, std::string_view key, int64_t deadline_unix_ns, uint64_t ttl_ns,
                 uint64_t interval_ns, std::string_view payload, int64_t fired_at_unix_ns, uint32_t attempt);
  // Appends a varint length, then `s`.
  void PutBytes(std::string_view s);

  std::string rep_;
  size_t count_ = 0;
  bool needs_sync_ = false;
  bool has_incoming_ = false;
};

}  // namespace lawn
