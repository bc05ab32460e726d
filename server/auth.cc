#include "server/auth.h"

#include <openssl/crypto.h>
#include <openssl/sha.h>

#include <chrono>

#include "base/namespace_pattern.h"
#include "server/audit_log.h"
#include "server/metrics.h"
#include "spdlog/spdlog.h"

namespace lawn {

namespace {

constexpr auto kWatchPeriod = std::chrono::seconds(1);

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
  if (anonymous_) return true;
  if (principal_ == nullptr) return false;
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
  FileVersion version;
  if (!tokens_file.empty()) {
    version = FileVersion::Of(tokens_file);  // Before reading: a change meanwhile is seen by the watcher.
    absl::StatusOr<AccessPolicy> loaded = LoadAccessPolicy(tokens_file);
    if (!loaded.ok()) return loaded.status();
    policy = std::make_shared<const AccessPolicy>(std::move(*loaded));
    spdlog::info("auth: {} identities from {}", policy->principals.size(), tokens_file);
  }
  auto auth = std::unique_ptr<Authenticator>(new Authenticator(tokens_file, std::move(policy), metrics));
  if (!tokens_file.empty()) auth->watcher_ = std::thread([a = auth.get(), version] { a->WatchLoop(version); });
  return auth;
}

Authenticator::Authenticator(std::string path, std::shared_ptr<const AccessPolicy> policy, Metrics* metrics)
    : path_(std::move(path)), metrics_(metrics), policy_(std::move(policy)) {}

void Authenticator::SetReloadListener(std::function<void()> listener) {
  absl::MutexLock lock(&listener_mu_);
  listener_ = std::move(listener);
}

Authenticator::~Authenticator() {
  stop_.Notify();
  if (watcher_.joinable()) watcher_.join();
}

bool Authenticator::has_subjects() const {
  std::shared_ptr<const AccessPolicy> current = policy();
  if (current == nullptr) return false;
  for (const Principal& p : current->principals) {
    if (!p.subject.empty()) return true;
  }
  return false;
}

std::shared_ptr<const AccessPolicy> Authenticator::policy() const {
  absl::ReaderMutexLock lock(&mu_);
  return policy_;
}

void Authenticator::WatchLoop(FileVersion seen) {
  // The version whose reload failed (has_failed), so it is logged once, not every second.
  bool has_failed = false;
  FileVersion failed;
  while (!stop_.WaitForNotificationWithTimeout(absl::FromChrono(kWatchPeriod))) {
    const FileVersion now = FileVersion::Of(path_);
    std::shared_ptr<const AccessPolicy> fresh;
    if (!(now == seen) && !(has_failed && now == failed)) {
      absl::StatusOr<AccessPolicy> loaded = LoadAccessPolicy(path_);
      if (loaded.ok()) {
        fresh = std::make_shared<const AccessPolicy>(std::move(*loaded));
        seen = now;
        has_failed = false;
        spdlog::info("auth: reloaded {}: {} identities", path_, fresh->principals.size());
      } else {
        has_failed = true;
        failed = now;
        spdlog::warn("auth: cannot reload the tokens file; keeping the previous one: {}", loaded.status().ToString());
      }
    }
    if (fresh != nullptr) {
      {
        absl::MutexLock swap(&mu_);
        policy_ = std::move(fresh);
      }
      absl::MutexLock listener(&listener_mu_);
      if (listener_) listener_();  // Outside mu_: the listener authorizes (policy() takes mu_).
    }
  }
}

absl::StatusOr<Caller> Authenticator::Authenticate(const grpc::ServerContextBase& context,
                                                   std::string_view method) const {
  if (path_.empty()) return Caller::Anonymous();
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

absl::Status Authenticator::Recheck(const Caller& caller, uint32_t permission, std::string_view ns,
                                    std::string_view method) const {
  const Principal* old = caller.principal();
  if (path_.empty() || old == nullptr) return Authorize(caller, permission, ns, method);
  std::shared_ptr<const AccessPolicy> current = policy();
  for (const Principal& p : current->principals) {
    const bool same = !old->sha256.empty() ? p.sha256 == old->sha256 : (!p.subject.empty() && p.subject == old->subject);
    if (same) return Authorize(Caller(current, &p), permission, ns, method);
  }
  if (metrics_ != nullptr) metrics_->auth_denials("unauthenticated").Increment();
  AuditLog::Record(old->name, method, ns, "UNAUTHENTICATED");
  return absl::UnauthenticatedError("'" + old->name + "' was removed from the tokens file");
}

absl::Status Authenticator::Authorize(const Caller& caller, uint32_t permission, std::string_view ns,
                                      std::string_view method) const {
  if (caller.Allows(permission, ns)) {
    if (permission == kPermAdmin) AuditLog::Record(caller.name(), method, ns, "ALLOWED");
    return absl::OkStatus();
  }
  if (metrics_ != nullptr) metrics_->auth_denials("permission_denied").Increment();
  AuditLog::Record(caller.name(), method, ns, "PERMISSION_DENIED");
  // Printable: the namespace is the client's, unvalidated (it reaches debug logs through the message).
  std::string shown = ns.empty() ? "default" : std::string(ns.substr(0, 64));
  for (char& c : shown) {
    if (c < 0x21 || c > 0x7e) c = '?';
  }
  return absl::PermissionDeniedError("'" + std::string(caller.name()) + "' has no " +
                                     std::string(PermissionName(permission)) + " permission on namespace '" +
                                     shown + "'");
}

}  // namespace lawn
