// NameThisThread: names the calling thread for `top -H`, `ps -L`, perf and gdb (/proc/<pid>/task/<tid>/comm),
// so an operator can tell lawnd's shard workers, commit threads and the log's fold apart. Here, not in base/:
// it needs POSIX (the log store names its fold thread the same way, directly).
//
// Thread-safety: names the calling thread only.
#pragma once

#include <pthread.h>

#include <string>

namespace lawn {

// Linux keeps 15 bytes of a thread's name; a longer one is cut there rather than refused.
inline void NameThisThread(std::string name) {
  if (name.size() > 15) name.resize(15);
  pthread_setname_np(pthread_self(), name.c_str());
}

}  // namespace lawn
