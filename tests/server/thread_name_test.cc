// NameThisThread (server/thread_name.h): the name reaches /proc (what top -H, ps -L and perf show), cut to
// the 15 bytes Linux keeps.
#include "server/thread_name.h"

#include <sys/syscall.h>
#include <unistd.h>

#include <fstream>
#include <string>
#include <thread>

#include "gtest/gtest.h"

namespace lawn {
namespace {

// The calling thread's name as /proc shows it.
std::string ProcName() {
  std::ifstream comm("/proc/self/task/" + std::to_string(::syscall(SYS_gettid)) + "/comm");
  std::string name;
  std::getline(comm, name);
  return name;
}

TEST(ThreadNameTest, NamesTheCallingThreadOnly) {
  const std::string before = ProcName();
  std::string named;
  std::thread([&] {
    NameThisThread("lawn-shard-3");
    named = ProcName();
  }).join();
  EXPECT_EQ(named, "lawn-shard-3");
  EXPECT_EQ(ProcName(), before);
}

TEST(ThreadNameTest, ALongNameIsCutAtFifteenBytes) {
  std::string named;
  std::thread([&] {
    NameThisThread("lawn-commit-1234567");
    named = ProcName();
  }).join();
  EXPECT_EQ(named, "lawn-commit-123");
}

}  // namespace
}  // namespace lawn
