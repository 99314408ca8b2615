// Ticks to nanoseconds on the CLOCK_MONOTONIC timeline, off the hot path.
//
// The hot path stores raw ticks (TSC, or nanoseconds when the monotonic clock is the
// source). The drainer converts them with a piecewise-linear map of integer segments:
// ns = base_ns + ((ticks - base_ticks) * mult) >> 32. Session start takes an anchor and a
// provisional rate from two samples about 0.1 ms apart (start() never sleeps for the
// clock); the drainer then fits the map to fresh samples (drainer.cpp, fit_clock):
// - its first fit replaces the provisional line by the line through the anchor and a
//   sample taken before any tick is converted, so every event before it is interpolated;
// - then it re-fits forward whenever the run has doubled since the last fit, at most
//   once a second: the slope comes from the whole run's baseline (so it does not drift),
//   the next segment starts where the last one ends (so the map stays continuous and
//   monotone) and steers any offset back to CLOCK_MONOTONIC over the following period;
// - at stop, a last segment from the end of the ticks converted so far through a sample
//   taken then: the events since the last fit are interpolated too.
#pragma once

#include <cstdint>

namespace ringtrace::detail {

struct ClockSample {
  std::uint64_t ticks;
  std::uint64_t ns;
};

bool cpu_has_invariant_tsc() noexcept;

// A (ticks, CLOCK_MONOTONIC ns) pair, taken with the tightest bracket of a few tries;
// `bracket`, if given, gets that bracket's width in ticks (the sample's ticks are its
// middle: off by at most half of it).
ClockSample sample_clock(bool use_tsc, std::uint64_t* bracket = nullptr) noexcept;

// Session start's two TSC samples: the anchor, and a later one far enough from it that
// the rate between them is known to kProvisionalRateError (from the samples' brackets),
// or taken after kProvisionalMaxNs if the brackets stay too wide (a loaded machine).
// About 30 us on the VM of docs/performance.md. The rate only spaces boundaries
// (boundary_gap_ticks() allows for its error) and sizes the merge grace in ticks: the
// drainer's first fit replaces it before any tick is converted.
inline constexpr double kProvisionalRateError = 1e-3;
inline constexpr std::uint64_t kProvisionalMaxNs = 1'000'000;
struct ClockPair {
  ClockSample anchor;
  ClockSample later;
};
ClockPair provisional_tsc_samples() noexcept;

// ns = base_ns + ((ticks - base_ticks) * mult) >> 32 from base_ticks on; before the
// first segment's base, the same line backwards (clamped at 0).
struct ClockSegment {
  std::uint64_t base_ticks = 0;
  std::uint64_t base_ns = 0;
  std::uint64_t mult = 0;  // ns per tick, 32.32 fixed point
};

// The conversion of ticks by a session's clock segments, the same live and reading a
// file: the newest segment whose base is not after the ticks, else the oldest (the
// last kSegments pushed are kept: events are converted in their order, at most a few
// passes late).
class SegmentClock {
 public:
  static constexpr unsigned kSegments = 16;
  void clear() noexcept {
    count_ = 0;
    newest_ = 0;
  }
  void push(ClockSegment s) noexcept {
    newest_ = count_ == 0 ? 0 : (newest_ + 1) % kSegments;
    segments_[newest_] = s;
    if (count_ < kSegments) ++count_;
  }
  bool empty() const noexcept { return count_ == 0; }
  unsigned count() const noexcept { return count_; }
  const ClockSegment& newest() const noexcept { return segments_[newest_]; }
  // The decoder's Clock policy (decoder.hpp): ticks from this segment's base on convert by
  // its line; to_ns() converts any.
  ClockSegment fast() const noexcept { return segments_[newest_]; }
  // Inline for the decoder's per-event loop: events are almost always in the newest segment.
  std::uint64_t to_ns(std::uint64_t ticks) const noexcept {
    const ClockSegment& s = segments_[newest_];
    if (ticks >= s.base_ticks) [[likely]]
      return s.base_ns + scale(ticks - s.base_ticks, s.mult);
    return to_ns_older(ticks);
  }
  static std::uint64_t scale(std::uint64_t delta, std::uint64_t mult) noexcept {
    return static_cast<std::uint64_t>((static_cast<unsigned __int128>(delta) * mult) >> 32);
  }

 private:
  std::uint64_t to_ns_older(std::uint64_t ticks) const noexcept;
  ClockSegment segments_[kSegments]{};
  unsigned count_ = 0;
  unsigned newest_ = 0;
};

class TickConverter {
 public:
  // Monotonic source: ticks are nanoseconds already.
  void start_identity() noexcept;
  // TSC source: the line through `first` (the anchor, the first segment's base) and
  // `second` (provisional_tsc_samples()).
  void start_tsc(ClockSample first, ClockSample second) noexcept;
  // Re-fit against a fresh sample; `period_ticks` is how far ahead to aim the correction.
  // Returns the offset found (ns, converted minus CLOCK_MONOTONIC) at `now`.
  std::int64_t refit(ClockSample now, std::uint64_t period_ticks) noexcept;
  // A segment from `from_ticks` on that reaches `now` exactly: the map is interpolated
  // between the two. No tick after `from_ticks` may have been converted yet (they would
  // convert differently now); from the anchor, it replaces the provisional line. Never
  // flatter than half the run's slope (the map stays strictly increasing). Returns the
  // offset found at `now`, as refit(); false (nothing pushed) when `now` is not after
  // `from_ticks`.
  bool interpolate(ClockSample now, std::uint64_t from_ticks, std::int64_t& offset) noexcept;

  std::uint64_t to_ns(std::uint64_t ticks) const noexcept { return clock_.to_ns(ticks); }
  double ticks_per_second() const noexcept { return ticks_per_second_; }
  bool identity() const noexcept { return identity_; }
  std::uint64_t anchor_ticks() const noexcept { return first_.ticks; }
  // The newest segment (what a recording stores to convert as live does).
  ClockSegment newest() const noexcept { return clock_.newest(); }
  const SegmentClock& segments() const noexcept { return clock_; }

 private:
  SegmentClock clock_;
  ClockSample first_{};
  double ticks_per_second_ = 1e9;
  bool identity_ = true;
};

}  // namespace ringtrace::detail
