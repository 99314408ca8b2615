// The drainer's cost per context switch (Config::context_switches), in a real session:
// two traced threads pinned to one CPU yield to each other (one of them paced to a given
// rate), each recording one zone per 1000 yields; the drainer's CPU time over 1 s is
// read from /proc (its threads: those start() made) with switches off and on, runs
// interleaved, and the difference is divided by the switch events delivered. With a
// null exporter (read + merge + delivery) and with the key-averages table (which also
// computes every zone's on-CPU time). Not a Google Benchmark; run by hand:
//   bench_switches_drainer [switches per second of the paced thread, default 100000]
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "ringtrace/exporters/table.hpp"
#include "ringtrace/ringtrace.hpp"

namespace {

std::uint64_t now_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::uint64_t>(ts.tv_sec) * 1000000000u + static_cast<std::uint64_t>(ts.tv_nsec);
}

std::set<long> tasks() {
  std::set<long> out;
  for (const auto& e : std::filesystem::directory_iterator("/proc/self/task"))
    out.insert(std::stol(e.path().filename().string()));
  return out;
}

// Time on the CPU of a thread of this process, ns (schedstat's first field).
std::uint64_t task_cpu_ns(long tid) {
  std::ifstream in("/proc/self/task/" + std::to_string(tid) + "/schedstat");
  std::uint64_t ns = 0;
  in >> ns;
  return ns;
}

void pin_to(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  sched_setaffinity(0, sizeof(set), &set);
}

class NullExporter final : public ringtrace::Exporter {
 public:
  void on_events(std::span<const ringtrace::Event> events, const ringtrace::TraceContext&) override {
    for (const ringtrace::Event& e : events) count += e.kind == ringtrace::EventKind::switch_out ? 1 : 0;
  }
  std::uint64_t count = 0;
};

struct Result {
  double drainer_ms;  // drainer CPU time over the run
  double seconds;
  std::uint64_t switches, lost, yields;
};

Result run(bool switches, bool table, double rate, int cpu) {
  ringtrace::Config config;
  config.context_switches = switches;
  ringtrace::Session session(config);
  std::ostringstream sink;
  if (table) {
    session.add_exporter(ringtrace::table_exporter(sink));
  } else {
    session.add_exporter(std::make_shared<NullExporter>());
  }
  const std::set<long> before = tasks();
  session.start();
  std::vector<long> drainer;
  for (const long t : tasks()) {
    if (!before.count(t)) drainer.push_back(t);
  }
  std::atomic<bool> stop{false}, go{false};
  std::atomic<std::uint64_t> yields{0};
  const std::uint64_t period = rate > 0 ? static_cast<std::uint64_t>(1e9 / rate) : 0;
  auto body = [&](bool paced) {
    pin_to(cpu);
    { RINGTRACE_ZONE("first"); }
    while (!go.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    std::uint64_t next = now_ns(), n = 0;
    while (!stop.load(std::memory_order_relaxed)) {
      RINGTRACE_ZONE("yields");
      for (int i = 0; i < 1000 && !stop.load(std::memory_order_relaxed); ++i) {
        if (paced && period != 0) {
          next += period;
          while (now_ns() < next) {}
        }
        sched_yield();
        ++n;
      }
    }
    if (paced) yields.store(n);
  };
  std::thread a(body, true), b(body, false);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));  // streams open
  go.store(true);
  std::uint64_t cpu0 = 0;
  for (const long t : drainer) cpu0 += task_cpu_ns(t);
  const std::uint64_t t0 = now_ns();
  const std::uint64_t s0 = session.stats().context_switches;
  std::this_thread::sleep_for(std::chrono::seconds(1));
  std::uint64_t cpu1 = 0;
  for (const long t : drainer) cpu1 += task_cpu_ns(t);
  const std::uint64_t t1 = now_ns();
  const ringtrace::SessionStats stats = session.stats();
  stop.store(true);
  a.join();
  b.join();
  session.stop();
  if (switches && !stats.context_switches_unavailable.empty()) {
    std::printf("switches unavailable: %s\n", stats.context_switches_unavailable.c_str());
    std::exit(1);
  }
  return Result{static_cast<double>(cpu1 - cpu0) / 1e6, static_cast<double>(t1 - t0) / 1e9, stats.context_switches - s0,
                stats.context_switches_lost, yields.load()};
}

}  // namespace

int main(int argc, char** argv) {
  const double rate = argc > 1 ? std::atof(argv[1]) : 100000;
  cpu_set_t allowed;
  sched_getaffinity(0, sizeof(allowed), &allowed);
  int cpu = 0;
  for (int c = 0; c < CPU_SETSIZE; ++c) {
    if (CPU_ISSET(c, &allowed)) cpu = c;
  }
  std::printf("two traced threads yielding on CPU %d (one paced to %.0f/s); the drainer's CPU time over 1 s\n", cpu,
              rate);
  std::printf("exporter  switches  drainer ms/s  yields/s  switch events/s  lost   ns per switch event (on - off)\n");
  for (const bool table : {false, true}) {
    for (int round = 0; round < 3; ++round) {
      const Result off = run(false, table, rate, cpu);
      const Result on = run(true, table, rate, cpu);
      const double per_s_off = off.drainer_ms / off.seconds, per_s_on = on.drainer_ms / on.seconds;
      const double events_per_s = static_cast<double>(on.switches) / on.seconds;
      std::printf("%-8s  off       %8.2f      %8.0f\n", table ? "table" : "null", per_s_off,
                  static_cast<double>(off.yields) / off.seconds);
      std::printf("%-8s  on        %8.2f      %8.0f  %10.0f  %6llu   %.1f\n", table ? "table" : "null", per_s_on,
                  static_cast<double>(on.yields) / on.seconds, events_per_s, static_cast<unsigned long long>(on.lost),
                  (per_s_on - per_s_off) * 1e6 / events_per_s);
    }
  }
  return 0;
}
