// InvariantBroken: what the engine's CheckInvariants methods do when a structure disagrees with itself (the
// tests call them after operations): name the structure and the broken rule on stderr and abort, so a test or
// fuzz run stops at the first inconsistency rather than at a later symptom.
#pragma once

#include <cstdio>
#include <cstdlib>

namespace lawn {

[[noreturn]] inline void InvariantBroken(const char* structure, const char* what) {
  std::fprintf(stderr, "lawn: %s invariant broken: %s\n", structure, what);
  std::abort();
}

}  // namespace lawn
