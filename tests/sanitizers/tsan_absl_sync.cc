// ThreadSanitizer annotations for Debian's uninstrumented absl::Mutex and absl::CondVar (TSan builds only:
// LAWN_SANITIZE=thread adds this file to every lawn executable, see the root CMakeLists.txt).
//
// Why: libabsl_synchronization.so is not built with -fsanitize=thread, so TSan cannot see a lock or unlock
// inside it. Every field lawn guards with an absl::Mutex (ABSL_GUARDED_BY) would then look unsynchronized, and
// TSan would report each one as a data race. Those reports are in lawn's own code, so no suppression may
// cover them without hiding real races too. Instead this file defines absl::Mutex's and absl::CondVar's
// out-of-line locking members in the executable itself, where they interpose on the shared library's (for
// lawn's calls and, these symbols being exported from the executable, for gRPC's calls too): each tells TSan what
// happens (__tsan_mutex_pre_lock / post_lock / pre_unlock / post_unlock, sanitizer/tsan_interface.h, the same
// annotations Abseil itself makes when it is built with TSan) and calls the real member, found with
// dlsym(RTLD_NEXT). TSan then treats absl::Mutex like any pthread mutex: happens-before through it, lock-order
// inversion (deadlock) reports, and accesses inside the mutex implementation ignored.
//
// Await / CondVar::Wait release and re-acquire the mutex inside the library: annotated as an unlock before
// the call and a lock after it. Calls the library makes to its own interposed members are not annotated
// again (a per-thread depth count). A mutex held in reader mode across Await is annotated as a
// writer (lawn awaits only under writer locks).
//
// Thread-safety: the real functions are resolved once, at load time (a static initializer), before any thread
// of the program exists; afterwards everything here is read-only.
#include <dlfcn.h>
#include <link.h>
#include <sanitizer/tsan_interface.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <algorithm>
#include <cstring>
#include <string>

#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

#ifndef ABSL_OPTION_INLINE_NAMESPACE_NAME
#error "tsan_absl_sync.cc expects Abseil with an inline namespace (absl/base/options.h)"
#endif

#define LAWN_TSAN_STR2(x) #x
#define LAWN_TSAN_STR(x) LAWN_TSAN_STR2(x)

