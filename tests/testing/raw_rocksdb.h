// Raw writes into a RocksDbTimerStore's data dir, beneath the store: for tests that need records the store
// would never write (a future format version, a corrupt record). Part of lawn_storage_testing
// (tests/testing/), which only test executables link.
//
// Thread-safety: a free function; see REQUIRES.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace lawn {

// Opens the RocksDB database at `path` (every column family, no lawn checks), writes one raw key/value into
// `column_family` with a synced write, and closes it; the column family, and the database, are created if
// missing. REQUIRES: no store is open on `path`. Errors: INTERNAL if RocksDB fails.
absl::Status PutRawForTest(const std::string& path, const std::string& column_family, std::string_view key,
                           std::string_view value);

// The key under which the store keeps a timer (the `pending` column family of storage/FORMAT.md).
std::string StoredTimerKeyForTest(int64_t deadline_unix_ns, std::string_view key);

// The names of the column families of the database at `path`, as RocksDB lists them.
std::vector<std::string> ColumnFamiliesForTest(const std::string& path);

// Every timer record of the store at `path`, read back by RocksDbTimerStore's own recovery: key -> the
// deadlines (unix ns) it is stored under, in the order read. REQUIRES: no store is open on `path`.
// Errors: the store's open or recovery status.
absl::StatusOr<std::map<std::string, std::vector<int64_t>>> StoredDeadlinesForTest(const std::string& path);

}  // namespace lawn
