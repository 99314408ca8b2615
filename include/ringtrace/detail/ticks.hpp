// Reading the clock on the hot path: raw ticks only. Converting ticks to nanoseconds
// happens in the drainer (runtime/clock_calibration.cpp), never here.
#pragma once

#include <time.h>  // clock_gettime: fallback where there is no invariant TSC

#include <cstdint>  // std::uint64_t

#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>  // __rdtsc
#define RINGTRACE_HAVE_TSC 1
#else
#define RINGTRACE_HAVE_TSC 0
#endif

#include "ringtrace/detail/platform.hpp"  // RINGTRACE_ALWAYS_INLINE

namespace ringtrace::detail {

RINGTRACE_ALWAYS_INLINE std::uint64_t monotonic_ns() noexcept {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::uint64_t>(ts.tv_sec) * 1000000000u + static_cast<std::uint64_t>(ts.tv_nsec);
}

// One clock read. `use_tsc` is the thread's copy of the session's choice; it is the
// same for every event of a session, so the branch is always predicted.
RINGTRACE_ALWAYS_INLINE std::uint64_t read_ticks(bool use_tsc) noexcept {
#if RINGTRACE_HAVE_TSC
  if (use_tsc) [[likely]] return __rdtsc();
#else
  (void)use_tsc;
#endif
  return monotonic_ns();
}

}  // namespace ringtrace::detail