namespace {

// The address of the shared library's definition of the member whose mangled name, after
// "_ZN4absl<len><inline namespace>", is `tail` (e.g. "5Mutex4LockEv").
void* Real(const char* tail) {
  const char* ns = LAWN_TSAN_STR(ABSL_OPTION_INLINE_NAMESPACE_NAME);
  const std::string name = "_ZN4absl" + std::to_string(std::strlen(ns)) + ns + tail;
  void* f = dlsym(RTLD_NEXT, name.c_str());
  if (f == nullptr) {
    std::fprintf(stderr, "tsan_absl_sync: %s not found after the executable: %s\n", name.c_str(), dlerror());
    std::abort();
  }
  return f;
}

using absl::Condition;
using absl::CondVar;
using absl::Duration;
using absl::Mutex;
using absl::Time;

struct RealFunctions {
  void (*lock)(Mutex*) = reinterpret_cast<void (*)(Mutex*)>(Real("5Mutex4LockEv"));
  void (*unlock)(Mutex*) = reinterpret_cast<void (*)(Mutex*)>(Real("5Mutex6UnlockEv"));
  bool (*try_lock)(Mutex*) = reinterpret_cast<bool (*)(Mutex*)>(Real("5Mutex7TryLockEv"));
  void (*reader_lock)(Mutex*) = reinterpret_cast<void (*)(Mutex*)>(Real("5Mutex10ReaderLockEv"));
  void (*reader_unlock)(Mutex*) = reinterpret_cast<void (*)(Mutex*)>(Real("5Mutex12ReaderUnlockEv"));
  bool (*reader_try_lock)(Mutex*) = reinterpret_cast<bool (*)(Mutex*)>(Real("5Mutex13ReaderTryLockEv"));
  void (*lock_when)(Mutex*, const Condition&) =
      reinterpret_cast<void (*)(Mutex*, const Condition&)>(Real("5Mutex8LockWhenERKNS0_9ConditionE"));
  void (*reader_lock_when)(Mutex*, const Condition&) =
      reinterpret_cast<void (*)(Mutex*, const Condition&)>(Real("5Mutex14ReaderLockWhenERKNS0_9ConditionE"));
  bool (*lock_when_timeout)(Mutex*, const Condition&, Duration) =
      reinterpret_cast<bool (*)(Mutex*, const Condition&, Duration)>(
          Real("5Mutex19LockWhenWithTimeoutERKNS0_9ConditionENS0_8DurationE"));
  bool (*lock_when_deadline)(Mutex*, const Condition&, Time) =
      reinterpret_cast<bool (*)(Mutex*, const Condition&, Time)>(
          Real("5Mutex20LockWhenWithDeadlineERKNS0_9ConditionENS0_4TimeE"));
  bool (*reader_lock_when_timeout)(Mutex*, const Condition&, Duration) =
      reinterpret_cast<bool (*)(Mutex*, const Condition&, Duration)>(
          Real("5Mutex25ReaderLockWhenWithTimeoutERKNS0_9ConditionENS0_8DurationE"));
  bool (*reader_lock_when_deadline)(Mutex*, const Condition&, Time) =
      reinterpret_cast<bool (*)(Mutex*, const Condition&, Time)>(
          Real("5Mutex26ReaderLockWhenWithDeadlineERKNS0_9ConditionENS0_4TimeE"));
  void (*await)(Mutex*, const Condition&) =
      reinterpret_cast<void (*)(Mutex*, const Condition&)>(Real("5Mutex5AwaitERKNS0_9ConditionE"));
  bool (*await_timeout)(Mutex*, const Condition&, Duration) =
      reinterpret_cast<bool (*)(Mutex*, const Condition&, Duration)>(
          Real("5Mutex16AwaitWithTimeoutERKNS0_9ConditionENS0_8DurationE"));
  bool (*await_deadline)(Mutex*, const Condition&, Time) =
      reinterpret_cast<bool (*)(Mutex*, const Condition&, Time)>(
          Real("5Mutex17AwaitWithDeadlineERKNS0_9ConditionENS0_4TimeE"));
  void (*destroy)(Mutex*) = reinterpret_cast<void (*)(Mutex*)>(Real("5MutexD2Ev"));
  void (*wait)(CondVar*, Mutex*) = reinterpret_cast<void (*)(CondVar*, Mutex*)>(Real("7CondVar4WaitEPNS0_5MutexE"));
  bool (*wait_timeout)(CondVar*, Mutex*, Duration) = reinterpret_cast<bool (*)(CondVar*, Mutex*, Duration)>(
      Real("7CondVar15WaitWithTimeoutEPNS0_5MutexENS0_8DurationE"));
  bool (*wait_deadline)(CondVar*, Mutex*, Time) = reinterpret_cast<bool (*)(CondVar*, Mutex*, Time)>(
      Real("7CondVar16WaitWithDeadlineEPNS0_5MutexENS0_4TimeE"));
};

const RealFunctions& Fns() {
  static const RealFunctions fns;
  return fns;
}
// Resolve before main, while the program has one thread.
[[maybe_unused]] const RealFunctions& resolved_at_load = Fns();

// Whether `pc` lies in the executable's own code (lawn), rather than in a shared library (gRPC, ...).
bool InExecutable(const void* pc) {
  struct Range {
    uintptr_t begin = UINTPTR_MAX;
    uintptr_t end = 0;
  };
  static const Range range = [] {
    Range r;
    dl_iterate_phdr(
        [](dl_phdr_info* info, size_t, void* data) {
          auto* out = static_cast<Range*>(data);
          for (int i = 0; i < info->dlpi_phnum; ++i) {
            const ElfW(Phdr)& ph = info->dlpi_phdr[i];
            if (ph.p_type != PT_LOAD || (ph.p_flags & PF_X) == 0) continue;
            const uintptr_t begin = info->dlpi_addr + ph.p_vaddr;
            out->begin = std::min(out->begin, begin);
            out->end = std::max(out->end, static_cast<uintptr_t>(begin + ph.p_memsz));
          }
          return 1;  // The first object is the executable: stop there.
        },
        &r);
    return r;
  }();
  const auto p = reinterpret_cast<uintptr_t>(pc);
  return p >= range.begin && p < range.end;
}

// Depth of interposed calls on this thread. The library calls its own public members too (WaitWithTimeout
// calls WaitWithDeadline, Await and CondVar::Wait re-lock through Lock, ReleasableMutexLock::Release calls
// Unlock), and those calls land here again: only the outermost one is annotated.
thread_local int depth = 0;

extern "C" void AnnotateIgnoreReadsBegin(const char* file, int line);
extern "C" void AnnotateIgnoreReadsEnd(const char* file, int line);
extern "C" void AnnotateIgnoreWritesBegin(const char* file, int line);
extern "C" void AnnotateIgnoreWritesEnd(const char* file, int line);

// Runs `annotate` (the TSan mutex annotations), with TSan's memory-access checks off when the call came from a
// shared library: gRPC frees memory holding its mutexes after hand-offs through its own uninstrumented
// atomics, which TSan cannot see; checking the mutex word there only yields false races inside gRPC. The
// lock's happens-before edges are kept either way.
template <typename F>
void Annotate(bool from_library, F annotate) {
  if (from_library) {
    AnnotateIgnoreReadsBegin(__FILE__, __LINE__);
    AnnotateIgnoreWritesBegin(__FILE__, __LINE__);
  }
  annotate();
  if (from_library) {
    AnnotateIgnoreWritesEnd(__FILE__, __LINE__);
    AnnotateIgnoreReadsEnd(__FILE__, __LINE__);
  }
}

// Caller of the interposed member that is running (set by each member from its return address).
#define LAWN_TSAN_FROM_LIBRARY (!InExecutable(__builtin_return_address(0)))

// Runs `real` inside the annotations `before` and `after` if this is the outermost interposed call.
template <typename Before, typename Real, typename After>
auto Annotated(bool from_library, Before before, Real real, After after) {
  const bool outermost = depth++ == 0;
  if (outermost) Annotate(from_library, before);
  auto result = real();
  if (outermost) Annotate(from_library, [&] { after(result); });
  --depth;
  return result;
}

// A lock of `mu` (flags: 0, __tsan_mutex_read_lock, ...) done by `real`, which returns whether it locked.
template <typename Real>
bool Locking(bool from_library, void* mu, unsigned flags, Real real) {
  return Annotated(from_library, [&] { __tsan_mutex_pre_lock(mu, flags); }, real,
                   [&](bool locked) {
                     const bool try_lock = (flags & __tsan_mutex_try_lock) != 0;
                     __tsan_mutex_post_lock(mu, try_lock && !locked ? flags | __tsan_mutex_try_lock_failed : flags,
                                            0);
                   });
}

// An unlock of `mu` done by `real`.
template <typename Real>
void Unlocking(bool from_library, void* mu, unsigned flags, Real real) {
  Annotated(from_library, [&] { __tsan_mutex_pre_unlock(mu, flags); },
            [&] {
              real();
              return 0;
            },
            [&](int) { __tsan_mutex_post_unlock(mu, flags); });
}

// A call of `real` that releases `mu` and re-acquires it before returning (Await, CondVar::Wait): an unlock
// and a lock for TSan.
template <typename Real>
auto Reacquiring(bool from_library, void* mu, Real real) {
  return Annotated(
      from_library, [&] {
        __tsan_mutex_pre_unlock(mu, 0);
        __tsan_mutex_post_unlock(mu, 0);
        __tsan_mutex_pre_lock(mu, 0);
      },
      real, [&](auto) { __tsan_mutex_post_lock(mu, 0, 0); });
}

}  // namespace

