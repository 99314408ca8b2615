// Context switches in a live session (Config::context_switches): the drainer's streams,
// the merged stream, each zone's on-CPU time, refusals, threads that come and go, fork.
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <sched.h>
#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "ringtrace/exporters/binary_trace.hpp"
#include "ringtrace/exporters/table.hpp"
#include "ringtrace/recorded_trace.hpp"
#include "ringtrace/ringtrace.hpp"
#include "session_support.hpp"
#include "thread_registry.hpp"  // run_drainer_pass

namespace {

using namespace switch_session;
using ringtrace::EventKind;

ringtrace::Config switches_config() {
  ringtrace::Config config;
  config.context_switches = true;
  return config;
}

TEST(SessionSwitches, SleepInsideAZoneIsOffCpu) {
  SWITCH_TEST_REQUIRE_PERF();
  auto memory = std::make_shared<ringtrace::MemoryExporter>();
  ringtrace::Session session(switches_config());
  session.add_exporter(memory);
  session.start();
  std::vector<std::uint64_t> slept;
  TracedThread sleeper([&] {
    for (int i = 0; i < 5; ++i) {
      RINGTRACE_ZONE("sleepy");
      const std::uint64_t t0 = now_ns();
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
      slept.push_back(now_ns() - t0);
    }
  });
  ASSERT_TRUE(wait_for_streams(session, {sleeper.tid()}));
  sleeper.join();
  session.stop();
  const ringtrace::SessionStats stats = session.stats();
  EXPECT_EQ(stats.context_switches_unavailable, "");
  EXPECT_GT(stats.context_switches, 10u);
  const ringtrace::RecordedTrace trace = memory->trace();
  std::size_t n = 0;
  for (const ZoneTimes& z : zone_times(trace)) {
    if (z.name != "sleepy") continue;
    ASSERT_LT(n, slept.size());
    EXPECT_TRUE(z.known);
    EXPECT_LE(z.off_ns, slept[n]);
    EXPECT_GE(z.off_ns, slept[n] * 97 / 100) << "zone " << n << " off " << z.off_ns << " slept " << slept[n];
    ++n;
  }
  EXPECT_EQ(n, 5u);
}

// Events as text, by thread in the order they came (what a file must give back); with
// `ties_sorted`, a thread's events of one nanosecond in a fixed order of their own (see
// the stream file's check).
std::map<std::uint64_t, std::vector<std::string>> by_thread(const ringtrace::RecordedTrace& t,
                                                            std::uint8_t ignored_flags = 0, bool ties_sorted = false) {
  std::map<std::uint64_t, std::vector<std::pair<std::uint64_t, std::string>>> timed;
  for (const ringtrace::Event& e : t.events) {
    std::ostringstream s;
    s << static_cast<int>(e.kind) << ' ' << t.sites[e.site].name << ' ' << e.time_ns << ' '
      << static_cast<int>(e.flags & ~ignored_flags) << ' ' << e.depth << ' ' << e.value.u;
    timed[t.threads[e.thread].os_tid].emplace_back(e.time_ns, s.str());
  }
  std::map<std::uint64_t, std::vector<std::string>> out;
  for (auto& [tid, events] : timed) {
    if (ties_sorted) std::sort(events.begin(), events.end());  // by time, then text
    for (auto& [time, text] : events) out[tid].push_back(std::move(text));
  }
  return out;
}

// Each thread's events equal in both, or a failure naming the first that differs.
void expect_same_threads(const std::map<std::uint64_t, std::vector<std::string>>& a,
                         const std::map<std::uint64_t, std::vector<std::string>>& b, const char* a_name,
                         const char* b_name) {
  EXPECT_EQ(a.size(), b.size()) << "threads in the " << a_name << " and the " << b_name;
  for (const auto& [tid, events] : a) {
    const auto it = b.find(tid);
    if (it == b.end()) {
      ADD_FAILURE() << "tid " << tid << " is not in the " << b_name;
      continue;
    }
    EXPECT_EQ(events.size(), it->second.size()) << "events of tid " << tid;
    for (std::size_t i = 0; i < std::min(events.size(), it->second.size()); ++i) {
      if (events[i] != it->second[i]) {
        ADD_FAILURE() << "tid " << tid << " event " << i << "\n"
                      << a_name << ": " << events[i] << "\n"
                      << b_name << ": " << it->second[i] << (i > 0 ? "\nbefore it: " + events[i - 1] : std::string());
        break;
      }
    }
  }
}

std::filesystem::path temp_dir(const std::string& name) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("ringtrace_switches_" + name + "_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

// Threads that sleep, spin and yield, written live to a binary file: replay_file() gives
// every switch event back, on its thread, where the live stream had it; the stats too.
TEST(SessionSwitches, TheFileKeepsTheSwitches) {
  SWITCH_TEST_REQUIRE_PERF();
  const std::filesystem::path dir = temp_dir("file");
  auto memory = std::make_shared<ringtrace::MemoryExporter>();
  ringtrace::Config config = switches_config();
  config.buffer_records = 256;  // many passes
  // Nothing dropped: this test is about switches. (A drop's time in the file can differ
  // from the live stream's: seen once at 10 ms apart with this small ring; not a switch
  // question.)
  config.overflow = ringtrace::OverflowPolicy::block;
  ringtrace::Session session(config);
  session.add_exporter(memory);
  session.add_exporter(ringtrace::binary_trace_exporter(dir / "run.rtrace"));
  session.start();
  {
    std::vector<std::unique_ptr<TracedThread>> threads;
    for (int w = 0; w < 3; ++w) {
      threads.push_back(std::make_unique<TracedThread>([w] {
        for (int i = 0; i < 200; ++i) {
          RINGTRACE_ZONE("work");
          if (w == 0) std::this_thread::sleep_for(std::chrono::microseconds(100));
          if (w == 1) std::this_thread::yield();
          const std::uint64_t until = now_ns() + 50000;
          while (now_ns() < until) {}
        }
      }));
    }
    std::vector<std::uint64_t> tids;
    for (auto& t : threads) tids.push_back(t->tid());
    ASSERT_TRUE(wait_for_streams(session, tids));
  }
  session.stop();
  const ringtrace::RecordedTrace live = memory->trace();
  ringtrace::MemoryExporter back_memory;
  const ringtrace::ReplayResult result = ringtrace::replay_file(dir / "run.rtrace", back_memory);
  EXPECT_TRUE(result.complete) << result.problem;
  const ringtrace::RecordedTrace back = back_memory.trace();
  EXPECT_GT(live.stats.context_switches, 200u);
  EXPECT_EQ(back.stats.context_switches, live.stats.context_switches);
  EXPECT_EQ(back.stats.context_switches_lost, live.stats.context_switches_lost);
  EXPECT_EQ(back.events.size(), live.events.size());
  const auto a = by_thread(live), b = by_thread(back);
  expect_same_threads(a, b, "live", "file");
  // The whole stream in the same order (ties by thread, then the thread's own events
  // before its switches, as live).
  std::vector<std::string> la, lb;
  for (const ringtrace::Event& e : live.events)
    la.push_back(std::to_string(e.time_ns) + " " + std::to_string(live.threads[e.thread].os_tid));
  for (const ringtrace::Event& e : back.events)
    lb.push_back(std::to_string(e.time_ns) + " " + std::to_string(back.threads[e.thread].os_tid));
  EXPECT_TRUE(la == lb);
  // A stream written to a file (what a window, a snapshot or `ringtrace convert` of a
  // replay writes) keeps them too.
  {
    auto stream_file = ringtrace::binary_trace_exporter(dir / "stream.rtrace");
    ringtrace::replay(back, *stream_file);
    ringtrace::MemoryExporter again;
    ringtrace::replay_file(dir / "stream.rtrace", again);
    // Times exact; an event's `late` flag is not kept in a file of a stream (its raised
    // time is: docs/file-format.md, "Files of a stream"). The first events of a thread
    // the drainer saw late carry it live (seen under ASan). And a switch at the very
    // nanosecond of one of its thread's records came before it in the live stream and
    // after it in the stream file's, whose reader puts the thread's records first at a
    // tie (seen under ASan): events at one nanosecond are compared in a fixed order.
    constexpr std::uint8_t late = ringtrace::EventFlags::late;
    expect_same_threads(by_thread(back, late, true), by_thread(again.trace(), late, true), "file", "stream file");
  }
  std::filesystem::remove_all(dir);
}

// Descriptors of perf events this process holds (switch streams).
int perf_descriptors() {
  int n = 0;
  for (const auto& entry : std::filesystem::directory_iterator("/proc/self/fd")) {
    std::error_code ec;
    const std::filesystem::path target = std::filesystem::read_symlink(entry.path(), ec);
    if (!ec && target.string() == "anon_inode:[perf_event]") ++n;
  }
  return n;
}

// A thread that spins inside its zones: its off-CPU time is what the kernel took from it,
// which the thread's CPU clock sees too (wall - CPU time, within the clocks' brackets; a
// hypervisor's steal counts as on-CPU for the switch records and not for the CPU clock,
// so off-CPU can only come out lower than wall - CPU).
TEST(SessionSwitches, SpinningInsideAZoneIsOnCpu) {
  SWITCH_TEST_REQUIRE_PERF();
  auto memory = std::make_shared<ringtrace::MemoryExporter>();
  ringtrace::Session session(switches_config());
  session.add_exporter(memory);
  session.start();
  struct Spin {
    std::uint64_t wall, cpu;
  };
  std::vector<Spin> spins;
  TracedThread spinner([&] {
    for (int i = 0; i < 5; ++i) {
      const std::uint64_t c0 = thread_cpu_ns(), t0 = now_ns();
      {
        RINGTRACE_ZONE("spin");
        while (now_ns() < t0 + 20 * kMs) {}
      }
      spins.push_back(Spin{now_ns() - t0, thread_cpu_ns() - c0});
    }
  });
  ASSERT_TRUE(wait_for_streams(session, {spinner.tid()}));
  spinner.join();
  session.stop();
  std::size_t n = 0;
  for (const ZoneTimes& z : zone_times(memory->trace())) {
    if (z.name != "spin") continue;
    ASSERT_LT(n, spins.size());
    EXPECT_TRUE(z.known);
    const std::uint64_t wall = z.end_ns - z.begin_ns;
    const std::uint64_t lost = spins[n].wall > spins[n].cpu ? spins[n].wall - spins[n].cpu : 0;
    // Near zero on a quiet machine; never more than the CPU clock says it lost.
    EXPECT_LE(z.off_ns, lost + kMs / 2 + wall / 100) << "zone " << n << " wall " << wall << " cpu " << spins[n].cpu;
    ++n;
  }
  EXPECT_EQ(n, 5u);
}

// Three threads spinning on two CPUs: the kernel preempts them (switch-outs flagged
// preempted), every zone's off-CPU time is within its wall, and the key-averages table's
// on-CPU columns are what the test computes from the events by itself.
TEST(SessionSwitches, ThreeSpinnersOnTwoCpusArePreempted) {
  SWITCH_TEST_REQUIRE_PERF();
  auto memory = std::make_shared<ringtrace::MemoryExporter>();
  std::ostringstream table_text;
  auto table = std::dynamic_pointer_cast<ringtrace::TableExporter>(ringtrace::table_exporter(table_text));
  ringtrace::Session session(switches_config());
  session.add_exporter(memory);
  session.add_exporter(table);
  session.start();
  {
    std::vector<std::unique_ptr<TracedThread>> threads;
    for (int w = 0; w < 3; ++w) {
      threads.push_back(std::make_unique<TracedThread>([] {
        cpu_set_t set;
        CPU_ZERO(&set);
        CPU_SET(0, &set);
        CPU_SET(1, &set);
        sched_setaffinity(0, sizeof(set), &set);  // two CPUs (where the machine has them)
        for (int i = 0; i < 40; ++i) {
          RINGTRACE_ZONE("spin");
          const std::uint64_t until = now_ns() + 5 * kMs;
          while (now_ns() < until) {}
        }
      }));
    }
    std::vector<std::uint64_t> tids;
    for (auto& t : threads) tids.push_back(t->tid());
    ASSERT_TRUE(wait_for_streams(session, tids));
    for (auto& t : threads) t->go();
  }
  session.stop();
  const ringtrace::RecordedTrace trace = memory->trace();
  std::uint64_t preempted = 0;
  for (const ringtrace::Event& e : trace.events) {
    if (e.kind == EventKind::switch_out && (e.value.u & ringtrace::SwitchBits::preempted) != 0) ++preempted;
  }
  EXPECT_GT(preempted, 10u) << "three spinners on two CPUs for 200 ms each";
  // The table's on-CPU columns, computed here from the events.
  std::map<std::string, std::uint64_t> total, self;
  std::map<std::string, std::vector<std::uint64_t>> each;
  std::uint64_t off_total = 0;
  for (const ZoneTimes& z : zone_times(trace)) {
    const std::uint64_t wall = z.end_ns - z.begin_ns;
    ASSERT_LE(z.off_ns, wall);
    const std::uint64_t on = wall - z.off_ns;
    if (z.name.rfind("spin", 0) == 0) {
      EXPECT_TRUE(z.known) << z.name;
      off_total += z.off_ns;
    }
    if (z.depth == 0) total[z.name] += on;
    self[z.name] += z.self_ns - z.self_off_ns;
    each[z.name].push_back(on);
  }
  EXPECT_GT(off_total, 0u);
  const ringtrace::KeyAverages averages = table->table();
  ASSERT_TRUE(averages.on_cpu);
  for (const ringtrace::TableRow& r : averages.rows) {
    EXPECT_EQ(r.on_cpu_total_ns, total[r.name]) << r.name;
    EXPECT_EQ(r.on_cpu_self_ns, self[r.name]) << r.name;
    std::vector<std::uint64_t>& v = each[r.name];
    std::sort(v.begin(), v.end());
    ASSERT_FALSE(v.empty());
    const std::uint64_t p50 = v[(v.size() + 1) / 2 - 1];
    EXPECT_NEAR(static_cast<double>(r.on_cpu_p50_ns), static_cast<double>(p50), p50 / 128.0 + 1) << r.name;
  }
}

// With the kernel refusing (simulated: every perf_event_open fails with EPERM), the
// session records as before, stats() says why switches are missing, nothing fails.
TEST(SessionSwitches, ARefusalLeavesTheSessionWorking) {
  ringtrace::switches::inject_open_failure(EPERM);
  auto memory = std::make_shared<ringtrace::MemoryExporter>();
  std::ostringstream table_text;
  auto table = std::dynamic_pointer_cast<ringtrace::TableExporter>(ringtrace::table_exporter(table_text));
  ringtrace::Session session(switches_config());
  session.add_exporter(memory);
  session.add_exporter(table);
  session.start();
  TracedThread worker([] {
    for (int i = 0; i < 20; ++i) {
      RINGTRACE_ZONE("work");
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  });
  // Wait for the drainer to have tried (it tries when it first sees the thread).
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (session.stats().context_switches_unavailable.empty() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  worker.join();
  session.stop();
  ringtrace::switches::inject_open_failure(0);
  const ringtrace::SessionStats stats = session.stats();
  EXPECT_NE(stats.context_switches_unavailable.find("Operation not permitted"), std::string::npos)
      << stats.context_switches_unavailable;
  EXPECT_NE(stats.context_switches_unavailable.find("injected"), std::string::npos);
  EXPECT_EQ(stats.context_switches, 0u);
  EXPECT_TRUE(stats.exporter_errors.empty());
  EXPECT_EQ(perf_descriptors(), 0);
  std::size_t zones = 0;
  for (const ringtrace::Event& e : memory->trace().events) {
    EXPECT_FALSE(e.kind == EventKind::switch_out || e.kind == EventKind::switch_in);
    if (e.kind == EventKind::zone_end) ++zones;
  }
  EXPECT_EQ(zones, 21u);  // warm-up and 20 work
  EXPECT_FALSE(table->table().on_cpu);
}

// Threads that start and exit while the session runs: each gets its stream, its zones
// their off-CPU time, and once it exited its stream is closed (no descriptor left).
//
// What a 2 ms nap's off-CPU time is: its wall time less the time its thread held a CPU,
// by the kernel's switch records. On a virtual machine the hypervisor may take the
// virtual CPU while the thread holds it (steal): the records count that time on-CPU,
// the thread's CPU clock does not. That, not the clock fit, is why one nap in about two
// thousand here showed 1.3 to 1.8 ms off (18 us under ASan on a busy host): measured with
// each nap's CPU clock, such a nap held its CPU 300 us after its begin while running 100
// us in all (docs/context-switches.md, "Time"). So each nap is checked for what the
// product decides, exactly: the sleep's switch out and in lie inside the zone, in order
// (a clock fit that placed the begin after the switch out would lose the nap's off-CPU
// time: the cause docs/context-switches.md called likely); and over all naps, the
// off-CPU time the records show short of (wall - the thread's CPU time) is at most the
// machine's steal meanwhile (/proc/stat), with 100 us a nap for where the two kernel
// clocks start and stop (the CPU clock runs from when the kernel picks the thread, its
// switch_in record is written after the switch: the CPU clock counted 20 to 60 us a
// sleep more than the records here, the other way round).
TEST(SessionSwitches, ThreadsThatComeAndGo) {
  SWITCH_TEST_REQUIRE_PERF();
  auto memory = std::make_shared<ringtrace::MemoryExporter>();
  ringtrace::Session session(switches_config());
  session.add_exporter(memory);
  const switch_test::StealMeter steal;
  session.start();
  // start()'s own stream (its thread's, kept for the run: the kernel's first-stream cost
  // is paid there): the threads' streams come and go above it.
  const int session_streams = perf_descriptors();
  EXPECT_LE(session_streams, 1);
  std::set<std::uint64_t> tids;
  std::mutex naps_mutex;
  std::map<std::uint64_t, std::vector<std::uint64_t>> nap_cpu_ns;  // by OS tid: each nap's CPU time, inside it
  for (int round = 0; round < 4; ++round) {
    std::vector<std::unique_ptr<TracedThread>> threads;
    for (int w = 0; w < 3; ++w) {
      threads.push_back(std::make_unique<TracedThread>([&] {
        for (int i = 0; i < 3; ++i) {
          std::uint64_t cpu = 0;
          {
            RINGTRACE_ZONE("nap");
            const std::uint64_t cpu0 = thread_cpu_ns();
            std::this_thread::sleep_for(std::chrono::milliseconds(2));
            cpu = thread_cpu_ns() - cpu0;
          }
          std::lock_guard lock(naps_mutex);
          nap_cpu_ns[static_cast<std::uint64_t>(this_tid())].push_back(cpu);
        }
      }));
    }
    std::vector<std::uint64_t> round_tids;
    for (auto& t : threads) round_tids.push_back(t->tid());
    tids.insert(round_tids.begin(), round_tids.end());
    ASSERT_TRUE(wait_for_streams(session, round_tids));
  }
  // Every thread has exited: its stream is closed within a few passes.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (perf_descriptors() != session_streams && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  EXPECT_EQ(perf_descriptors(), session_streams);
  session.stop();
  const std::uint64_t steal_ns = steal.ns_at_most();
  EXPECT_EQ(perf_descriptors(), 0);
  const ringtrace::RecordedTrace trace = memory->trace();

  // Per nap, in the stream's order: a blocked switch_out after its begin, then a
  // switch_in, before its end.
  std::map<ringtrace::ThreadId, int> state;  // 0 outside a nap, 1 in it, 2 out seen, 3 in seen
  for (const ringtrace::Event& e : trace.events) {
    int& st = state[e.thread];
    const bool nap =
        e.kind == EventKind::zone_begin || e.kind == EventKind::zone_end ? trace.sites.at(e.site).name == "nap" : false;
    if (nap && e.kind == EventKind::zone_begin) st = 1;
    if (e.kind == EventKind::switch_out && st == 1 && (e.value.u & ringtrace::SwitchBits::preempted) == 0) st = 2;
    if (e.kind == EventKind::switch_in && st == 2) st = 3;
    if (nap && e.kind == EventKind::zone_end) {
      EXPECT_EQ(st, 3) << "a nap of thread " << e.thread << " ending at " << e.time_ns
                       << " lacks its sleep's switch out and in, in order";
      st = 0;
    }
  }
  std::map<std::uint64_t, int> naps;
  std::uint64_t short_of_cpu_ns = 0;  // sum over naps of (wall - CPU time) - off
  int checked = 0;
  for (const ZoneTimes& z : zone_times(trace)) {
    if (z.name != "nap") continue;
    EXPECT_TRUE(z.known);
    const std::uint64_t tid = trace.threads[z.thread].os_tid;
    const int n = naps[tid]++;
    const std::vector<std::uint64_t>& cpus = nap_cpu_ns[tid];
    if (n >= static_cast<int>(cpus.size())) continue;
    const std::uint64_t wall = z.end_ns - z.begin_ns;
    EXPECT_GE(wall, 2 * kMs);
    const std::uint64_t not_run = wall > cpus[n] ? wall - cpus[n] : 0;
    short_of_cpu_ns += not_run > z.off_ns ? not_run - z.off_ns : 0;
    ++checked;
  }
  EXPECT_EQ(checked, 36);
  EXPECT_LE(short_of_cpu_ns, steal_ns + 36 * 100'000u) << "off-CPU time missing beyond the machine's steal";
  std::printf("36 naps: %.3f ms held on a CPU while not running, the machine's steal at most %.3f ms\n",
              static_cast<double>(short_of_cpu_ns) / 1e6, static_cast<double>(steal_ns) / 1e6);
  EXPECT_EQ(naps.size(), tids.size());
  for (const std::uint64_t tid : tids) EXPECT_EQ(naps[tid], 3) << tid;
}

// Threads that come and go while the binary file is the session's only exporter (the
// drainer hands records over without decoding them): a thread that exited is let go of
// its ring while its switches are still awaited, and later passes must not read the ring
// it no longer has (they did: a crash in written_end). Every nap is in the file.
TEST(SessionSwitches, ThreadsThatComeAndGoIntoTheFileAlone) {
  SWITCH_TEST_REQUIRE_PERF();
  const std::filesystem::path dir = temp_dir("file_alone");
  ringtrace::Session session(switches_config());
  session.add_exporter(ringtrace::binary_trace_exporter(dir / "run.rtrace"));
  session.start();
  std::set<std::uint64_t> tids;
  for (int round = 0; round < 4; ++round) {
    std::vector<std::unique_ptr<TracedThread>> threads;
    for (int w = 0; w < 3; ++w) {
      threads.push_back(std::make_unique<TracedThread>([] {
        for (int i = 0; i < 3; ++i) {
          RINGTRACE_ZONE("nap");
          std::this_thread::sleep_for(std::chrono::milliseconds(2));
        }
      }));
    }
    std::vector<std::uint64_t> round_tids;
    for (auto& t : threads) round_tids.push_back(t->tid());
    tids.insert(round_tids.begin(), round_tids.end());
    ASSERT_TRUE(wait_for_streams(session, round_tids));
  }
  for (int pass = 0; pass < 5; ++pass) ASSERT_TRUE(ringtrace::detail::run_drainer_pass());
  session.stop();
  ringtrace::MemoryExporter back;
  const ringtrace::ReplayResult result = ringtrace::replay_file(dir / "run.rtrace", back);
  ASSERT_TRUE(result.complete) << result.problem;
  const ringtrace::RecordedTrace trace = back.trace();
  std::map<std::uint64_t, int> naps;
  for (const ZoneTimes& z : zone_times(trace)) {
    if (z.name == "nap") ++naps[trace.threads[z.thread].os_tid];
  }
  EXPECT_EQ(naps.size(), tids.size());
  for (const std::uint64_t tid : tids) EXPECT_EQ(naps[tid], 3) << tid;
  std::filesystem::remove_all(dir);
}

// fork() while streams are open: the child holds none of them (it closed its copies, so
// the parent's threads do not stay watched through it), and the parent's streams go on.
#if !defined( \
    __SANITIZE_THREAD__)  // g++ 12's ThreadSanitizer misreads locks taken in pthread_atfork handlers: not built there, neither run nor skipped
TEST(SessionSwitches, AForkChildClosesItsCopies) {
  SWITCH_TEST_REQUIRE_PERF();
  auto memory = std::make_shared<ringtrace::MemoryExporter>();
  ringtrace::Session session(switches_config());
  session.add_exporter(memory);
  session.start();
  std::atomic<bool> forked{false};
  TracedThread sleeper([&] {
    while (!forked.load()) {
      RINGTRACE_ZONE("before");
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    for (int i = 0; i < 5; ++i) {
      RINGTRACE_ZONE("after");
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  });
  ASSERT_TRUE(wait_for_streams(session, {sleeper.tid()}));
  sleeper.go();
  ASSERT_GE(perf_descriptors(), 1);
  const pid_t child = fork();
  if (child == 0) _exit(perf_descriptors() == 0 ? 0 : 3);
  ASSERT_GT(child, 0);
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "the child held perf descriptors";
  forked = true;
  sleeper.join();
  session.stop();
  std::size_t after = 0;
  for (const ZoneTimes& z : zone_times(memory->trace())) {
    if (z.name != "after") continue;
    EXPECT_TRUE(z.known);
    EXPECT_GE(z.off_ns, 5 * kMs * 9 / 10);
    ++after;
  }
  EXPECT_EQ(after, 5u);
}
#endif

}  // namespace

// A thread's first zone, opened at once and slept in (issue 31 point 6): the thread's
// switch stream opens in its first event, before its first record, so the sleep is off
// the CPU from the first zone on, on every thread.
TEST(SessionSwitches, AThreadsFirstZoneKnowsItsSleep) {
  SWITCH_TEST_REQUIRE_PERF();
  auto memory = std::make_shared<ringtrace::MemoryExporter>();
  ringtrace::Session session(switches_config());
  session.add_exporter(memory);
  session.start();
  constexpr int kThreads = 4;
  std::vector<std::uint64_t> slept(kThreads);
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([&slept, i] {
      RINGTRACE_ZONE("first");
      const std::uint64_t t0 = now_ns();
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      slept[i] = now_ns() - t0;
    });
  }
  for (std::thread& t : threads) t.join();
  session.stop();
  const ringtrace::SessionStats stats = session.stats();
  EXPECT_EQ(stats.context_switches_unavailable, "");
  EXPECT_EQ(stats.threads_without_switches, 0u);
  std::size_t n = 0;
  for (const ZoneTimes& z : zone_times(memory->trace())) {
    if (z.name != "first") continue;
    ++n;
    EXPECT_TRUE(z.known);
    const std::uint64_t wall = z.end_ns - z.begin_ns;
    // On the CPU: the few microseconds around the sleep, not milliseconds of it.
    EXPECT_LT(wall - z.off_ns, 2 * kMs) << "zone on thread " << z.thread << ": wall " << wall << " off " << z.off_ns;
  }
  EXPECT_EQ(n, std::size_t{kThreads});
}

// A thread that exits before the drainer reads its stream (issue 31 point 7): its
// switches are still delivered and the session's switches are not "unavailable".
TEST(SessionSwitches, AThreadThatExitedFirstLeavesSwitchesAvailable) {
  SWITCH_TEST_REQUIRE_PERF();
  auto memory = std::make_shared<ringtrace::MemoryExporter>();
  ringtrace::Config config = switches_config();
  config.drain_interval = std::chrono::milliseconds(200);  // the thread is gone before a pass
  ringtrace::Session session(config);
  session.add_exporter(memory);
  session.start();
  std::thread([] {
    RINGTRACE_ZONE("short");
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }).join();
  session.stop();
  const ringtrace::SessionStats stats = session.stats();
  EXPECT_EQ(stats.context_switches_unavailable, "");
  EXPECT_EQ(stats.threads_without_switches, 0u);
  EXPECT_GT(stats.context_switches, 0u);
}
