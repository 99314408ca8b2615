// Call-site descriptions: what a macro knows about itself at compile time.
#pragma once

#include "ringtrace/requires_cxx20.hpp"  // first: one clear error below C++20

#include <cstdint>  // fixed-width fields of SiteInfo
#include <string_view>

#include "ringtrace/detail/platform.hpp"  // RINGTRACE_NO_INSTRUMENT

namespace ringtrace {

// What kind of call site a SiteInfo describes.
enum class SiteKind : std::uint8_t {
  zone = 0,         // RINGTRACE_ZONE / RINGTRACE_FUNCTION / an interned name
  instant = 1,      // RINGTRACE_INSTANT
  counter = 2,      // RINGTRACE_COUNTER
  region = 3,       // RINGTRACE_REGION: a zone that marks a capture region
  value = 4,        // RINGTRACE_ZONE_VALUE / RINGTRACE_ZONE_TEXT: the name is the argument's key
  flow_out = 5,     // RINGTRACE_FLOW_OUT
  flow_in = 6,      // RINGTRACE_FLOW_IN
  async_begin = 7,  // RINGTRACE_ASYNC_BEGIN: the name is the span's
  async_end = 8,    // RINGTRACE_ASYNC_END
};

// SiteInfo::options bits.
namespace SiteOptions {
// A counter recorded on a track of its own per thread (RINGTRACE_COUNTER_PER_THREAD),
// not one process-wide track per name.
inline constexpr std::uint8_t per_thread_track = 1;
// Session::step()'s zones: the one site is_step_site() says (each zone's value its step
// number N); and, on a region-kind site, the marker step() records.
inline constexpr std::uint8_t step = 2;
// A zone recorded one time in SiteInfo::sample_every (RINGTRACE_ZONE_SAMPLED).
inline constexpr std::uint8_t sampled = 4;
// The zone of an instrumented function's call (automatic function instrumentation,
// ringtrace::functions): name and function are its qualified name, file and line where it
// is defined (empty and 0 when the binary has no debug information).
inline constexpr std::uint8_t function = 8;
}  // namespace SiteOptions

// One per call site, a `static constexpr` object in the macro's expansion (or, for
// names only known at run time, an interned object that lives until the process
// exits). Its address is what the hot path stores into the ring; the drainer maps
// addresses to dense SiteIds for exporters. Aligned to 32 so that the low five bits
// of the address are free to carry the record kind (detail/record.hpp).
struct alignas(32) SiteInfo {
  const char* name;      // never null; may hold any bytes (exporters escape them)
  const char* function;  // enclosing function, "" for interned names
  const char* file;      // source file, "" for interned names
  std::uint32_t line;    // source line, 0 for interned names
  SiteKind kind;
  std::uint8_t options = 0;   // SiteOptions bits
  const char* category = "";  // RINGTRACE_ZONE_IN's category; "" for none
  // A sampled site (SiteOptions::sampled) records one zone in this many, per thread; 0
  // in a call site means the session's Config::sample_every. What exporters see through
  // TraceContext::site() is the number in effect (at least 1); 1 for every other site.
  std::uint32_t sample_every = 0;
};

// Session::step() and frame_mark() make zones of one call site named "step" (kind zone,
// SiteOptions::step) on the session's "steps" track, each zone's value the step number N
// (Event::value.u); exporters name each zone "step #N".
inline constexpr const char* kStepSiteName = "step";
RINGTRACE_NO_INSTRUMENT inline bool is_step_site(const SiteInfo& site) noexcept {
  return site.kind == SiteKind::zone && (site.options & SiteOptions::step) != 0 && site.name != nullptr &&
         std::string_view(site.name) == kStepSiteName;
}

}  // namespace ringtrace
