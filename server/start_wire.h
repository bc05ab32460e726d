// StartTimersRequest read straight from its wire bytes: each item's strings are views into those bytes.
//
// Why not protobuf: protobuf 3.21 keeps every string field in a std::string, so each id longer than 15 bytes
// (a UUID, `ns/user/1234/...`) is a heap block allocated on the gRPC thread and freed with the call on
// another, about 12% of lawnd's CPU in a memory-mode batch profile (BENCHMARKS.md section 35).
//
// The reader accepts exactly the byte strings that protobuf's own parser (ParseFromZeroCopyStream, as
// server/raw_call.cc runs it) accepts, with the same field values: the last occurrence of a scalar wins,
// repeated occurrences of a message field merge, a oneof member replaces the other, unknown fields (groups
// too, to protobuf's nesting limit of 100) are skipped, a field of a known number but another wire type is
// unknown, and `namespace` must be valid UTF-8 (a proto3 string). tests/server/start_wire_test.cc and the
// fuzz target tests/fuzz/start_timer_fuzz.cc check that agreement.
//
// Thread-safety: pure functions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace lawn {

// A google.protobuf.Duration or Timestamp as sent.
struct WireTime {
  int64_t seconds = 0;
  int32_t nanos = 0;
};

// One lawn.v1.StartTimerRequest. Views into the bytes it was read from.
struct StartItem {
  enum class When : uint8_t { kNone, kTtl, kDeadline };
  std::string_view ns;
  std::string_view id;
  std::string_view payload;
  When when = When::kNone;
  WireTime when_time;  // The ttl (kTtl) or the deadline (kDeadline).
  bool has_interval = false;
  WireTime interval;
  bool replace = false;
  std::string_view encoded;  // The item's own bytes (its length-delimited field's contents).
};

// Reads a lawn.v1.StartTimersRequest: its first `max_items` items go to `items` (cleared first), the number
// of all its items to `count`, return_timers to `return_timers`. Items past `max_items` are read (the request
// is valid or not as a whole) but not kept, so a request of millions of tiny items holds no memory for them
// (the service refuses more than 10,000). False if the bytes are not a valid message.
bool ReadStartTimers(std::string_view bytes, size_t max_items, std::vector<StartItem>* items, size_t* count,
                     bool* return_timers);

// Appends an item (a StartTimerRequest's encoding, such as StartItem::encoded) to the encoding of a
// StartTimersRequest in `out`, as its field 1 (timers).
void AppendStartItem(std::string_view encoded, std::string* out);

// Reads a lawn.v1.StartTimerRequest. False if the bytes are not a valid message.
bool ReadStartTimer(std::string_view bytes, StartItem* item);

}  // namespace lawn
