// CPU time and context switches of this process and of another one (lawnd), so a run on a shared, noisy
// machine can be reported as CPU microseconds per timer as well as timers per second.
//
// Thread-safety: pure functions reading the kernel's accounting.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>

namespace lawn {

// User + system CPU seconds of this process (all threads so far).
double SelfCpuSeconds();

// User + system CPU seconds of process `pid` from /proc/PID/stat (clock-tick resolution, 10 ms);
// nullopt if it cannot be read.
std::optional<double> ProcessCpuSeconds(pid_t pid);

// Context switches (voluntary + involuntary) summed over the threads process `pid` has now, from
// /proc/PID/task/*/status; nullopt if they cannot be read. Threads that already exited are not counted.
std::optional<uint64_t> ProcessContextSwitches(pid_t pid);

}  // namespace lawn
