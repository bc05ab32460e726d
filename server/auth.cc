#include "server/auth.h"

#include <openssl/crypto.h>
#include <openssl/sha.h>
#include <sys/stat.h>

#include <chrono>

#include "base/namespace_pattern.h"
#include "server/audit_log.h"
#include "server/metrics.h"
#include "spdlog/spdlog.h"

namespace lawn {

namespace {

constexpr auto kWatchPeriod = std::chrono::seconds(1);

// What identifies a version of the file: Kubernetes replaces a mounted Secret by swapping a symlink, which
// stat() follows, so the inode changes too.
struct FileVersion {
  dev_t dev = 0;
  ino_t ino = 0;
  off_t size = -1;
  int64_t mtime_ns = 0;
  bool operator==(const FileVersion&) const = default;
};

FileVersion VersionOf(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return {};
  return {st.st_dev, st.st_ino, st.st_size, int64_t{st.st_mtim.tv_sec} * 1'000'000'000 + st.st_mtim.tv_nsec};
}

// The token of "authorization: Bearer <token>", or empty.
std::string_view BearerToken(const grpc::ServerContextBase& context) {
  const auto& metadata = context.client_metadata();
  const auto it = metadata.find("authorization");
  if (it == metadata.end()) return {};
  const std::string_view value(it->second.data(), it->second.size());
  constexpr std::string_view kBearer = "bearer ";
  if (value.size() <= kBearer.size()) return {};
  for (size_t i = 0; i < kBearer.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(value[i])) != kBearer[i]) return {};
  }
  return value.substr(kBearer.size());
}

}  // namespace

bool Caller::Allows(uint32_t permission, std::string_view ns) const {
  if (principal_ == nullptr) return true;
  for (const Grant& grant : principal_->grants) {
    if ((grant.permissions & permission) != permission) continue;
    for (const std::string& pattern : grant.namespaces) {
      if (NamespaceMatches(pattern, ns)) return true;
    }
  }
  return false;
}

absl::StatusOr<std::unique_ptr<Authenticator>> Authenticator::Create(const std::string& tokens_file,
                                                                     Metrics* metrics) {
  std::shared_ptr<const AccessPolicy> policy;
  if (!tokens_file.empty()) {
    absl::StatusOr<AccessPolicy> loaded = LoadAccessPolicy(tokens_file);
    if (!loaded.ok()) return loaded.status();
    policy = std::make_shared<const AccessPolicy>(std::move(*loaded));
    spdlog::info("auth: {} identities from {}", policy->principals.size(), tokens_file);
  }
  return std::unique_ptr<Authenticator>(new Authenticator(tokens_file, std::move(policy), metrics));
}

Authenticator::Authenticator(std::string path, std::shared_ptr<const AccessPolicy> policy, Metrics* metrics)
    : path_(std::move(path)), metrics_(metrics), policy_(std::move(policy)) {
  if (!path_.empty()) watcher_ = std::thread([this] { WatchLoop(); });
}

Authenticator::~Authenticator() {
  {
    absl::MutexLock lock(&mu_);
    stop_ = true;
  }
  if (watcher_.joinable()) watcher_.join();
}

std::shared_ptr<const AccessPolicy> Authenticator::policy() const {
  absl::ReaderMutexLock lock(&mu_);
  return policy_;
}

void Authenticator::WatchLoop() {
  FileVersion seen = VersionOf(path_);
  FileVersion failed;  // The version whose reload failed, so it is logged once, not every second.
  absl::MutexLock lock(&mu_);
  while (!stop_) {
    mu_.AwaitWithTimeout(absl::Condition(&stop_), absl::FromChrono(kWatchPeriod));
    if (stop_) break;
    mu_.Unlock();
    const FileVersion now = VersionOf(path_);
    std::shared_ptr<const AccessPolicy> fresh;
    if (!(now == seen) && !(now == failed)) {
      absl::StatusOr<AccessPolicy> loaded = LoadAccessPolicy(path_);
      if (loaded.ok()) {
        fresh = std::make_shared<const AccessPolicy>(std::move(*loaded));
        seen = now;
        failed = {};
        spdlog::info("auth: reloaded {}: {} identities", path_, fresh->principals.size());
      } else {
        failed = now;
        spdlog::warn("auth: cannot reload the tokens file; keeping the previous one: {}", loaded.status().ToString());
      }
    }
    mu_.Lock();
    if (fresh != nullptr) policy_ = std::move(fresh);
  }
}

absl::StatusOr<Caller> Authenticator::Authenticate(const grpc::ServerContextBase& context,
                                                   std::string_view method) const {
  if (path_.empty()) return Caller();
  std::shared_ptr<const AccessPolicy> current = policy();
  const std::string_view token = BearerToken(context);
  if (!token.empty()) {
    unsigned char digest[SHA256_DIGEST_LENGTH];
    SHA256(reinterpret_cast<const unsigned char*>(token.data()), token.size(), digest);
    // Every entry is compared, in constant time each, so timing tells nothing about which hash matched.
    const Principal* found = nullptr;
    for (const Principal& p : current->principals) {
      if (p.sha256.size() == SHA256_DIGEST_LENGTH &&
          CRYPTO_memcmp(p.sha256.data(), digest, SHA256_DIGEST_LENGTH) == 0) {
        found = &p;
      }
    }
    if (found != nullptr) return Caller(std::move(current), found);
  } else if (std::shared_ptr<const grpc::AuthContext> auth = context.auth_context();
             auth != nullptr && auth->IsPeerAuthenticated()) {
    // gRPC marks the peer authenticated only after verifying its certificate against tls.client_ca_file.
    for (const char* property : {"x509_common_name", "x509_subject_alternative_name"}) {
      for (const grpc::string_ref& value : auth->FindPropertyValues(property)) {
        const std::string_view subject(value.data(), value.size());
        for (const Principal& p : current->principals) {
          if (!p.subject.empty() && p.subject == subject) return Caller(std::move(current), &p);
        }
      }
    }
  }
  if (metrics_ != nullptr) metrics_->auth_denials("unauthenticated").Increment();
  AuditLog::Record(token.empty() ? "none" : "unknown-token", method, "", "UNAUTHENTICATED");
  return absl::UnauthenticatedError(
      token.empty() ? "no credentials: send metadata `authorization: Bearer <token>` (or a client certificate "
                      "that the tokens file names)"
                    : "unknown token: the tokens file has no entry with its SHA-256");
}

absl::Status Authenticator::Authorize(const Caller& caller, uint32_t permission, std::string_view ns,
                                      std::string_view method) const {
  if (caller.Allows(permission, ns)) {
    if (permission == kPermAdmin) AuditLog::Record(caller.name(), method, ns, "ALLOWED");
    return absl::OkStatus();
  }
  if (metrics_ != nullptr) metrics_->auth_denials("permission_denied").Increment();
  AuditLog::Record(caller.name(), method, ns, "PERMISSION_DENIED");
  const std::string shown = ns.empty() ? "default" : std::string(ns.substr(0, 64));
  return absl::PermissionDeniedError("'" + std::string(caller.name()) + "' has no " +
                                     std::string(PermissionName(permission)) + " permission on namespace '" +
                                     shown + "'");
}

}  // namespace lawn
