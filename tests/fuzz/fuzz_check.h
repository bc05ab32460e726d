// FUZZ_CHECK: the fuzz targets' invariant check. A failed check prints the condition and where, then aborts,
// which libFuzzer reports as a crash and saves the input that caused it.
//
// Thread-safety: the targets are single-threaded.
#pragma once

#include <cstdio>
#include <cstdlib>

#define FUZZ_CHECK(cond, ...)                                                               \
  do {                                                                                      \
    if (!(cond)) {                                                                          \
      std::fprintf(stderr, "%s:%d: FUZZ_CHECK failed: %s\n  ", __FILE__, __LINE__, #cond); \
      std::fprintf(stderr, "" __VA_ARGS__);                                                 \
      std::fprintf(stderr, "\n");                                                           \
      std::abort();                                                                         \
    }                                                                                       \
  } while (false)
