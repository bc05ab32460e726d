// Memory probes for lawn_bench's bytes-per-timer figures (glibc / Linux only).
//
// HeapBytesInUse is what malloc has handed out and not had back: glibc's mallinfo2() uordblks (bytes in use
// in every arena, chunk headers included) plus hblkhd (blocks served by mmap, such as big vectors and hash
// tables). Differences of it count exactly the allocations made in between, whatever the allocator keeps
// cached. RssBytes is the resident set from /proc/self/statm, the operating system's view (pages touched),
// which also sees allocator slack and free memory not yet returned.
//
// Thread-safety: the probes may be called from any thread; they only read process-wide counters.
#pragma once

#include <cstddef>

namespace lawn {

size_t HeapBytesInUse();
size_t RssBytes();
// Returns free heap memory to the operating system (malloc_trim), so a following RSS delta is not hidden by
// memory freed earlier and reused.
void TrimHeap();

}  // namespace lawn
