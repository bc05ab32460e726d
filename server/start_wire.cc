// StartTimersRequest from its wire bytes (server/start_wire.h). Mirrors protobuf 3.21's parser
// (parse_context.h: ReadTag, ReadSize, ParseMessage, ParseGroup; wire_format_lite: the unknown-field
// parser), which is what makes its answers the same; the fuzz target compares the two.
#include "server/start_wire.h"

#include "google/protobuf/stubs/common.h"

namespace lawn {

namespace {

// protobuf's default recursion limit: messages and groups nested deeper fail the parse.
constexpr int kRecursionLimit = 100;

enum WireType : uint32_t {
  kVarint = 0,
  kFixed64 = 1,
  kLengthDelimited = 2,
  kStartGroup = 3,
  kEndGroup = 4,
  kFixed32 = 5
};

// A cursor over one message's bytes (a length-delimited field's contents, or the whole request).
class Reader {
 public:
  Reader(std::string_view bytes, int depth)
      : p_(bytes.data()), end_(bytes.data() + bytes.size()), depth_(depth) {}

  bool done() const { return p_ == end_; }
  int depth() const { return depth_; }

  // A varint of up to 10 bytes; bits past 64 are dropped (ReadVarint64).
  bool Varint(uint64_t* out) {
    uint64_t value = 0;
    for (int shift = 0; shift < 70; shift += 7) {
      if (p_ == end_) return false;
      const uint8_t byte = static_cast<uint8_t>(*p_++);
      value |= static_cast<uint64_t>(byte & 0x7f) << shift;
      if (byte < 0x80) {
        *out = value;
        return true;
      }
    }
    return false;
  }

  // A tag: a varint of up to 5 bytes, kept to 32 bits (ReadTag). Tag 0 and end-group tags are left to the
  // caller, as protobuf's loops do.
  bool Tag(uint32_t* out) {
    uint32_t value = 0;
    for (int i = 0; i < 5; ++i) {
      if (p_ == end_) return false;
      const uint8_t byte = static_cast<uint8_t>(*p_++);
      value += static_cast<uint32_t>(byte & 0x7f) << (7 * i);
      if (byte < 0x80) {
        *out = value;
        return true;
      }
    }
    return false;
  }

  // A length-delimited field's contents: a size of up to 5 bytes below 2 GiB (ReadSize), within this message.
  bool Bytes(std::string_view* out) {
    uint32_t size = 0;
    for (int i = 0;; ++i) {
      if (p_ == end_) return false;
      const uint8_t byte = static_cast<uint8_t>(*p_++);
      if (i == 4 && byte >= 8) return false;
      size += static_cast<uint32_t>(byte & 0x7f) << (7 * i);
      if (byte < 0x80) break;
    }
    if (size > static_cast<size_t>(end_ - p_)) return false;
    *out = std::string_view(p_, size);
    p_ += size;
    return true;
  }

  bool Skip(size_t n) {
    if (n > static_cast<size_t>(end_ - p_)) return false;
    p_ += n;
    return true;
  }

  // Skips the value of an unknown field whose tag was just read.
  bool SkipField(uint32_t tag) {
    if ((tag >> 3) == 0) return false;
    switch (tag & 7) {
      case kVarint: {
        uint64_t ignored;
        return Varint(&ignored);
      }
      case kFixed64:
        return Skip(8);
      case kLengthDelimited: {
        std::string_view ignored;
        return Bytes(&ignored);
      }
      case kStartGroup:
        return SkipGroup(tag);
      case kFixed32:
        return Skip(4);
      default:
        return false;
    }
  }

 private:
  // Fields up to the end-group tag that matches `start` (ParseGroup); a group counts toward the nesting
  // limit.
  bool SkipGroup(uint32_t start) {
    if (--depth_ < 0) return false;
    while (true) {
      uint32_t tag;
      if (!Tag(&tag) || tag == 0) return false;
      if ((tag & 7) == kEndGroup) {
        if (tag != start + 1) return false;
        ++depth_;
        return true;
      }
      if (!SkipField(tag)) return false;
    }
  }

