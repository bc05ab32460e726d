// CPU time consumed by this process and by another one (lawnd), so a run on a shared, noisy machine can be
// reported as CPU microseconds per timer as well as timers per second.
//
// Thread-safety: pure functions reading the kernel's accounting.
#pragma once

#include <sys/types.h>

#include <optional>

namespace lawn {

// User + system CPU seconds of this process (all threads so far).
double SelfCpuSeconds();

// User + system CPU seconds of process `pid` from /proc/PID/stat (clock-tick resolution, 10 ms);
// nullopt if it cannot be read.
std::optional<double> ProcessCpuSeconds(pid_t pid);

}  // namespace lawn