namespace absl {
ABSL_NAMESPACE_BEGIN

Mutex::~Mutex() {
  if (depth == 0) Annotate(LAWN_TSAN_FROM_LIBRARY, [this] { __tsan_mutex_destroy(this, 0); });
  Fns().destroy(this);
}

void Mutex::Lock() {
  Locking(LAWN_TSAN_FROM_LIBRARY, this, 0, [&] {
    Fns().lock(this);
    return true;
  });
}

void Mutex::Unlock() {
  Unlocking(LAWN_TSAN_FROM_LIBRARY, this, 0, [&] { Fns().unlock(this); });
}

bool Mutex::TryLock() {
  return Locking(LAWN_TSAN_FROM_LIBRARY, this, __tsan_mutex_try_lock, [&] { return Fns().try_lock(this); });
}

void Mutex::ReaderLock() {
  Locking(LAWN_TSAN_FROM_LIBRARY, this, __tsan_mutex_read_lock, [&] {
    Fns().reader_lock(this);
    return true;
  });
}

void Mutex::ReaderUnlock() {
  Unlocking(LAWN_TSAN_FROM_LIBRARY, this, __tsan_mutex_read_lock, [&] { Fns().reader_unlock(this); });
}

bool Mutex::ReaderTryLock() {
  return Locking(LAWN_TSAN_FROM_LIBRARY, this, __tsan_mutex_try_read_lock, [&] { return Fns().reader_try_lock(this); });
}

// The LockWhen family returns with the mutex held whatever the condition (the bool says whether it holds).
void Mutex::LockWhen(const Condition& cond) {
  Locking(LAWN_TSAN_FROM_LIBRARY, this, 0, [&] {
    Fns().lock_when(this, cond);
    return true;
  });
}

void Mutex::ReaderLockWhen(const Condition& cond) {
  Locking(LAWN_TSAN_FROM_LIBRARY, this, __tsan_mutex_read_lock, [&] {
    Fns().reader_lock_when(this, cond);
    return true;
  });
}

bool Mutex::LockWhenWithTimeout(const Condition& cond, Duration timeout) {
  bool met = false;
  Locking(LAWN_TSAN_FROM_LIBRARY, this, 0, [&] {
    met = Fns().lock_when_timeout(this, cond, timeout);
    return true;
  });
  return met;
}

bool Mutex::LockWhenWithDeadline(const Condition& cond, Time deadline) {
  bool met = false;
  Locking(LAWN_TSAN_FROM_LIBRARY, this, 0, [&] {
    met = Fns().lock_when_deadline(this, cond, deadline);
    return true;
  });
  return met;
}

bool Mutex::ReaderLockWhenWithTimeout(const Condition& cond, Duration timeout) {
  bool met = false;
  Locking(LAWN_TSAN_FROM_LIBRARY, this, __tsan_mutex_read_lock, [&] {
    met = Fns().reader_lock_when_timeout(this, cond, timeout);
    return true;
  });
  return met;
}

bool Mutex::ReaderLockWhenWithDeadline(const Condition& cond, Time deadline) {
  bool met = false;
  Locking(LAWN_TSAN_FROM_LIBRARY, this, __tsan_mutex_read_lock, [&] {
    met = Fns().reader_lock_when_deadline(this, cond, deadline);
    return true;
  });
  return met;
}

void Mutex::Await(const Condition& cond) {
  Reacquiring(LAWN_TSAN_FROM_LIBRARY, this, [&] {
    Fns().await(this, cond);
    return true;
  });
}

bool Mutex::AwaitWithTimeout(const Condition& cond, Duration timeout) {
  return Reacquiring(LAWN_TSAN_FROM_LIBRARY, this, [&] { return Fns().await_timeout(this, cond, timeout); });
}

bool Mutex::AwaitWithDeadline(const Condition& cond, Time deadline) {
  return Reacquiring(LAWN_TSAN_FROM_LIBRARY, this, [&] { return Fns().await_deadline(this, cond, deadline); });
}

void CondVar::Wait(Mutex* mu) {
  Reacquiring(LAWN_TSAN_FROM_LIBRARY, mu, [&] {
    Fns().wait(this, mu);
    return true;
  });
}

bool CondVar::WaitWithTimeout(Mutex* mu, Duration timeout) {
  return Reacquiring(LAWN_TSAN_FROM_LIBRARY, mu, [&] { return Fns().wait_timeout(this, mu, timeout); });
}

bool CondVar::WaitWithDeadline(Mutex* mu, Time deadline) {
  return Reacquiring(LAWN_TSAN_FROM_LIBRARY, mu, [&] { return Fns().wait_deadline(this, mu, deadline); });
}

ABSL_NAMESPACE_END
}  // namespace absl
