// A window's (or a snapshot's) exporters never write a file the session's own exporters
// write, nor one file twice: the window is refused before anything is written, the
// router or recorder fails (the session disables it and lists the error, naming the
// file), and the session's exporter keeps every event.
//
// The session passes its exporters' files to the router and the recorder (Session::start);
// here the router and the recorder are driven as the drainer drives them, beside the
// session's exporter, so that the rule is tested where it is enforced.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "flight_recorder.hpp"
#include "ringtrace/exporters/chrome_trace.hpp"
#include "ringtrace/exporters/folded_stacks.hpp"
#include "ringtrace/files.hpp"
#include "ringtrace/recorded_trace.hpp"
#include "ringtrace/ringtrace.hpp"
#include "windows.hpp"

namespace ringtrace {
namespace {

namespace fs = std::filesystem;

fs::path fresh_dir(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / ("ringtrace_window_files_" + std::to_string(::getpid())) / name;
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

std::size_t count_of(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// 10,000 zones inside one step zone (so that a window opens at its begin).
RecordedTrace ten_thousand_zones() {
  TraceBuilder b("windows");
  const SiteId step = b.site("step", SiteKind::zone, {}, 0, {}, {}, SiteOptions::step);
  const SiteId work = b.site("work");
  const ThreadId t = b.thread("main", 1);
  std::uint64_t now = 1000;
  b.begin(t, step, now);
  for (int i = 0; i < 10000; ++i) {
    b.begin(t, work, now += 10);
    b.end(t, now += 10);
  }
  b.end(t, now += 10);
  return b.build(now + 10);
}

// Feeds the stream to the exporters in batches, as the drainer does: one that throws is
// disabled for the rest of the stream and its error kept; the others go on.
std::vector<std::string> drive(const RecordedTrace& trace, const std::vector<Exporter*>& exporters) {
  const RecordedTraceContext context(trace);
  std::vector<bool> failed(exporters.size(), false);
  std::vector<std::string> errors;
  const auto each = [&](const auto& call) {
    for (std::size_t i = 0; i < exporters.size(); ++i) {
      if (failed[i]) continue;
      try {
        call(*exporters[i]);
      } catch (const std::exception& e) {
        failed[i] = true;
        errors.push_back(e.what());
      }
    }
  };
  each([&](Exporter& x) { x.on_start(context); });
  for (std::size_t at = 0; at < trace.events.size(); at += 512) {
    const std::size_t n = std::min<std::size_t>(512, trace.events.size() - at);
    each([&](Exporter& x) { x.on_events(std::span<const Event>(trace.events.data() + at, n), context); });
    each([&](Exporter& x) { x.on_flush(context); });
  }
  each([&](Exporter& x) { x.on_finish(context, trace.stats); });
  return errors;
}

// The session writes trace.json; the window factory returns an exporter on that file,
// spelled as given or another way: refused, the session's file holds all 10,000 zones.
TEST(WindowFiles, AWindowOnTheSessionsFileIsRefusedAndTheSessionKeepsEveryEvent) {
  const fs::path dir = fresh_dir("session_path");
  const fs::path path = dir / "trace.json";
  const RecordedTrace trace = ten_thousand_zones();
  for (const fs::path& window_path : {path, dir / ".." / dir.filename() / "trace.json", dir / "." / "trace.json"}) {
    int windows = 0;
    auto session_exporter = chrome_trace_exporter(path);
    auto router = detail::make_window_router(std::nullopt, {[&](const WindowInfo&) {
                                               ++windows;
                                               return chrome_trace_exporter(window_path);
                                             }},
                                             session_exporter->output_paths());
    const std::vector<std::string> errors = drive(trace, {session_exporter.get(), router.get()});
    ASSERT_EQ(errors.size(), 1u) << window_path;
    EXPECT_NE(errors[0].find(window_path.string()), std::string::npos) << errors[0];
    EXPECT_EQ(windows, 1);
    session_exporter.reset();
    EXPECT_EQ(count_of(read_file(path), "\"name\":\"work\""), 10000u) << window_path;
    EXPECT_TRUE(partial_files(path).empty()) << "the refused exporter wrote nothing";
  }
}

// Two factories whose exporters write one file: the window is refused too. Files of
// their own are fine, and the session's exporter is untouched either way.
TEST(WindowFiles, TwoExportersOfAWindowOnOneFileAreRefused) {
  const fs::path dir = fresh_dir("window_twice");
  const RecordedTrace trace = ten_thousand_zones();
  auto session_exporter = std::make_shared<MemoryExporter>();
  auto router = detail::make_window_router(std::nullopt,
                                           {[&](const WindowInfo&) { return chrome_trace_exporter(dir / "w.out"); },
                                            [&](const WindowInfo&) { return folded_stacks_exporter(dir / "w.out"); }},
                                           session_exporter->output_paths());
  const std::vector<std::string> errors = drive(trace, {session_exporter.get(), router.get()});
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_NE(errors[0].find("w.out"), std::string::npos) << errors[0];
  EXPECT_FALSE(fs::exists(dir / "w.out"));
  EXPECT_EQ(session_exporter->event_count(), trace.events.size());

  auto fine = detail::make_window_router(std::nullopt,
                                         {[&](const WindowInfo&) { return chrome_trace_exporter(dir / "w.json"); },
                                          [&](const WindowInfo&) { return folded_stacks_exporter(dir / "w.folded"); }},
                                         {dir / "trace.json"});
  EXPECT_TRUE(drive(trace, {fine.get()}).empty());
  EXPECT_EQ(count_of(read_file(dir / "w.json"), "\"name\":\"work\""), 10000u);
  EXPECT_NE(read_file(dir / "w.folded").find("step;work "), std::string::npos) << read_file(dir / "w.folded");
}

// The flight recorder's snapshot exporters follow the same rule.
TEST(WindowFiles, ASnapshotOnTheSessionsFileIsRefused) {
  const fs::path dir = fresh_dir("snapshot_path");
  const fs::path path = dir / "trace.json";
  const RecordedTrace trace = ten_thousand_zones();
  auto session_exporter = chrome_trace_exporter(path);
  Config config;
  config.flight_recorder.keep = std::chrono::hours(1);
  detail::FlightRecorderHandle recorder = detail::make_flight_recorder(
      config, {[&](const WindowInfo&) { return chrome_trace_exporter(path); }}, session_exporter->output_paths());
  ASSERT_TRUE(recorder.request("on the session's file"));  // served at the end: its time is after the stream's
  const std::vector<std::string> errors = drive(trace, {session_exporter.get(), detail::as_exporter(recorder).get()});
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_NE(errors[0].find(path.string()), std::string::npos) << errors[0];
  EXPECT_EQ(recorder.snapshots(), 0u);
  session_exporter.reset();
  EXPECT_EQ(count_of(read_file(path), "\"name\":\"work\""), 10000u);
  EXPECT_TRUE(partial_files(path).empty());
}

// Removes what the tests above made.
struct RemoveScratch {
  ~RemoveScratch() {
    std::error_code ignored;
    fs::remove_all(fs::temp_directory_path() / ("ringtrace_window_files_" + std::to_string(::getpid())), ignored);
  }
} g_remove_scratch;

}  // namespace
// A live session: a window factory whose exporter writes the session's own file (by
// another spelling of its path) is refused when the window opens; the session's file
// keeps every event and no temporary is left behind.
TEST(WindowFiles, ASessionRefusesAWindowOnItsOwnFile) {
  const fs::path dir = fresh_dir("live"), path = dir / "trace.json";
  Session session;
  session.add_exporter(chrome_trace_exporter(path));
  session.add_window_exporter(
      [&](const WindowInfo&) { return chrome_trace_exporter(dir / ".." / dir.filename() / "trace.json"); });
  session.start();
  for (int i = 0; i < 10000; ++i) {
    RINGTRACE_ZONE("work");
  }
  session.stop();
  ASSERT_EQ(session.stats().exporter_errors.size(), 1u);
  EXPECT_NE(session.stats().exporter_errors[0].find("trace.json"), std::string::npos);
  EXPECT_EQ(count_of(read_file(path), "\"name\":\"work\""), 10000u);
  EXPECT_TRUE(partial_files(path).empty());
}

}  // namespace ringtrace
