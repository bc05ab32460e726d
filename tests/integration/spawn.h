// Spawn: starts a child process from a test that has other threads running (gRPC, load, subscribers).
//
// Why not fork() + exec: between fork and exec the child may only call async-signal-safe functions. Building
// an argv vector there allocates, and under ASan the allocator's locks are not reset in the child: if another
// thread held one at the fork, the child hangs before exec and prints nothing (a CI run lost a restarted
// lawnd that way). posix_spawn opens the output files and execs without running any code of ours in the
// child.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <string>
#include <vector>

namespace lawn::testing {

// This process's environment, one "NAME=value" per entry, without the variables named in `drop`.
std::vector<std::string> CurrentEnvironment(const std::vector<std::string>& drop = {});

struct SpawnOutput {
  std::string stdout_path;
  std::string stderr_path;  // May equal stdout_path: both then share one open file.
  bool append = true;       // Otherwise the files are truncated.
};

// Starts argv[0] (a path, not looked up on $PATH) with `argv` and `env`, its stdout and stderr going to
// `output`. Returns the child's pid, or -1 (with errno's text in *error) if it could not be started.
pid_t Spawn(const std::vector<std::string>& argv, const std::vector<std::string>& env,
            const SpawnOutput& output, std::string* error);

struct ProgramResult {
  int code =
      -1;  // Exit status (128 + signal if killed by one); -1 if it could not start or ran past its time.
  std::string out;
  std::string err;
};

// Runs argv[0] with `argv` in this process's environment until it exits (killed after `timeout`), its stdout
// and stderr kept in files `dir`/`name`.out and .err.
ProgramResult RunProgram(const std::vector<std::string>& argv, const std::string& dir,
                         const std::string& name, std::chrono::milliseconds timeout);

}  // namespace lawn::testing
