// Measures the context-switch streams (runtime/switches/) for docs/context-switches.md:
//   empty   the cost of read() with nothing new, hot and as a 2 ms pass over 64 idle streams
//   open    the cost of open() and close()
//   record  the cost of read() per switch record
//   rate    a thread switched out and in N times a second (default 100,000), drained every
//           2 ms (and with late passes), for ring sizes of 1 to 32 pages: lost records
//   cost    what a stream adds to each switch of the recorded thread (yield ping-pong)
//   budget  as an unprivileged user (root forks and becomes nobody): how many streams of
//           1, 8 and 32 pages fit the locked-memory budget before mmap refuses
// Run by hand: switches_measure [empty|record|rate|cost|budget ...] (all by default).
#include <grp.h>
#include <linux/perf_event.h>
#include <pthread.h>
#include <sched.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <sys/syscall.h>

#include "switch_stream.hpp"

namespace {

using ringtrace::switches::Switch;
using ringtrace::switches::SwitchStream;

std::uint64_t now_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::uint64_t>(ts.tv_sec) * 1000000000u + static_cast<std::uint64_t>(ts.tv_nsec);
}

std::uint64_t thread_cpu_ns() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<std::uint64_t>(ts.tv_sec) * 1000000000u + static_cast<std::uint64_t>(ts.tv_nsec);
}

pid_t this_tid() { return static_cast<pid_t>(syscall(SYS_gettid)); }

void sleep_until(std::uint64_t deadline) {
  timespec ts{static_cast<time_t>(deadline / 1000000000u), static_cast<long>(deadline % 1000000000u)};
  while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nullptr) == EINTR) {}
}

void pin_to(int cpu) {  // -1: every CPU
  cpu_set_t set;
  CPU_ZERO(&set);
  if (cpu < 0) {
    for (int c = 0; c < CPU_SETSIZE; ++c) CPU_SET(c, &set);
  } else {
    CPU_SET(cpu, &set);
  }
  pthread_setaffinity_np(pthread_self(), sizeof set, &set);
}

std::vector<int> allowed_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  sched_getaffinity(0, sizeof set, &set);
  std::vector<int> cpus;
  for (int c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &set)) cpus.push_back(c);
  return cpus;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}
double percentile(std::vector<double> v, double p) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[std::min(v.size() - 1, static_cast<std::size_t>(p * static_cast<double>(v.size())))];
}

// A thread that blocks until told to stop: no switches while it waits.
class Idle {
 public:
  Idle() {
    thread_ = std::thread([this] {
      tid_.store(this_tid());
      while (!stop_.load()) stop_.wait(false);
    });
    while (tid_.load() == 0) std::this_thread::yield();
  }
  ~Idle() {
    stop_.store(true);
    stop_.notify_all();
    thread_.join();
  }
  pid_t tid() const { return tid_.load(); }

