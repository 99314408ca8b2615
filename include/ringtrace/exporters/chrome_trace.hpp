// Chrome trace exporter: the Trace Event Format (JSON) that Perfetto UI, chrome://tracing,
// Chrome DevTools' Performance panel and speedscope open. See docs/formats/chrome_trace.md.
#pragma once

#include <cstddef>     // buffer size
#include <cstdint>     // pid
#include <filesystem>  // output paths
#include <iosfwd>      // the stream overload
#include <memory>      // the exporter is shared with the session
#include <string>      // path

#include "ringtrace/detail/platform.hpp"  // RINGTRACE_API
#include "ringtrace/exporter.hpp"         // Exporter

namespace ringtrace {

struct ChromeTraceOptions {
  // Adds the call site's "file" and "line" to the args of zones and instants (sites
  // made with ringtrace::intern() have none and get no args).
  bool source_locations = false;
  // The "pid" of every event; 0 means getpid() at the start of each run.
  std::uint32_t pid = 0;
  // Output is formatted into a buffer of about this size, then written in one call.
  std::size_t buffer_bytes = std::size_t{1} << 18;
  // false: a counter is one process-wide series per name; samples of one name from
  // several threads interleave in time order. true: one series per counter and thread,
  // named "<counter> (tid <os tid>)".
  bool per_thread_counters = false;
  // With Config::memory: the counter "ringtrace: heap (bytes)" of each process, its live
  // heap, written at most about three times per this interval (nanoseconds), its highest
  // value in every interval (the peak with it) kept exact, to the nanosecond; 0: a sample
  // at every change (docs/memory.md, "Exporters").
  std::uint64_t heap_interval_ns = 100'000;
};

// Writes the trace to `path` (gzip-compressed when it ends in ".gz") while the session
// runs; the file is complete, valid JSON when Session::stop() returns. The file is
// created here: a path that cannot be opened throws std::runtime_error naming the path
// and the reason. Each later run of the session rewrites the file from the start.
RINGTRACE_API std::shared_ptr<Exporter> chrome_trace_exporter(const std::filesystem::path& path,
                                                              ChromeTraceOptions options = {});

// Writes to a stream that the caller keeps alive for the exporter's lifetime; each run
// appends one complete JSON document to it.
RINGTRACE_API std::shared_ptr<Exporter> chrome_trace_exporter(std::ostream& stream, ChromeTraceOptions options = {});

}  // namespace ringtrace
