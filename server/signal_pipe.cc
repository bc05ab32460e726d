#include "server/signal_pipe.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

namespace lawn {

namespace {

// The pipe's ends; set once by Install, read by the handler (a plain int is async-signal-safe to read).
int g_read_fd = -1;
int g_write_fd = -1;
sigset_t g_signals;  // The installed signals; set once by Install.

extern "C" void OnSignal(int signal) { SignalPipe::Post(static_cast<char>(signal)); }

}  // namespace

bool SignalPipe::Install(std::initializer_list<int> signals) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC | O_NONBLOCK) != 0) return false;
  g_read_fd = fds[0];
  g_write_fd = fds[1];
  struct sigaction action = {};
  action.sa_handler = OnSignal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;
  sigemptyset(&g_signals);
  for (int signal : signals) {
    sigaction(signal, &action, nullptr);
    sigaddset(&g_signals, signal);
  }
  return true;
}

void SignalPipe::Post(char byte) {
  (void)!write(g_write_fd, &byte, 1);  // A full pipe means a wake-up is already queued.
}

int SignalPipe::Wait() {
  // poll() rather than a blocking read(): ThreadSanitizer runs a pending handler in poll (a call it knows to
  // block) but not in read().
  pollfd readable = {g_read_fd, POLLIN, 0};
  char byte = 0;
  while (read(g_read_fd, &byte, 1) != 1) {
    if (errno != EAGAIN && errno != EINTR) return SIGTERM;
    if (poll(&readable, 1, -1) < 0 && errno != EINTR) return SIGTERM;
  }
  return byte;
}

void SignalPipe::BlockInThisThread() { pthread_sigmask(SIG_BLOCK, &g_signals, nullptr); }

void SignalPipe::UnblockInThisThread() { pthread_sigmask(SIG_UNBLOCK, &g_signals, nullptr); }

}  // namespace lawn
