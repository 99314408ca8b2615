#include "clock_calibration.hpp"

#include <cmath>
#include <limits>

#include "ringtrace/detail/ticks.hpp"

#if RINGTRACE_HAVE_TSC
#include <cpuid.h>
#endif

namespace ringtrace::detail {

bool cpu_has_invariant_tsc() noexcept {
#if RINGTRACE_HAVE_TSC
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (__get_cpuid(0x80000000u, &eax, &ebx, &ecx, &edx) == 0 || eax < 0x80000007u) return false;
  if (__get_cpuid(0x80000007u, &eax, &ebx, &ecx, &edx) == 0) return false;
  return (edx & (1u << 8)) != 0;  // CPUID.80000007H:EDX[8] invariant TSC
#else
  return false;
#endif
}

ClockSample sample_clock(bool use_tsc) noexcept {
  if (!use_tsc) {
    const std::uint64_t ns = monotonic_ns();
    return {ns, ns};
  }
  ClockSample best{0, 0};
  std::uint64_t best_width = std::numeric_limits<std::uint64_t>::max();
  for (int i = 0; i < 16; ++i) {
    const std::uint64_t t0 = read_ticks(true);
    const std::uint64_t ns = monotonic_ns();
    const std::uint64_t t1 = read_ticks(true);
    if (t1 >= t0 && t1 - t0 < best_width) {
      best_width = t1 - t0;
      best = {t0 + (t1 - t0) / 2, ns};
    }
  }
  return best;
}

void TickConverter::start_identity() noexcept {
  identity_ = true;
  ticks_per_second_ = 1e9;
  clock_.clear();
  first_ = {0, 0};
  clock_.push({0, 0, std::uint64_t{1} << 32});
}

void TickConverter::start_tsc(ClockSample first, ClockSample second) noexcept {
  identity_ = false;
  clock_.clear();
  first_ = first;
  const double dt = static_cast<double>(second.ticks - first.ticks);
  const double dns = static_cast<double>(second.ns - first.ns);
  const double ns_per_tick = dt > 0 && dns > 0 ? dns / dt : 1.0;
  ticks_per_second_ = 1e9 / ns_per_tick;
  clock_.push({second.ticks, second.ns, static_cast<std::uint64_t>(std::llround(ns_per_tick * 4294967296.0))});
}

std::int64_t TickConverter::refit(ClockSample now, std::uint64_t period_ticks) noexcept {
  if (identity_ || now.ticks <= first_.ticks || period_ticks == 0) return 0;
  const std::uint64_t predicted = to_ns(now.ticks);
  const std::int64_t offset = static_cast<std::int64_t>(predicted - now.ns);
  const double slope = static_cast<double>(now.ns - first_.ns) / static_cast<double>(now.ticks - first_.ticks);
  ticks_per_second_ = 1e9 / slope;
  // Aim to be back on CLOCK_MONOTONIC one period from now; never flatter than half
  // the true slope, so the map stays strictly increasing whatever the offset.
  double steered = slope - static_cast<double>(offset) / static_cast<double>(period_ticks);
  if (steered < slope * 0.5) steered = slope * 0.5;
  clock_.push({now.ticks, predicted, static_cast<std::uint64_t>(std::llround(steered * 4294967296.0))});
  return offset;
}

std::uint64_t SegmentClock::to_ns_older(std::uint64_t ticks) const noexcept {
  // Newest segment whose base is not after `ticks`, else the oldest, backwards.
  unsigned index = newest_;
  for (unsigned i = 0; i + 1 < count_; ++i) {
    if (ticks >= segments_[index].base_ticks) break;
    index = (index + kSegments - 1) % kSegments;
  }
  const ClockSegment& s = segments_[index];
  if (ticks >= s.base_ticks) return s.base_ns + scale(ticks - s.base_ticks, s.mult);
  const std::uint64_t back = scale(s.base_ticks - ticks, s.mult);
  return back > s.base_ns ? 0 : s.base_ns - back;
}

}  // namespace ringtrace::detail
