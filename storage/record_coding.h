// Byte encodings of the records RocksDbTimerStore keeps on disk; storage/FORMAT.md is the specification and
// this file its implementation, built on the integer encodings of storage/varint.h (included here, as the
// records are made of them). Kept apart from RocksDB so the codecs can be tested (and fuzzed) alone.
//
// Encoders append to a caller-owned buffer; decoders never allocate, return views into their input, and
// return false for any input an encoder could not have produced (truncated, over-long varint, trailing
// bytes, unknown record version). Thread-safety: stateless functions.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "storage/timer_store.h"
#include "storage/varint.h"

namespace lawn::internal {

// First byte of every timers / outbox value. A different byte means a record this build cannot read.
inline constexpr uint8_t kRecordVersion = 1;

// Outbox keys are exactly this long: the delivery id, big-endian, so that key order is id order.
inline constexpr size_t kOutboxKeySize = 8;

// Outbox key: 8 bytes, big-endian delivery id.
void AppendOutboxKey(std::string* out, uint64_t delivery_id);
bool DecodeOutboxKey(std::string_view key, uint64_t* delivery_id);

// Timer keys (the `pending` column family) start with the deadline in this many bytes.
inline constexpr size_t kTimerKeyDeadlineSize = 8;

// Timer key: the deadline as 8 bytes big-endian with its sign bit flipped (so that byte order is numeric
// order, negative deadlines first), then the timer's key (namespace \0 id): records sort by deadline.
void AppendTimerKey(std::string* out, int64_t deadline_unix_ns, std::string_view key);
// False if `stored` is too short to hold a deadline and a non-empty key.
bool DecodeTimerKey(std::string_view stored, int64_t* deadline_unix_ns, std::string_view* key);

// timers value: version, varint zigzag(deadline), varint ttl, varint interval, payload (the rest).
void AppendTimerValue(std::string* out, int64_t deadline_unix_ns, uint64_t ttl_ns, uint64_t interval_ns,
                      std::string_view payload);
// Fills every field of `timer` but `key`.
bool DecodeTimerValue(std::string_view value, StoredTimer* timer);

// outbox value: version, varint len + timer key, varint zigzag(deadline), varint ttl, varint interval,
// varint len + payload, varint zigzag(fired_at), varint attempt.
void AppendExpirationValue(std::string* out, std::string_view key, int64_t deadline_unix_ns, uint64_t ttl_ns,
                           uint64_t interval_ns, std::string_view payload, int64_t fired_at_unix_ns,
                           uint32_t attempt);
// Fills every field of `expiration` but `delivery_id`.
bool DecodeExpirationValue(std::string_view value, StoredExpiration* expiration);

}  // namespace lawn::internal
