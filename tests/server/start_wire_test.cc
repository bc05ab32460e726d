// server/start_wire.h against protobuf's own parser: the same bytes accepted, the same values read.
#include "server/start_wire.h"

#include <cstddef>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "google/protobuf/descriptor.h"
#include "google/protobuf/duration.pb.h"
#include "google/protobuf/stubs/logging.h"
#include "google/protobuf/timestamp.pb.h"
#include "gtest/gtest.h"
#include "lawn/v1/timer.pb.h"
#include "tests/server/start_wire_compare.h"

namespace lawn {
namespace {

using testing::DiffWireAndProtobuf;

std::string Varint(uint64_t v) {
  std::string out;
  for (; v >= 0x80; v >>= 7) out.push_back(static_cast<char>((v & 0x7f) | 0x80));
  out.push_back(static_cast<char>(v));
  return out;
}
std::string Tag(uint32_t field, uint32_t wire_type) { return Varint(field << 3 | wire_type); }
std::string Field(uint32_t field, const std::string& bytes) {
  return Tag(field, 2) + Varint(bytes.size()) + bytes;
}
std::string VarintField(uint32_t field, uint64_t v) { return Tag(field, 0) + Varint(v); }
std::string Time(int64_t seconds, int32_t nanos) {
  return VarintField(1, static_cast<uint64_t>(seconds)) +
         VarintField(2, static_cast<uint64_t>(static_cast<int64_t>(nanos)));
}
// A StartTimersRequest of the given items' encodings.
std::string Batch(const std::vector<std::string>& items) {
  std::string out;
  for (const std::string& item : items) out += Field(1, item);
  return out;
}

v1::StartTimersRequest SampleRequest() {
  v1::StartTimersRequest r;
  r.set_return_timers(true);
  for (int i = 0; i < 5; ++i) {
    v1::StartTimerRequest* t = r.add_timers();
    t->set_namespace_(i % 2 ? "orders" : "");
    t->set_id("an-id-longer-than-sixteen-bytes-" + std::to_string(i));
    if (i % 3 == 0) {
      t->mutable_ttl()->set_seconds(i + 1);
      t->mutable_ttl()->set_nanos(250'000'000);
    } else {
      t->mutable_deadline()->set_seconds(1'900'000'000 + i);
    }
    if (i == 2) t->mutable_interval()->set_seconds(60);
    if (i == 4) t->set_replace(true);
    t->set_payload(std::string(static_cast<size_t>(i) * 100, 'p'));
  }
  return r;
}

TEST(StartWireTest, ReadsWhatProtobufWrites) {
  google::protobuf::LogSilencer
      quiet;  // An item's bytes read as a StartTimersRequest: "namespace" is no UTF-8.
  const v1::StartTimersRequest r = SampleRequest();
  const std::string bytes = r.SerializeAsString();
  std::vector<StartItem> items;
  size_t count = 0;
  bool return_timers = false;
  ASSERT_TRUE(ReadStartTimers(bytes, SIZE_MAX, &items, &count, &return_timers));
  EXPECT_TRUE(return_timers);
  ASSERT_EQ(items.size(), 5u);
  EXPECT_EQ(count, 5u);
  EXPECT_EQ(items[1].ns, "orders");
  EXPECT_EQ(items[1].id, "an-id-longer-than-sixteen-bytes-1");
  EXPECT_EQ(items[0].when, StartItem::When::kTtl);
  EXPECT_EQ(items[0].when_time.seconds, 1);
  EXPECT_EQ(items[0].when_time.nanos, 250'000'000);
  EXPECT_EQ(items[1].when, StartItem::When::kDeadline);
  EXPECT_TRUE(items[2].has_interval);
  EXPECT_EQ(items[2].interval.seconds, 60);
  EXPECT_TRUE(items[4].replace);
  EXPECT_EQ(items[4].payload.size(), 400u);
  // Views into the bytes, not copies.
  EXPECT_GE(items[3].id.data(), bytes.data());
  EXPECT_LT(items[3].id.data(), bytes.data() + bytes.size());
  EXPECT_EQ(DiffWireAndProtobuf(bytes), "");
  EXPECT_EQ(DiffWireAndProtobuf(r.timers(2).SerializeAsString()), "");
}

TEST(StartWireTest, AnEmptyRequestHasNoItems) {
  std::vector<StartItem> items(3);
  size_t count = 7;
  bool return_timers = true;
  EXPECT_TRUE(ReadStartTimers("", SIZE_MAX, &items, &count, &return_timers));
  EXPECT_TRUE(items.empty());
  EXPECT_EQ(count, 0u);
  EXPECT_FALSE(return_timers);
}

// Items past max_items are counted and checked, not kept: 20,000 empty items hold 10 StartItems.
TEST(StartWireTest, ItemsPastTheMaximumAreCountedNotKept) {
  std::string bytes;
  for (int i = 0; i < 20'000; ++i) bytes += Field(1, "");
  std::vector<StartItem> items;
  size_t count = 0;
  bool return_timers = false;
  ASSERT_TRUE(ReadStartTimers(bytes, 10, &items, &count, &return_timers));
  EXPECT_EQ(items.size(), 10u);
  EXPECT_EQ(count, 20'000u);
  // Still valid or not as a whole: a bad item past the maximum fails the request.
  google::protobuf::LogSilencer quiet;
  bytes += Field(1, Field(1, "\xff"));
  EXPECT_FALSE(ReadStartTimers(bytes, 10, &items, &count, &return_timers));
}

// The reader knows these fields by number and wire type; a field added to either message would be skipped as
// unknown until server/start_wire.cc learns it, so adding one fails here first.
TEST(StartWireTest, TheMessagesHaveExactlyTheFieldsTheReaderReads) {
  using google::protobuf::FieldDescriptor;
  struct Expected {
    int number;
    const char* name;
    FieldDescriptor::Type type;
    const char* message;  // Its type's full name, for a message field.
  };
  const google::protobuf::Descriptor* item = v1::StartTimerRequest::descriptor();
  const std::vector<Expected> item_fields = {
      {1, "namespace", FieldDescriptor::TYPE_STRING, ""},
      {2, "id", FieldDescriptor::TYPE_BYTES, ""},
      {3, "ttl", FieldDescriptor::TYPE_MESSAGE, "google.protobuf.Duration"},
      {4, "deadline", FieldDescriptor::TYPE_MESSAGE, "google.protobuf.Timestamp"},
      {5, "payload", FieldDescriptor::TYPE_BYTES, ""},
      {6, "interval", FieldDescriptor::TYPE_MESSAGE, "google.protobuf.Duration"},
      {7, "replace", FieldDescriptor::TYPE_BOOL, ""},
  };
  ASSERT_EQ(item->field_count(), static_cast<int>(item_fields.size()));
  for (const Expected& e : item_fields) {
    const FieldDescriptor* f = item->FindFieldByNumber(e.number);
    ASSERT_NE(f, nullptr) << e.name;
    EXPECT_EQ(f->name(), e.name);
    EXPECT_EQ(f->type(), e.type) << e.name;
    EXPECT_FALSE(f->is_repeated()) << e.name;
    if (f->type() == FieldDescriptor::TYPE_MESSAGE) {
      EXPECT_EQ(f->message_type()->full_name(), e.message);
    }
  }
  ASSERT_NE(item->FindFieldByNumber(3)->containing_oneof(), nullptr);
  EXPECT_EQ(item->FindFieldByNumber(3)->containing_oneof(), item->FindFieldByNumber(4)->containing_oneof());
  EXPECT_EQ(item->oneof_decl_count(), 1);
  const google::protobuf::Descriptor* batch = v1::StartTimersRequest::descriptor();
  ASSERT_EQ(batch->field_count(), 2);
  ASSERT_NE(batch->FindFieldByNumber(1), nullptr);
  EXPECT_TRUE(batch->FindFieldByNumber(1)->is_repeated());
  EXPECT_EQ(batch->FindFieldByNumber(1)->message_type(), item);
  ASSERT_NE(batch->FindFieldByNumber(2), nullptr);
  EXPECT_EQ(batch->FindFieldByNumber(2)->type(), FieldDescriptor::TYPE_BOOL);
  for (const google::protobuf::Descriptor* time :
       {google::protobuf::Duration::descriptor(), google::protobuf::Timestamp::descriptor()}) {
    ASSERT_EQ(time->field_count(), 2);
    EXPECT_EQ(time->FindFieldByNumber(1)->type(), FieldDescriptor::TYPE_INT64);
    EXPECT_EQ(time->FindFieldByNumber(2)->type(), FieldDescriptor::TYPE_INT32);
  }
}

// Protobuf's rules for repeated and conflicting fields, each checked for its value and against protobuf.
TEST(StartWireTest, RepeatedFieldsFollowProtobufsRules) {
  StartItem item;
  // A message field sent twice merges: seconds from the first, nanos from the second.
  const std::string merged = Field(3, VarintField(1, 5)) + Field(3, VarintField(2, 7));
  ASSERT_TRUE(ReadStartTimer(merged, &item));
  EXPECT_EQ(item.when_time.seconds, 5);
  EXPECT_EQ(item.when_time.nanos, 7);
  // The other member of the oneof starts afresh.
  const std::string switched = Field(3, Time(5, 7)) + Field(4, VarintField(2, 9));
  ASSERT_TRUE(ReadStartTimer(switched, &item));
  EXPECT_EQ(item.when, StartItem::When::kDeadline);
  EXPECT_EQ(item.when_time.seconds, 0);
  EXPECT_EQ(item.when_time.nanos, 9);
  // The last scalar wins; a known field number with another wire type is an unknown field.
  const std::string last = Field(2, "first") + Field(2, "second") + VarintField(7, 1) + VarintField(7, 0) +
                           VarintField(1, 3) + Field(1, "ns");
  ASSERT_TRUE(ReadStartTimer(last, &item));
  EXPECT_EQ(item.id, "second");
  EXPECT_FALSE(item.replace);
  EXPECT_EQ(item.ns, "ns");
  for (const std::string& bytes : {merged, switched, last, Batch({merged, switched, last})}) {
    EXPECT_EQ(DiffWireAndProtobuf(bytes), "");
  }
}

TEST(StartWireTest, MalformedBytesAreRefusedAsProtobufRefusesThem) {
  google::protobuf::LogSilencer quiet;  // protobuf logs each invalid UTF-8 string it refuses.
  const std::string valid_item = Field(2, "id") + Field(3, Time(1, 0));
  struct Case {
    const char* name;
    std::string bytes;
    bool valid;  // As a StartTimerRequest.
  };
  // protobuf's recursion limit is 100 levels below the message parsed: each group takes one, and so does the
  // item of a StartTimersRequest.
  auto nested_groups = [](int n) {
    std::string groups;
    for (int i = 0; i < n; ++i) groups = Tag(9, 3) + groups + Tag(9, 4);
    return groups;
  };
  const std::vector<Case> cases = {
      {"namespace not UTF-8", Field(1, "\xff\xfe") + valid_item, false},
      {"id not UTF-8 (bytes)", Field(2, "\xff\xfe") + Field(3, Time(1, 0)), true},
      {"tag 0", valid_item + std::string(1, '\0'), false},
      {"field number 0", valid_item + Tag(0, 0) + Varint(1), false},
      {"wire type 6", valid_item + Tag(9, 6), false},
      {"wire type 7", valid_item + Tag(9, 7), false},
      {"end group without a start", valid_item + Tag(9, 4), false},
      {"group", valid_item + Tag(9, 3) + VarintField(1, 1) + Tag(9, 4), true},
      {"group ended by another field's end", valid_item + Tag(9, 3) + Tag(8, 4), false},
      {"group never ended", valid_item + Tag(9, 3) + VarintField(1, 1), false},
      {"100 nested groups", valid_item + nested_groups(100), true},
      {"101 nested groups", valid_item + nested_groups(101), false},
      {"length past the end", Tag(2, 2) + Varint(10) + "abc", false},
      {"size varint of 6 bytes", Tag(2, 2) + std::string("\x83\x80\x80\x80\x80\x00", 6) + "abc", false},
      {"size varint of 5 bytes", Tag(2, 2) + std::string("\x83\x80\x80\x80\x00", 5) + "abc", true},
      {"size of 2 GiB", Tag(2, 2) + std::string("\x80\x80\x80\x80\x08", 5) + "abc", false},
      {"varint of 10 bytes", Field(3, Tag(2, 0) + "\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01"), true},
      {"varint of 11 bytes", Field(3, Tag(2, 0) + "\xff\xff\xff\xff\xff\xff\xff\xff\xff\x81\x01"), false},
      {"tag of 5 bytes", valid_item + "\xf8\xff\xff\xff\x7f" + Varint(1), true},
      {"tag of 6 bytes", valid_item + "\xf8\xff\xff\xff\xff\x01" + Varint(1), false},
      {"fixed64 cut short", valid_item + Tag(9, 1) + "1234567", false},
      {"fixed32", valid_item + Tag(9, 5) + "1234", true},
      {"truncated Duration", Field(2, "id") + Tag(3, 2) + Varint(4) + VarintField(1, 1), false},
      {"Duration ending in an end-group tag", Field(3, VarintField(1, 1) + Tag(9, 4)), false},
      {"unknown field inside a Duration", Field(3, VarintField(1, 1) + Field(15, "x")), true},
  };
  for (const Case& c : cases) {
    StartItem item;
    EXPECT_EQ(ReadStartTimer(c.bytes, &item), c.valid) << c.name;
    EXPECT_EQ(DiffWireAndProtobuf(c.bytes), "") << c.name;
    EXPECT_EQ(DiffWireAndProtobuf(Field(1, c.bytes)), "") << c.name << ", as a StartTimers item";
  }
  // Inside a StartTimers item, one level is the item's own.
  std::vector<StartItem> items;
  size_t count = 0;
  bool return_timers = false;
  EXPECT_TRUE(
      ReadStartTimers(Field(1, valid_item + nested_groups(99)), SIZE_MAX, &items, &count, &return_timers));
  EXPECT_FALSE(
      ReadStartTimers(Field(1, valid_item + nested_groups(100)), SIZE_MAX, &items, &count, &return_timers));
  EXPECT_EQ(DiffWireAndProtobuf(Field(1, valid_item + nested_groups(99))), "");
}

// Bytes near valid requests (mutated, cut, spliced) and random bytes: both parsers always agree.
TEST(StartWireTest, AgreesWithProtobufOnMutatedRequests) {
  google::protobuf::LogSilencer quiet;
  std::mt19937_64 rng(20261127);
  const std::string base = SampleRequest().SerializeAsString();
  int accepted = 0;
  for (int round = 0; round < 40'000; ++round) {
    std::string bytes = round % 10 == 0 ? std::string() : base;
    const int edits = 1 + static_cast<int>(rng() % 4);
    for (int e = 0; e < edits; ++e) {
      const size_t at = bytes.empty() ? 0 : rng() % bytes.size();
      switch (rng() % 5) {
        case 0:
          if (!bytes.empty()) bytes[at] = static_cast<char>(rng());
          break;
        case 1: {
          const bool low = rng() % 2 == 0;  // Small bytes are tags and sizes of the fields that exist.
          const uint64_t value = rng();
          bytes.insert(at, 1, static_cast<char>(low ? value % 0x40 : value));
          break;
        }
        case 2:
          bytes.resize(at);
          break;
        case 3: {
          const size_t from = rng() % base.size();
          const size_t length = rng() % 24;
          bytes.insert(at, base.substr(from, length));
          break;
        }
        default:
          if (!bytes.empty()) bytes.erase(at, 1 + rng() % 8);
      }
    }
    const std::string diff = DiffWireAndProtobuf(bytes);
    ASSERT_EQ(diff, "") << "round " << round << ", " << bytes.size() << " bytes";
    v1::StartTimersRequest parsed;
    accepted += parsed.ParseFromString(bytes);
  }
  // The inputs exercised both outcomes.
  EXPECT_GT(accepted, 1000);
  EXPECT_LT(accepted, 39'000);
}

}  // namespace
}  // namespace lawn
