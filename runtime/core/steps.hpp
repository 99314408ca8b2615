// Session::step()'s zones in the record stream: the one marker site every step is
// recorded with, and the zone each marker becomes when it is decoded (live or from a file).
#pragma once

#include <cstdint>
#include <string>

#include "ringtrace/site.hpp"

namespace ringtrace::detail {

// Session::step() (and ringtrace::frame_mark()) records one marker per call: a region
// begin of the one marker site (a region-kind site with SiteOptions::step, named
// "step") whose value says which step begins and what the call does:
//   bits 0-61  N, the number of the step that begins
//   bit 62     the previous step's zone (N - 1) ends here
//   bit 63     step N's zone begins here
// (a step of a schedule's wait or skip phases has no zone: a marker may end one without
// beginning the next, or begin one with nothing to end). The drainer and the binary
// file's reader turn the marker into those zone events on the session's steps track, a
// thread of its own named "steps", whichever thread called step(): the zones of the one
// step site "step" (kind zone, SiteOptions::step) whose value is N; exporters name each
// "step #N". Nothing is interned per step, so a million steps take no
// memory.
const SiteInfo* step_marker_site();

inline constexpr std::uint64_t kStepEnds = std::uint64_t{1} << 62;
inline constexpr std::uint64_t kStepBegins = std::uint64_t{1} << 63;
inline constexpr std::uint64_t kStepNumberMask = kStepEnds - 1;

// Whether a marker's value is format 1's: the step number alone, neither flag. Format 1's
// step() wrote a zone end (of the step that ends) and then the marker, which begins step
// N's zone on the thread that recorded it (a zone of that thread, which its next zone end
// ends), not on the steps track.
inline constexpr bool is_format1_marker(std::uint64_t value) { return (value & (kStepEnds | kStepBegins)) == 0; }

// Whether `site` is the step marker (by its description: a file's reader has a copy).
inline bool is_step_marker(const SiteInfo& site) {
  return site.kind == SiteKind::region && (site.options & SiteOptions::step) != 0;
}

// The steps track's thread name.
inline constexpr const char* kStepsThreadName = "steps";

}  // namespace ringtrace::detail
