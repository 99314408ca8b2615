// Session::step() and ringtrace::frame_mark() from any thread (issue 22 point 11): the
// step zones are on the session's "steps" track whichever thread calls, every step once,
// in order, with no unbalanced end; and a run of a million steps, or of 100,000 one-step
// windows, holds memory flat (point 12): nothing is kept per step or per window.
#include <gtest/gtest.h>

#include <malloc.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "ringtrace/exporters/folded_stacks.hpp"
#include "ringtrace/recorded_trace.hpp"
#include "ringtrace/ringtrace.hpp"
#include "support/validating_exporter.hpp"  // testing::test_scale
#include "thread_registry.hpp"              // run_drainer_pass

namespace ringtrace {
namespace {

struct StepZone {
  std::uint64_t number = 0;
  std::uint64_t begin_ns = 0, end_ns = 0;
  bool ended = false;
};

// The step zones of `t`, in the order they begin, checked to be on the steps track and
// to nest as a sequence (each ends before the next begins).
std::vector<StepZone> step_zones(const RecordedTrace& t) {
  std::vector<StepZone> out;
  bool open = false;
  for (const Event& e : t.events) {
    const RecordedSite& site = t.sites[e.site];
    if ((e.kind != EventKind::zone_begin && e.kind != EventKind::zone_end) || (site.options & SiteOptions::step) == 0) {
      continue;
    }
    EXPECT_EQ(site.name, "step");
    EXPECT_EQ(t.threads[e.thread].name, "steps");
    if (e.kind == EventKind::zone_begin) {
      EXPECT_FALSE(open) << "step " << e.value.u << " begins inside another";
      out.push_back(StepZone{e.value.u, e.time_ns, 0, false});
      open = true;
    } else {
      EXPECT_TRUE(open);
      if (!out.empty()) {
        EXPECT_EQ(e.value.u, out.back().number);
        out.back().end_ns = e.time_ns;
        out.back().ended = true;
      }
      open = false;
    }
  }
  return out;
}

// Threads take turns calling step() (one at a time, each call on another thread), as a
// pipeline whose stages step by turn does: every step one zone on the steps track.
TEST(Steps, ThreadsTakingTurnsMakeOneZonePerStep) {
  Session session;
  auto trace = std::make_shared<MemoryExporter>();
  session.add_exporter(trace);
  session.start();
  constexpr int kThreads = 3, kSteps = 300;
  std::mutex turn_mutex;
  std::condition_variable turn_changed;
  int turn = 0;
  std::vector<std::thread> threads;
  for (int id = 0; id < kThreads; ++id) {
    threads.emplace_back([&, id] {
      set_thread_name("stepper " + std::to_string(id));
      for (;;) {
        std::unique_lock<std::mutex> lock(turn_mutex);
        turn_changed.wait(lock, [&] { return turn >= kSteps || turn % kThreads == id; });
        if (turn >= kSteps) return;
        { RINGTRACE_ZONE("work"); }
        session.step();
        ++turn;
        turn_changed.notify_all();
      }
    });
  }
  for (auto& t : threads) t.join();
  session.stop();
  EXPECT_EQ(session.stats().unbalanced_ends, 0u);
  const std::vector<StepZone> steps = step_zones(trace->trace());
  // Without a schedule the first zone begins at the first step() (step 1); the last is
  // open at stop and closed there.
  ASSERT_EQ(steps.size(), static_cast<std::size_t>(kSteps));
  for (std::size_t i = 0; i < steps.size(); ++i) {
    EXPECT_EQ(steps[i].number, i + 1);
    EXPECT_TRUE(steps[i].ended);
    if (i > 0) {
      EXPECT_EQ(steps[i].begin_ns, steps[i - 1].end_ns) << "step " << steps[i].number;
    }
  }
  // The zones of the threads that stepped are theirs alone: none nests in a step.
  std::map<std::string, int> work_by_thread;
  const RecordedTrace t = trace->trace();
  for (const Event& e : t.events) {
    if (e.kind == EventKind::zone_begin && t.sites[e.site].name == "work") {
      EXPECT_EQ(e.depth, 0u);
      work_by_thread[t.threads[e.thread].name] += 1;
    }
  }
  EXPECT_EQ(work_by_thread,
            (std::map<std::string, int>{
                {"stepper 0", kSteps / kThreads}, {"stepper 1", kSteps / kThreads}, {"stepper 2", kSteps / kThreads}}));
}

// Several threads calling step() and frame_mark() at once: they take turns inside, every
// call is one step, the zones follow one another.
TEST(Steps, ConcurrentStepsAndFrameMarksAreEachOneStep) {
  Config config;
  config.schedule = Schedule{.skip_first = 0, .wait = 0, .warmup = 0, .active = 1000000, .repeat = 1};
  Session session(config);
  auto trace = std::make_shared<MemoryExporter>();
  session.add_exporter(trace);
  session.start();
  constexpr int kThreads = 4, kCalls = 2000;
  std::vector<std::thread> threads;
  for (int id = 0; id < kThreads; ++id) {
    threads.emplace_back([&, id] {
      for (int i = 0; i < kCalls; ++i) {
        if (id % 2 == 0) {
          session.step();
        } else {
          frame_mark();
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(session.current_step(), std::uint64_t{kThreads * kCalls});
  session.stop();
  EXPECT_EQ(session.stats().unbalanced_ends, 0u);
  const std::vector<StepZone> steps = step_zones(trace->trace());
  // With a schedule step 0 begins at start().
  ASSERT_EQ(steps.size(), std::size_t{kThreads * kCalls + 1});
  for (std::size_t i = 0; i < steps.size(); ++i) {
    EXPECT_EQ(steps[i].number, i);
    if (i > 0) {
      EXPECT_GE(steps[i].begin_ns, steps[i - 1].end_ns);
    }
  }
}

// Several threads stepping while the machine is busy (issue 31 point 8): a thread may be
// preempted or moved to another core between any two instructions of step(), and the
// step zones must still follow one another in number order, each once.
TEST(Steps, ConcurrentStepsUnderLoadStayInNumberOrder) {
  Config config;
  config.schedule = Schedule{.skip_first = 0, .wait = 0, .warmup = 0, .active = 1000000, .repeat = 1};
  Session session(config);
  auto trace = std::make_shared<MemoryExporter>();
  session.add_exporter(trace);
  session.start();
  std::atomic<bool> busy{true};
  std::vector<std::thread> load;  // more runnable threads than cores: preemption everywhere
  for (int i = 0; i < 3; ++i) {
    load.emplace_back([&] {
      volatile std::uint64_t x = 0;
      while (busy.load(std::memory_order_relaxed)) x = x + 1;
    });
  }
  constexpr int kThreads = 4;
  const int calls = std::max(200, static_cast<int>(5000 * testing::test_scale()));
  std::vector<std::thread> threads;
  for (int id = 0; id < kThreads; ++id) {
    threads.emplace_back([&] {
      for (int i = 0; i < calls; ++i) {
        { RINGTRACE_ZONE("work"); }
        session.step();
      }
    });
  }
  for (auto& t : threads) t.join();
  busy.store(false);
  for (auto& t : load) t.join();
  session.stop();
  EXPECT_EQ(session.stats().unbalanced_ends, 0u);
  EXPECT_EQ(session.stats().dropped, 0u);
  const std::vector<StepZone> steps = step_zones(trace->trace());
  ASSERT_EQ(steps.size(), std::size_t(kThreads * calls + 1));
  std::size_t out_of_order = 0;
  for (std::size_t i = 0; i < steps.size(); ++i) {
    out_of_order += steps[i].number != i;
    if (i > 0) {
      EXPECT_GE(steps[i].begin_ns, steps[i - 1].end_ns);
    }
  }
  EXPECT_EQ(out_of_order, 0u);
}

// A frame mark the ring has no room for stands for two events, the step zone it ends and
// the one it begins: both are counted (issue 31 point 5).
TEST(Steps, ADroppedFrameMarkCountsBothItsEvents) {
  Config config;
  config.buffer_records = 64;  // the smallest ring: most marks are dropped
  config.overflow = OverflowPolicy::drop;
  config.self_drain = false;
  // The drainer only when the ring is full (a drop wakes it) or at stop: with the
  // defaults, a slow writer (a sanitizer's) woke it at half a ring and yielded to it,
  // and it kept up: no drop to count.
  config.high_water = 1.0;
  config.yield_to_drainer = false;
  config.drain_interval = std::chrono::seconds(10);
  Session session(config);
  auto trace = std::make_shared<MemoryExporter>();
  session.add_exporter(trace);
  session.start();
  const int calls = std::max(2000, static_cast<int>(100000 * testing::test_scale()));
  for (int i = 0; i < calls; ++i) frame_mark();
  session.stop();
  const SessionStats stats = session.stats();
  EXPECT_GT(stats.dropped, 0u);
  // The first mark begins step 1; each later one ends a step and begins the next.
  EXPECT_EQ(stats.recorded + stats.dropped, std::uint64_t(2 * calls - 1));
  // What arrived still nests as a sequence: a step left open by a dropped marker is ended
  // by the next marker written (step_zones checks each end against the open step).
  const std::vector<StepZone> steps = step_zones(trace->trace());
  EXPECT_GT(steps.size(), 1u);
  for (std::size_t i = 1; i < steps.size(); ++i) EXPECT_GT(steps[i].number, steps[i - 1].number);
}

// frame_mark() drives a schedule's windows without the Session object, from a thread the
// session never saw, as a library deep in a program would.
TEST(Steps, FrameMarkFromAnyThreadDrivesTheWindows) {
  Config config;
  config.schedule = Schedule{.skip_first = 0, .wait = 1, .warmup = 0, .active = 2, .repeat = 2};
  Session session(config);
  std::mutex mutex;
  std::vector<WindowInfo> infos;
  std::vector<std::shared_ptr<MemoryExporter>> windows;
  session.add_window_exporter([&](const WindowInfo& info) {
    std::lock_guard<std::mutex> lock(mutex);
    infos.push_back(info);
    windows.push_back(std::make_shared<MemoryExporter>());
    return windows.back();
  });
  session.start();
  std::thread library([] {
    for (int frame = 0; frame < 8; ++frame) {
      { RINGTRACE_ZONE("render"); }
      RINGTRACE_FRAME();
    }
  });
  library.join();
  frame_mark();  // the stop's thread too
  session.stop();
  frame_mark();  // no session: nothing
  ASSERT_EQ(infos.size(), 2u);
  EXPECT_EQ(infos[0].first_step, 1u);
  EXPECT_EQ(infos[0].last_step, 2u);
  EXPECT_EQ(infos[1].first_step, 4u);
  EXPECT_EQ(infos[1].last_step, 5u);
  for (std::size_t w = 0; w < 2; ++w) {
    const std::vector<StepZone> steps = step_zones(windows[w]->trace());
    ASSERT_EQ(steps.size(), 2u) << "window " << w;
    EXPECT_EQ(steps[0].number, infos[w].first_step);
    EXPECT_EQ(steps[1].number, infos[w].last_step);
    int render = 0;
    const RecordedTrace t = windows[w]->trace();
    for (const Event& e : t.events) render += e.kind == EventKind::zone_begin && t.sites[e.site].name == "render";
    EXPECT_EQ(render, 2) << "window " << w;
  }
}

// fork() while another thread is inside step() (holding the steps' turn): the child's
// step() and frame_mark() return (the child has no such thread to let go of the turn).
#if !defined( \
    __SANITIZE_THREAD__)  // forks while a thread runs: left to the Release and ASan runs: not built there, neither run nor skipped
TEST(Steps, AForkChildSteppingDoesNotWaitForTheParentsThreads) {
  Session session;
  session.add_exporter(std::make_shared<MemoryExporter>());
  session.start();
  std::atomic<bool> done{false};
  std::thread stepper([&] {
    while (!done.load(std::memory_order_relaxed)) frame_mark();
  });
  int stuck = 0;
  for (int i = 0; i < 50 && stuck < 3; ++i) {
    const pid_t child = ::fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
      session.step();
      frame_mark();
      ::_exit(0);
    }
    int status = 0;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    pid_t got = 0;
    while ((got = ::waitpid(child, &status, WNOHANG)) == 0 && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    if (got == 0) {
      ++stuck;
      ::kill(child, SIGKILL);
      ::waitpid(child, &status, 0);
    } else {
      EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    }
  }
  done = true;
  stepper.join();
  session.stop();
  EXPECT_EQ(stuck, 0) << "children that waited for the parent's stepping thread";
}
#endif

// Counts what it is given and keeps nothing.
class Counting final : public Exporter {
 public:
  explicit Counting(std::atomic<std::uint64_t>& events) : events_(events) {}
  void on_events(std::span<const Event> events, const TraceContext&) override { events_ += events.size(); }
  void on_finish(const TraceContext&, const SessionStats&) override {}

 private:
  std::atomic<std::uint64_t>& events_;
};

std::int64_t heap_in_use() { return static_cast<std::int64_t>(mallinfo2().uordblks); }

// A million steps with the session's own exporter: memory follows what is open, not the
// number of steps (each step used to intern a site "step #N" kept to the end: 231 bytes).
TEST(Steps, AMillionStepsHoldNoMemory) {
  Config config;
  config.overflow = OverflowPolicy::block;  // every step's marker kept: the count below is exact
  Session session(config);
  std::atomic<std::uint64_t> events{0};
  session.add_exporter(std::make_shared<Counting>(events));
  session.start();
  const auto steps = [&](int n) {
    for (int i = 0; i < n; ++i) session.step();
    ASSERT_TRUE(detail::run_drainer_pass());
  };
  // A tenth under the sanitizers (RINGTRACE_TEST_SCALE 0.05), whose heaps mallinfo2
  // does not see anyway.
  const int total = testing::test_scale() < 1 ? 100000 : 1000000;
  steps(total / 10);
  const std::int64_t before = heap_in_use();
  steps(total - total / 10);
  const std::int64_t grown = heap_in_use() - before;
  session.stop();
  EXPECT_LT(grown, 256 << 10) << "heap grew " << grown << " bytes over " << total - total / 10 << " steps";
  EXPECT_EQ(events.load(), 2u * static_cast<std::uint64_t>(total));  // each step's begin and end
  EXPECT_EQ(session.stats().dropped, 0u);
}

// 100,000 one-step windows (block mode), one in 20 also written by a folded-stacks file:
// memory stays flat (a window used to keep 436 bytes to the end) and every window is
// made, in order.
TEST(Steps, AHundredThousandWindowsHoldNoMemory) {
  Config config;
  config.overflow = OverflowPolicy::block;
  config.schedule = Schedule{.skip_first = 0, .wait = 0, .warmup = 0, .active = 1, .repeat = 0};
  Session session(config);
  std::atomic<std::uint64_t> events{0}, windows{0}, out_of_order{0};
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("ringtrace-steps-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  session.add_window_exporter([&](const WindowInfo& info) -> std::shared_ptr<Exporter> {
    if (info.index != windows.fetch_add(1)) ++out_of_order;
    if (info.index % 20 == 0) return folded_stacks_exporter(dir / "window.folded");
    return std::make_shared<Counting>(events);
  });
  session.start();
  const auto run = [&](int n) {
    for (int i = 0; i < n; ++i) {
      { RINGTRACE_ZONE("work"); }
      session.step();
    }
    ASSERT_TRUE(detail::run_drainer_pass());
  };
  const int total = testing::test_scale() < 1 ? 10000 : 100000;  // a tenth under the sanitizers
  run(total / 5);
  const std::int64_t before = heap_in_use();
  run(total - total / 5);
  const std::int64_t grown = heap_in_use() - before;
  session.stop();
  std::filesystem::remove_all(dir);
  EXPECT_LT(grown, 256 << 10) << "heap grew " << grown << " bytes over " << total - total / 5 << " windows";
  EXPECT_EQ(windows.load(), static_cast<std::uint64_t>(total) + 1);  // the last step is open at the stop: a window too
  EXPECT_EQ(out_of_order.load(), 0u);
  EXPECT_TRUE(session.stats().exporter_errors.empty());
}

}  // namespace
}  // namespace ringtrace
