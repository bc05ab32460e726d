#include "bench/memory_probe.h"

#include <malloc.h>
#include <unistd.h>

#include <cstdio>

namespace lawn {

size_t HeapBytesInUse() {
  const struct mallinfo2 info = mallinfo2();
  return info.uordblks + info.hblkhd;
}

size_t RssBytes() {
  // statm: size resident shared text lib data dt, in pages.
  FILE* f = std::fopen("/proc/self/statm", "r");
  if (f == nullptr) return 0;
  unsigned long size_pages = 0;
  unsigned long resident_pages = 0;
  const int read = std::fscanf(f, "%lu %lu", &size_pages, &resident_pages);
  std::fclose(f);
  if (read != 2) return 0;
  return static_cast<size_t>(resident_pages) * static_cast<size_t>(sysconf(_SC_PAGESIZE));
}

void TrimHeap() { malloc_trim(0); }

}  // namespace lawn
