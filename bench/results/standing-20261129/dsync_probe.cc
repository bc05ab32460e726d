#include <fcntl.h>
#include <sys/resource.h>
#include <sys/uio.h>
#include <unistd.h>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>
// A probe, not part of the build: the CPU and wall time of one synced 4 KiB append, pwrite + fdatasync
// against pwritev2(RWF_DSYNC), and O_DIRECT writes (O_DSYNC, or + fdatasync) of an aligned buffer, on a
// preallocated (zero-written) file, as the round log appends.
static double Cpu() { rusage u; getrusage(RUSAGE_SELF, &u); return u.ru_utime.tv_sec + u.ru_stime.tv_sec + (u.ru_utime.tv_usec + u.ru_stime.tv_usec) * 1e-6; }
int main(int argc, char** argv) {
  const std::string mode = argv[1];
  const size_t rec = std::stoul(argv[2]);
  const int n = std::stoi(argv[3]);
  const char* path = "/tmp/ds/seg";
  int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
  std::vector<char> zeros(1 << 20, 0);
  for (int i = 0; i < 64; ++i) pwrite(fd, zeros.data(), zeros.size(), (off_t)i << 20);
  fdatasync(fd);
  fsync(fd);
  const int dfd = open(path, O_RDWR | O_DIRECT | (mode == "direct_dsync" ? O_DSYNC : 0));
  char* aligned = static_cast<char*>(aligned_alloc(4096, rec));
  memset(aligned, 'x', rec);
  std::vector<char> buf(rec, 'x');
  auto t0 = std::chrono::steady_clock::now();
  double c0 = Cpu();
  off_t off = 0;
  for (int i = 0; i < n; ++i) {
    if (mode == "fdatasync") { pwrite(fd, buf.data(), rec, off); fdatasync(fd); }
    else if (mode == "dsync") { iovec v{buf.data(), rec}; pwritev2(fd, &v, 1, off, RWF_DSYNC); }
    else if (mode == "direct_dsync") { pwrite(dfd, aligned, rec, off); }
    else if (mode == "direct_fdatasync") { pwrite(dfd, aligned, rec, off); fdatasync(dfd); }
    else if (mode == "none") { pwrite(fd, buf.data(), rec, off); }
    off += rec;
  }
  double c1 = Cpu();
  double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  printf("%s rec=%zu n=%d wall/op=%.1f us cpu/op=%.1f us\n", mode.c_str(), rec, n, wall / n * 1e6, (c1 - c0) / n * 1e6);
}
