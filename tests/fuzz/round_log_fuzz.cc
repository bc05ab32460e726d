// Fuzz target: the round log's reader (storage/round_log.h, RoundLogScanner), on logs that the input
// describes (records, sync points, the stale records of reused segments) and then damages, and on raw bytes.
//
// A data dir can be damaged, and a crash or a power cut leaves torn and missing writes, so the reader must
// never crash or read outside a segment. Checked:
//   * it returns OK or DATA_LOSS only;
//   * it hands over records in sequence order from the first, each exactly as written (raw bytes: each a
//     view into its segment);
//   * an undamaged log is read whole, and End() continues after its last record;
//   * damage only after the last synced record (a power cut's work) never gives DATA_LOSS, and every synced
//     record is read.
#include <fuzzer/FuzzedDataProvider.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "storage/round_log.h"
#include "tests/fuzz/fuzz_check.h"

namespace lawn {
namespace {

std::string PayloadOf(uint64_t seq, size_t length) {
  std::string payload(length, static_cast<char>('a' + seq % 26));
  for (size_t i = 0; i < length && i < 8; ++i) payload[i] = static_cast<char>(seq >> (8 * i));
  return payload;
}

void Raw(FuzzedDataProvider& in) {
  std::vector<std::string> segments;
  while (segments.size() < 3 && in.remaining_bytes() > 0)
    segments.push_back(in.ConsumeRandomLengthString(4096));
  uint64_t expected = 1;
  const std::string* current = nullptr;
  RoundLogScanner scanner("raw", 1);
  auto on_record = [&](const RoundLogRecord& r) {
    FUZZ_CHECK(r.sequence == expected, "record %llu, expected %llu",
               static_cast<unsigned long long>(r.sequence), static_cast<unsigned long long>(expected));
    ++expected;
    FUZZ_CHECK(r.payload.data() >= current->data() &&
               r.payload.data() + r.payload.size() <= current->data() + current->size());
    return absl::OkStatus();
  };
  for (size_t i = 0; i < segments.size(); ++i) {
    current = &segments[i];
    const absl::Status status = scanner.Segment(1 + i, segments[i], on_record);
    FUZZ_CHECK(status.ok() || status.code() == absl::StatusCode::kDataLoss, "%s", status.ToString().c_str());
    if (!status.ok()) return;
  }
}

struct Written {
  uint64_t segment_index;
  uint64_t offset;
  uint64_t size;
  std::string payload;
};

void Built(FuzzedDataProvider& in) {
  const uint64_t segment_bytes = in.ConsumeIntegralInRange<uint64_t>(64, 2048);
  const int records = in.ConsumeIntegralInRange(0, 64);
  std::vector<std::string> segments(1);
  std::vector<Written> written;
  uint64_t synced_through = 0;
  uint64_t offset = 0;
  for (int k = 0; k < records; ++k) {
    const uint64_t seq = static_cast<uint64_t>(k) + 1;
    const size_t length = in.ConsumeIntegralInRange<size_t>(
        0, static_cast<size_t>(segment_bytes - RoundLogWriter::kHeaderBytes));
    const uint64_t size = RoundLogWriter::kHeaderBytes + length;
    if (offset + size > segment_bytes) {  // As the writer does: sync, then the next segment.
      synced_through = seq - 1;
      segments.emplace_back();
      offset = 0;
    }
    std::string payload = PayloadOf(seq, length);
    internal::AppendRoundLogRecord(&segments.back(), segments.size(), seq, synced_through, payload);
    written.push_back({segments.size() - 1, offset, size, std::move(payload)});
    offset += size;
    if (in.ConsumeBool()) synced_through = seq;  // A Sync after this record.
  }
  // The rest of each segment: zeros, or what a reused segment holds, records of its earlier number.
  for (size_t i = 0; i < segments.size(); ++i) {
    std::string& bytes = segments[i];
    if (in.ConsumeBool()) {
      std::string stale;
      while (stale.size() < segment_bytes) {
        internal::AppendRoundLogRecord(&stale, 1000 + i, stale.size() + 1, 0,
                                       std::string(stale.size() % 50, 's'));
      }
      bytes.append(
          stale.substr(bytes.size(), segment_bytes > bytes.size() ? segment_bytes - bytes.size() : 0));
    }
    bytes.resize(segment_bytes, '\0');
  }
  // Damage: bytes changed, or the last segment cut short.
  const size_t last = segments.size() - 1;
  uint64_t durable_end = 0;  // In the last segment, the end of the last synced record in it (0: none).
  for (const Written& w : written) {
    if (w.segment_index == last && &w - written.data() + 1 <= static_cast<long>(synced_through)) {
      durable_end = w.offset + w.size;
    }
  }
  bool damaged = false;
  bool only_after_sync = true;
  const int changes = in.ConsumeIntegralInRange(0, 4);
  for (int c = 0; c < changes; ++c) {
    const size_t index = in.ConsumeIntegralInRange<size_t>(0, last);
    std::string& bytes = segments[index];
    if (bytes.empty()) continue;
    if (index == last && in.ConsumeBool()) {
      const size_t cut = in.ConsumeIntegralInRange<size_t>(0, bytes.size());
      if (cut < durable_end) only_after_sync = false;
      bytes.resize(cut);
      damaged = true;
      continue;
    }
    const size_t at = in.ConsumeIntegralInRange<size_t>(0, bytes.size() - 1);
    const char value = static_cast<char>(in.ConsumeIntegral<uint8_t>());
    if (bytes[at] == value) continue;
    bytes[at] = value;
    damaged = true;
    if (index != last || at < durable_end) only_after_sync = false;
  }

  uint64_t next = 1;
  RoundLogScanner scanner("built", 1);
  auto on_record = [&](const RoundLogRecord& r) {
    FUZZ_CHECK(r.sequence == next && r.sequence <= written.size(), "record %llu, expected %llu",
               static_cast<unsigned long long>(r.sequence), static_cast<unsigned long long>(next));
    FUZZ_CHECK(r.payload == written[r.sequence - 1].payload, "record %llu's payload differs",
               static_cast<unsigned long long>(r.sequence));
    ++next;
    return absl::OkStatus();
  };
  absl::Status status;
  for (size_t i = 0; i < segments.size() && status.ok(); ++i)
    status = scanner.Segment(1 + i, segments[i], on_record);
  FUZZ_CHECK(status.ok() || status.code() == absl::StatusCode::kDataLoss, "%s", status.ToString().c_str());
  if (!damaged) {
    FUZZ_CHECK(status.ok() && next == written.size() + 1, "an undamaged log: %s, %llu of %zu records",
               status.ToString().c_str(), static_cast<unsigned long long>(next - 1), written.size());
    FUZZ_CHECK(scanner.End().next_sequence == written.size() + 1 &&
               scanner.End().last_segment == segments.size());
  }
  if (only_after_sync) {
    FUZZ_CHECK(status.ok(), "damage after the last sync only: %s", status.ToString().c_str());
    FUZZ_CHECK(next > synced_through, "%llu records read, %llu were synced",
               static_cast<unsigned long long>(next - 1), static_cast<unsigned long long>(synced_through));
  }
}

}  // namespace
}  // namespace lawn

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzedDataProvider in(data, size);
  if (in.ConsumeBool()) {
    lawn::Raw(in);
  } else {
    lawn::Built(in);
  }
  return 0;
}
