// Spawn (tests/integration/spawn.h).
#include "tests/integration/spawn.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <sstream>
#include <string_view>
#include <thread>

namespace lawn::testing {

namespace {

std::vector<char*> Pointers(const std::vector<std::string>& strings) {
  std::vector<char*> out;
  out.reserve(strings.size() + 1);
  for (const std::string& s : strings) out.push_back(const_cast<char*>(s.c_str()));
  out.push_back(nullptr);
  return out;
}

}  // namespace

std::vector<std::string> CurrentEnvironment(const std::vector<std::string>& drop) {
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string_view entry(*e);
    const std::string_view name = entry.substr(0, entry.find('='));
    bool dropped = false;
    for (const std::string& d : drop) dropped = dropped || name == d;
    if (!dropped) env.emplace_back(entry);
  }
  return env;
}

pid_t Spawn(const std::vector<std::string>& argv, const std::vector<std::string>& env,
            const SpawnOutput& output, std::string* error) {
  const std::vector<char*> argv_pointers = Pointers(argv);
  const std::vector<char*> env_pointers = Pointers(env);
  const int flags = O_WRONLY | O_CREAT | (output.append ? O_APPEND : O_TRUNC);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, output.stdout_path.c_str(), flags, 0644);
  if (output.stderr_path == output.stdout_path) {
    posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
  } else {
    posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, output.stderr_path.c_str(), flags, 0644);
  }
  pid_t pid = -1;
  const int rc =
      posix_spawn(&pid, argv_pointers[0], &actions, nullptr, argv_pointers.data(), env_pointers.data());
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) {
    if (error != nullptr) *error = argv[0] + ": " + std::strerror(rc);
    return -1;
  }
  return pid;
}

ProgramResult RunProgram(const std::vector<std::string>& argv, const std::string& dir,
                         const std::string& name, std::chrono::milliseconds timeout) {
  ProgramResult result;
  const SpawnOutput output{dir + "/" + name + ".out", dir + "/" + name + ".err", /*append=*/false};
  pid_t pid = Spawn(argv, CurrentEnvironment(), output, &result.err);
  if (pid < 0) return result;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  int status = 0;
  while (waitpid(pid, &status, WNOHANG) != pid) {
    if (std::chrono::steady_clock::now() > deadline) {
      ::kill(pid, SIGKILL);
      waitpid(pid, nullptr, 0);
      pid = -1;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  if (pid > 0) result.code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  auto read = [](const std::string& path) {
    std::ifstream in(path);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
  };
  result.out = read(output.stdout_path);
  result.err = read(output.stderr_path);
  return result;
}

}  // namespace lawn::testing
