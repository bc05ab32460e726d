#include "server/tls_files.h"

#include <fcntl.h>
#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <system_error>

#include "absl/time/time.h"
#include "server/metrics.h"
#include "spdlog/spdlog.h"

namespace lawn {

namespace {

// A TLS file is a few KiB; anything much larger is not one, and is not read whole into memory.
constexpr off_t kMaxFileBytes = 1 << 20;
constexpr char kDirName[] = "tls-active";

struct BioCloser {
  void operator()(BIO* b) const { BIO_free(b); }
};
struct X509Closer {
  void operator()(X509* x) const { X509_free(x); }
};
struct KeyCloser {
  void operator()(EVP_PKEY* k) const { EVP_PKEY_free(k); }
};
using Bio = std::unique_ptr<BIO, BioCloser>;
using Cert = std::unique_ptr<X509, X509Closer>;
using Key = std::unique_ptr<EVP_PKEY, KeyCloser>;

// OpenSSL's default would prompt on the terminal for an encrypted key; lawnd has no passphrase to give.
int NoPassphrase(char*, int, int, void*) { return -1; }

Bio MemBio(const std::string& pem) { return Bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size()))); }

absl::Status Bad(const std::string& key, const std::string& path, const std::string& what) {
  return absl::FailedPreconditionError("config key '" + key + "' (" + path + "): " + what);
}

std::string ErrnoText(int error) { return std::error_code(error, std::generic_category()).message(); }

// The first certificate of `pem`; every further PEM block must be a certificate too (gRPC loads the chain).
absl::StatusOr<Cert> ReadChain(const std::string& key, const std::string& path, const std::string& pem) {
  ERR_clear_error();
  Bio bio = MemBio(pem);
  Cert first(PEM_read_bio_X509(bio.get(), nullptr, NoPassphrase, nullptr));
  if (first == nullptr) {
    ERR_clear_error();
    return Bad(key, path, "no PEM certificate in the file");
  }
  while (Cert(PEM_read_bio_X509(bio.get(), nullptr, NoPassphrase, nullptr)) != nullptr) {
  }
  // The loop ends at the end of the data (no further BEGIN line) or at a block that does not parse.
  const unsigned long error = ERR_peek_last_error();
  ERR_clear_error();
  if (error != 0 && !(ERR_GET_LIB(error) == ERR_LIB_PEM && ERR_GET_REASON(error) == PEM_R_NO_START_LINE)) {
    return Bad(key, path, "a PEM block after the first certificate is not a valid certificate");
  }
  return first;
}

absl::StatusOr<std::string> ReadSmallFile(const std::string& key, const std::string& path) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Bad(key, path, "cannot open the file: " + ErrnoText(errno));
  std::string data;
  char buffer[16384];
  absl::Status status;
  while (true) {
    const ssize_t n = read(fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      status = Bad(key, path, "cannot read the file: " + ErrnoText(errno));
      break;
    }
    if (n == 0) break;
    data.append(buffer, static_cast<size_t>(n));
    if (data.size() > static_cast<size_t>(kMaxFileBytes)) {
      status = Bad(key, path, "the file is larger than 1 MiB: not a PEM certificate or key");
      break;
    }
  }
  close(fd);
  if (!status.ok()) return status;
  return data;
}

absl::StatusOr<TlsPem> ReadTlsFiles(const Options& options) {
  TlsPem pem;
  absl::StatusOr<std::string> cert = ReadSmallFile("tls.cert_file", options.tls_cert_file);
  if (!cert.ok()) return cert.status();
  pem.cert = std::move(*cert);
  absl::StatusOr<std::string> key = ReadSmallFile("tls.key_file", options.tls_key_file);
  if (!key.ok()) return key.status();
  pem.key = std::move(*key);
  if (!options.tls_client_ca_file.empty()) {
    absl::StatusOr<std::string> ca = ReadSmallFile("tls.client_ca_file", options.tls_client_ca_file);
    if (!ca.ok()) return ca.status();
    pem.ca = std::move(*ca);
  }
  return pem;
}

void WarnIfExpired(const Options& options, const TlsPem& pem) {
  Bio bio = MemBio(pem.cert);
  Cert cert(PEM_read_bio_X509(bio.get(), nullptr, NoPassphrase, nullptr));
  ERR_clear_error();
  if (cert != nullptr && X509_cmp_current_time(X509_get0_notAfter(cert.get())) < 0) {
    spdlog::warn("tls: the certificate in {} has expired: clients will refuse it until it is replaced",
                 options.tls_cert_file);
  }
}

absl::Status DirError(const std::string& what, const std::string& dir, const std::string& why) {
  return absl::FailedPreconditionError("tls: cannot " + what + " " + dir + " (config key data_dir; lawnd keeps its "
                                       "validated copy of the TLS files in <data_dir>/" + kDirName + "): " + why);
}

