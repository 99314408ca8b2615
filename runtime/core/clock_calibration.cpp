#include "clock_calibration.hpp"

#include <algorithm>
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

ClockSample sample_clock(bool use_tsc, std::uint64_t* bracket) noexcept {
  if (!use_tsc) {
    const std::uint64_t ns = monotonic_ns();
    if (bracket != nullptr) *bracket = 0;
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
  if (bracket != nullptr) *bracket = best_width;
  return best;
}

ClockPair provisional_tsc_samples() noexcept {
  std::uint64_t anchor_bracket = 0, bracket = 0;
  const ClockSample anchor = sample_clock(true, &anchor_bracket);
  ClockSample later = anchor;
  // Each sample's ticks are off by at most half its bracket: the rate's relative error
  // is at most the two halves over the ticks between the samples.
  do {
    later = sample_clock(true, &bracket);
  } while (
      later.ns - anchor.ns < kProvisionalMaxNs &&
      (later.ticks <= anchor.ticks || static_cast<double>(anchor_bracket + bracket) / 2 >
                                          kProvisionalRateError * static_cast<double>(later.ticks - anchor.ticks)));
  return {anchor, later};
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
  clock_.push({first.ticks, first.ns, static_cast<std::uint64_t>(std::llround(ns_per_tick * 4294967296.0))});
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

bool TickConverter::interpolate(ClockSample now, std::uint64_t from_ticks, std::int64_t& offset) noexcept {
  from_ticks = std::max(from_ticks, clock_.newest().base_ticks);  // segments are pushed in the order of their bases
  if (identity_ || now.ticks <= from_ticks || now.ticks <= first_.ticks) return false;
  const std::uint64_t predicted = to_ns(now.ticks);
  offset = static_cast<std::int64_t>(predicted - now.ns);
  const std::uint64_t base_ns = to_ns(from_ticks);
  const double slope = static_cast<double>(now.ns - first_.ns) / static_cast<double>(now.ticks - first_.ticks);
  ticks_per_second_ = 1e9 / slope;
  const double span = static_cast<double>(now.ticks - from_ticks);
  double through = now.ns > base_ns ? static_cast<double>(now.ns - base_ns) / span : 0.0;
  if (through < slope * 0.5) through = slope * 0.5;
  clock_.push({from_ticks, base_ns, static_cast<std::uint64_t>(std::llround(through * 4294967296.0))});
  return true;
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
