// Profiling windows: a schedule over steps, windows written by factories while the
// program runs on, zones straddling a window's end closed and marked.
#include <gtest/gtest.h>

#include <unistd.h>

#include <barrier>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "ringtrace/exporters/binary_trace.hpp"
#include "ringtrace/exporters/chrome_trace.hpp"
#include "ringtrace/exporters/table.hpp"
#include "ringtrace/recorded_trace.hpp"
#include "ringtrace/ringtrace.hpp"

namespace ringtrace {
namespace {

struct Windows {
  std::mutex mutex;
  std::vector<WindowInfo> infos;
  std::vector<std::shared_ptr<MemoryExporter>> traces;
  WindowExporterFactory factory() {
    return [this](const WindowInfo& info) {
      std::lock_guard<std::mutex> lock(mutex);
      infos.push_back(info);
      traces.push_back(std::make_shared<MemoryExporter>());
      return traces.back();
    };
  }
};

// A zone's name as the exporters write it: a step's zone (the one site "step", flagged
// SiteOptions::step, its number in the value) is "step #N".
std::string zone_label(const RecordedTrace& t, const Event& e) {
  const RecordedSite& site = t.sites[e.site];
  if ((site.options & SiteOptions::step) != 0) return site.name + " #" + std::to_string(e.value.u);
  return site.name;
}

// "thread name/zone name" -> zones begun.
std::map<std::string, int> count_zones(const RecordedTrace& t, const std::string& prefix = "") {
  std::map<std::string, int> out;
  for (const Event& e : t.events) {
    if (e.kind != EventKind::zone_begin) continue;
    out[prefix + t.threads[e.thread].name + "/" + zone_label(t, e)] += 1;
  }
  return out;
}

TEST(Windows, ScheduleWritesExactlyTheActiveSteps) {
  Config config;
  config.schedule = Schedule{.skip_first = 0, .wait = 2, .warmup = 2, .active = 2, .repeat = 2};
  Session session(config);
  Windows windows;
  session.add_window_exporter(windows.factory());
  // The binary file works as a window exporter too: it writes the window's stream.
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("ringtrace-windows-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  session.add_window_exporter([&](const WindowInfo& w) {
    return binary_trace_exporter(dir / ("window-" + std::to_string(w.index) + ".rtrace"));
  });
  auto whole = std::make_shared<MemoryExporter>();  // the session's own exporter: warmup and active steps
  session.add_exporter(whole);
  std::barrier sync(2);
  std::thread worker([&] {
    set_thread_name("worker");
    for (int step = 0; step < 12; ++step) {
      sync.arrive_and_wait();  // step `step` has begun
      for (int i = 0; i <= step % 3; ++i) {
        RINGTRACE_ZONE("work");
        RINGTRACE_ZONE_VALUE("step", step);
      }
      if (step == 5) {
        // Opens in the last active step of window 0, ends in a wait step: closed at
        // the window's end, marked, and in no other window.
        static constexpr SiteInfo long_site{"long", "", "", 0, SiteKind::zone, 0, ""};
        static std::uint32_t epoch = 0;
        epoch = detail::zone_open<false>(&long_site, 0);
        sync.arrive_and_wait();
        sync.arrive_and_wait();  // step 6
        sync.arrive_and_wait();
        sync.arrive_and_wait();  // step 7
        detail::zone_close(epoch);
        step = 7;
      }
      sync.arrive_and_wait();  // done with it
    }
  });
  set_thread_name("main");
  session.start();
  for (int step = 0; step < 12; ++step) {
    sync.arrive_and_wait();
    { RINGTRACE_ZONE("main_work"); }
    sync.arrive_and_wait();
    session.step();  // ends `step`, begins step + 1
  }
  worker.join();
  EXPECT_EQ(session.current_step(), 12u);
  session.stop();

