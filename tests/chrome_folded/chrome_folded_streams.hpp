// Shared by the Chrome/folded tests and the live-session tool: the hand-built golden
// stream, and a reference computation of zones from a recorded stream that does not use
// the exporters' code (ZoneTracker), so that the tests compare two implementations.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "ringtrace/recorded_trace.hpp"

namespace ringtrace::testing {

// Hostile names: quotes, backslash, newline, control character, ';', a trailing
// " 7" (space + digits), emoji, and invalid UTF-8 bytes.
inline const std::string kWeirdZone = "q\"b\\s\nl;x\x01 12 \xF0\x9F\x99\x82 \xFF end 7";
inline const std::string kWeirdThread = "worker \"1\"\t\\ \xF0\x9F\x9A\x80 \xC3\x28";

// Two threads, nested zones, a region, an instant, integer and double counters, a
// dropped-events marker and zones still open at stop (9000 ns).
RecordedTrace golden_trace();

// Rich events: zone values (int, double, NaN), texts (hostile bytes, truncated), flows
// between two threads, an async span that ends on the other thread, a zone in a
// category, an arg with no zone open. strip_rich(): the same stream without them.
RecordedTrace rich_trace();
RecordedTrace strip_rich(const RecordedTrace& trace);

struct RefZone {
  ThreadId thread;
  SiteId site;
  std::uint64_t begin_ns;
  std::uint64_t end_ns;
  std::int64_t parent;  // index into the result, -1 at top level
  std::uint32_t depth;
  bool closed_at_stop;
  std::uint64_t self_ns;  // duration minus the direct children's durations
};

// Every zone of the stream, in order of its begin.
std::vector<RefZone> reference_zones(const RecordedTrace& trace);

// Sum of all zones' self times, computed as the sum of the top-level zones' durations.
std::uint64_t top_level_total(const RecordedTrace& trace);

// replay() with a context whose metadata() is `metadata` (what ringtrace::benchmark adds).
void replay_with_metadata(const RecordedTrace& trace, Exporter& exporter, std::vector<TraceMetadata> metadata);

}  // namespace ringtrace::testing