// Creates `path` with `contents`, mode 0600, modification time `mtime_s`.
absl::Status WriteNewFile(const std::string& path, const std::string& contents, int64_t mtime_s) {
  const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) return absl::InternalError("tls: cannot create " + path + ": " + ErrnoText(errno));
  size_t done = 0;
  int error = 0;
  while (done < contents.size() && error == 0) {
    const ssize_t n = write(fd, contents.data() + done, contents.size() - done);
    if (n < 0 && errno != EINTR) error = errno;
    if (n > 0) done += static_cast<size_t>(n);
  }
  const timespec times[2] = {{static_cast<time_t>(mtime_s), 0}, {static_cast<time_t>(mtime_s), 0}};
  if (error == 0 && futimens(fd, times) != 0) error = errno;
  if (close(fd) != 0 && error == 0) error = errno;
  if (error != 0) return absl::InternalError("tls: cannot write " + path + ": " + ErrnoText(error));
  return absl::OkStatus();
}

// Makes `root` (and data_dir) if missing, mode 0700, and takes an exclusive lock on it; returns the lock's fd.
absl::StatusOr<int> MakeAndLockRoot(const std::string& data_dir, const std::string& root) {
  std::error_code ec;
  if (!std::filesystem::exists(data_dir, ec)) {
    if (!std::filesystem::create_directories(data_dir, ec) && ec) return DirError("create", data_dir, ec.message());
    std::filesystem::permissions(data_dir, std::filesystem::perms::owner_all, ec);
  }
  if (mkdir(root.c_str(), 0700) != 0 && errno != EEXIST) return DirError("create", root, ErrnoText(errno));
  struct stat st;
  if (lstat(root.c_str(), &st) != 0) return DirError("create", root, ErrnoText(errno));
  if (!S_ISDIR(st.st_mode)) return DirError("use", root, "it exists and is not a directory");
  if (chmod(root.c_str(), 0700) != 0) return DirError("set the mode 0700 of", root, ErrnoText(errno));
  const int fd = open(root.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return DirError("open", root, ErrnoText(errno));
  if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
    const int error = errno;
    close(fd);
    return DirError("lock", root, error == EWOULDBLOCK ? "another lawnd uses the same data_dir" : ErrnoText(error));
  }
  // Generations of an earlier run: never read again (the lock says no other lawnd reads them).
  for (auto it = std::filesystem::directory_iterator(root, ec); !ec && it != std::filesystem::directory_iterator();
       it.increment(ec)) {
    std::error_code remove_ec;
    std::filesystem::remove_all(it->path(), remove_ec);
    if (remove_ec) {
      close(fd);
      return DirError("clean", root, it->path().string() + ": " + remove_ec.message());
    }
  }
  if (ec) {
    close(fd);
    return DirError("list", root, ec.message());
  }
  return fd;
}

}  // namespace

