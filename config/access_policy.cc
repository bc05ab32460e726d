// The tokens file loader (config/access_policy.h). yaml-cpp exceptions become statuses here.
#include "config/access_policy.h"

#include <yaml-cpp/yaml.h>

#include <exception>
#include <fstream>
#include <iterator>
#include <set>

#include "absl/status/status.h"
#include "base/namespace_pattern.h"
#include "base/status_macros.h"

namespace lawn {
namespace {

constexpr struct {
  std::string_view name;
  uint32_t bit;
} kPermissions[] = {
    {"start", kPermStart},         {"delete", kPermDelete}, {"read", kPermRead},
    {"subscribe", kPermSubscribe}, {"observe", kPermObserve}, {"admin", kPermAdmin},
};

constexpr char kAllowedPermissions[] = "start, delete, read, subscribe, observe, admin";

std::string Line(const YAML::Node& node) { return "line " + std::to_string(node.Mark().line + 1); }

absl::Status Invalid(const std::string& where, const std::string& what) {
  return absl::InvalidArgumentError(where + ": " + what);
}

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

absl::StatusOr<Grant> ParseGrant(const YAML::Node& node, const std::string& where) {
  if (!node.IsMap()) return Invalid(where, "a grant is a map with namespaces and permissions");
  Grant grant;
  for (const auto& entry : node) {
    const std::string key = entry.first.IsScalar() ? entry.first.Scalar() : "";
    const YAML::Node& value = entry.second;
    if (key == "namespaces") {
      if (!value.IsSequence() || value.size() == 0) {
        return Invalid(where, "namespaces: a non-empty list of patterns, e.g. [\"billing\", \"billing-*\"]");
      }
      for (const auto& p : value) {
        const std::string pattern = p.IsScalar() ? p.Scalar() : "";
        if (std::string error = NamespacePatternError(pattern); !error.empty()) return Invalid(where, error);
        grant.namespaces.push_back(pattern);
      }
    } else if (key == "permissions") {
      if (!value.IsSequence() || value.size() == 0) {
        return Invalid(where, std::string("permissions: a non-empty list of ") + kAllowedPermissions);
      }
      for (const auto& p : value) {
        const std::string name = p.IsScalar() ? p.Scalar() : "";
        uint32_t bit = 0;
        for (const auto& known : kPermissions) {
          if (known.name == name) bit = known.bit;
        }
        if (bit == 0) {
          return Invalid(where, "permission '" + name + "' is unknown; allowed: " + kAllowedPermissions);
        }
        grant.permissions |= bit;
      }
    } else {
      return Invalid(where, "unknown key '" + key + "'; a grant has namespaces and permissions");
    }
  }
  if (grant.namespaces.empty() || grant.permissions == 0) {
    return Invalid(where, "a grant needs both namespaces and permissions");
  }
  if ((grant.permissions & kPermAdmin) != 0 &&
      (grant.namespaces.size() != 1 || grant.namespaces[0] != "*")) {
    return Invalid(where, "admin is server-wide: grant it only with namespaces: [\"*\"]");
  }
  return grant;
}

absl::StatusOr<Principal> ParsePrincipal(const YAML::Node& node, const std::string& where) {
  if (!node.IsMap()) return Invalid(where, "a token entry is a map with name, sha256 (or subject) and grants");
  Principal principal;
  bool has_grants = false;
  for (const auto& entry : node) {
    const std::string key = entry.first.IsScalar() ? entry.first.Scalar() : "";
    const YAML::Node& value = entry.second;
    if (key == "grants") {
      if (!value.IsSequence()) return Invalid(where, "grants: a list of {namespaces, permissions}");
      for (size_t i = 0; i < value.size(); ++i) {
        LAWN_ASSIGN_OR_RETURN(Grant grant,
                              ParseGrant(value[i], where + ", grant " + std::to_string(i + 1) + " (" +
                                                       Line(value[i]) + ")"));
        principal.grants.push_back(std::move(grant));
      }
      has_grants = true;
      continue;
    }
    if (!value.IsScalar()) return Invalid(where, key + ": expected one value");
    const std::string& text = value.Scalar();
    if (key == "name") {
      if (text.empty() || text.size() > 128) return Invalid(where, "name: 1..128 characters");
      principal.name = text;
    } else if (key == "sha256") {
      if (text.size() != 64) return Invalid(where, "sha256: 64 hex digits (the SHA-256 of the token)");
      for (size_t i = 0; i < 64; i += 2) {
        const int hi = HexValue(text[i]);
        const int lo = HexValue(text[i + 1]);
        if (hi < 0 || lo < 0) return Invalid(where, "sha256: 64 hex digits (the SHA-256 of the token)");
        principal.sha256.push_back(static_cast<char>(hi * 16 + lo));
      }
    } else if (key == "subject") {
      if (text.empty()) return Invalid(where, "subject: a client certificate's CN or SAN, not empty");
      principal.subject = text;
    } else {
      return Invalid(where, "unknown key '" + key + "'; a token entry has name, sha256 or subject, and grants");
    }
  }
  if (principal.name.empty()) return Invalid(where, "name is required");
  if (principal.sha256.empty() == principal.subject.empty()) {
    return Invalid(where, "give exactly one of sha256 (a token) or subject (a client certificate)");
  }
  if (!has_grants) return Invalid(where, "grants is required (use [] for an identity that may do nothing)");
  return principal;
}

absl::StatusOr<AccessPolicy> ParseOrThrow(std::string_view text) {
  const YAML::Node root = YAML::Load(std::string(text));
  if (!root.IsMap() || !root["tokens"] || !root["tokens"].IsSequence()) {
    return absl::InvalidArgumentError("expected a map with a `tokens:` list");
  }
  for (const auto& entry : root) {
    const std::string key = entry.first.IsScalar() ? entry.first.Scalar() : "";
    if (key != "tokens") return absl::InvalidArgumentError("unknown key '" + key + "'; the file has only tokens");
  }
  AccessPolicy policy;
  std::set<std::string> names;
  std::set<std::string> hashes;
  std::set<std::string> subjects;
  const YAML::Node& tokens = root["tokens"];
  for (size_t i = 0; i < tokens.size(); ++i) {
    const std::string where = "tokens entry " + std::to_string(i + 1) + " (" + Line(tokens[i]) + ")";
    LAWN_ASSIGN_OR_RETURN(Principal principal, ParsePrincipal(tokens[i], where));
    if (!names.insert(principal.name).second) return Invalid(where, "name '" + principal.name + "' is repeated");
    if (!principal.sha256.empty() && !hashes.insert(principal.sha256).second) {
      return Invalid(where, "sha256 is repeated (two entries for one token)");
    }
    if (!principal.subject.empty() && !subjects.insert(principal.subject).second) {
      return Invalid(where, "subject '" + principal.subject + "' is repeated (two entries for one certificate)");
    }
    policy.principals.push_back(std::move(principal));
  }
  return policy;
}

}  // namespace

std::string_view PermissionName(uint32_t permission) {
  for (const auto& known : kPermissions) {
    if ((permission & known.bit) != 0) return known.name;
  }
  return "none";
}

absl::StatusOr<AccessPolicy> ParseAccessPolicy(std::string_view yaml_text) {
  try {
    return ParseOrThrow(yaml_text);
  } catch (const YAML::ParserException& e) {
    return absl::InvalidArgumentError("YAML syntax error at line " + std::to_string(e.mark.line + 1) + ": " +
                                      e.msg);
  } catch (const std::exception& e) {
    return absl::InvalidArgumentError(std::string("cannot read the tokens file: ") + e.what());
  }
}

absl::StatusOr<AccessPolicy> LoadAccessPolicy(const std::string& path) {
  errno = 0;
  std::ifstream in(path, std::ios::binary);
  if (!in.is_open()) {
    return errno == ENOENT ? absl::NotFoundError(path + ": tokens file does not exist")
                           : absl::ErrnoToStatus(errno, path + ": cannot open the tokens file");
  }
  std::string text{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  if (in.bad()) return absl::ErrnoToStatus(errno, path + ": cannot read the tokens file");
  absl::StatusOr<AccessPolicy> policy = ParseAccessPolicy(text);
  if (!policy.ok()) return absl::Status(policy.status().code(), path + ": " + std::string(policy.status().message()));
  return policy;
}

}  // namespace lawn
