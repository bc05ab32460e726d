// Raw writes into a RocksDbTimerStore's data dir, beneath the store: for tests that need records the store
// would never write (a future format version, a corrupt record). Part of lawn_storage_testing
// (tests/testing/), which only test executables link.
//
// Thread-safety: a free function; see REQUIRES.
#pragma once

#include <string>
#include <string_view>

#include "absl/status/status.h"

namespace lawn {

// Opens the RocksDB database at `path` (every column family, no lawn checks), writes one raw key/value into
// `column_family` with a synced write, and closes it. REQUIRES: no store is open on `path`.
// Errors: NOT_FOUND if there is no such column family; INTERNAL if RocksDB fails.
absl::Status PutRawForTest(const std::string& path, const std::string& column_family, std::string_view key,
                           std::string_view value);

}  // namespace lawn
