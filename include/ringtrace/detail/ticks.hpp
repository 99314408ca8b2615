// Reading the clock on the hot path: raw ticks only. Converting ticks to nanoseconds
// happens in the drainer (runtime/core/clock_calibration.cpp), never here.
#pragma once

#include <time.h>  // clock_gettime: where there is no invariant TSC

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

// One clock read of the session's source (the drainer, slow paths).
RINGTRACE_ALWAYS_INLINE std::uint64_t read_ticks(bool use_tsc) noexcept {
#if RINGTRACE_HAVE_TSC
  if (use_tsc) [[likely]]
    return __rdtsc();
#else
  (void)use_tsc;
#endif
  return monotonic_ns();
}

// The hot path's clock read: the TSC, with no test of the session's source. A session
// without a TSC (ClockSource::monotonic, or no invariant TSC) sends every event to the
// slow path instead (its ring limits stay 0), which reads CLOCK_MONOTONIC.
RINGTRACE_ALWAYS_INLINE std::uint64_t read_ticks_fast() noexcept {
#if RINGTRACE_HAVE_TSC
  return __rdtsc();
#else
  return monotonic_ns();
#endif
}

}  // namespace ringtrace::detail
