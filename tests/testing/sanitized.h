// Whether this test binary is built with a sanitizer (CI's ASan+UBSan and TSan steps, .ci/sanitize). A few
// tests scale their load down under one: the instrumented build runs 3-10x slower, and a smaller load still
// exercises every path a memory or thread error needs; the test command's plain build runs the full load.
#pragma once

namespace lawn::testing {

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
inline constexpr bool kSanitized = true;  // GCC.
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
inline constexpr bool kSanitized = true;  // Clang.
#else
inline constexpr bool kSanitized = false;
#endif
#else
inline constexpr bool kSanitized = false;
#endif

}  // namespace lawn::testing
