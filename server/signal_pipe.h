// SignalPipe: turns signals (and wake-ups from other threads) into bytes read by one waiting thread.
//
// A process-wide handler writes the signal number to a self-pipe. Unlike a blocked mask and sigwait, this
// works whichever thread the kernel picks, so it does not depend on every thread, including those libraries
// create, inheriting a mask set before them.
//
// Thread-safety: Install once, from main, before other threads start; Post from any thread or signal
// handler; Wait from one thread.
#pragma once

#include <initializer_list>

namespace lawn {

class SignalPipe {
 public:
  // Routes `signals` to the pipe. False if the pipe cannot be made.
  static bool Install(std::initializer_list<int> signals);
  // Queues `byte` for Wait (async-signal-safe).
  static void Post(char byte);
  // Blocks until a byte arrives; returns it (a signal number, or what Post sent).
  static int Wait();

  // Blocks the installed signals in the calling thread, so threads it starts from now on are born with them
  // blocked and the kernel delivers them to a thread that unblocked them (the one in Wait). Needed under
  // ThreadSanitizer, which runs a signal's handler only when the receiving thread is in a call it knows to
  // block and defers it otherwise, forever for a thread parked in an uninstrumented library.
  static void BlockInThisThread();
  static void UnblockInThisThread();
};

}  // namespace lawn
