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

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <thread>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "config/access_policy.h"
#include "grpcpp/grpcpp.h"
#include "server/file_version.h"

namespace lawn {

class Metrics;

// The authenticated caller of one call.
class Caller {
 public:
  Caller() = default;  // Nobody: allowed nothing.
  // The caller when authentication is off: allowed everything.
  static Caller Anonymous() {
    Caller c;
    c.anonymous_ = true;
    return c;
  }
  Caller(std::shared_ptr<const AccessPolicy> policy, const Principal* principal)
      : policy_(std::move(policy)), principal_(principal) {}

  // True if a grant allows `permission` (one bit) on `ns` (the request's field; "" = "default").
  bool Allows(uint32_t permission, std::string_view ns) const;
  // The identity for logs and metrics: the tokens file's name, or "anonymous".
  std::string_view name() const {
    return principal_ != nullptr ? std::string_view(principal_->name) : anonymous_ ? "anonymous" : "nobody";
  }
  const Principal* principal() const { return principal_; }

 private:
  std::shared_ptr<const AccessPolicy> policy_;
  const Principal* principal_ = nullptr;
  bool anonymous_ = false;
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
  // True if the current tokens file has an entry by certificate subject.
  bool has_subjects() const;

  // Who made the call in `context`: UNAUTHENTICATED (counted, audited) when auth is on and the call has no
  // `authorization: Bearer <token>` metadata of a known token and no client certificate of a known subject.
  // `method` names the call in the audit line.
  absl::StatusOr<Caller> Authenticate(const grpc::ServerContextBase& context, std::string_view method) const;

  // PERMISSION_DENIED (counted, audited) unless `caller` may do `permission` on `ns`.
  absl::Status Authorize(const Caller& caller, uint32_t permission, std::string_view ns,
                         std::string_view method) const;

  // Authorize against the current policy for a caller authenticated earlier (an open Subscribe stream):
  // UNAUTHENTICATED if its token or subject is no longer in the tokens file.
  absl::Status Recheck(const Caller& caller, uint32_t permission, std::string_view ns, std::string_view method) const;

  // Called (on the watcher thread) after each successful reload, e.g. to recheck open streams. nullptr
  // removes it; once SetReloadListener returns, the previous listener is not running and will not run.
  void SetReloadListener(std::function<void()> listener);

 private:
  Authenticator(std::string path, std::shared_ptr<const AccessPolicy> policy, Metrics* metrics);
  void WatchLoop(FileVersion seen);
  std::shared_ptr<const AccessPolicy> policy() const;

  const std::string path_;
  Metrics* const metrics_;
  mutable absl::Mutex mu_;
  std::shared_ptr<const AccessPolicy> policy_ ABSL_GUARDED_BY(mu_);
  absl::Notification stop_;
  absl::Mutex listener_mu_;  // Held while the listener runs, so that clearing it waits for a running call.
  std::function<void()> listener_ ABSL_GUARDED_BY(listener_mu_);
  std::thread watcher_;
};

}  // namespace lawn
