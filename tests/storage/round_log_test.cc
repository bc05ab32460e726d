// The round log (storage/round_log.h) in real files under /tmp: records back in order across segments; where
// a log ends after a torn write, and a writer reopened after it; lost records, a missing segment and a log
// that starts too late reported as DATA_LOSS; stale records of a reused segment not read; and random damage
// never producing a record that was not written.
#include "storage/round_log.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tests/storage/storage_test_util.h"

namespace lawn {
namespace {

using storage_test::TempDir;

constexpr uint64_t kSegmentBytes = 4096;

// The payload of the record with sequence `seq`: its length varies from 0 to 400 bytes.
std::string PayloadOf(uint64_t seq) {
  const size_t length = (seq * 37) % 401;
  std::string payload(length, static_cast<char>('a' + seq % 26));
  if (length >= 8) payload.replace(0, 8, std::to_string(10'000'000 + seq).substr(0, 8));
  return payload;
}

struct Read {
  absl::Status status;
  std::vector<uint64_t> sequences;
  RoundLogEnd end;
};

// Reads the log, checking every record's payload against PayloadOf.
Read ReadAll(const std::string& dir, uint64_t first_sequence = 1) {
  Read read;
  read.status = ReadRoundLog(
      dir, first_sequence,
      [&](const RoundLogRecord& r) {
        EXPECT_EQ(r.payload, PayloadOf(r.sequence)) << "record " << r.sequence;
        read.sequences.push_back(r.sequence);
        return absl::OkStatus();
      },
      &read.end);
  return read;
}

std::vector<uint64_t> Range(uint64_t first, uint64_t last) {
  std::vector<uint64_t> v;
  for (uint64_t s = first; s <= last; ++s) v.push_back(s);
  return v;
}

RoundLogOptions Options(const std::string& dir) {
  RoundLogOptions options;
  options.dir = dir;
  options.segment_bytes = kSegmentBytes;
  return options;
}

// Appends records until the writer's next sequence is `until`; returns where each record went.
std::vector<std::pair<uint64_t, uint64_t>> AppendUntil(RoundLogWriter& writer, uint64_t until) {
  std::vector<std::pair<uint64_t, uint64_t>> at;
  while (writer.next_sequence() < until) {
    const std::string payload = PayloadOf(writer.next_sequence());
    if (writer.offset() + RoundLogWriter::kHeaderBytes + payload.size() > kSegmentBytes) {
      at.push_back({writer.segment() + 1, 0});
    } else {
      at.push_back({writer.segment(), writer.offset()});
    }
    absl::StatusOr<uint64_t> seq = writer.Append(payload);
    EXPECT_TRUE(seq.ok()) << seq.status();
  }
  return at;
}

void Overwrite(const std::string& path, uint64_t offset, const std::string& bytes) {
  const int fd = ::open(path.c_str(), O_WRONLY);
  ASSERT_GE(fd, 0) << path;
  ASSERT_EQ(::pwrite(fd, bytes.data(), bytes.size(), static_cast<off_t>(offset)),
            static_cast<ssize_t>(bytes.size()));
  ::close(fd);
}

std::string SegmentPath(const std::string& dir, uint64_t number) {
  return dir + "/" + RoundLogSegmentName(number);
}

// Reopens the log `read` found the end of, as recovery would, writes records until `until`, and checks that
// the log now reads 1 .. until - 1 (what was lost at the end is written again by the new writer).
void ExpectAReopenedWriterGoesOn(const RoundLogOptions& options, const Read& read, uint64_t until) {
  auto writer = RoundLogWriter::Open(options, read.end.last_segment + 1, read.end.next_sequence);
  ASSERT_TRUE(writer.ok()) << writer.status();
  AppendUntil(**writer, until);
  Read again = ReadAll(options.dir);
  ASSERT_TRUE(again.status.ok()) << again.status;
  EXPECT_EQ(again.sequences, Range(1, until - 1));
}

TEST(RoundLogTest, RecordsComeBackInOrderAcrossSegments) {
  TempDir tmp;
  auto writer = RoundLogWriter::Open(Options(tmp.path()), 1, 1);
  ASSERT_TRUE(writer.ok()) << writer.status();
  AppendUntil(**writer, 201);
  ASSERT_TRUE((*writer)->Sync().ok());
  EXPECT_GT((*writer)->segment(), 5u);
  EXPECT_EQ(std::filesystem::file_size(SegmentPath(tmp.path(), 1)), kSegmentBytes);

  Read read = ReadAll(tmp.path());
  ASSERT_TRUE(read.status.ok()) << read.status;
  EXPECT_EQ(read.sequences, Range(1, 200));
  EXPECT_EQ(read.end.next_sequence, 201u);
  EXPECT_EQ(read.end.last_segment, (*writer)->segment());

  Read tail = ReadAll(tmp.path(), 150);
  ASSERT_TRUE(tail.status.ok()) << tail.status;
  EXPECT_EQ(tail.sequences, Range(150, 200));
}

TEST(RoundLogTest, ATornLastRecordEndsTheLogAndAReopenedWriterGoesOnFromIt) {
  for (uint64_t cut :
       {uint64_t{0}, uint64_t{3}, uint64_t{4}, uint64_t{15}, uint64_t{23}, uint64_t{24}, uint64_t{30}}) {
    TempDir tmp;
    std::vector<std::pair<uint64_t, uint64_t>> at;
    {
      auto writer = RoundLogWriter::Open(Options(tmp.path()), 1, 1);
      ASSERT_TRUE(writer.ok()) << writer.status();
      at = AppendUntil(**writer, 41);
    }
    // Record 40 was torn: its bytes from `cut` on never reached the disk.
    const auto [segment, offset] = at.back();
    const uint64_t size = RoundLogWriter::kHeaderBytes + PayloadOf(40).size();
    ASSERT_LT(cut, size);
    Overwrite(SegmentPath(tmp.path(), segment), offset + cut, std::string(size - cut, '\0'));

    Read read = ReadAll(tmp.path());
    ASSERT_TRUE(read.status.ok()) << "cut " << cut << ": " << read.status;
    EXPECT_EQ(read.sequences, Range(1, 39));
    EXPECT_EQ(read.end.next_sequence, 40u);
    SCOPED_TRACE(testing::Message() << "cut " << cut);
    ExpectAReopenedWriterGoesOn(Options(tmp.path()), read, 46);
  }
}

// Options whose segments hold every record the tests below write.
RoundLogOptions OneSegmentOptions(const std::string& dir) {
  RoundLogOptions options = Options(dir);
  options.segment_bytes = 1 << 20;
  return options;
}

// Writes records 1 .. synced - 1, syncs, then writes up to until - 1 without a sync; returns where each went.
std::vector<std::pair<uint64_t, uint64_t>> WriteSyncedThen(const RoundLogOptions& options, uint64_t synced,
                                                           uint64_t until) {
  auto writer = RoundLogWriter::Open(options, 1, 1);
  EXPECT_TRUE(writer.ok()) << writer.status();
  if (!writer.ok()) return {};
  auto at = AppendUntil(**writer, synced);
  EXPECT_TRUE((*writer)->Sync().ok());
  const auto more = AppendUntil(**writer, until);
  at.insert(at.end(), more.begin(), more.end());
  return at;
}

TEST(RoundLogTest, AnUnsyncedRecordLostBeforeLaterOnesEndsTheLog) {
  // A power cut may keep a later unsynced write and lose an earlier one: records 7 and on were never synced,
  // so losing 7 ends the log after 6, and 8-10 (whose "synced through" says 5) are ignored.
  TempDir tmp;
  const RoundLogOptions options = OneSegmentOptions(tmp.path());
  const auto at = WriteSyncedThen(options, 6, 11);
  ASSERT_EQ(at.size(), 10u);
  Overwrite(SegmentPath(tmp.path(), 1), at[6].second + 9, "\x01");  // Record 7's segment number.
  Read read = ReadAll(tmp.path());
  ASSERT_TRUE(read.status.ok()) << read.status;
  EXPECT_EQ(read.sequences, Range(1, 6));
  EXPECT_EQ(read.end.next_sequence, 7u);
  ExpectAReopenedWriterGoesOn(options, read, 13);
}

TEST(RoundLogTest, ASyncedRecordDamagedIsDataLossEvenNearTheEnd) {
  TempDir tmp;
  const auto at = WriteSyncedThen(OneSegmentOptions(tmp.path()), 11, 13);  // 11 and 12 say 10 was synced.
  ASSERT_EQ(at.size(), 12u);
  Overwrite(SegmentPath(tmp.path(), 1), at[8].second, "\xde\xad\xbe\xef");  // Record 9's CRC.
  Read read = ReadAll(tmp.path());
  EXPECT_EQ(read.status.code(), absl::StatusCode::kDataLoss) << read.status;
  EXPECT_NE(read.status.message().find("record 9 was synced"), std::string::npos) << read.status;
  EXPECT_EQ(read.sequences, Range(1, 8));
}

TEST(RoundLogTest, DamageBeforeLaterRecordsIsDataLoss) {
  TempDir tmp;
  std::vector<std::pair<uint64_t, uint64_t>> at;
  {
    auto writer = RoundLogWriter::Open(Options(tmp.path()), 1, 1);
    ASSERT_TRUE(writer.ok()) << writer.status();
    at = AppendUntil(**writer, 61);
  }
  const auto [segment, offset] = at[19];                                    // Record 20.
  Overwrite(SegmentPath(tmp.path(), segment), offset, "\xde\xad\xbe\xef");  // Its CRC.
  Read read = ReadAll(tmp.path());
  EXPECT_EQ(read.status.code(), absl::StatusCode::kDataLoss) << read.status;
  EXPECT_NE(read.status.message().find("records were lost"), std::string::npos) << read.status;
  EXPECT_EQ(read.sequences, Range(1, 19));
}

TEST(RoundLogTest, AMissingSegmentOrALogThatStartsTooLateIsDataLoss) {
  TempDir tmp;
  uint64_t last_segment = 0;
  {
    auto writer = RoundLogWriter::Open(Options(tmp.path()), 1, 1);
    ASSERT_TRUE(writer.ok()) << writer.status();
    AppendUntil(**writer, 101);
    last_segment = (*writer)->segment();
  }
  ASSERT_GE(last_segment, 4u);
  std::filesystem::remove(SegmentPath(tmp.path(), 1));
  Read late = ReadAll(tmp.path(), 1);
  EXPECT_EQ(late.status.code(), absl::StatusCode::kDataLoss) << late.status;
  EXPECT_TRUE(late.sequences.empty());

  std::filesystem::remove(SegmentPath(tmp.path(), 3));
  Read gap = ReadAll(tmp.path(), 100);
  EXPECT_EQ(gap.status.code(), absl::StatusCode::kDataLoss) << gap.status;
  EXPECT_NE(gap.status.message().find("segment 3 is missing"), std::string::npos) << gap.status;
}

TEST(RoundLogTest, AReusedSegmentsStaleRecordsAreNotRead) {
  TempDir tmp;
  RoundLogOptions options = Options(tmp.path());
  options.spare_segments = 2;
  auto writer = RoundLogWriter::Open(options, 1, 1);
  ASSERT_TRUE(writer.ok()) << writer.status();
  AppendUntil(**writer, 81);
  const uint64_t current = (*writer)->segment();
  ASSERT_GE(current, 4u);
  // Everything below the current segment is retired: the last two stay as spares, the rest go.
  ASSERT_TRUE((*writer)->RetireBelow(current).ok());
  EXPECT_FALSE(std::filesystem::exists(SegmentPath(tmp.path(), current - 3)));
  EXPECT_TRUE(std::filesystem::exists(SegmentPath(tmp.path(), current - 2)));
  const uint64_t first_needed = 81;  // A snapshot covers what came before.

  // Fill the current segment and go one record into the next: a spare renamed, full of stale records.
  uint64_t next = first_needed;
  while ((*writer)->segment() == current) AppendUntil(**writer, ++next);
  EXPECT_FALSE(std::filesystem::exists(SegmentPath(tmp.path(), current - 2)));
  EXPECT_EQ(std::filesystem::file_size(SegmentPath(tmp.path(), current + 1)), kSegmentBytes);
  ASSERT_TRUE((*writer)->Sync().ok());

  Read read = ReadAll(tmp.path(), first_needed);
  ASSERT_TRUE(read.status.ok()) << read.status;
  EXPECT_EQ(read.sequences, Range(first_needed, next - 1));
  EXPECT_EQ(read.end.next_sequence, next);
}

// A writer reopened with retired_below takes its first segment from the spares (renamed, not written with
// zeros), deletes spares beyond spare_segments, and the log reads back as before.
TEST(RoundLogTest, AReopenedWriterReusesARetiredSegment) {
  TempDir tmp;
  RoundLogOptions options = Options(tmp.path());
  options.spare_segments = 2;
  uint64_t last = 0;
  uint64_t next = 0;
  {
    auto writer = RoundLogWriter::Open(options, 1, 1);
    ASSERT_TRUE(writer.ok()) << writer.status();
    AppendUntil(**writer, 81);
    last = (*writer)->segment();
    next = (*writer)->next_sequence();
    ASSERT_TRUE((*writer)->Sync().ok());
  }
  ASSERT_GE(last, 5u);
  // A snapshot covers every record written: segments 1 .. last are no longer needed. The two newest stay as
  // spares, and the older of them becomes the new writer's first segment.
  auto writer = RoundLogWriter::Open(options, last + 1, next, last + 1);
  ASSERT_TRUE(writer.ok()) << writer.status();
  for (uint64_t n = 1; n <= last - 2; ++n)
    EXPECT_FALSE(std::filesystem::exists(SegmentPath(tmp.path(), n))) << n;
  EXPECT_FALSE(std::filesystem::exists(SegmentPath(tmp.path(), last - 1)));  // Renamed to last + 1.
  EXPECT_TRUE(std::filesystem::exists(SegmentPath(tmp.path(), last)));
  EXPECT_EQ(std::filesystem::file_size(SegmentPath(tmp.path(), last + 1)), kSegmentBytes);
  AppendUntil(**writer, next + 2);
  ASSERT_TRUE((*writer)->Sync().ok());
  Read read = ReadAll(tmp.path(), next);
  ASSERT_TRUE(read.status.ok()) << read.status;
  EXPECT_EQ(read.sequences, Range(next, next + 1));
  EXPECT_EQ(read.end.next_sequence, next + 2);
}

TEST(RoundLogTest, OpenRefusesToWriteOverAnExistingSegmentAndBadArguments) {
  TempDir tmp;
  {
    auto writer = RoundLogWriter::Open(Options(tmp.path()), 1, 1);
    ASSERT_TRUE(writer.ok()) << writer.status();
    AppendUntil(**writer, 3);
  }
  EXPECT_EQ(RoundLogWriter::Open(Options(tmp.path()), 1, 3).status().code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_TRUE(RoundLogWriter::Open(Options(tmp.path()), 2, 3).ok());
  RoundLogOptions tiny = Options(tmp.Sub("tiny"));
  tiny.segment_bytes = 100;
  EXPECT_EQ(RoundLogWriter::Open(tiny, 1, 1).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(RoundLogWriter::Open(Options(tmp.Sub("zero")), 0, 1).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ReadAll(tmp.Sub("absent")).status.code(), absl::StatusCode::kNotFound);
}

TEST(RoundLogTest, ARecordLargerThanASegmentGetsASegmentOfItsOwn) {
  TempDir tmp;
  auto writer = RoundLogWriter::Open(Options(tmp.path()), 1, 1);
  ASSERT_TRUE(writer.ok()) << writer.status();
  AppendUntil(**writer, 3);
  const std::string big(3 * kSegmentBytes, 'x');
  const absl::StatusOr<uint64_t> appended = (*writer)->Append(big);
  ASSERT_TRUE(appended.ok()) << appended.status();
  EXPECT_EQ(*appended, 3u);
  EXPECT_EQ((*writer)->segment(), 2u);
  AppendUntil(**writer, 11);
  ASSERT_TRUE((*writer)->Sync().ok());
  std::vector<uint64_t> sequences;
  RoundLogEnd end;
  const absl::Status read = ReadRoundLog(
      tmp.path(), 1,
      [&](const RoundLogRecord& r) {
        EXPECT_EQ(r.payload, r.sequence == 3 ? big : PayloadOf(r.sequence)) << "record " << r.sequence;
        sequences.push_back(r.sequence);
        return absl::OkStatus();
      },
      &end);
  ASSERT_TRUE(read.ok()) << read;
  EXPECT_EQ(sequences, Range(1, 10));
}

TEST(RoundLogTest, RandomDamageNeverYieldsARecordThatWasNotWritten) {
  TempDir tmp;
  const std::string source = tmp.Sub("source");
  uint64_t segments = 0;
  {
    auto writer = RoundLogWriter::Open(Options(source), 1, 1);
    ASSERT_TRUE(writer.ok()) << writer.status();
    AppendUntil(**writer, 61);
    segments = (*writer)->segment();
  }
  std::mt19937_64 rng(5);
  int data_loss = 0;
  for (int round = 0; round < 150; ++round) {
    const std::string dir = tmp.Sub("copy" + std::to_string(round));
    std::filesystem::copy(source, dir);
    const int flips = 1 + static_cast<int>(rng() % 3);
    for (int k = 0; k < flips; ++k) {
      const uint64_t segment = 1 + rng() % segments;
      Overwrite(SegmentPath(dir, segment), rng() % kSegmentBytes, std::string(1, static_cast<char>(rng())));
    }
    if (rng() % 4 == 0) std::filesystem::resize_file(SegmentPath(dir, segments), rng() % kSegmentBytes);
    // ReadAll checks each record's payload; whatever is read is a run of records from the first.
    Read read = ReadAll(dir);
    ASSERT_TRUE(read.status.ok() || read.status.code() == absl::StatusCode::kDataLoss) << read.status;
    if (!read.status.ok()) ++data_loss;
    ASSERT_EQ(read.sequences, Range(1, read.sequences.size()));
    std::filesystem::remove_all(dir);
  }
  EXPECT_GT(data_loss, 0);  // Damage in the middle of the log is found, not skipped.
}

}  // namespace
}  // namespace lawn