  const char* p_;
  const char* end_;
  int depth_;
};

// Reads the fields of a message with `reader`, calling `field(tag, reader)` for each; `field` returns
// 1 (handled), 0 (unknown: skipped here) or -1 (malformed). Tag 0 and end-group tags fail the message.
template <class Field>
bool ReadFields(Reader& reader, Field&& field) {
  while (!reader.done()) {
    uint32_t tag;
    if (!reader.Tag(&tag) || tag == 0 || (tag & 7) == kEndGroup) return false;
    const int handled = field(tag);
    if (handled < 0) return false;
    if (handled == 0 && !reader.SkipField(tag)) return false;
  }
  return true;
}

// A nested message field's contents (also kept in *bytes), one level deeper (ParseMessage).
bool Nested(Reader& parent, Reader* out, std::string_view* bytes) {
  if (!parent.Bytes(bytes) || parent.depth() - 1 < 0) return false;
  *out = Reader(*bytes, parent.depth() - 1);
  return true;
}

// Merges a Duration or Timestamp (both: int64 seconds = 1, int32 nanos = 2) into `t`.
bool MergeTime(Reader& parent, WireTime* t) {
  Reader r(std::string_view(), 0);
  std::string_view bytes;
  if (!Nested(parent, &r, &bytes)) return false;
  return ReadFields(r, [&](uint32_t tag) {
    uint64_t v;
    if (tag == (1 << 3 | kVarint)) {
      if (!r.Varint(&v)) return -1;
      t->seconds = static_cast<int64_t>(v);
      return 1;
    }
    if (tag == (2 << 3 | kVarint)) {
      if (!r.Varint(&v)) return -1;
      t->nanos = static_cast<int32_t>(static_cast<uint32_t>(v));
      return 1;
    }
    return 0;
  });
}

bool ReadItem(Reader& r, StartItem* item) {
  return ReadFields(r, [&](uint32_t tag) {
    switch (tag) {
      case 1 << 3 | kLengthDelimited:  // string namespace
        if (!r.Bytes(&item->ns)) return -1;
        return google::protobuf::internal::IsStructurallyValidUTF8(item->ns.data(),
                                                                   static_cast<int>(item->ns.size()))
                   ? 1
                   : -1;
      case 2 << 3 | kLengthDelimited:  // bytes id
        return r.Bytes(&item->id) ? 1 : -1;
      case 3 << 3 | kLengthDelimited:    // Duration ttl (oneof when)
      case 4 << 3 | kLengthDelimited: {  // Timestamp deadline (oneof when)
        const StartItem::When when = (tag >> 3) == 3 ? StartItem::When::kTtl : StartItem::When::kDeadline;
        if (item->when != when) {  // Setting the other member of the oneof starts a fresh message.
          item->when = when;
          item->when_time = WireTime();
        }
        return MergeTime(r, &item->when_time) ? 1 : -1;
      }
      case 5 << 3 | kLengthDelimited:  // bytes payload
        return r.Bytes(&item->payload) ? 1 : -1;
      case 6 << 3 | kLengthDelimited:  // Duration interval
        item->has_interval = true;
        return MergeTime(r, &item->interval) ? 1 : -1;
      case 7 << 3 | kVarint: {  // bool replace
        uint64_t v;
        if (!r.Varint(&v)) return -1;
        item->replace = v != 0;
        return 1;
      }
      default:
        return 0;
    }
  });
}

}  // namespace

void AppendStartItem(std::string_view encoded, std::string* out) {
  out->push_back(static_cast<char>(1 << 3 | kLengthDelimited));
  for (uint64_t size = encoded.size();; size >>= 7) {
    if (size < 0x80) {
      out->push_back(static_cast<char>(size));
      break;
    }
    out->push_back(static_cast<char>((size & 0x7f) | 0x80));
  }
  out->append(encoded);
}

bool ReadStartTimer(std::string_view bytes, StartItem* item) {
  *item = StartItem();
  item->encoded = bytes;
  Reader r(bytes, kRecursionLimit);
  return ReadItem(r, item);
}

bool ReadStartTimers(std::string_view bytes, size_t max_items, std::vector<StartItem>* items, size_t* count,
                     bool* return_timers) {
  items->clear();
  *count = 0;
  *return_timers = false;
  StartItem past_max;  // Items beyond max_items are read into this one.
  Reader r(bytes, kRecursionLimit);
  return ReadFields(r, [&](uint32_t tag) {
    if (tag == (1 << 3 | kLengthDelimited)) {  // repeated StartTimerRequest timers
      Reader item_reader(std::string_view(), 0);
      StartItem& item = items->size() < max_items ? items->emplace_back() : (past_max = StartItem());
      ++*count;
      if (!Nested(r, &item_reader, &item.encoded)) return -1;
      return ReadItem(item_reader, &item) ? 1 : -1;
    }
    if (tag == (2 << 3 | kVarint)) {  // bool return_timers
      uint64_t v;
      if (!r.Varint(&v)) return -1;
      *return_timers = v != 0;
      return 1;
    }
    return 0;
  });
}

}  // namespace lawn
