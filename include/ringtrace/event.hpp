// The merged, time-ordered event stream that exporters receive.
#pragma once

#include "ringtrace/requires_cxx20.hpp"  // first: one clear error below C++20

#include <cstdint>  // fixed-width fields of Event

namespace ringtrace {

using SiteId = std::uint32_t;    // dense, per session: TraceContext::site(id)
using ThreadId = std::uint32_t;  // dense, per session, in the order the drainer first sees threads

enum class EventKind : std::uint8_t {
  zone_begin = 0,  // value: region id for region sites, else 0
  zone_end = 1,    // same site and value as the matching begin
  instant = 2,
  counter = 3,  // value.i or value.d, see EventFlags::counter_double
  dropped = 4,  // value.u events were lost on this thread just before this time
  // A value or text on the innermost zone open on this thread (RINGTRACE_ZONE_VALUE,
  // RINGTRACE_ZONE_TEXT); the site's name is the key. value.i or value.d (flag
  // value_double), or with flag `text` the bytes TraceContext::text(event) returns.
  // Its time is that of the thread's previous event. With no zone open it belongs to
  // nothing, and exporters leave it out.
  arg = 5,
  // The innermost open zone on this thread starts (flow_out) or ends (flow_in) the flow
  // value.u (RINGTRACE_FLOW_OUT / RINGTRACE_FLOW_IN). Time as for arg.
  flow_out = 6,
  flow_in = 7,
  // An asynchronous span value.u named by the site (RINGTRACE_ASYNC_BEGIN / _END): it
  // may end on another thread than the one it began on; spans do not nest in zones.
  async_begin = 8,
  async_end = 9,
  // A line of text at a point in time on the thread (RINGTRACE_MESSAGE): the site names
  // where it was written; the bytes are TraceContext::text(event), text_size long (flag
  // `text` always set, `truncated` if it was cut at recording).
  message = 10,
  // Context switches of the thread (Config::context_switches; docs/context-switches.md):
  // switch_out, it left the CPU at time_ns; switch_in, it came back. Site: the built-in
  // "ringtrace: switched out" / "ringtrace: switched in". value.u holds the
  // SwitchBits below. Written by the kernel, not the thread: depth is 0. Exporters that
  // do not draw them ignore them; exporters/common's ZoneTracker turns them into each
  // zone's on-CPU time.
  switch_out = 11,
  switch_in = 12,
  // Config::memory (docs/memory.md): the thread allocated (alloc) or freed (free) a block
  // of value.u bytes. A free's size is the allocation's (or its caller's, a sized delete);
  // with flag size_unknown it is not known (a block allocated before the session, or one
  // the heap's accounting could not keep) and value.u is 0. Site: the built-in
  // "ringtrace: allocated" / "ringtrace: freed". Belongs to the innermost zone open on the
  // thread (depth), as an instant does.
  alloc = 13,
  free = 14,
};

// Event::value.u of switch_out and switch_in events.
namespace SwitchBits {
// switch_out: the kernel preempted the thread (it stayed runnable: it waited for a
// CPU); clear, it blocked (sleep, lock, I/O) or the kernel did not say (before Linux 4.17).
inline constexpr std::uint64_t preempted = 1;
// The thread's switches are tracked from this event on (its stream opened now): a
// switch_in means it was on the CPU or runnable then; a switch_out means it was already
// off the CPU (it left at or before this time).
inline constexpr std::uint64_t stream_start = 2;
// Switch records were lost (the kernel's ring was full) just before this one: the state
// between the thread's previous switch event and this one is unknown.
inline constexpr std::uint64_t after_loss = 4;
// Bits 3 to 63 are 0 (reserved).
}  // namespace SwitchBits

namespace EventFlags {
inline constexpr std::uint8_t counter_double = 1;  // counter or arg value is value.d
inline constexpr std::uint8_t value_double = 1;    // the same bit, by its general name
// alloc or free (the same bit as value_double, by kind): made inside a zone that sampling
// left out (RINGTRACE_ZONE_SAMPLED): part of the bytes of the zones open around it, not of
// the self bytes of the innermost recorded one (its child's, which was not recorded).
inline constexpr std::uint8_t sampled_out = 1;
inline constexpr std::uint8_t region = 2;  // zone of a RINGTRACE_REGION site
// alloc or free (the same bit as region, by kind): a block the heap's accounting does not
// hold (a free of a block allocated before the session or not recorded; an allocation
// past Config::memory_max_blocks, and its free): it is not in the live heap
// (MemoryStats::live_bytes, the exporters' heap counter), and in the zones' bytes it is.
inline constexpr std::uint8_t untracked = 2;
inline constexpr std::uint8_t closed_at_stop = 4;  // end made up at stop(): zone still open
inline constexpr std::uint8_t late = 8;            // time raised to keep the stream ordered
inline constexpr std::uint8_t text = 16;           // arg: the value is text (TraceContext::text)
inline constexpr std::uint8_t truncated = 32;      // arg text: cut to the recording limit
// alloc (the same bit as truncated, by kind): not an allocation but a realloc that failed:
// it undoes its thread's last free (a block of value.u bytes, live again where it was).
inline constexpr std::uint8_t restored = 32;
inline constexpr std::uint8_t closed_at_window_end = 64;  // end made up at a window's end (windows only)
inline constexpr std::uint8_t size_unknown = 128;         // free: its block's size is not known (value.u 0)
}  // namespace EventFlags

// 32 bytes. Times are nanoseconds on the CLOCK_MONOTONIC timeline.
struct Event {
  std::uint64_t time_ns;
  SiteId site;  // for `dropped` events: 0, the built-in "ringtrace: dropped events" site
  ThreadId thread;
  EventKind kind;
  std::uint8_t flags;
  std::uint16_t text_size;  // arg with flag text: bytes of its text; else 0
  std::uint32_t depth;      // zones open on this thread outside this event (begin: 0 at top level)
  union {
    std::int64_t i;
    double d;
    std::uint64_t u;
  } value;
};
static_assert(sizeof(Event) == 32, "Event is part of the exporter ABI");

}  // namespace ringtrace