absl::Status CheckTlsPem(const Options& options, const TlsPem& pem) {
  absl::StatusOr<Cert> cert = ReadChain("tls.cert_file", options.tls_cert_file, pem.cert);
  if (!cert.ok()) return cert.status();
  Bio bio = MemBio(pem.key);
  Key key(PEM_read_bio_PrivateKey(bio.get(), nullptr, NoPassphrase, nullptr));
  ERR_clear_error();
  if (key == nullptr) {
    return Bad("tls.key_file", options.tls_key_file, "no PEM private key in the file (it must not be encrypted)");
  }
  if (X509_check_private_key(cert->get(), key.get()) != 1) {
    ERR_clear_error();
    return Bad("tls.key_file", options.tls_key_file,
               "the key does not match the certificate in " + options.tls_cert_file);
  }
  if (!options.tls_client_ca_file.empty()) {
    if (absl::StatusOr<Cert> ca = ReadChain("tls.client_ca_file", options.tls_client_ca_file, pem.ca); !ca.ok()) {
      return ca.status();
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<TlsFileGuard>> TlsFileGuard::Create(const Options& options, Metrics& metrics) {
  std::error_code ec;
  const std::string root = (std::filesystem::absolute(options.data_dir, ec) / kDirName).lexically_normal().string();
  if (ec) return DirError("find", options.data_dir, ec.message());
  // Versions are taken before the read, so a change racing with it is read again at the first look.
  const Versions versions = StatFiles(options);
  // The operator's files are checked before anything is created: a bad file is the clearer message.
  absl::StatusOr<TlsPem> pem = ReadTlsFiles(options);
  if (!pem.ok()) return pem.status();
  if (absl::Status s = CheckTlsPem(options, *pem); !s.ok()) return s;
  WarnIfExpired(options, *pem);
  absl::StatusOr<int> lock_fd = MakeAndLockRoot(options.data_dir, root);
  if (!lock_fd.ok()) return lock_fd.status();
  std::unique_ptr<TlsFileGuard> guard(new TlsFileGuard(options, metrics, root, *lock_fd));
  guard->seen_ = versions;
  if (absl::Status s = guard->Publish(*pem); !s.ok()) {
    return DirError("write to", root, std::string(s.message()));
  }
  guard->metrics_.tls_reload_failed().Set(0);
  guard->thread_ = std::thread([g = guard.get()] { g->Run(); });
  return guard;
}

TlsFileGuard::TlsFileGuard(const Options& options, Metrics& metrics, std::string root, int lock_fd)
    : options_(options), metrics_(metrics), root_(std::move(root)), lock_fd_(lock_fd) {}

TlsFileGuard::~TlsFileGuard() {
  stop_.Notify();
  if (thread_.joinable()) thread_.join();
  close(lock_fd_);
}

TlsFileGuard::Versions TlsFileGuard::StatFiles(const Options& options) {
  Versions versions;
  const std::string* paths[] = {&options.tls_cert_file, &options.tls_key_file, &options.tls_client_ca_file};
  for (size_t i = 0; i < versions.size(); ++i) {
    if (!paths[i]->empty()) versions[i] = FileVersion::Of(*paths[i]);
  }
  return versions;
}

absl::Status TlsFileGuard::Publish(const TlsPem& pem) {
  // gRPC compares whole-second modification times: each generation's are one past the previous one's.
  const int64_t now_s = absl::ToUnixSeconds(absl::Now());
  const int64_t mtime_s = std::max(now_s, last_mtime_s_ + 1);
  const std::string name = "gen-" + std::to_string(generation_ + 1);
  const std::string dir = root_ + "/" + name;
  if (mkdir(dir.c_str(), 0700) != 0) return absl::InternalError("tls: cannot create " + dir + ": " + ErrnoText(errno));
  absl::Status status = WriteNewFile(dir + "/tls.key", pem.key, mtime_s);
  if (status.ok()) status = WriteNewFile(dir + "/tls.crt", pem.cert, mtime_s);
  if (status.ok() && !options_.tls_client_ca_file.empty()) status = WriteNewFile(dir + "/ca.crt", pem.ca, mtime_s);
  const std::string tmp = root_ + "/current.tmp";
  if (status.ok() && unlink(tmp.c_str()) != 0 && errno != ENOENT) {
    status = absl::InternalError("tls: cannot remove " + tmp + ": " + ErrnoText(errno));
  }
  if (status.ok() && symlink(name.c_str(), tmp.c_str()) != 0) {
    status = absl::InternalError("tls: cannot create " + tmp + ": " + ErrnoText(errno));
  }
  // rename(2) replaces `current` atomically: every open through it sees the old or the new generation.
  if (status.ok() && rename(tmp.c_str(), (root_ + "/current").c_str()) != 0) {
    status = absl::InternalError("tls: cannot rename " + tmp + " to current: " + ErrnoText(errno));
  }
  if (!status.ok()) {
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
    return status;
  }
  if (generation_ > 0) {
    retired_.push_back({root_ + "/gen-" + std::to_string(generation_), std::chrono::steady_clock::now()});
  }
  ++generation_;
  last_mtime_s_ = mtime_s;
  active_ = pem;
  return absl::OkStatus();
}

void TlsFileGuard::Run() {
  while (!stop_.WaitForNotificationWithTimeout(absl::FromChrono(kPollInterval))) {
    Poll();
    RemoveRetired();
  }
}

void TlsFileGuard::Poll() {
  const Versions versions = StatFiles(options_);
  if (seen_.has_value() && versions == *seen_) {
    // Unchanged for a whole interval: a broken set is not a rotation in progress.
    if (unreported_.has_value()) {
      ReportBroken(*unreported_);
      unreported_.reset();
    }
    return;
  }
  seen_ = versions;
  unreported_.reset();
  absl::StatusOr<TlsPem> pem = ReadTlsFiles(options_);
  const absl::Status status = pem.ok() ? CheckTlsPem(options_, *pem) : pem.status();
  if (!status.ok()) {
    unreported_ = status;
    return;
  }
  if (*pem != active_) {
    if (absl::Status s = Publish(*pem); !s.ok()) {
      seen_.reset();  // Try again at the next look; warn once per distinct problem.
      if (s.message() != last_warning_) ReportBroken(s);
      return;
    }
    spdlog::info("tls: new certificate from {} checked and in use for new connections ({}/gen-{})",
                 options_.tls_cert_file, root_, generation_);
    WarnIfExpired(options_, *pem);
  } else if (failing_) {
    spdlog::info("tls: the files are valid again: {} is still in use", options_.tls_cert_file);
  }
  failing_ = false;
  last_warning_.clear();
  metrics_.tls_reload_failed().Set(0);
}

void TlsFileGuard::ReportBroken(const absl::Status& status) {
  failing_ = true;
  last_warning_ = std::string(status.message());
  metrics_.tls_reload_failed().Set(1);
  spdlog::warn("tls: not reloading the TLS files, new connections keep the previous certificate: {}",
               last_warning_);
}

void TlsFileGuard::RemoveRetired() {
  const auto now = std::chrono::steady_clock::now();
  while (!retired_.empty() && now - retired_.front().since >= kKeepRetired) {
    std::error_code ec;
    std::filesystem::remove_all(retired_.front().dir, ec);
    if (ec) spdlog::warn("tls: cannot remove {}: {}", retired_.front().dir, ec.message());
    retired_.pop_front();
  }
}

}  // namespace lawn
