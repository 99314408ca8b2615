// Ticks to nanoseconds on the CLOCK_MONOTONIC timeline, off the hot path.
//
// The hot path stores raw ticks (TSC, or nanoseconds when the monotonic clock is the
// source). The drainer converts them with a piecewise-linear map of integer segments:
// ns = base_ns + ((ticks - base_ticks) * mult) >> 32. Session start fits the first
// segment from two samples ~10 ms apart; the drainer re-fits about once a second:
// the slope comes from the whole run's baseline (so it does not drift) and the next
// segment starts where the last one ends (so the map stays continuous and monotone)
// and steers any offset back to CLOCK_MONOTONIC over the following period.
#pragma once

#include <cstdint>

namespace ringtrace::detail {

struct ClockSample {
  std::uint64_t ticks;
  std::uint64_t ns;
};

bool cpu_has_invariant_tsc() noexcept;

// A (ticks, CLOCK_MONOTONIC ns) pair, taken with the tightest bracket of a few tries.
ClockSample sample_clock(bool use_tsc) noexcept;

class TickConverter {
 public:
  // Monotonic source: ticks are nanoseconds already.
  void start_identity() noexcept;
  // TSC source: `first` and `second` about 10 ms apart.
  void start_tsc(ClockSample first, ClockSample second) noexcept;
  // Re-fit against a fresh sample; `period_ticks` is how far ahead to aim the correction.
  // Returns the offset found (ns, converted minus CLOCK_MONOTONIC) at `now`.
  std::int64_t refit(ClockSample now, std::uint64_t period_ticks) noexcept;

  // Inline for the drainer's per-event loop: events are almost always in the newest segment.
  std::uint64_t to_ns(std::uint64_t ticks) const noexcept {
    const Segment& newest = segments_[newest_];
    if (ticks >= newest.base_ticks) [[likely]] return newest.base_ns + scale(ticks - newest.base_ticks, newest.mult);
    return to_ns_older(ticks);
  }
  double ticks_per_second() const noexcept { return ticks_per_second_; }
  bool identity() const noexcept { return identity_; }
  // The newest segment (what a recording stores to convert as live does).
  void newest(std::uint64_t& base_ticks, std::uint64_t& base_ns, std::uint64_t& mult) const noexcept {
    base_ticks = segments_[newest_].base_ticks;
    base_ns = segments_[newest_].base_ns;
    mult = segments_[newest_].mult;
  }

 private:
  struct Segment {
    std::uint64_t base_ticks;
    std::uint64_t base_ns;
    std::uint64_t mult;  // ns per tick, 32.32 fixed point
  };

 public:
  // The newest segment copied out, for a loop that converts many ticks while the
  // converter does not change (the drainer's decode): its fields stay in registers
  // instead of being reloaded after every store the compiler cannot tell apart.
  class Snapshot {
   public:
    explicit Snapshot(const TickConverter& c) noexcept : c_(c), newest_(c.segments_[c.newest_]) {}
    std::uint64_t to_ns(std::uint64_t ticks) const noexcept {
      if (ticks >= newest_.base_ticks) [[likely]] return newest_.base_ns + scale(ticks - newest_.base_ticks, newest_.mult);
      return c_.to_ns_older(ticks);
    }

   private:
    const TickConverter& c_;
    Segment newest_;
  };

 private:
  static constexpr unsigned kSegments = 16;
  static std::uint64_t scale(std::uint64_t delta, std::uint64_t mult) noexcept {
    return static_cast<std::uint64_t>((static_cast<unsigned __int128>(delta) * mult) >> 32);
  }
  static std::uint64_t convert(const Segment& s, std::uint64_t ticks) noexcept;
  std::uint64_t to_ns_older(std::uint64_t ticks) const noexcept;
  void push(Segment s) noexcept;

  Segment segments_[kSegments]{};
  unsigned count_ = 0;
  unsigned newest_ = 0;
  ClockSample first_{};
  double ticks_per_second_ = 1e9;
  bool identity_ = true;
};

}  // namespace ringtrace::detail
