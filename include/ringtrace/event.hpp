// The merged, time-ordered event stream that exporters receive.
#pragma once

#include <cstdint>  // fixed-width fields of Event

namespace ringtrace {

using SiteId = std::uint32_t;    // dense, per session: TraceContext::site(id)
using ThreadId = std::uint32_t;  // dense, per session, in the order the drainer first sees threads

enum class EventKind : std::uint8_t {
  zone_begin = 0,  // value: region id for region sites, else 0
  zone_end = 1,    // same site and value as the matching begin
  instant = 2,
  counter = 3,     // value.i or value.d, see EventFlags::counter_double
  dropped = 4,     // value.u events were lost on this thread just before this time
};

namespace EventFlags {
inline constexpr std::uint8_t counter_double = 1;  // counter value is value.d
inline constexpr std::uint8_t region = 2;          // zone of a RINGTRACE_REGION site
inline constexpr std::uint8_t closed_at_stop = 4;  // end made up at stop(): zone still open
inline constexpr std::uint8_t late = 8;            // time raised to keep the stream ordered
}  // namespace EventFlags

// 32 bytes. Times are nanoseconds on the CLOCK_MONOTONIC timeline.
struct Event {
  std::uint64_t time_ns;
  SiteId site;       // for `dropped` events: 0, the built-in "ringtrace: dropped events" site
  ThreadId thread;
  EventKind kind;
  std::uint8_t flags;
  std::uint16_t reserved;
  std::uint32_t depth;  // zones open on this thread outside this event (begin: 0 at top level)
  union {
    std::int64_t i;
    double d;
    std::uint64_t u;
  } value;
};
static_assert(sizeof(Event) == 32, "Event is part of the exporter ABI");

}  // namespace ringtrace
