// One exporter object used for two runs (on_start ... on_finish, then again, as a session
// started a second time drives it) writes for the second run exactly the bytes a fresh
// exporter writes for it: nothing of the first run's state reaches the second. The two
// runs' sites differ where it matters most, Session::step()'s zones ("step #N"): the
// step site moves to another id, or the first run had none.
#include <gtest/gtest.h>
#include <unistd.h>  // getpid

#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "ringtrace/exporters/binary_trace.hpp"
#include "ringtrace/exporters/chrome_trace.hpp"
#include "ringtrace/exporters/folded_stacks.hpp"
#include "ringtrace/exporters/ops_summary.hpp"
#include "ringtrace/exporters/perfetto.hpp"
#include "ringtrace/exporters/pstats.hpp"
#include "ringtrace/exporters/table.hpp"
#include "ringtrace/recorded_trace.hpp"

namespace ringtrace {
namespace {

namespace fs = std::filesystem;

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

fs::path out_dir() {
  const fs::path dir = fs::temp_directory_path() / ("ringtrace_exporter_runs_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  return dir;
}

// Steps 1..3 on a steps thread around work on a main thread; `step_first`: the step site
// is made before the zone sites (its id 1), else after them (id 3); `steps`: with steps.
RecordedTrace run_trace(bool steps, bool step_first) {
  TraceBuilder b("runs");
  SiteId step = 0;
  if (steps && step_first) step = b.site("step", SiteKind::zone, {}, 0, {}, {}, SiteOptions::step);
  const SiteId work = b.site("work", SiteKind::zone, "work.cpp", 10, "work()");
  const SiteId inner = b.site("inner", SiteKind::zone, "work.cpp", 20, "inner()");
  if (steps && !step_first) step = b.site("step", SiteKind::zone, {}, 0, {}, {}, SiteOptions::step);
  const SiteId depth = b.site("depth", SiteKind::counter);
  const ThreadId main = b.thread("main", 100);
  const ThreadId stepper = steps ? b.thread("steps", 101) : 0;
  std::uint64_t t = 1'000'000;
  for (std::int64_t n = 1; n <= 3; ++n) {
    if (steps) b.begin(stepper, step, t, n);
    b.begin(main, work, t + 100);
    b.begin(main, inner, t + 200);
    b.counter(main, depth, t + 250, n);
    b.end(main, t + 300 + static_cast<std::uint64_t>(n) * 10);
    b.end(main, t + 400 + static_cast<std::uint64_t>(n) * 20);
    if (steps) b.end(stepper, t + 900);
    t += 1000;
  }
  return b.build(t);
}

struct Format {
  const char* name;
  std::function<std::shared_ptr<Exporter>(const fs::path&)> make;
};

// What the exporter at `path` wrote, as bytes; the binary file's as the Chrome trace it
// replays to (its session frame holds the wall clock and the host's name).
std::string output(const Format& format, const fs::path& path) {
  if (std::string(format.name) != "binary") return read_file(path);
  std::ostringstream chrome;
  const std::shared_ptr<Exporter> exporter = chrome_trace_exporter(chrome);
  replay_file(path, *exporter);
  return chrome.str();
}

const std::vector<Format>& formats() {
  static const std::vector<Format> all = {
      {"chrome", [](const fs::path& p) { return chrome_trace_exporter(p); }},
      {"perfetto", [](const fs::path& p) { return perfetto_exporter(p); }},
      {"perfetto_delta",
       [](const fs::path& p) {
         PerfettoOptions options;
         options.delta_timestamps = true;
         return perfetto_exporter(p, options);
       }},
      {"folded", [](const fs::path& p) { return folded_stacks_exporter(p); }},
      {"pstats", [](const fs::path& p) { return pstats_exporter(p); }},
      {"ops_summary", [](const fs::path& p) { return ops_summary_exporter(p); }},
      {"table", [](const fs::path& p) { return table_exporter(p); }},
      {"binary", [](const fs::path& p) { return binary_trace_exporter(p); }},
  };
  return all;
}

void expect_second_run_fresh(const RecordedTrace& first, const RecordedTrace& second, const std::string& label) {
  const fs::path dir = out_dir();
  for (const Format& format : formats()) {
    SCOPED_TRACE(std::string(format.name) + ", " + label);
    const fs::path reused_path = dir / (std::string(format.name) + "_reused");
    const fs::path fresh_path = dir / (std::string(format.name) + "_fresh");
    const std::shared_ptr<Exporter> reused = format.make(reused_path);
    replay(first, *reused);
    replay(second, *reused);
    const std::shared_ptr<Exporter> fresh = format.make(fresh_path);
    replay(second, *fresh);
    const std::string expected = output(format, fresh_path);
    ASSERT_FALSE(expected.empty());
    EXPECT_EQ(output(format, reused_path), expected);
  }
  fs::remove_all(dir);
}

TEST(ExporterRuns, StepSiteMovesToAnotherId) {
  expect_second_run_fresh(run_trace(true, true), run_trace(true, false), "step site 1, then 3");
  expect_second_run_fresh(run_trace(true, false), run_trace(true, true), "step site 3, then 1");
}

TEST(ExporterRuns, FirstRunWithoutSteps) {
  expect_second_run_fresh(run_trace(false, true), run_trace(true, true), "no steps, then step site 1");
  expect_second_run_fresh(run_trace(false, true), run_trace(true, false), "no steps, then step site 3");
}

TEST(ExporterRuns, SecondRunWithoutSteps) {
  expect_second_run_fresh(run_trace(true, true), run_trace(false, true), "step site 1, then none");
}

// What "right" means for the step zones, said directly: the second run's steps are
// named "step #N" and its other zones by their sites, in the Chrome trace.
TEST(ExporterRuns, SecondRunNamesItsSteps) {
  const fs::path path = out_dir() / "named.json";
  const std::shared_ptr<Exporter> chrome = chrome_trace_exporter(path);
  replay(run_trace(true, true), *chrome);
  replay(run_trace(true, false), *chrome);
  const std::string json = read_file(path);
  for (const char* name : {"\"name\":\"step #1\"", "\"name\":\"step #2\"", "\"name\":\"step #3\""}) {
    EXPECT_NE(json.find(name), std::string::npos) << name;
  }
  EXPECT_EQ(json.find("\"name\":\"step\""), std::string::npos);
  EXPECT_EQ(json.find("\"name\":\"step #0\""), std::string::npos) << "a zone named as a step";
  EXPECT_NE(json.find("\"name\":\"work\""), std::string::npos);
  fs::remove_all(path.parent_path());
}

}  // namespace
}  // namespace ringtrace