  ASSERT_EQ(windows.infos.size(), 2u);
  EXPECT_EQ(windows.infos[0].index, 0u);
  EXPECT_EQ(windows.infos[0].first_step, 4u);
  EXPECT_EQ(windows.infos[0].last_step, 5u);
  EXPECT_EQ(windows.infos[1].index, 1u);
  EXPECT_EQ(windows.infos[1].first_step, 10u);
  EXPECT_EQ(windows.infos[1].last_step, 11u);
  const RecordedTrace w0 = windows.traces[0]->trace(), w1 = windows.traces[1]->trace();
  EXPECT_GT(w0.stats.clock.stop_ns, w0.stats.clock.start_ns);
  // Window 0: steps 4 and 5; window 1: steps 10 and 11 (work: step % 3 + 1 zones each).
  EXPECT_EQ(count_zones(w0), (std::map<std::string, int>{{"main/main_work", 2},
                                                         {"steps/step #4", 1},
                                                         {"steps/step #5", 1},
                                                         {"worker/long", 1},
                                                         {"worker/work", 2 + 3}}));
  EXPECT_EQ(count_zones(w1),
            (std::map<std::string, int>{
                {"main/main_work", 2}, {"steps/step #10", 1}, {"steps/step #11", 1}, {"worker/work", 2 + 3}}));
  for (const auto* w : {&w0, &w1}) {
    const RecordedTraceContext context(*w);
    int depth = 0;
    for (const Event& e : w->events) {
      if (e.kind == EventKind::arg) {
        const std::int64_t step = e.value.i;
        EXPECT_TRUE(w == &w0 ? (step == 4 || step == 5) : (step == 10 || step == 11)) << step;
      }
      if (e.kind == EventKind::zone_begin) ++depth;
      if (e.kind == EventKind::zone_end) {
        --depth;
        const bool marked = (e.flags & EventFlags::closed_at_window_end) != 0;
        EXPECT_EQ(marked, w->sites[e.site].name == std::string("long")) << w->sites[e.site].name;
      }
    }
    EXPECT_EQ(depth, 0);
  }
  // The windows' binary files hold the same zones, with the same times; the zone closed at
  // the window's end is closed at the file's end (marked closed_at_stop there).
  for (const auto* w : {&w0, &w1}) {
    const std::size_t index = w == &w0 ? 0 : 1;
    MemoryExporter file;
    const ReplayResult r = replay_file(dir / ("window-" + std::to_string(index) + ".rtrace"), file);
    EXPECT_TRUE(r.complete) << r.problem;
    const RecordedTrace back = file.trace();
    EXPECT_EQ(count_zones(back), count_zones(*w));
    std::vector<std::uint64_t> times, back_times;
    for (const Event& e : w->events) times.push_back(e.time_ns);
    for (const Event& e : back.events) back_times.push_back(e.time_ns);
    EXPECT_EQ(times, back_times);
    for (const Event& e : back.events) {
      if (e.kind == EventKind::zone_end && back.sites[e.site].name == std::string("long")) {
        EXPECT_NE(e.flags & EventFlags::closed_at_stop, 0);
      }
    }
  }
  std::filesystem::remove_all(dir);
  // The session's own exporter: only warmup and active steps were recorded.
  std::map<std::int64_t, int> steps_seen;
  for (const Event& e : whole->trace().events) {
    if (e.kind == EventKind::arg) steps_seen[e.value.i] += 1;
  }
  EXPECT_EQ(steps_seen,
            (std::map<std::int64_t, int>{{2, 3}, {3, 1}, {4, 2}, {5, 3}, {8, 3}, {9, 1}, {10, 2}, {11, 3}}));
}

TEST(Windows, WithoutAScheduleOneWindowSpansTheRun) {
  Session session;
  Windows windows;
  session.add_window_exporter(windows.factory());
  session.start();
  for (int i = 0; i < 5; ++i) {
    RINGTRACE_ZONE("work");
    session.step();
  }
  session.stop();
  ASSERT_EQ(windows.infos.size(), 1u);
  std::map<std::string, int> zones;
  const RecordedTrace t = windows.traces[0]->trace();
  for (const Event& e : t.events) {
    if (e.kind == EventKind::zone_begin) zones[zone_label(t, e)] += 1;
  }
  EXPECT_EQ(zones["work"], 5);
  EXPECT_EQ(zones["step #0"], 1);
  EXPECT_EQ(zones["step #5"], 1);  // open at stop, closed there
}

// Each step is recorded with one marker site and its number (nothing interned per
// step): the drainer and the binary file's reader both turn it into a zone of the one
// step site "step" (kind zone, SiteOptions::step, no region flag) whose value is N, on
// the "steps" track.
TEST(Windows, StepZonesAreNamedAliveAndInTheBinaryFile) {
  const std::filesystem::path file =
      std::filesystem::temp_directory_path() / ("ringtrace_steps_" + std::to_string(::getpid()) + ".rtrace");
  Config config;
  config.schedule = Schedule{.skip_first = 0, .wait = 1, .warmup = 0, .active = 3, .repeat = 0};
  Session session(config);
  auto live = std::make_shared<MemoryExporter>();
  session.add_exporter(live);
  session.add_exporter(binary_trace_exporter(file));
  session.start();
  for (int i = 0; i < 40; ++i) {
    RINGTRACE_ZONE("work");
    session.step();
  }
  session.stop();
  MemoryExporter replayed;
  const ReplayResult result = replay_file(file, replayed);
  ASSERT_TRUE(result.complete) << result.problem;
  std::filesystem::remove(file);
  for (const RecordedTrace& t : {live->trace(), replayed.trace()}) {
    std::vector<std::string> steps;
    int work = 0;
    for (const Event& e : t.events) {
      if (e.kind != EventKind::zone_begin) continue;
      const RecordedSite& site = t.sites[e.site];
      if (site.name == "work") {
        ++work;
        continue;
      }
      steps.push_back(zone_label(t, e));
      EXPECT_EQ(site.name, "step");
      EXPECT_EQ(site.kind, SiteKind::zone);
      EXPECT_NE(site.options & SiteOptions::step, 0);
      EXPECT_EQ(e.flags & EventFlags::region, 0);
      EXPECT_EQ(t.threads[e.thread].name, "steps");
    }
    // Steps 1-3, 5-7, ... record (every fourth waits); step 40 is open at stop.
    std::vector<std::string> expected;
    for (int n = 0; n <= 40; ++n) {
      if (n % 4 != 0) expected.push_back("step #" + std::to_string(n));
    }
    EXPECT_EQ(steps, expected);
    EXPECT_EQ(work, 30);
    // The table folds them into one row when asked.
    TableOptions options;
    options.row_limit = 0;
    options.fold_steps = true;
    const KeyAverages folded = key_averages(t, options);
    ASSERT_EQ(folded.rows.size(), 2u);
    for (const TableRow& r : folded.rows) {
      EXPECT_TRUE(r.name == "work" || r.name == "step #*") << r.name;
      EXPECT_EQ(r.calls, r.name == "work" ? 30u : expected.size());
    }
    options.fold_steps = false;
    EXPECT_EQ(key_averages(t, options).rows.size(), 1 + expected.size());
  }
}

// A window's files are complete while the program runs on.
TEST(Windows, FilesAreWrittenWhileTheRunGoesOn) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("ringtrace-windows-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  Config config;
  config.schedule = Schedule{.skip_first = 1, .wait = 1, .warmup = 0, .active = 1, .repeat = 0};
  Session session(config);
  session.add_window_exporter(
      [&](const WindowInfo& w) { return chrome_trace_exporter(dir / ("trace-" + std::to_string(w.index) + ".json")); });
  session.start();
  for (int step = 0; step < 7; ++step) {
    { RINGTRACE_ZONE("work"); }
    session.step();
  }
  // Windows 0 and 1 (steps 2 and 4) ended: their files are renamed into place by the
  // drainer within a few passes.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (!std::filesystem::exists(dir / "trace-1.json") && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  EXPECT_TRUE(std::filesystem::exists(dir / "trace-0.json"));
  EXPECT_TRUE(std::filesystem::exists(dir / "trace-1.json"));
  EXPECT_TRUE(session.running());
  session.stop();
  std::ifstream in(dir / "trace-0.json");
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_NE(text.str().find("\"name\":\"step #2\""), std::string::npos) << text.str();
  EXPECT_NE(text.str().find("\"name\":\"work\""), std::string::npos);
  EXPECT_EQ(text.str().find("\"name\":\"step #3\""), std::string::npos);  // a wait step
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace ringtrace
