// Transparent id hashing for the baselines' indexes: the same absl::Hash<std::string_view> the engine's index
// uses, over std::string or std::string_view keys alike. (Debian's Abseil does not alias absl::string_view to
// std::string_view, so its default string hasher cannot take a std::string_view; these functors can.)
//
// Thread-safety: stateless.
#pragma once

#include <cstddef>
#include <string_view>

#include "absl/hash/hash.h"

namespace lawn {

struct IdHash {
  using is_transparent = void;
  size_t operator()(std::string_view id) const { return absl::Hash<std::string_view>()(id); }
};

struct IdEq {
  using is_transparent = void;
  bool operator()(std::string_view a, std::string_view b) const { return a == b; }
};

}  // namespace lawn
