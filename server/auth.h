// Authentication and authorization of lawnd's calls (issue: security): who calls (a bearer token, compared by
// SHA-256 in constant time, or a verified client certificate's CN / SAN) and whether its grants allow a
// permission on a namespace. The policy comes from the tokens file (config/access_policy.h) and is reloaded
// when the file changes; a bad reload keeps the previous policy and logs why.
//
// With no tokens file, authentication is off: every caller is "anonymous" and allowed everything.
//
// Thread-safety: Authenticate and Caller are safe from any thread. A Caller holds the policy it was
// authenticated against, so a reload never frees a principal in use.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <thread>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "config/access_policy.h"
#include "grpcpp/grpcpp.h"

namespace lawn {

class Metrics;

// The authenticated caller of one call.
class Caller {
 public:
  Caller() = default;  // Anonymous: authentication off, allowed everything.
  Caller(std::shared_ptr<const AccessPolicy> policy, const Principal* principal)
      : policy_(std::move(policy)), principal_(principal) {}

  // True if a grant allows `permission` (one bit) on `ns` (the request's field; "" = "default").
  bool Allows(uint32_t permission, std::string_view ns) const;
  // The identity for logs and metrics: the tokens file's name, or "anonymous".
  std::string_view name() const { return principal_ != nullptr ? std::string_view(principal_->name) : "anonymous"; }

 private:
  std::shared_ptr<const AccessPolicy> policy_;
  const Principal* principal_ = nullptr;
};

class Authenticator {
 public:
  // Loads `tokens_file` ("" = authentication off) and, if set, starts watching it (checked every second).
  // Errors: the file cannot be read or parsed (lawnd refuses to start).
  static absl::StatusOr<std::unique_ptr<Authenticator>> Create(const std::string& tokens_file, Metrics* metrics);
  ~Authenticator();
  Authenticator(const Authenticator&) = delete;
  Authenticator& operator=(const Authenticator&) = delete;

  bool enabled() const { return !path_.empty(); }

  // Who made the call in `context`: UNAUTHENTICATED (counted, audited) when auth is on and the call has no
  // `authorization: Bearer <token>` metadata of a known token and no client certificate of a known subject.
  // `method` names the call in the audit line.
  absl::StatusOr<Caller> Authenticate(const grpc::ServerContextBase& context, std::string_view method) const;

  // PERMISSION_DENIED (counted, audited) unless `caller` may do `permission` on `ns`.
  absl::Status Authorize(const Caller& caller, uint32_t permission, std::string_view ns,
                         std::string_view method) const;

 private:
  Authenticator(std::string path, std::shared_ptr<const AccessPolicy> policy, Metrics* metrics);
  void WatchLoop();
  std::shared_ptr<const AccessPolicy> policy() const;

  const std::string path_;
  Metrics* const metrics_;
  mutable absl::Mutex mu_;
  std::shared_ptr<const AccessPolicy> policy_ ABSL_GUARDED_BY(mu_);
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  std::thread watcher_;
};

}  // namespace lawn
