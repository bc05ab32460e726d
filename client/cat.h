// Cat: concatenates text (std::string, std::string_view, absl::string_view, C strings) and numbers. Debian's
// Abseil 20220623 has its own absl::string_view, so absl::StrCat rejects std::string_view; this does not.
//
// Thread-safety: pure function.
#pragma once

#include <string>
#include <string_view>
#include <type_traits>

#include "absl/strings/string_view.h"

namespace lawn::internal {

template <typename T>
void AppendPart(std::string& out, const T& part) {
  if constexpr (std::is_same_v<T, bool>) {
    out += part ? "true" : "false";
  } else if constexpr (std::is_arithmetic_v<T>) {
    out += std::to_string(part);
  } else if constexpr (std::is_same_v<T, absl::string_view>) {
    out.append(part.data(), part.size());
  } else {
    out += std::string_view(part);
  }
}

template <typename... Parts>
std::string Cat(const Parts&... parts) {
  std::string out;
  (AppendPart(out, parts), ...);
  return out;
}

}  // namespace lawn::internal
