// Recording from a signal handler that interrupts its own thread while that thread is
// recording: never a corrupted ring, never a hang, every event delivered or counted.
// A handler that waits for room under the block policy returns with errno as it was.
#include <gtest/gtest.h>
#include <pthread.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "ringtrace/exporters/binary_trace.hpp"
#include "ringtrace/recorded_trace.hpp"
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

// `to_file`: the binary trace file is the session's only exporter, so that the thread
// (or its handler) that finds its ring full packs its own records into the file
// (Config::self_drain); the census reads the file back.
void run_signal_storm(ringtrace::OverflowPolicy policy, bool to_file = false) {
  ringtrace::Config config;
  config.overflow = policy;
  config.buffer_records = 1 << 12;       // small: the slow path (wake, drop, wait) runs often
  if (to_file) config.high_water = 1.0;  // the drainer woken by full rings only: the threads pack them
  auto census = std::make_shared<Census>();
  ringtrace::Session session(config);
  const std::filesystem::path file =
      std::filesystem::temp_directory_path() / ("ringtrace-signals-" + std::to_string(::getpid()) + ".rtrace");
  if (to_file) {
    session.add_exporter(ringtrace::binary_trace_exporter(file));
  } else {
    session.add_exporter(census);
  }

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
  if (to_file) {
    const ringtrace::ReplayResult read = ringtrace::replay_file(file, *census);
    EXPECT_TRUE(read.complete) << read.problem;
    std::filesystem::remove(file);
  }

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

TEST(Signals, HandlerRecordingWhileTheThreadEmptiesItsOwnRingDropMode) {
  run_signal_storm(ringtrace::OverflowPolicy::drop, true);
}

TEST(Signals, HandlerRecordingWhileTheThreadEmptiesItsOwnRingBlockMode) {
  run_signal_storm(ringtrace::OverflowPolicy::block, true);
}

// Issue 22, point 17: what the handlers of the errno test saw.
std::atomic<bool> g_errno_handler_recording{false};
std::atomic<std::uint64_t> g_errno_handler_runs{0};
std::atomic<std::uint64_t> g_usr2_in_wait{0};  // SIGUSR2s that came while the handler waited in the runtime
std::atomic<std::uint64_t> g_usr2_eintr{0};    // of those, the ones that failed a system call with EINTR

void on_usr1_records(int) {
  g_errno_handler_recording.store(true);
  {
    RINGTRACE_ZONE("errno handler zone");
    RINGTRACE_INSTANT("errno handler instant");
  }
  g_errno_handler_recording.store(false);
  g_errno_handler_runs.fetch_add(1);
}

// Interrupts the wait and records nothing. A signal that comes while the thread sleeps
// in the wait's nanosleep fails it with EINTR; one that comes while the thread is
// runnable (its sleep over, waiting for a CPU) does not, and on a loaded machine most
// do. The kernel puts -EINTR in the interrupted context's result register when it fails
// the call for the handler: on x86-64 that tells the two apart (the wait makes no other
// call that can fail so); elsewhere every signal in the wait is counted.
void on_usr2(int, siginfo_t*, void* context) {
  if (!g_errno_handler_recording.load() || ringtrace::detail::t_writer.in_slow == 0) return;
  g_usr2_in_wait.fetch_add(1);
#if defined(__x86_64__)
  if (static_cast<const ucontext_t*>(context)->uc_mcontext.gregs[REG_RAX] == -EINTR) g_usr2_eintr.fetch_add(1);
#else
  static_cast<void>(context);
  g_usr2_eintr.fetch_add(1);
#endif
}

// Holds the drainer inside on_events until opened: the rings fill and stay full.
struct Gate final : ringtrace::Exporter {
  std::mutex mutex;
  std::condition_variable opened_changed;
  bool opened = false;
  std::uint64_t instants = 0;
  void open() {
    {
      std::lock_guard<std::mutex> lock(mutex);
      opened = true;
    }
    opened_changed.notify_all();
  }
  void on_events(std::span<const Event> events, const ringtrace::TraceContext& context) override {
    std::unique_lock<std::mutex> lock(mutex);
    opened_changed.wait(lock, [this] { return opened; });
    for (const Event& e : events) {
      if (e.kind == EventKind::instant && std::string(context.site(e.site).name) == "errno handler instant") ++instants;
    }
  }
};

// Issue 22, point 17. The main thread sets errno, raises SIGUSR1 and checks errno when
// raise returns, over and over; the handler records a zone and an instant in block mode
// while the drainer is held (the exporter's on_events waits on a gate), so the ring fills
// and the handler waits for room, one nanosleep a round. A helper thread sees it waiting
// and sends SIGUSR2 until three have failed the wait's nanosleep with EINTR (a SIGUSR2
// a millisecond). Then the gate opens and the handler's events go in. Every raise must return with
// the errno the main thread set; without the runtime giving errno back (SlowScope) it
// returns with EINTR.
//
// Not under TSan, which runs handlers at its own points: with g++ 12's, none of 15,000
// SIGUSR2s sent in 20 s reached the thread while its handler waited (the wait was never
// interrupted). TSan also keeps errno across the handlers it runs.
#if !RINGTRACE_TSAN  // ThreadSanitizer interrupts no handler's wait: not built there, neither run nor skipped
TEST(Signals, AHandlerWaitingInBlockModeReturnsWithErrnoUnchanged) {
  ringtrace::Config config;
  config.overflow = ringtrace::OverflowPolicy::block;
  config.buffer_records = 256;  // the smallest ring, 4 KB: full after some 200 events
  auto gate = std::make_shared<Gate>();
  ringtrace::Session session(config);
  session.add_exporter(gate);

  struct sigaction records {};
  records.sa_handler = on_usr1_records;
  sigemptyset(&records.sa_mask);
  struct sigaction interrupts {};
  interrupts.sa_sigaction = on_usr2;
  interrupts.sa_flags = SA_SIGINFO;
  sigemptyset(&interrupts.sa_mask);
  struct sigaction previous_usr1 {
  }, previous_usr2{};
  ASSERT_EQ(sigaction(SIGUSR1, &records, &previous_usr1), 0);
  ASSERT_EQ(sigaction(SIGUSR2, &interrupts, &previous_usr2), 0);
  g_errno_handler_runs = 0;
  g_usr2_in_wait = 0;
  g_usr2_eintr = 0;

  session.start();
  RINGTRACE_INSTANT("bound");  // the thread's first event (its ring) before any handler

  const pthread_t main_thread = pthread_self();
  std::atomic<bool> helper_done{false};
  std::uint64_t usr2_sent = 0;
  std::thread helper([&] {
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    std::uint64_t runs = g_errno_handler_runs.load();
    auto since = std::chrono::steady_clock::now();
    while (g_usr2_eintr.load() < 3 && std::chrono::steady_clock::now() < give_up) {
      const std::uint64_t now_runs = g_errno_handler_runs.load();
      if (now_runs != runs || !g_errno_handler_recording.load()) {
        runs = now_runs;
        since = std::chrono::steady_clock::now();
      } else if (std::chrono::steady_clock::now() - since > std::chrono::milliseconds(20)) {
        pthread_kill(main_thread, SIGUSR2);  // the handler has been in one record for 20 ms: waiting
        ++usr2_sent;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    gate->open();
    helper_done = true;
  });

  std::uint64_t raises = 0, changed = 0;
  int seen = 0;
  while (!helper_done.load() || raises < 1000) {
    errno = EDOM;
    std::raise(SIGUSR1);
    const int after = errno;
    ++raises;
    if (after != EDOM) {
      ++changed;
      seen = after;
    }
  }
  helper.join();
  session.stop();
  sigaction(SIGUSR1, &previous_usr1, nullptr);
  sigaction(SIGUSR2, &previous_usr2, nullptr);

  EXPECT_GE(g_usr2_eintr.load(), 3u) << "the handler's wait was never interrupted (" << usr2_sent << " SIGUSR2 sent, "
                                     << g_usr2_in_wait.load() << " during the wait)";
  EXPECT_EQ(changed, 0u) << "of " << raises << " raises, the last changed errno to " << seen << " ("
                         << std::strerror(seen) << ")";
  EXPECT_EQ(g_errno_handler_runs.load(), raises);
  const ringtrace::SessionStats stats = session.stats();
  EXPECT_EQ(stats.dropped, 0u);  // block mode, and no handler nested in the thread's recording
  EXPECT_EQ(stats.recorded, 1 + 3 * raises);
  EXPECT_EQ(gate->instants, raises);
  EXPECT_EQ(stats.unbalanced_ends, 0u);
}
#endif

}  // namespace

// --- Signals and ringtrace's own threads (issue 31 point 4) ---

namespace {

std::atomic<std::uint64_t> g_usr1_runs{0};
std::atomic<std::uint64_t> g_usr1_on_other_thread{0};
std::atomic<pid_t> g_usr1_expected_tid{0};

void on_usr1(int) {
  const int saved = errno;
  if (static_cast<pid_t>(::syscall(SYS_gettid)) != g_usr1_expected_tid.load()) g_usr1_on_other_thread.fetch_add(1);
  RINGTRACE_INSTANT("usr1");
  g_usr1_runs.fetch_add(1);
  errno = saved;
}

}  // namespace

// The program blocks a signal on its threads after start() and sends it to itself: the
// kernel may deliver a process-directed signal to any thread that does not block it. The
// drainer blocks every signal, so the signal waits until the program unblocks it, and the
// handler runs on the program's thread, where its event is recorded.
TEST(Signals, AProcessSignalTheProgramBlocksNeverRunsOnTheDrainer) {
  struct sigaction action {};
  action.sa_handler = on_usr1;
  sigemptyset(&action.sa_mask);
  struct sigaction previous {};
  ASSERT_EQ(sigaction(SIGUSR1, &action, &previous), 0);
  g_usr1_runs = 0;
  g_usr1_on_other_thread = 0;
  g_usr1_expected_tid = static_cast<pid_t>(::syscall(SYS_gettid));
  ringtrace::Config config;
  ringtrace::Session session(config);
  auto memory = std::make_shared<ringtrace::MemoryExporter>();
  session.add_exporter(memory);
  session.start();
  // The thread's first event (binding its ring) before any handler records: the macros
  // are async-signal-safe once the thread has recorded in the session.
  RINGTRACE_INSTANT("before_signals");
  sigset_t usr1, old;
  sigemptyset(&usr1);
  sigaddset(&usr1, SIGUSR1);
  ASSERT_EQ(pthread_sigmask(SIG_BLOCK, &usr1, &old), 0);
  for (int i = 0; i < 100; ++i) ::kill(::getpid(), SIGUSR1);
  // Long enough for a delivery to another thread to have happened.
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  const std::uint64_t while_blocked = g_usr1_runs.load();
  ASSERT_EQ(pthread_sigmask(SIG_SETMASK, &old, nullptr), 0);  // the pending one is delivered here
  session.stop();
  sigaction(SIGUSR1, &previous, nullptr);
  EXPECT_EQ(while_blocked, 0u) << "a handler ran on a thread of ringtrace's while the program blocked the signal";
  EXPECT_EQ(g_usr1_on_other_thread.load(), 0u);
  EXPECT_GE(g_usr1_runs.load(), 1u);
  std::uint64_t instants = 0;
  for (const ringtrace::Event& e : memory->trace().events) instants += e.kind == ringtrace::EventKind::instant;
  EXPECT_EQ(instants, g_usr1_runs.load() + 1);  // and before_signals
  EXPECT_EQ(session.stats().dropped, 0u);
}

// What ringtrace's own work records (here an exporter's callbacks, on the drainer; an
// allocator hook called by the drainer alike) is not the program's: left out, and not
// counted as the program's drops.
TEST(Signals, EventsOfRingtracesOwnWorkAreLeftOut) {
  struct Recording final : ringtrace::Exporter {
    std::atomic<bool> started{false};
    void on_start(const ringtrace::TraceContext&) override {
      {
        RINGTRACE_ZONE("in_on_start");  // begin and end
        RINGTRACE_INSTANT("also_in_on_start");
      }
      started.store(true);
    }
    void on_events(std::span<const ringtrace::Event>, const ringtrace::TraceContext&) override {}
  };
  ringtrace::Config config;
  ringtrace::Session session(config);
  auto recording = std::make_shared<Recording>();
  session.add_exporter(recording);
  session.start();
  { RINGTRACE_ZONE("main"); }
  // In the session: events after stop() are not the session's (not counted).
  while (!recording->started.load()) std::this_thread::yield();
  session.stop();
  EXPECT_EQ(session.stats().recorded, 2u);
  EXPECT_EQ(session.stats().dropped, 0u);
}

#if !RINGTRACE_TSAN  // its one user is not built under ThreadSanitizer (below)
namespace {
std::atomic<std::uint64_t> g_frame_marks_in_handler{0};
void frame_mark_handler(int) {
  const int saved = errno;
  ringtrace::frame_mark();
  g_frame_marks_in_handler.fetch_add(1);
  errno = saved;
}
}  // namespace
#endif

// frame_mark() in a handler that interrupts its own thread's step(): it cannot wait for
// the steps' lock (its own thread holds it), so that boundary is lost and counted, never
// a hang; every other one is recorded. Run in a child, so that a hang fails the test.
#if !RINGTRACE_TSAN  // fork with threads is outside what ThreadSanitizer supports: not built there, neither run nor skipped
TEST(Signals, FrameMarkInAHandlerInterruptingStepNeverHangs) {
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    struct sigaction action {};
    action.sa_handler = frame_mark_handler;
    sigemptyset(&action.sa_mask);
    sigaction(SIGALRM, &action, nullptr);
    ringtrace::Config config;
    config.overflow = ringtrace::OverflowPolicy::block;
    ringtrace::Session session(config);
    auto memory = std::make_shared<ringtrace::MemoryExporter>();
    session.add_exporter(memory);
    session.start();
    session.step();
    std::uint64_t calls = 1;
    {
      ThreadAlarm alarm(std::chrono::microseconds(20));
      const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(300);
      while (std::chrono::steady_clock::now() < until) {
        for (int i = 0; i < 100; ++i) session.step();
        calls += 100;
      }
    }
    const std::uint64_t advanced = session.current_step();
    session.stop();
    const std::uint64_t handler = g_frame_marks_in_handler.load();
    const std::uint64_t lost = calls + handler - advanced;
    std::uint64_t begins = 0;
    const ringtrace::RecordedTrace trace = memory->trace();
    for (const ringtrace::Event& e : trace.events) {
      begins += e.kind == ringtrace::EventKind::zone_begin && trace.sites[e.site].name == "step";
    }
    // Every step that advanced began a zone; each lost one counted its end and begin.
    const bool ok = begins == advanced && session.stats().dropped == 2 * lost && handler > 0;
    if (!ok) {
      std::fprintf(stderr, "calls %llu handler %llu advanced %llu begins %llu dropped %llu\n",
                   static_cast<unsigned long long>(calls), static_cast<unsigned long long>(handler),
                   static_cast<unsigned long long>(advanced), static_cast<unsigned long long>(begins),
                   static_cast<unsigned long long>(session.stats().dropped));
    }
    std::_Exit(ok ? 0 : 1);
  }
  int status = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  pid_t done = 0;
  while ((done = ::waitpid(child, &status, WNOHANG)) == 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  if (done == 0) {
    ::kill(child, SIGKILL);
    ::waitpid(child, &status, 0);
    FAIL() << "step() with frame_mark() in a signal handler hung";
  }
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
}
#endif
