// Test hooks into RocksDbTimerStore's file system. For tests only: lawnd never links lawn_storage_testing,
// and this is the only header outside rocksdb_timer_store.cc that includes <rocksdb/...>.
//
// FaultInjectionEnv simulates a power cut. It tracks, for every file RocksDB writes through it, how many
// bytes were made durable by Sync/Fsync (RangeSync does not count: sync_file_range persists no metadata),
// which files were created and which renames were made since their directory was last fsynced. After
// CutPower() nothing reaches the disk any more: writes to existing files, syncs, renames and deletions are
// dropped (and reported as OK: a machine that lost power never learns otherwise); files created after the
// cut are written for real so that RocksDB's running jobs can read back their output, and vanish at the
// restore. RestoreAfterPowerCut() then puts the files into the most pessimistic state a real disk could be
// in after the cut: unsynced tails cut off, unsynced renames undone (what they overwrote restored), files
// whose directory entry was never synced deleted. A sync still in progress when the power goes out counts
// for nothing; a directory sync covers only the entries created or renamed before it began. Deletions made
// before the cut are taken as durable (RocksDB only deletes files it no longer needs).
//
// A test: open the store with options.test_env = &env, write, env.CutPower(), destroy the store,
// env.RestoreAfterPowerCut(), reopen with the same env, assert that exactly the synced data is there.
//
// Thread-safety: FaultInjectionEnv is thread-safe (RocksDB calls it from its background threads).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "rocksdb/env.h"

namespace lawn {

// What RocksDbTimerStore takes from a test env. Defined inline so that lawn_storage does not depend on
// lawn_storage_testing.
class RocksDbTestEnv {
 public:
  RocksDbTestEnv() = default;
  RocksDbTestEnv(const RocksDbTestEnv&) = delete;
  RocksDbTestEnv& operator=(const RocksDbTestEnv&) = delete;
  virtual ~RocksDbTestEnv() = default;

  // The Env RocksDB uses instead of rocksdb::Env::Default(). Owned by this object.
  virtual rocksdb::Env* env() = 0;
};

namespace internal {
class FaultInjectionFs;
}  // namespace internal

enum class AppendFailure { kNone, kIoError, kNoSpace };

class FaultInjectionEnv final : public RocksDbTestEnv {
 public:
  FaultInjectionEnv();
  ~FaultInjectionEnv() override;

  rocksdb::Env* env() override { return env_.get(); }

  // The power goes out now (see the top of this file for what that means to later calls).
  void CutPower();

  // Arms a cut at the n-th file or directory sync from now (n >= 1): that sync and everything after it is
  // dropped, as if the power went out just before it. Lets a test cut power inside RocksDB's own sequences
  // (flush, compaction, MANIFEST and CURRENT updates) at a reproducible point.
  void CutPowerAtSync(uint64_t n);

  // False once the power is out (CutPower, or an armed cut reached), until RestoreAfterPowerCut.
  bool powered() const;

  // REQUIRES: CutPower() was called and no database is open on this env (destroy the store first).
  // Rewinds the files to what survived the cut, then restores power. INTERNAL if a file cannot be rewound.
  absl::Status RestoreAfterPowerCut();

  // Number of Sync/Fsync calls on files that reached the disk (not counting those after a cut).
  uint64_t file_syncs() const;

  // From now on every append to a file written through this env fails (until called with kNone), as a
  // failing disk (kIoError) or a full one (kNoSpace) would make it.
  void FailAppends(AppendFailure failure);

 private:
  std::shared_ptr<internal::FaultInjectionFs> fs_;
  std::unique_ptr<rocksdb::Env> env_;
};

// Opens the RocksDB database at `path` (every column family, no lawn checks), writes one raw key/value into
// `column_family` with a synced write, and closes it. For tests that need records the store would never
// write (a future format version, a corrupt record). REQUIRES: no store is open on `path`.
absl::Status PutRawForTest(const std::string& path, const std::string& column_family, std::string_view key,
                           std::string_view value);

}  // namespace lawn
