// Helpers of the tests of context switches in a session (Config::context_switches).
#pragma once

#include <gtest/gtest.h>

#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <ctime>
#include <functional>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "ringtrace/recorded_trace.hpp"
#include "ringtrace/ringtrace.hpp"
#include "switch_stream.hpp"
#include "switch_test_support.hpp"  // SWITCH_TEST_REQUIRE_PERF: skips only where the machine refuses

namespace switch_session {

inline constexpr std::uint64_t kMs = 1000000;

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

inline pid_t this_tid() { return static_cast<pid_t>(syscall(SYS_gettid)); }

// Waits (at most 10 s) until the session has delivered a switch event of every thread
// with one of these OS tids: their streams are open, their zones' on-CPU times count
// from here.
inline bool wait_for_streams(const ringtrace::Session& session, const std::vector<std::uint64_t>& tids) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (std::chrono::steady_clock::now() < deadline) {
    const ringtrace::SessionStats stats = session.stats();
    std::size_t open = 0;
    for (const std::uint64_t tid : tids) {
      for (const ringtrace::ThreadStats& t : stats.threads) {
        if (t.os_tid == tid && t.switches > 0) {
          ++open;
          break;
        }
      }
    }
    if (open == tids.size()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return false;
}

// A thread that records one zone (so the drainer sees it and opens its stream), then
// waits for go() before running its body.
class TracedThread {
 public:
  explicit TracedThread(std::function<void()> body) {
    thread_ = std::thread([this, body = std::move(body)] {
      { RINGTRACE_ZONE("warm-up"); }
      tid_.store(static_cast<std::uint64_t>(this_tid()), std::memory_order_release);
      while (!go_.load(std::memory_order_acquire)) std::this_thread::sleep_for(std::chrono::microseconds(200));
      body();
    });
    while (tid_.load(std::memory_order_acquire) == 0) std::this_thread::yield();
  }
  ~TracedThread() { join(); }
  std::uint64_t tid() const { return tid_.load(std::memory_order_acquire); }
  void go() { go_.store(true, std::memory_order_release); }
  void join() {
    go();
    if (thread_.joinable()) thread_.join();
  }

 private:
  std::atomic<std::uint64_t> tid_{0};
  std::atomic<bool> go_{false};
  std::thread thread_;
};

// The independent computation of the tests: per zone (by thread and begin time), its
// off-CPU time from the stream's switch events, by the rules of docs/context-switches.md
// ("On-CPU time"), written here from the document, not from exporters/common.
struct ZoneTimes {
  ringtrace::ThreadId thread;
  std::string name;
  std::uint64_t begin_ns, end_ns;
  std::uint64_t off_ns;       // inside the zone
  std::uint64_t self_off_ns;  // inside it, outside its direct children
  std::uint64_t self_ns;      // wall less its direct children's walls
  std::uint32_t depth;
  bool known;  // its thread had switch events by its end
};

inline std::vector<ZoneTimes> zone_times(const ringtrace::RecordedTrace& trace) {
  using ringtrace::EventKind;
  struct Open {
    std::uint64_t begin, off_at_begin, child_off, child_wall;
    std::string name;
  };
  struct Thread {
    std::vector<Open> stack;
    bool out = false, tracked = false;
    std::uint64_t since = 0, off = 0;
  };
  std::map<ringtrace::ThreadId, Thread> threads;
  std::vector<ZoneTimes> zones;
  const auto end_interval = [](Thread& t, std::uint64_t at) {
    if (t.out) t.off += (at > t.since ? at - t.since : 0);
    t.out = false;
  };
  for (const ringtrace::Event& e : trace.events) {
    Thread& t = threads[e.thread];
    switch (e.kind) {
      case EventKind::switch_out: {
        t.tracked = true;
        const bool lost = (e.value.u & ringtrace::SwitchBits::after_loss) != 0;
        if (!t.out || lost) {
          t.out = true;
          t.since = e.time_ns;
        }
        break;
      }
      case EventKind::switch_in:
        t.tracked = true;
        if ((e.value.u & ringtrace::SwitchBits::after_loss) != 0) {
          t.out = false;
        } else {
          end_interval(t, e.time_ns);
        }
        break;
      case EventKind::zone_begin:
        end_interval(t, e.time_ns);
        t.stack.push_back(Open{e.time_ns, t.off, 0, 0, trace.sites[e.site].name});
        break;
      case EventKind::zone_end: {
        if (t.stack.empty()) break;
        const bool made_up =
            (e.flags & (ringtrace::EventFlags::closed_at_stop | ringtrace::EventFlags::closed_at_window_end)) != 0;
        std::uint64_t off_now = t.off;
        if (made_up) {
          if (t.out && e.time_ns > t.since) off_now += e.time_ns - t.since;
        } else {
          end_interval(t, e.time_ns);
          off_now = t.off;
        }
        const Open o = t.stack.back();
        t.stack.pop_back();
        const std::uint64_t wall = e.time_ns - o.begin;
        const std::uint64_t off = std::min(off_now - o.off_at_begin, wall);
        const std::uint64_t self = wall - o.child_wall;
        zones.push_back(ZoneTimes{e.thread, o.name, o.begin, e.time_ns, off,
                                  std::min(off - std::min(off, o.child_off), self), self,
                                  static_cast<std::uint32_t>(t.stack.size()), t.tracked});
        if (!t.stack.empty()) {
          t.stack.back().child_off += off;
          t.stack.back().child_wall += wall;
        }
        break;
      }
      default:
        break;
    }
  }
  return zones;
}

}  // namespace switch_session
