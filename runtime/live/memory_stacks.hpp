// Sampled allocation stacks (Config::memory_stack_bytes, docs/memory.md): which
// allocations carry their call stack, and the stack itself.
//
// Byte sampling, as tcmalloc's and jemalloc's heap profilers do: each thread counts its
// allocated bytes down (detail::t_bytes_to_stack, on the allocation's hot path) from a gap
// drawn from an exponential distribution of mean `mean_bytes`; the allocation that takes
// it below 0 is sampled and a new gap is drawn. So an allocation of s bytes is sampled
// with probability 1 - exp(-s / mean), whatever came before it, and a reader that weighs
// each sample by s / (1 - exp(-s / mean)) bytes (1 / (1 - exp(-s / mean)) calls) has an
// unbiased estimate of the bytes and calls of each stack.
//
// The stack comes from the C++ runtime's unwinder (libgcc's _Unwind_Backtrace, from the
// .eh_frame tables every x86-64 object has, whether or not it keeps frame pointers), from
// the allocation function's caller's caller outwards, at most kMaxAllocFrames frames.
#pragma once

#include <cstddef>
#include <cstdint>

#include "ringtrace/detail/memory.hpp"  // t_bytes_to_stack

namespace ringtrace::detail {

// While ringtrace itself allocates on one of the program's threads (binding its ring,
// unwinding a stack), the allocations it makes nested in its slow path are its own, not
// a signal handler's: not counted as the program's (OwnMemory marks them).
inline constinit thread_local unsigned t_own_memory = 0;
struct OwnMemory {
  OwnMemory() noexcept { ++t_own_memory; }
  ~OwnMemory() { --t_own_memory; }
  OwnMemory(const OwnMemory&) = delete;
  OwnMemory& operator=(const OwnMemory&) = delete;
};

// The thread's first gap of a session (at its ring's bind): `mean_bytes` 0 samples nothing.
void start_stack_sampling(std::uint64_t mean_bytes, std::uint32_t epoch) noexcept;
// Whether this thread's sampling started for the session of `epoch` (its first
// allocation may come before its ring: that allocation counts toward the first gap too).
bool stack_sampling_started(std::uint32_t epoch) noexcept;

// The stack of the allocation that crossed the thread's gap: the frames above `caller`
// (the allocation function's caller) into `out` (kMaxAllocFrames of room); returns how
// many (0 when the unwinder could not find `caller`). Draws the thread's next gap.
std::size_t sample_stack(std::uint64_t caller, std::uint64_t* out) noexcept;

// The method, as the file and the reports say it.
inline constexpr const char* kStackMethod = "unwinder (.eh_frame)";

}  // namespace ringtrace::detail
