// Recording from a signal handler that interrupts its own thread while that thread is
// recording: never a corrupted ring, never a hang, every event delivered or counted.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "ringtrace/ringtrace.hpp"
#include "support/validating_exporter.hpp"  // test_scale

namespace {

using ringtrace::Event;
using ringtrace::EventKind;

// What the handler produced, counted with signal-safe atomics.
std::atomic<std::uint64_t> g_handler_events{0};
std::atomic<std::int64_t> g_handler_counter{0};
std::atomic<bool> g_handler_on{false};

constexpr std::int64_t kHandlerBase = std::int64_t{1} << 40;  // handler counter values start here

void on_alarm(int) {
  if (!g_handler_on.load(std::memory_order_relaxed)) return;
  {
    RINGTRACE_ZONE("handler_zone");
    RINGTRACE_INSTANT("handler_instant");
    RINGTRACE_COUNTER("handler_counter", kHandlerBase + g_handler_counter.fetch_add(1, std::memory_order_relaxed));
  }
  g_handler_events.fetch_add(4, std::memory_order_relaxed);  // begin, instant, counter, end
}

// A per-thread SIGALRM every `period` aimed at the calling thread.
class ThreadAlarm {
 public:
  explicit ThreadAlarm(std::chrono::microseconds period) {
    sigevent event{};
    event.sigev_notify = SIGEV_THREAD_ID;
    event.sigev_signo = SIGALRM;
    event._sigev_un._tid = static_cast<pid_t>(::syscall(SYS_gettid));
    if (timer_create(CLOCK_MONOTONIC, &event, &timer_) != 0) throw std::runtime_error("timer_create");
    itimerspec spec{};
    spec.it_interval.tv_nsec = static_cast<long>(period.count()) * 1000;
    spec.it_value = spec.it_interval;
    timer_settime(timer_, 0, &spec, nullptr);
  }
  ~ThreadAlarm() { timer_delete(timer_); }

 private:
  timer_t timer_{};
};

struct Census final : ringtrace::Exporter {
  std::map<std::string, std::uint64_t> begins, ends;
  std::map<std::string, std::int64_t> last_counter;
  std::uint64_t counter_errors = 0;  // a value from the wrong site, or not increasing
  std::uint64_t delivered = 0;
  void on_events(std::span<const Event> events, const ringtrace::TraceContext& context) override {
    for (const Event& e : events) {
      const std::string name = context.site(e.site).name;
      if (e.kind == EventKind::dropped) continue;
      ++delivered;
      if (e.kind == EventKind::zone_begin) ++begins[name];
      if (e.kind == EventKind::zone_end) ++ends[name];
      if (e.kind == EventKind::counter) {
        const bool handler = name == "handler_counter";
        const bool in_range = handler ? e.value.i >= kHandlerBase : (e.value.i >= 0 && e.value.i < kHandlerBase);
        auto [it, first] = last_counter.try_emplace(name, e.value.i);
        if (!in_range || (!first && e.value.i <= it->second)) ++counter_errors;
        it->second = e.value.i;
      }
    }
  }
};

void run_signal_storm(ringtrace::OverflowPolicy policy) {
  ringtrace::Config config;
  config.overflow = policy;
  config.buffer_records = 1 << 12;  // small: the slow path (wake, drop, wait) runs often
  auto census = std::make_shared<Census>();
  ringtrace::Session session(config);
  session.add_exporter(census);

  struct sigaction action {};
  action.sa_handler = on_alarm;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;
  struct sigaction previous {};
  ASSERT_EQ(sigaction(SIGALRM, &action, &previous), 0);

  g_handler_events = 0;
  g_handler_counter = 0;
  std::uint64_t produced = 0;
  session.start();
  // The thread's first event binds its ring (it allocates): not async-signal-safe, so
  // it comes before the handler can run, as the README asks of programs.
  RINGTRACE_INSTANT("bound");
  produced += 1;
  {
    ThreadAlarm alarm(std::chrono::microseconds(20));
    g_handler_on = true;
    const auto until = std::chrono::steady_clock::now() +
                       std::chrono::milliseconds(static_cast<int>(1000 * ringtrace::testing::test_scale()));
    std::int64_t value = 0;
    while (std::chrono::steady_clock::now() < until) {
      for (int i = 0; i < 64; ++i) {
        RINGTRACE_ZONE("outer");
        {
          RINGTRACE_ZONE("inner");
          RINGTRACE_COUNTER("main_counter", value++);
        }
        RINGTRACE_INSTANT("main_instant");
        produced += 6;  // 2 zones, a counter, an instant
      }
    }
    g_handler_on = false;
  }
  session.stop();
  sigaction(SIGALRM, &previous, nullptr);

  const ringtrace::SessionStats stats = session.stats();
  const std::uint64_t handler = g_handler_events.load();
  EXPECT_GT(handler, 0u) << "the alarm never fired";
  EXPECT_EQ(stats.recorded + stats.dropped, produced + handler)
      << "recorded " << stats.recorded << " dropped " << stats.dropped;
  EXPECT_EQ(census->delivered, stats.recorded);
  EXPECT_EQ(stats.unbalanced_ends, 0u);
  EXPECT_EQ(stats.closed_at_stop, 0u);
  EXPECT_EQ(census->counter_errors, 0u);
  for (const char* zone : {"outer", "inner", "handler_zone"}) {
    EXPECT_EQ(census->begins[zone], census->ends[zone]) << zone;
  }
  EXPECT_GT(census->begins["handler_zone"], 0u) << "no handler zone was recorded";
  if (policy == ringtrace::OverflowPolicy::block) {
    // Only calls nested inside the thread's own recording are dropped under block.
    EXPECT_LT(stats.dropped, handler);
  }
}

TEST(Signals, HandlerRecordingOnTheInterruptedThreadDropMode) { run_signal_storm(ringtrace::OverflowPolicy::drop); }

TEST(Signals, HandlerRecordingOnTheInterruptedThreadBlockMode) { run_signal_storm(ringtrace::OverflowPolicy::block); }

}  // namespace
