// TlsFileGuard: lawnd's validated copy of the TLS files, the only files gRPC's certificate provider reads.
//
// Why: gRPC's FileWatcherCertificateProvider (1.51) re-reads the files it is given every second; when they are
// broken (a key that does not match the certificate, e.g. half-way through a rotation done with two renames; a
// garbage certificate; a missing file) it drops its handshaker factory and every new handshake fails, while
// health stays SERVING. So gRPC never sees the operator's files (tls.cert_file, tls.key_file,
// tls.client_ca_file): it reads copies under `<data_dir>/tls-active`, which this class replaces only with files
// it has read and checked with OpenSSL.
//
// Layout of `<data_dir>/tls-active` (mode 0700, files 0600, owned by one lawnd: an flock on the directory):
//   gen-N/tls.crt, gen-N/tls.key, gen-N/ca.crt   one generation, written once, never changed
//   current -> gen-N                              the generation gRPC reads (key_path() etc. go through it)
// A new generation is published by renaming a new symlink over `current`, so key and certificate change
// together. gRPC reads the key and the certificate with two opens, but stats both before and after and retries
// when a modification time (whole seconds) changed; each generation's files get a modification time one
// second past the previous generation's, so a swap between its two reads is always seen. A replaced
// generation is removed kKeepRetired after the swap (a read of it may still be under way).
//
// The watcher thread stats the operator's files every second (device, inode, size, mtime in ns: a Kubernetes
// Secret update swaps a symlink, and stat follows it). On a change it reads and checks them; a valid set is
// published; a broken one is ignored (the previous pair keeps serving) and, if it is still there at the next
// look (not a rotation in progress), logged once with the file and the reason and shown by the gauge
// lawn_tls_reload_failed (1 until a valid set is on disk again).
//
// Thread-safety: Create and the destructor are called from one thread; everything else happens on the
// watcher thread, which owns all mutable state.
#pragma once

#include <sys/types.h>

#include <array>
#include <chrono>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/notification.h"
#include "config/options.h"
#include "server/file_version.h"

namespace lawn {

class Metrics;

// The PEM contents of the TLS files; ca is "" without tls.client_ca_file.
struct TlsPem {
  std::string cert;
  std::string key;
  std::string ca;
  bool operator==(const TlsPem&) const = default;
};

// Checks what gRPC will need: the certificate chain parses, the key parses (unencrypted) and belongs to the
// first certificate, the CA file holds certificates. Errors: FAILED_PRECONDITION "config key '<key>'
// (<path>): <what is wrong>". An expired certificate is not an error (a rotation can fix it): the caller warns.
absl::Status CheckTlsPem(const Options& options, const TlsPem& pem);

class TlsFileGuard {
 public:
  // How often the operator's files are looked at.
  static constexpr std::chrono::seconds kPollInterval{1};
  // How long a replaced generation stays on disk after `current` stopped pointing at it.
  static constexpr std::chrono::seconds kKeepRetired{10};

  // Reads and checks the operator's files, creates `<data_dir>/tls-active` (and data_dir) if missing, removes
  // what an earlier run left there, publishes the files as the first generation and starts the watcher.
  // REQUIRES: options.tls_cert_file and options.tls_key_file set. `metrics` must outlive the guard.
  // Errors: FAILED_PRECONDITION naming the config key and the file, or the directory that cannot be made.
  static absl::StatusOr<std::unique_ptr<TlsFileGuard>> Create(const Options& options, Metrics& metrics);

  // Stops the watcher. The published files stay, so a gRPC server still running can keep reading them.
  ~TlsFileGuard();
  TlsFileGuard(const TlsFileGuard&) = delete;
  TlsFileGuard& operator=(const TlsFileGuard&) = delete;

  // The paths to give gRPC's FileWatcherCertificateProvider (client_ca_path() is "" without a client CA).
  std::string key_path() const { return root_ + "/current/tls.key"; }
  std::string cert_path() const { return root_ + "/current/tls.crt"; }
  std::string client_ca_path() const { return options_.tls_client_ca_file.empty() ? "" : root_ + "/current/ca.crt"; }
  const std::string& directory() const { return root_; }

 private:
  using Versions = std::array<FileVersion, 3>;  // cert, key, client CA
  struct Retired {
    std::string dir;
    std::chrono::steady_clock::time_point since;
  };

  TlsFileGuard(const Options& options, Metrics& metrics, std::string root, int lock_fd);

  static Versions StatFiles(const Options& options);
  // Writes `pem` as a new generation and points `current` at it. On error nothing visible to gRPC changed.
  absl::Status Publish(const TlsPem& pem);
  void Run();
  void Poll();
  void ReportBroken(const absl::Status& status);
  // Removes the generations replaced at least kKeepRetired ago.
  void RemoveRetired();

  const Options options_;
  Metrics& metrics_;
  const std::string root_;
  const int lock_fd_;
  // Watcher-thread state (and Create's before the thread starts).
  TlsPem active_;                          // What `current` holds.
  std::optional<Versions> seen_;            // The versions last read (none: read at the next look).
  std::optional<absl::Status> unreported_;  // seen_ was broken; reported if still there at the next look.
  std::string last_warning_;
  bool failing_ = false;
  uint64_t generation_ = 0;
  int64_t last_mtime_s_ = 0;  // Modification time given to the current generation's files.
  std::deque<Retired> retired_;
  absl::Notification stop_;
  std::thread thread_;
};

}  // namespace lawn
