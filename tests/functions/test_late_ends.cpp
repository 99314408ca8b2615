// Config::functions.min_duration against ends that come late (docs/functions.md, "Short
// calls"): a thread that reads the clock for a call's end and is preempted before it
// publishes the end hands the drainer an end older than its passes. The filter must keep
// the call's decision open until that end arrives: a short call is left out, a long one
// kept, never the other way round.
//
// The preemption is made, not waited for: the recording thread T and a stalling thread S
// share one CPU. T writes a call's begin as the hot path does (detail::reserve, the clock,
// publish) and makes its end's stamp (one tick after the begin for a short call, three
// minimums for a long one), then wakes S, a SCHED_FIFO thread, which takes the CPU from T
// at once: T is runnable, not running, between its clock read and its store, as a
// preempted thread is. S waits, spinning, until the drainer (on the other CPUs) has
// served two passes on demand that began after the call's begin + min_duration, then
// sleeps; T publishes the end. Each round checks that T had not published when S let go.
// A machine that refuses SCHED_FIFO (EPERM: no CAP_SYS_NICE, RLIMIT_RTPRIO 0) skips the
// test, saying so: an ordinary thread cannot hold another off its CPU for certain (with T
// at SCHED_IDLE, the scheduler still ran it in 7 to 88% of the rounds).
#include <gtest/gtest.h>
#include <pthread.h>
#include <sched.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "ringtrace/recorded_trace.hpp"
#include "ringtrace/ringtrace.hpp"
#include "support/validating_exporter.hpp"  // test_scale
#include "thread_registry.hpp"              // run_drainer_pass's registry, bind_thread

namespace {

namespace rd = ringtrace::detail;
using ringtrace::Event;
using ringtrace::EventKind;

constexpr ringtrace::SiteInfo kCall{"late_ends::call()",       "late_ends::call()",
                                    "test_late_ends.cpp",      __LINE__,
                                    ringtrace::SiteKind::zone, ringtrace::SiteOptions::function};
constexpr auto kMinDuration = std::chrono::microseconds(50);

std::uint64_t ticks_now() { return rd::read_ticks(true); }

// The thread's ring, bound to the running session; null without a TSC (the fast path and
// these writes are closed then).
rd::WriterBlock* ring() {
  const std::uint32_t epoch = rd::g_epoch.load(std::memory_order_relaxed);
  if (rd::t_writer.epoch != epoch && !rd::bind_thread(epoch)) return nullptr;
  return rd::writable(rd::t_writer, epoch);
}

// As the hot path writes a zone's begin: the slot, then the clock, then the header.
std::uint64_t write_begin(rd::WriterBlock& b) {
  const std::uintptr_t at = rd::reserve(b, sizeof(rd::TimedRecord));
  const std::uint64_t ticks = ticks_now();
  rd::put(at + offsetof(rd::TimedRecord, ticks), ticks);
  rd::publish(at, rd::record_header(&kCall, rd::record_zone_begin));
  return ticks;
}
void write_end(rd::WriterBlock& b, std::uint64_t ticks) { rd::publish(rd::reserve(b, 8), rd::end_slot(ticks)); }

// Clock ticks in `d`, measured against the steady clock over 20 ms.
std::uint64_t ticks_in(std::chrono::nanoseconds d) {
  const auto t0 = std::chrono::steady_clock::now();
  const std::uint64_t k0 = ticks_now();
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  const std::uint64_t k1 = ticks_now();
  const auto t1 = std::chrono::steady_clock::now();
  return static_cast<std::uint64_t>(static_cast<double>(k1 - k0) * static_cast<double>(d.count()) /
                                    static_cast<double>(std::chrono::nanoseconds(t1 - t0).count()));
}

bool pin_to(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  return pthread_setaffinity_np(pthread_self(), sizeof(set), &set) == 0;
}

// S: woken by T (round != 0), spins until two passes on demand that began after the
// call's begin + min_duration have completed, then records whether T had published.
struct Staller {
  std::atomic<std::uint32_t> round{0};      // the round T asks S to stall; S sets it back to 0
  std::atomic<std::uint32_t> published{0};  // the last round whose end T published
  std::atomic<bool> quit{false};
  std::atomic<bool> ready{false};               // S is on its CPU, under its policy
  std::chrono::steady_clock::time_point begin;  // the call's, written by T before it wakes S
  int rounds_not_held = 0;                      // rounds in which T ran while S stalled
  bool drainer_late = false;