 private:
  std::atomic<pid_t> tid_{0};
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

SwitchStream must_open(pid_t tid, std::size_t pages = ringtrace::switches::kDefaultRingPages) {
  SwitchStream s = SwitchStream::open(tid, pages);
  if (!s.ok()) {
    std::fprintf(stderr, "open: %s\n", s.error().c_str());
    std::exit(1);
  }
  return s;
}

void measure_empty() {
  std::printf("== read() with nothing new\n");
  {
    Idle idle;
    SwitchStream stream = must_open(idle.tid());
    std::vector<Switch> out;
    out.reserve(64);
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    stream.read(out);
    std::vector<double> runs;
    for (int r = 0; r < 5; ++r) {
      constexpr int kCalls = 10000000;
      std::size_t got = 0;
      const std::uint64_t t0 = now_ns();
      for (int i = 0; i < kCalls; ++i) got += stream.read(out);
      runs.push_back(static_cast<double>(now_ns() - t0) / kCalls);
      if (got != 0) std::printf("   (the idle thread switched %zu times)\n", got);
    }
    std::printf("hot, one stream, back to back: %.2f ns per read (median of 5 x 10M)\n", median(runs));
  }
  {
    constexpr int kThreads = 64;
    std::vector<std::unique_ptr<Idle>> idle;
    std::vector<SwitchStream> streams;
    for (int i = 0; i < kThreads; ++i) {
      idle.push_back(std::make_unique<Idle>());
      streams.push_back(must_open(idle.back()->tid()));
    }
    std::vector<Switch> out;
    out.reserve(1024);
    std::vector<double> per_stream;
    std::uint64_t next = now_ns();
    for (int pass = 0; pass < 500; ++pass) {
      next += 2000000;
      sleep_until(next);
      out.clear();
      const std::uint64_t t0 = now_ns();
      for (SwitchStream& s : streams) s.read(out);
      per_stream.push_back(static_cast<double>(now_ns() - t0) / kThreads);
    }
    std::printf("a pass every 2 ms over %d idle streams: %.1f ns per stream (median), %.1f (p99)\n", kThreads,
                median(per_stream), percentile(per_stream, 0.99));
  }
}

void measure_open() {
  std::printf("== open() and close(): what the drainer pays for each new thread\n");
  Idle idle;
  std::vector<double> open_ns, close_ns;
  for (int i = 0; i < 200; ++i) {
    const std::uint64_t t0 = now_ns();
    SwitchStream s = must_open(idle.tid());
    const std::uint64_t t1 = now_ns();
    s.close();
    const std::uint64_t t2 = now_ns();
    open_ns.push_back(static_cast<double>(t1 - t0));
    close_ns.push_back(static_cast<double>(t2 - t1));
  }
  std::printf("open (8 pages): %.1f us median, %.1f us p90; close: %.1f us median\n", median(open_ns) / 1e3,
              percentile(open_ns, 0.9) / 1e3, median(close_ns) / 1e3);
}

// Two threads on one CPU yielding to each other: every yield of `recorded` is one switch
// out and one in. `period_ns` 0: as fast as they go; else `recorded` yields once per period.
class YieldPair {
 public:
  YieldPair(int cpu, std::uint64_t period_ns) : period_(period_ns) {
    partner_ = std::thread([this, cpu] {
      pin_to(cpu);
      while (!stop_.load(std::memory_order_relaxed)) sched_yield();
    });
    recorded_ = std::thread([this, cpu] {
      pin_to(cpu);
      tid_.store(this_tid());
      while (!go_.load()) sched_yield();
      std::uint64_t next = now_ns();
      std::uint64_t n = 0;
      const std::uint64_t cpu0 = thread_cpu_ns();
      while (!stop_.load(std::memory_order_relaxed)) {
        if (period_ != 0) {
          next += period_;
          while (now_ns() < next) {}
        }
        sched_yield();
        ++n;
      }
      cpu_per_yield_.store(static_cast<double>(thread_cpu_ns() - cpu0) / static_cast<double>(n));
      yields_.store(n);
    });
    while (tid_.load() == 0) std::this_thread::yield();
  }
  ~YieldPair() { stop(); }
  pid_t recorded_tid() const { return tid_.load(); }
  double cpu_ns_per_yield() const { return cpu_per_yield_.load(); }
  void go() { go_.store(true); }
  std::uint64_t stop() {
    stop_.store(true);
    if (recorded_.joinable()) recorded_.join();
    if (partner_.joinable()) partner_.join();
    return yields_.load();
  }

