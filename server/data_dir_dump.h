// DumpDataDir: every record a lawnd data dir holds (either engine), as JSON lines, for operators and support:
// what a restart would recover, read without a lawnd (the lawn_dump tool; RocksDB's ldb does not read
// storage format 3, and format 2's records are binary).
//
// Each line is one object with one key: {"pending": Timer}, {"outbox": Expiration} (fired, not yet acked) or
// {"staged": Expiration} (a cluster member's staging area; deliveryId is the staging id), the values in the
// proto3 JSON of lawn.v1 with every field present, as `lawnctl --json` prints them (ids and payloads base64,
// times RFC 3339). Pending timers come by deadline, then key; outbox entries by delivery id.
//
// The dir is read without being changed (no file created, written or removed: LogTimerStore::
// ReadWithoutOpening, RocksDbStoreOptions::read_only), so a copy on read-only media or a checkpoint can be
// dumped as it is. A shared hold of the dir's lock file meanwhile refuses the data dir of a running lawnd
// (dump a checkpoint of it instead) and keeps a lawnd from starting on it during the dump.
//
// Thread-safety: none needed (concurrent dumps of one dir share its lock).
#pragma once

#include <cstdint>
#include <ostream>
#include <string>

#include "absl/status/statusor.h"

namespace lawn {

struct DumpCounts {
  uint64_t pending = 0;
  uint64_t outbox = 0;
  uint64_t staged = 0;
};

// Writes every record of the store in `dir` to `out`. NOT_FOUND if `dir` holds no lawn store;
// FAILED_PRECONDITION if a migration is under way there (start lawnd to finish it) or it holds storage
// format version 1 (a lawnd start migrates it); UNAVAILABLE if a lawnd has it open; the stores' read errors
// (DATA_LOSS for a damaged record).
absl::StatusOr<DumpCounts> DumpDataDir(const std::string& dir, std::ostream& out);

}  // namespace lawn
