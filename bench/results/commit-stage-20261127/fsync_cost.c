// fdatasync cost of 1000-byte appends (mode 0), appends into a fallocate(KEEP_SIZE) region as RocksDB's WAL
// preallocation does (mode 1), and overwrites of an already written file (mode 2: what WAL recycling would
// give). Build and run: gcc -O2 -o fs fsync_cost.c && for m in 0 1 2 0 1 2; do ./fs $m 3000 /work/fs.test;
// done Output of 2026-11-27 13:16 UTC (BENCHMARKS.md section 33):
//   mode 0: 636.6 us/sync wall, 124.2 us cpu    mode 0: 643.2, 121.0
//   mode 1: 546.8 us/sync wall, 121.6 us cpu    mode 1: 525.2, 118.8
//   mode 2: 414.6 us/sync wall,  73.8 us cpu    mode 2: 288.1,  66.0
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>
static double now() {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}
static double cpu() {
  struct rusage r;
  getrusage(RUSAGE_SELF, &r);
  return r.ru_utime.tv_sec + r.ru_stime.tv_sec + (r.ru_utime.tv_usec + r.ru_stime.tv_usec) * 1e-6;
}
int main(int argc, char** argv) {
  int mode = atoi(argv[1]);
  int n = atoi(argv[2]);
  const char* p = argv[3];
  int fd = open(p, O_CREAT | O_RDWR | O_TRUNC, 0644);
  char buf[4096];
  memset(buf, 'x', sizeof buf);
  if (mode == 1) fallocate(fd, FALLOC_FL_KEEP_SIZE, 0, 64 << 20);
  if (mode == 2) {
    for (int i = 0; i < 16384; i++) write(fd, buf, 4096);
    fsync(fd);
    lseek(fd, 0, SEEK_SET);
  }
  double t0 = now(), c0 = cpu();
  for (int i = 0; i < n; i++) {
    write(fd, buf, 1000);
    fdatasync(fd);
  }
  double t1 = now(), c1 = cpu();
  printf("mode %d: %.1f us/sync wall, %.1f us cpu\n", mode, (t1 - t0) / n * 1e6, (c1 - c0) / n * 1e6);
  unlink(p);
}