 private:
  std::uint64_t period_;
  std::atomic<pid_t> tid_{0};
  std::atomic<bool> go_{false};
  std::atomic<bool> stop_{false};
  std::atomic<std::uint64_t> yields_{0};
  std::atomic<double> cpu_per_yield_{0};
  std::thread partner_, recorded_;
};

void measure_record() {
  std::printf("== read() per switch record\n");
  const std::vector<int> cpus = allowed_cpus();
  std::vector<double> per_record;
  std::size_t records = 0;
  for (int r = 0; r < 15; ++r) {
    YieldPair pair(cpus.back(), 0);
    SwitchStream stream = must_open(pair.recorded_tid(), 64);  // 256 KiB: 10922 records
    pair.go();
    std::vector<Switch> out;
    out.reserve(16384);
    std::this_thread::sleep_for(std::chrono::milliseconds(8));
    pair.stop();
    const std::uint64_t t0 = now_ns();
    records = stream.read(out);
    per_record.push_back(static_cast<double>(now_ns() - t0) / static_cast<double>(records));
    if (stream.lost() != 0) std::printf("   (lost %llu)\n", static_cast<unsigned long long>(stream.lost()));
  }
  std::printf("%zu records in one read (vector reserved): %.2f ns per record (median of 15), %.2f (min)\n", records,
              median(per_record), percentile(per_record, 0));
}

void measure_rate(double switches_per_second) {
  const std::uint64_t period = static_cast<std::uint64_t>(1e9 / switches_per_second);
  std::printf("== a thread switched out and in %.0f times a second, read every 2 ms (1 s each)\n", switches_per_second);
  std::printf("pages  ring(B)  late passes   outs/s   recs/pass max   bytes/pass max  fill max   gap max(ms)  lost\n");
  const std::vector<int> cpus = allowed_cpus();
  for (const int late_ms : {0, 10, 20}) {
    for (const std::size_t pages :
         {std::size_t{1}, std::size_t{2}, std::size_t{4}, std::size_t{8}, std::size_t{16}, std::size_t{32}}) {
      YieldPair pair(cpus.back(), period);
      SwitchStream stream = must_open(pair.recorded_tid(), pages);
      std::vector<Switch> out;
      out.reserve(1 << 16);
      pair.go();
      const std::uint64_t start = now_ns();
      std::uint64_t next = start, last_pass = start, gap_max = 0;
      std::size_t per_pass_max = 0, outs = 0;
      for (int pass = 1; now_ns() - start < 1000000000u; ++pass) {
        next += 2000000;
        // A drainer that is late now and then: every 50th pass (once in 100 ms) `late_ms` late.
        if (late_ms != 0 && pass % 50 == 0) next += static_cast<std::uint64_t>(late_ms) * 1000000u;
        sleep_until(next);
        out.clear();
        const std::uint64_t t = now_ns();
        gap_max = std::max(gap_max, t - last_pass);
        last_pass = t;
        const std::size_t n = stream.read(out);
        per_pass_max = std::max(per_pass_max, n);
        for (const Switch& s : out) outs += s.out ? 1 : 0;
        if (late_ms != 0 && pass % 50 == 0) next = now_ns();
      }
      const double seconds = static_cast<double>(now_ns() - start) / 1e9;
      pair.stop();
      std::printf("%5zu  %7zu  %8s  %9.0f  %14zu  %15zu  %6.0f%%  %11.1f  %llu\n", pages, stream.ring_bytes(),
                  late_ms == 0 ? "none" : (std::to_string(late_ms) + " ms").c_str(),
                  static_cast<double>(outs) / seconds, per_pass_max, per_pass_max * 24,
                  100.0 * static_cast<double>(per_pass_max * 24) / static_cast<double>(stream.ring_bytes()),
                  static_cast<double>(gap_max) / 1e6, static_cast<unsigned long long>(stream.lost()));
    }
  }
}

// A perf event on `tid` without context-switch records: what having any event costs.
int open_plain_event(pid_t tid) {
  perf_event_attr attr;
  std::memset(&attr, 0, sizeof attr);
  attr.size = sizeof attr;
  attr.type = PERF_TYPE_SOFTWARE;
  attr.config = PERF_COUNT_SW_DUMMY;
  attr.exclude_kernel = 1;
  attr.exclude_hv = 1;
  return static_cast<int>(syscall(SYS_perf_event_open, &attr, tid, -1, -1, PERF_FLAG_FD_CLOEXEC));
}

void measure_cost() {
  std::printf(
      "== the recorded thread's cost: yield ping-pong on one CPU, the reader on another (7 x 0.5 s each, "
      "interleaved)\n");
  const std::vector<int> cpus = allowed_cpus();
  pin_to(cpus.front());
  enum Mode { kNone, kOtherThread, kPlainEvent, kStream };
  const char* names[] = {"untraced", "untraced, another thread traced", "a perf event, no switch records",
                         "a switch stream"};
  std::vector<double> wall[4], cpu[4];
  for (int r = 0; r < 7; ++r) {
    for (const Mode mode : {kNone, kOtherThread, kPlainEvent, kStream}) {
      YieldPair pair(cpus.back(), 0);
      SwitchStream stream;
      std::unique_ptr<Idle> other;
      int plain = -1;
      if (mode == kStream) stream = must_open(pair.recorded_tid());
      if (mode == kOtherThread) {
        other = std::make_unique<Idle>();
        stream = must_open(other->tid());
      }
      if (mode == kPlainEvent) plain = open_plain_event(pair.recorded_tid());
      std::vector<Switch> out;
      out.reserve(1 << 16);
      pair.go();
      const std::uint64_t start = now_ns();
      std::uint64_t next = start;
      while (now_ns() - start < 500000000u) {
        next += 2000000;
        sleep_until(next);
        out.clear();
        stream.read(out);
      }
      const std::uint64_t yields = pair.stop();
      wall[mode].push_back(static_cast<double>(now_ns() - start) / static_cast<double>(yields));
      cpu[mode].push_back(pair.cpu_ns_per_yield());
      if (plain >= 0) ::close(plain);
      if (stream.lost() != 0) std::printf("   (lost %llu)\n", static_cast<unsigned long long>(stream.lost()));
    }
  }
  for (int m = 0; m < 4; ++m) {
    std::printf(
        "%-32s %6.0f ns per yield (the thread's out and in, and its partner's), %6.0f ns of the thread's CPU "
        "(median)\n",
        names[m], median(wall[m]), median(cpu[m]));
  }
  std::printf(
      "the stream adds %.0f ns of the thread's CPU per out-and-in (%.0f of it for having an event at all); "
      "another thread's stream adds %.0f ns\n",
      median(cpu[kStream]) - median(cpu[kNone]), median(cpu[kPlainEvent]) - median(cpu[kNone]),
      median(cpu[kOtherThread]) - median(cpu[kNone]));
  pin_to(-1);
}

void measure_budget() {
  std::printf("== streams an unprivileged user can open (locked-memory budget), opened on one thread\n");
  for (const std::size_t pages : {std::size_t{1}, std::size_t{8}, std::size_t{32}}) {
    int fds[2];
    if (pipe(fds) != 0) return;
    const pid_t child = fork();
    if (child == 0) {
      ::close(fds[0]);
      if (geteuid() == 0 &&
          (setgroups(0, nullptr) != 0 || setresgid(65534, 65534, 65534) != 0 || setresuid(65534, 65534, 65534) != 0))
        _exit(1);
      std::vector<SwitchStream> streams;
      std::string why;
      for (int i = 0; i < 4096; ++i) {
        SwitchStream s = SwitchStream::open(this_tid(), pages);
        if (!s.ok()) {
          why = s.error();
          break;
        }
        streams.push_back(std::move(s));
      }
      const std::string line =
          std::to_string(pages) + " pages: " + std::to_string(streams.size()) + " streams, then " + why + "\n";
      const ssize_t ignored = ::write(fds[1], line.data(), line.size());
      (void)ignored;
      _exit(0);
    }
    ::close(fds[1]);
    char buffer[1024];
    ssize_t got;
    while ((got = ::read(fds[0], buffer, sizeof buffer)) > 0)
      std::fwrite(buffer, 1, static_cast<std::size_t>(got), stdout);
    ::close(fds[0]);
    waitpid(child, nullptr, 0);
  }
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> what(argv + 1, argv + argc);
  if (what.empty()) what = {"empty", "open", "record", "rate", "cost", "budget"};
  setvbuf(stdout, nullptr, _IOLBF, 0);
  for (const std::string& w : what) {
    if (w == "empty")
      measure_empty();
    else if (w == "open")
      measure_open();
    else if (w == "record")
      measure_record();
    else if (w == "rate")
      measure_rate(100000);
    else if (w.rfind("rate=", 0) == 0)
      measure_rate(std::stod(w.substr(5)));
    else if (w == "cost")
      measure_cost();
    else if (w == "budget")
      measure_budget();
    else {
      std::fprintf(stderr, "unknown: %s\n", w.c_str());
      return 2;
    }
  }
}
