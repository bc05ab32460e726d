// Namespace patterns, as the tokens file's grants and the rate_limits config section write them: an exact
// namespace ("billing"), a prefix ending in '*' ("billing-*" matches "billing-eu", "billing-"), or "*" (all).
// The empty namespace of a request means "default" and is matched as "default".
//
// Thread-safety: pure functions.
#pragma once

#include <string>
#include <string_view>

namespace lawn {

// Empty if `pattern` is well formed, else what is wrong with it (for an error message): it must be 1..65
// characters of [a-z0-9._-] with at most one '*', as its last character.
inline std::string NamespacePatternError(std::string_view pattern) {
  if (pattern.empty()) return "an empty namespace pattern; use a namespace, a prefix ending in *, or *";
  if (pattern.size() > 65) return "namespace pattern longer than 65 characters";
  for (size_t i = 0; i < pattern.size(); ++i) {
    const char c = pattern[i];
    if (c == '*' && i + 1 == pattern.size()) continue;
    const bool ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
    if (!ok) {
      return "namespace pattern '" + std::string(pattern) +
             "': use [a-z0-9._-] with an optional trailing * (e.g. billing, billing-*, *)";
    }
  }
  return "";
}

// True if `ns` (already validated; "" = "default") matches the well-formed `pattern`.
inline bool NamespaceMatches(std::string_view pattern, std::string_view ns) {
  if (ns.empty()) ns = "default";
  if (!pattern.empty() && pattern.back() == '*') {
    return ns.substr(0, pattern.size() - 1) == pattern.substr(0, pattern.size() - 1);
  }
  return pattern == ns;
}

}  // namespace lawn
