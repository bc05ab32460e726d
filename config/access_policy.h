// AccessPolicy: who may do what, as the tokens file (config key auth.tokens_file) says, and its loader.
//
// Tokens file format (README.md, Security):
//   tokens:
//     - name: billing-app                 # the identity in logs and metrics; unique
//       sha256: 9f86d0...                 # hex SHA-256 of the bearer token (the token itself is never stored)
//       # or  subject: billing-client     # a client certificate's CN or a DNS/URI SAN (mutual TLS)
//       grants:
//         - namespaces: ["billing", "billing-*"]   # names, a trailing-* prefix, or "*"
//           permissions: [start, delete, read, subscribe]   # also observe; admin only with namespaces ["*"]
//
// Like the rest of config/, yaml-cpp stays inside the .cc file.
//
// Thread-safety: plain values; the loader is a pure function of the file's text.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace lawn {

// Permissions, as bits of Grant::permissions.
enum Permission : uint32_t {
  kPermStart = 1u << 0,      // StartTimer, StartTimers (and replace).
  kPermDelete = 1u << 1,     // DeleteTimer, RescheduleTimer.
  kPermRead = 1u << 2,       // GetTimer, ListTimers, the namespace in GetStats.
  kPermSubscribe = 1u << 3,  // Work-sharing Subscribe and its acks.
  kPermObserve = 1u << 4,    // Observe-mode Subscribe.
  kPermAdmin = 1u << 5,      // AdminService, GetStats of every namespace. Server-wide.
};

// "start", "delete", ... for logs; the name of the lowest bit set.
std::string_view PermissionName(uint32_t permission);

struct Grant {
  std::vector<std::string> namespaces;  // Patterns (base/namespace_pattern.h).
  uint32_t permissions = 0;
};

struct Principal {
  std::string name;
  std::string sha256;   // 32 raw bytes of the token's SHA-256; empty for a certificate subject.
  std::string subject;  // Certificate CN or SAN; empty for a token.
  std::vector<Grant> grants;
};

struct AccessPolicy {
  std::vector<Principal> principals;
};

// Parses a tokens file's text. Errors: INVALID_ARGUMENT naming the entry (by position and line) and what is
// allowed: YAML syntax, unknown keys, a name missing or repeated, not exactly one of sha256 / subject, a
// sha256 that is not 64 hex digits or is repeated, an unknown permission, a bad namespace pattern, admin
// granted on anything but ["*"].
absl::StatusOr<AccessPolicy> ParseAccessPolicy(std::string_view yaml_text);

// Reads and parses the file at `path`; messages start with "<path>: ". Errors: NOT_FOUND, the errno code
// of a failed read, or as ParseAccessPolicy.
absl::StatusOr<AccessPolicy> LoadAccessPolicy(const std::string& path);

}  // namespace lawn
