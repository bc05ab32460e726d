// PrefetchLine: starts loading the cache line at an address, for a read that comes later.
//
// An asm statement rather than __builtin_prefetch, because GCC 12 deletes __builtin_prefetch where it
// decides the call has no effect: guarded by a null check of the pointer it is derived from, or as the only
// statement of a loop (a loop without side effects may be assumed to end, and is removed). Both happened in
// this engine: the index prefetch of Shard::FireGroup (BENCHMARKS.md section 23) compiled to nothing until
// 2026-11-28 (section 39). A volatile asm is never deleted. The address goes in a register, not as a memory
// operand: nothing is dereferenced, so any address (null included) is fine, as a prefetch never faults.
#pragma once

namespace lawn {

inline void PrefetchLine(const void* address) {
#if defined(__x86_64__) || defined(__i386__)
  asm volatile("prefetcht0 (%0)" : : "r"(address));
#else
  __builtin_prefetch(address);
#endif
}

}  // namespace lawn
