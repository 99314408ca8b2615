// Perfetto exporter: Perfetto's native trace format (a protobuf `Trace` of
// `TracePacket`s with `TrackEvent`s), which the Perfetto UI and trace_processor load
// directly. Process and thread track descriptors; event names and categories interned
// per sequence; zones as slices with their values and texts as debug annotations and
// their flows; counters on counter tracks; async spans on tracks of their own; lost
// events as instants with their count. See docs/formats/perfetto.md.
#pragma once

#include <cstddef>     // buffer size
#include <cstdint>     // pid
#include <filesystem>  // output paths
#include <iosfwd>      // the stream overload
#include <memory>      // the exporter is shared with the session

#include "ringtrace/detail/platform.hpp"  // RINGTRACE_API
#include "ringtrace/exporter.hpp"         // Exporter

namespace ringtrace {

struct PerfettoOptions {
  // The process id written in the descriptors; 0: the recorded process's.
  std::uint32_t pid = 0;
  // Packets are encoded into a buffer of about this size, then written in one call.
  std::size_t buffer_bytes = std::size_t{1} << 18;
  // false: a counter is one process-wide track per name (RINGTRACE_COUNTER_PER_THREAD
  // sites excepted); true: one track per counter and thread.
  bool per_thread_counters = false;
  // false: every packet carries its time on the trace clock (6 to 9 bytes). true: times
  // as deltas on clocks defined per thread sequence (1 to 3 bytes; the file is about a
  // third smaller), which takes a ClockSnapshot per sequence, drawn by Perfetto UI as
  // "Snapshot" markers on a "Clock Snapshots" track. trace_processor reads the same
  // times either way.
  bool delta_timestamps = false;
  // With Config::memory: the counter track "ringtrace: heap (bytes)" of each process, its
  // live heap, written at most about three times per this interval (nanoseconds), its
  // highest value in every interval (the peak with it) kept exact, to the nanosecond; 0: a
  // sample at every change (docs/memory.md, "Exporters").
  std::uint64_t heap_interval_ns = 100'000;
};

// Writes the trace to `path` while the session runs (its temporary
// <path>.partial.XXXXXXXX until stop(), then renamed: <ringtrace/files.hpp>); complete
// when Session::stop() returns. A path that cannot be written (or that is a FIFO, a
// device, a directory) throws std::runtime_error naming it. Each later run of the session rewrites the file.
RINGTRACE_API std::shared_ptr<Exporter> perfetto_exporter(const std::filesystem::path& path,
                                                          PerfettoOptions options = {});
// Writes to a stream the caller keeps alive; each run appends one complete trace.
RINGTRACE_API std::shared_ptr<Exporter> perfetto_exporter(std::ostream& stream, PerfettoOptions options = {});

}  // namespace ringtrace
