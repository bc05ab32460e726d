// FaultInjectionEnv: a RocksDB Env that simulates power cuts and failing disks, for tests of
// RocksDbTimerStore (and, through a test executable, of whatever opens one). Part of lawn_storage_testing
// (tests/testing/), which only test executables link: lawnd never does.
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
// A test: open the store with RocksDbTimerStore::Open(options, env.env()), write, env.CutPower(), destroy the
// store, env.RestoreAfterPowerCut(), reopen on the same env, assert that exactly the synced data is there.
//
// Thread-safety: FaultInjectionEnv is thread-safe (RocksDB calls it from its background threads).
#pragma once

#include <cstdint>
#include <memory>

#include "absl/status/status.h"
#include "rocksdb/env.h"

namespace lawn {

namespace internal {
class FaultInjectionFs;
}  // namespace internal

enum class AppendFailure { kNone, kIoError, kNoSpace };

class FaultInjectionEnv final {
 public:
  FaultInjectionEnv();
  FaultInjectionEnv(const FaultInjectionEnv&) = delete;
  FaultInjectionEnv& operator=(const FaultInjectionEnv&) = delete;
  ~FaultInjectionEnv();

  // The Env to open stores on, over the real file system. Owned by this object: destroy every store opened on
  // it first.
  rocksdb::Env& env() { return *env_; }

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

}  // namespace lawn
