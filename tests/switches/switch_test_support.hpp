// Helpers shared by the context-switch tests.
#pragma once

#include <gtest/gtest.h>

#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <ctime>
#include <fstream>
#include <string>
#include <vector>

#include "perf_refusal.hpp"  // check_perf_access, the skip rule
#include "switch_stream.hpp"

namespace switch_test {

using ringtrace::switches::Switch;
using ringtrace::switches::SwitchStream;

inline std::uint64_t now_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::uint64_t>(ts.tv_sec) * 1000000000u + static_cast<std::uint64_t>(ts.tv_nsec);
}

inline std::uint64_t thread_cpu_ns() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<std::uint64_t>(ts.tv_sec) * 1000000000u + static_cast<std::uint64_t>(ts.tv_nsec);
}

// In a VM the hypervisor may run something else while our thread holds a virtual CPU:
// the switch records count that time on-CPU (the thread held the CPU), the thread's CPU
// clock does not (steal time, CONFIG_PARAVIRT_TIME_ACCOUNTING). /proc/stat counts the
// machine's steal in ticks; a window may hide up to a tick per CPU.
class StealMeter {
 public:
  StealMeter() : begin_(ticks()) {}
  std::uint64_t ns_at_most() const {
    const long hz = sysconf(_SC_CLK_TCK);
    const std::uint64_t tick = static_cast<std::uint64_t>(1000000000 / (hz > 0 ? hz : 100));
    const long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    return (ticks() - begin_ + static_cast<std::uint64_t>(cpus > 0 ? cpus : 1)) * tick;
  }

 private:
  static std::uint64_t ticks() {
    std::ifstream in("/proc/stat");
    std::string cpu;
    std::uint64_t v[8] = {};
    in >> cpu;
    for (std::uint64_t& x : v) in >> x;
    return v[7];  // user nice system idle iowait irq softirq steal
  }
  std::uint64_t begin_;
};

inline pid_t this_tid() { return static_cast<pid_t>(syscall(SYS_gettid)); }

#define SWITCH_TEST_REQUIRE_PERF()                                                                                \
  do {                                                                                                            \
    const switch_test::PerfCheck perf = switch_test::check_perf_access();                                         \
    if (perf.access == switch_test::PerfAccess::refused) GTEST_SKIP() << "perf_event_open refused: " << perf.why; \
    ASSERT_EQ(perf.access, switch_test::PerfAccess::open) << "perf_event_open failed: " << perf.why;              \
  } while (false)

// On- and off-CPU time within [from, to], and the outs there.
struct Split {
  std::uint64_t on_ns = 0;   // in -> out
  std::uint64_t off_ns = 0;  // out -> in
  std::uint64_t off_voluntary_ns = 0;
  std::size_t outs = 0;  // outs inside [from, to]
  std::size_t voluntary_outs = 0;
  std::size_t preempted_outs = 0;
};

inline std::uint64_t clipped(std::uint64_t a, std::uint64_t b, std::uint64_t from, std::uint64_t to) {
  if (a < from) a = from;
  if (b > to) b = to;
  return b > a ? b - a : 0;
}

// Before the first record the thread was in the state that record leaves (on the CPU if
// it is an out); after the last, in the state it enters.
inline Split split(const std::vector<Switch>& v, std::uint64_t from, std::uint64_t to) {
  Split s;
  if (v.empty()) return s;
  (v.front().out ? s.on_ns : s.off_ns) += clipped(0, v.front().time_ns, from, to);
  (v.back().out ? s.off_ns : s.on_ns) += clipped(v.back().time_ns, ~std::uint64_t{0}, from, to);
  if (v.back().out && !v.back().preempted) s.off_voluntary_ns += clipped(v.back().time_ns, ~std::uint64_t{0}, from, to);
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (v[i].out && v[i].time_ns >= from && v[i].time_ns <= to) {
      ++s.outs;
      (v[i].preempted ? s.preempted_outs : s.voluntary_outs) += 1;
    }
    if (i == 0) continue;
    const std::uint64_t d = clipped(v[i - 1].time_ns, v[i].time_ns, from, to);
    if (v[i - 1].out && !v[i].out) {
      s.off_ns += d;
      if (!v[i - 1].preempted) s.off_voluntary_ns += d;
    } else if (!v[i - 1].out && v[i].out) {
      s.on_ns += d;
    }
  }
  return s;
}

// Outs and ins alternate and time never goes back; returns the first index that breaks it, or size().
inline std::size_t first_disorder(const std::vector<Switch>& v) {
  for (std::size_t i = 1; i < v.size(); ++i) {
    if (v[i].time_ns < v[i - 1].time_ns) return i;
    if (v[i].out == v[i - 1].out && !v[i].after_loss) return i;
  }
  return v.size();
}

}  // namespace switch_test