  void run() {
    rd::Registry& registry = rd::Registry::instance();
    for (;;) {
      round.wait(0, std::memory_order_acquire);
      const std::uint32_t r = round.load(std::memory_order_acquire);
      if (quit.load(std::memory_order_acquire)) return;
      while (std::chrono::steady_clock::now() < begin + 2 * kMinDuration) {}
      const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
      for (int pass = 0; pass < 2; ++pass) {
        const std::uint64_t request = registry.request_pass();
        while (registry.passes_served() < request && !drainer_late) {
          registry.wake_drainer();
          drainer_late = std::chrono::steady_clock::now() > deadline;
        }
      }
      if (published.load(std::memory_order_acquire) == r) ++rounds_not_held;
      round.store(0, std::memory_order_release);
      round.notify_all();
    }
  }
};

TEST(LateEnds, ACallsDecisionWaitsForItsEndHoweverLate) {
  cpu_set_t allowed;
  ASSERT_EQ(sched_getaffinity(0, sizeof(allowed), &allowed), 0);
  if (CPU_COUNT(&allowed) < 2) GTEST_SKIP() << "one CPU: the drainer could not run while T is held off it";
  const int rounds = std::max(40, static_cast<int>(400 * ringtrace::testing::test_scale()));

  ringtrace::Config config;
  config.overflow = ringtrace::OverflowPolicy::block;
  config.functions.min_duration = kMinDuration;
  ringtrace::Session session(config);
  auto memory = std::make_shared<ringtrace::MemoryExporter>();
  session.add_exporter(memory);
  // T and S share the first allowed CPU; the drainer, made by start(), runs on the others.
  int cpu = 0;
  while (!CPU_ISSET(cpu, &allowed)) ++cpu;
  cpu_set_t others = allowed;
  CPU_CLR(cpu, &others);
  ASSERT_EQ(pthread_setaffinity_np(pthread_self(), sizeof(others), &others), 0);
  session.start();
  ASSERT_EQ(pthread_setaffinity_np(pthread_self(), sizeof(allowed), &allowed), 0);
  Staller staller;
  int fifo_error = 0;
  std::thread s([&] {
    ASSERT_TRUE(pin_to(cpu));
    sched_param rt{};
    rt.sched_priority = 1;
    fifo_error = pthread_setschedparam(pthread_self(), SCHED_FIFO, &rt);
    staller.ready.store(true, std::memory_order_release);
    if (fifo_error == 0) staller.run();
  });
  int short_rounds = 0, long_rounds = 0;
  bool tsc = true;
  std::thread t([&] {
    ASSERT_TRUE(pin_to(cpu));
    while (!staller.ready.load(std::memory_order_acquire)) std::this_thread::yield();
    if (fifo_error != 0) return;
    rd::WriterBlock* b = ring();
    if (b == nullptr) {
      tsc = false;
      return;
    }
    // The ends' stamps are made here: a short call lasts one tick, a long one three times
    // the minimum (the stall outlasts both), whatever else takes T's CPU meanwhile.
    const std::uint64_t long_ticks = ticks_in(3 * kMinDuration);
    for (std::uint32_t r = 1; r <= static_cast<std::uint32_t>(rounds); ++r) {
      const bool long_call = r % 4 == 0;
      staller.begin = std::chrono::steady_clock::now();
      const std::uint64_t begin = write_begin(*b);
      const std::uint64_t end = begin + (long_call ? long_ticks : 1);
      staller.round.store(r, std::memory_order_release);
      staller.round.notify_all();  // S takes the CPU here: T stops between its clock read and its store
      write_end(*b, end);
      staller.published.store(r, std::memory_order_release);
      staller.round.wait(r, std::memory_order_acquire);  // S done with this round
      (long_call ? long_rounds : short_rounds) += 1;
    }
  });
  t.join();
  staller.quit.store(true, std::memory_order_release);
  staller.round.store(~0u, std::memory_order_release);
  staller.round.notify_one();
  s.join();
  session.stop();
  if (fifo_error == EPERM) GTEST_SKIP() << "SCHED_FIFO refused (EPERM): no thread can hold T off its CPU for certain";
  ASSERT_EQ(fifo_error, 0) << "pthread_setschedparam(SCHED_FIFO): " << std::strerror(fifo_error);
  if (!tsc) GTEST_SKIP() << "no TSC: the hot path's writes this test makes are closed";
  ASSERT_FALSE(staller.drainer_late) << "the drainer did not serve a pass within 10 s";
  std::printf("%d rounds (%d short, %d long)\n", rounds, short_rounds, long_rounds);
  EXPECT_EQ(staller.rounds_not_held, 0) << "rounds in which T published its end while S held its CPU";

  // What the program made, against the stream: every long call kept, every short one left
  // out and counted, nothing late.
  const ringtrace::RecordedTrace trace = memory->trace();
  const ringtrace::SessionStats stats = session.stats();
  int kept = 0;
  std::uint64_t open_ns = 0;
  for (const Event& e : trace.events) {
    if (trace.sites.at(e.site).name != std::string(kCall.name)) continue;
    if (e.kind == EventKind::zone_begin) open_ns = e.time_ns;
    if (e.kind == EventKind::zone_end) {
      ++kept;
      EXPECT_GE(e.time_ns - open_ns, static_cast<std::uint64_t>(kMinDuration.count()) * 1000);
    }
  }
  EXPECT_EQ(kept, long_rounds);
  EXPECT_EQ(stats.functions.short_calls, static_cast<std::uint64_t>(short_rounds));
  EXPECT_EQ(stats.late_events, 0u);
  EXPECT_EQ(stats.dropped, 0u);
}

// A call whose end has not come is still known long, and the stream goes on without
// waiting for it: its thread sleeping in the kernel (the call waits on a condition
// variable), or running on its CPU (the call spins), past the call's begin +
// min_duration, has published every end it stamped before (thread_probe.hpp). The
// begin, and a zone another thread makes meanwhile, are delivered before the call ends.
void expect_delivered_before_the_end(bool sleeps) {
  ringtrace::Config config;
  config.functions.min_duration = kMinDuration;
  ringtrace::Session session(config);
  auto memory = std::make_shared<ringtrace::MemoryExporter>();
  session.add_exporter(memory);
  session.start();
  std::mutex mutex;
  std::condition_variable cv;
  bool begun = false, end_now = false, tsc = true;
  std::thread t([&] {
    rd::WriterBlock* b = ring();
    if (b != nullptr) write_begin(*b);
    std::unique_lock lock(mutex);
    tsc = b != nullptr;
    begun = true;
    cv.notify_all();
    if (sleeps) {
      cv.wait(lock, [&] { return end_now; });
    } else {
      while (!end_now) {
        lock.unlock();
        const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(100);
        while (std::chrono::steady_clock::now() < until) {}
        lock.lock();
      }
    }
    if (b != nullptr) write_end(*b, ticks_now());
  });
  {
    std::unique_lock lock(mutex);
    cv.wait(lock, [&] { return begun; });
  }
  { RINGTRACE_ZONE("meanwhile"); }
  // Passes on demand until the three events are delivered; a bound, not a measure: each
  // pass looks at the thread again.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (memory->event_count() < 3 && std::chrono::steady_clock::now() < deadline) {
    rd::run_drainer_pass();
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  const std::size_t delivered_while_open = memory->event_count();
  {
    std::lock_guard lock(mutex);
    end_now = true;
  }
  cv.notify_all();
  t.join();
  session.stop();
  if (!tsc) GTEST_SKIP() << "no TSC: the hot path's writes this test makes are closed";
  EXPECT_EQ(delivered_while_open, 3u) << "the call's begin and the other thread's zone, before the call ended";
  const ringtrace::RecordedTrace trace = memory->trace();
  std::vector<std::string> seen;
  for (const Event& e : trace.events) {
    seen.push_back((e.kind == EventKind::zone_begin ? "b:" : "e:") + trace.sites.at(e.site).name);
  }
  EXPECT_EQ(seen,
            (std::vector<std::string>{"b:late_ends::call()", "b:meanwhile", "e:meanwhile", "e:late_ends::call()"}));
  EXPECT_EQ(session.stats().late_events, 0u);
  EXPECT_EQ(session.stats().functions.short_calls, 0u);
}

TEST(LateEnds, ACallWhoseThreadSleepsIsKnownLongBeforeItEnds) { expect_delivered_before_the_end(true); }
TEST(LateEnds, ACallWhoseThreadRunsIsKnownLongBeforeItEnds) { expect_delivered_before_the_end(false); }

}  // namespace
