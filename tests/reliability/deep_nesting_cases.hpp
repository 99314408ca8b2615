// The crafted streams of test_deep_nesting.cpp and deep_nesting_counts.cpp: zones nested
// hundreds of thousands deep (a corrupt or hostile trace file, a runaway recursion), and
// every exporter and stream processor that must stay linear in events whatever the
// depth, each made afresh by its case.
#pragma once

#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <ostream>
#include <streambuf>
#include <string>
#include <vector>

#include "flight_recorder.hpp"  // runtime/streams: make_flight_recorder
#include "ringtrace/exporters/chrome_trace.hpp"
#include "ringtrace/exporters/folded_stacks.hpp"
#include "ringtrace/exporters/ops_summary.hpp"
#include "ringtrace/exporters/perfetto.hpp"
#include "ringtrace/exporters/pstats.hpp"
#include "ringtrace/exporters/table.hpp"
#include "ringtrace/recorded_trace.hpp"
#include "ringtrace/session.hpp"
#include "support/validating_exporter.hpp"
#include "windows.hpp"  // runtime/streams: make_window_router

namespace ringtrace::deep_nesting {

namespace fs = std::filesystem;

// Counts what it is given, keeps nothing: the exporters' streams go here.
class NullBuffer final : public std::streambuf {
 protected:
  int overflow(int c) override { return c; }
  std::streamsize xsputn(const char*, std::streamsize n) override { return n; }
};
inline NullBuffer g_null_buffer;
inline std::ostream g_null(&g_null_buffer);

struct Shape {
  bool ends;       // every begin gets its end (else the stream stops with all of them open)
  bool same_time;  // every begin in one nanosecond (else 1 us apart)
};

// A step zone around everything (so that the window router opens its window), then
// `depth` nested begins of two alternating sites (recursion for the call graphs), then,
// with `ends`, their ends.
inline RecordedTrace nested(std::size_t depth, Shape shape) {
  TraceBuilder b("deep");
  const SiteId step = b.site("step", SiteKind::zone, {}, 0, {}, {}, SiteOptions::step);
  const SiteId sites[2] = {b.site("a"), b.site("b")};
  const ThreadId t = b.thread("main", 1);
  const std::uint64_t base = 1'000'000;
  b.begin(t, step, base);
  std::uint64_t now = base;
  for (std::size_t i = 0; i < depth; ++i) {
    if (!shape.same_time) now += 1000;
    b.begin(t, sites[i % 2], now);
  }
  if (shape.ends) {
    for (std::size_t i = 0; i < depth; ++i) b.end(t, now += 1000);
  }
  RecordedTrace trace = b.build(now + 1000);
  if (!shape.ends) {
    // build() closes what is open, as a live session's stop() would; a cut recording
    // has no such ends, and the exporter's on_finish must close them.
    std::erase_if(trace.events, [](const Event& e) {
      return e.kind == EventKind::zone_end && (e.flags & EventFlags::closed_at_stop) != 0;
    });
  }
  return trace;
}

using MakeExporter = std::function<std::shared_ptr<Exporter>()>;

struct Case {
  const char* name;
  MakeExporter make;
  // Stream processors: the stream their window's (or snapshot's) exporter got is whole.
  std::shared_ptr<std::shared_ptr<testing::ValidatingExporter>> window = nullptr;
  bool window_needs_ends = false;  // the trigger fires at an end
};

// A window factory whose exporter checks the stream it gets; `window` keeps the last one.
inline WindowExporterFactory checked(const std::shared_ptr<std::shared_ptr<testing::ValidatingExporter>>& window) {
  return [window](const WindowInfo&) {
    *window = std::make_shared<testing::ValidatingExporter>();
    return *window;
  };
}

inline fs::path scratch_dir() {
  const fs::path dir = fs::temp_directory_path() / ("ringtrace_deep_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  return dir;
}

inline std::vector<Case> cases() {
  const fs::path dir = scratch_dir();
  std::vector<Case> out;
  out.push_back({"chrome", [] { return chrome_trace_exporter(g_null); }});
  out.push_back({"perfetto", [] { return perfetto_exporter(g_null); }});
  out.push_back({"folded", [] { return folded_stacks_exporter(g_null); }});
  out.push_back({"folded_total_thread_roots", [] {
                   FoldedStacksOptions o;
                   o.value = FoldedValue::total_ns;
                   o.thread_root = true;
                   return folded_stacks_exporter(g_null, o);
                 }});
  out.push_back({"pstats", [dir] { return pstats_exporter(dir / "deep.prof"); }});
  out.push_back({"ops_summary", [] { return ops_summary_exporter(g_null); }});
  out.push_back({"table", [] { return table_exporter(g_null); }});
  out.push_back({"memory", [] { return std::make_shared<MemoryExporter>(); }});
  auto window = std::make_shared<std::shared_ptr<testing::ValidatingExporter>>();
  out.push_back(
      {"window_router", [window] { return detail::make_window_router(std::nullopt, {checked(window)}); }, window});
  // A snapshot requested now: the stream's times are long past, so it is served at
  // on_finish and takes everything the recorder holds (every begin still open).
  window = std::make_shared<std::shared_ptr<testing::ValidatingExporter>>();
  out.push_back({"flight_recorder_snapshot",
                 [window] {
                   Config config;
                   config.flight_recorder.keep = std::chrono::hours(1);
                   config.flight_recorder.min_interval = std::chrono::milliseconds(0);
                   auto handle = detail::make_flight_recorder(config, {checked(window)});
                   handle.request("deep");
                   return detail::as_exporter(handle);
                 },
                 window});
  // Most begins evicted (kept aside while open), then a snapshot: they come first.
  window = std::make_shared<std::shared_ptr<testing::ValidatingExporter>>();
  out.push_back({"flight_recorder_evicted",
                 [window] {
                   Config config;
                   config.flight_recorder.keep = std::chrono::milliseconds(1);
                   config.flight_recorder.min_interval = std::chrono::milliseconds(0);
                   auto handle = detail::make_flight_recorder(config, {checked(window)});
                   handle.request("deep");
                   return detail::as_exporter(handle);
                 },
                 window});
  // The trigger (zone "a" longer than 0) at the innermost end: a snapshot that takes
  // the ring and then, live, the rest of the stream (`after` is an hour).
  window = std::make_shared<std::shared_ptr<testing::ValidatingExporter>>();
  out.push_back({"flight_recorder_trigger",
                 [window] {
                   Config config;
                   config.flight_recorder.keep = std::chrono::hours(1);
                   config.flight_recorder.after = std::chrono::hours(1);
                   config.flight_recorder.min_interval = std::chrono::milliseconds(0);
                   config.trigger.zone = "a";
                   config.trigger.longer_than = std::chrono::nanoseconds(0);
                   return detail::as_exporter(detail::make_flight_recorder(config, {checked(window)}));
                 },
                 window, true});
  return out;
}

}  // namespace ringtrace::deep_nesting
