// A program whose operator new records an event: the thread's first event allocates its
// ring from inside the recording path, and every allocation made by the runtime while a
// thread records re-enters it. Nothing deadlocks; nested events are dropped and counted.
// And one whose operator new raises a signal: a handler that records runs inside the
// runtime's own calls that allocate under a lock (the category table's).
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>  // getpid

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <thread>
#include <vector>

#include "ringtrace/exporters/binary_trace.hpp"
#include "ringtrace/ringtrace.hpp"
#include "support/validating_exporter.hpp"
#include "thread_registry.hpp"  // run_drainer_pass

namespace {
std::atomic<bool> g_hook_on{false};
thread_local std::uint64_t t_hook_events = 0;
std::atomic<std::uint64_t> g_hook_events{0};
// Set on a thread: its next allocation raises SIGUSR1 first (once), so the handler runs
// on that thread inside whatever allocates, before the allocation returns.
constinit thread_local bool t_raise_in_new = false;
// Allocations made on a thread while it is inside ringtrace's recording slow path.
std::atomic<bool> g_count_slow_allocations{false};
std::atomic<std::uint64_t> g_slow_allocations{0};
}  // namespace

void* operator new(std::size_t size) {
  if (t_raise_in_new) {
    t_raise_in_new = false;
    std::raise(SIGUSR1);  // delivered to this thread before raise returns
  }
  if (g_count_slow_allocations.load(std::memory_order_relaxed) && ringtrace::detail::t_writer.in_slow != 0) {
    g_slow_allocations.fetch_add(1, std::memory_order_relaxed);
  }
  if (g_hook_on.load(std::memory_order_relaxed)) {
    RINGTRACE_ZONE("operator new");
    RINGTRACE_COUNTER("allocated bytes", static_cast<std::int64_t>(size));
    t_hook_events += 3;
  }
  if (void* p = std::malloc(size == 0 ? 1 : size)) return p;
  throw std::bad_alloc();
}
// Every form that pairs with the replaced delete (the nothrow one is what
// std::stable_sort's temporary buffer uses) comes from malloc too.
void* operator new(std::size_t size, const std::nothrow_t&) noexcept {
  try {
    return ::operator new(size);
  } catch (...) {
    return nullptr;
  }
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }

namespace {

TEST(AllocatorHook, AnOperatorNewThatRecordsNeverDeadlocks) {
  auto validator = std::make_shared<ringtrace::testing::ValidatingExporter>();
  ringtrace::Session session;
  session.add_exporter(validator);
  session.start();
  g_hook_on = true;
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([] {
      std::uint64_t produced = 0;
      for (int i = 0; i < 2000; ++i) {
        RINGTRACE_ZONE("work");
        auto p = std::make_unique<int>(i);  // records from inside operator new
        produced += 2;
      }
      g_hook_events += produced + t_hook_events;
    });
  }
  for (auto& t : threads) t.join();
  g_hook_on = false;
  g_hook_events += t_hook_events;  // this thread's: std::thread allocates too
  session.stop();
  const ringtrace::SessionStats stats = session.stats();
  // The drainer's own allocations happen on an untraced thread; the rest is the workers'.
  EXPECT_EQ(stats.recorded + stats.dropped, g_hook_events.load());
  EXPECT_GT(stats.recorded, 0u);
  EXPECT_EQ(validator->nesting_errors, 0u);
  EXPECT_EQ(stats.unbalanced_ends, 0u);
}

// Config::self_drain: a thread that packs its own ring into the binary file does it from
// its recording slow path, where it may be a signal handler or an allocator hook that
// interrupted the allocator: it must not allocate. Thousands of full rings, most packed
// by their threads, and not one allocation inside the slow path after each thread's
// first event.
TEST(AllocatorHook, AThreadEmptyingItsOwnRingAllocatesNothing) {
  const std::string path = ::testing::TempDir() + "ringtrace-self-drain-" + std::to_string(::getpid()) + ".rtrace";
  ringtrace::Config config;
  config.overflow = ringtrace::OverflowPolicy::block;
  config.buffer_records = 256;  // a 4 KiB ring, packed by its thread each time it is full
  config.high_water = 1.0;      // the drainer is woken only by a full ring
  config.drain_interval = std::chrono::seconds(10);
  ringtrace::Session session(config);
  session.add_exporter(ringtrace::binary_trace_exporter(path));
  session.start();
  std::atomic<int> bound{0};
  std::atomic<bool> go{false};
  std::vector<std::thread> threads;
  for (int t = 0; t < 2; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 64; ++i) {  // every call site once: the drainer describes them
        RINGTRACE_ZONE("work");
        RINGTRACE_ZONE_VALUE("i", i);
        RINGTRACE_INSTANT("tick");
      }
      bound.fetch_add(1);
      while (!go.load()) std::this_thread::yield();
      for (int i = 0; i < 100000; ++i) {
        RINGTRACE_ZONE("work");
        RINGTRACE_ZONE_VALUE("i", i);
        RINGTRACE_INSTANT("tick");
      }
    });
  }
  while (bound.load() < 2) std::this_thread::yield();
  ASSERT_TRUE(ringtrace::detail::run_drainer_pass());  // the sites described
  g_slow_allocations = 0;
  g_count_slow_allocations = true;
  go = true;
  for (auto& t : threads) t.join();
  g_count_slow_allocations = false;
  session.stop();
  const ringtrace::SessionStats stats = session.stats();
  EXPECT_EQ(g_slow_allocations.load(), 0u);
  EXPECT_EQ(stats.dropped, 0u);
  EXPECT_EQ(stats.recorded, 2u * (64 + 100000) * 4);
  // 2 x 100,000 x 56 ring bytes: 2,700 full rings, most of them packed by their threads
  // (Release: 90% of the events; ThreadSanitizer, where the drainer's lock is busy more
  // often: 30%), the others by the drainer (its lock busy, the file's buffer full). At
  // least a hundredth (dozens of packings) for the count of allocations to mean something.
  EXPECT_GT(stats.self_drained, stats.recorded / 100);
  std::remove(path.c_str());
}

// Ends the process, saying why, if it is still alive after `limit` (a deadlock cannot
// be recovered from in-process); destroyed in time, it does nothing.
class Watchdog {
 public:
  Watchdog(const char* what, std::chrono::seconds limit)
      : thread_([this, what, limit] {
          std::unique_lock<std::mutex> lock(mutex_);
          if (!done_changed_.wait_for(lock, limit, [this] { return done_; })) {
            std::fprintf(stderr, "deadlocked: %s\n", what);
            std::_Exit(1);
          }
        }) {}
  ~Watchdog() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      done_ = true;
    }
    done_changed_.notify_one();
    thread_.join();
  }

 private:
  std::mutex mutex_;
  std::condition_variable done_changed_;
  bool done_ = false;
  std::thread thread_;
};

// What the SIGUSR1 handler saw and did.
std::atomic<int> g_handler_runs{0};
std::atomic<int> g_handler_nested{0};  // runs that found their thread inside the runtime's marked region

// The handler's events: a zone of a category whose call site it uses first (its first
// use looks the category up, under the table's lock), and an instant.
void handler_records() {
  RINGTRACE_ZONE_IN("a signal handler's own category", "handler zone");
  RINGTRACE_INSTANT("handler instant");
}

void on_usr1(int) {
  if (ringtrace::detail::t_writer.in_slow != 0) g_handler_nested.fetch_add(1);
  handler_records();
  g_handler_runs.fetch_add(1);
}

struct NameCensus final : ringtrace::Exporter {
  std::map<std::string, std::uint64_t> begins, instants;
  void on_events(std::span<const ringtrace::Event> events, const ringtrace::TraceContext& context) override {
    for (const ringtrace::Event& e : events) {
      if (e.kind == ringtrace::EventKind::zone_begin) ++begins[context.site(e.site).name];
      if (e.kind == ringtrace::EventKind::instant) ++instants[context.site(e.site).name];
    }
  }
};

// Issue 22, point 16. A signal handler whose first category zone comes while its thread
// is inside ringtrace::set_category_enabled, or inside the category lookup of a call
// site's first use, both of which hold the category table's lock: the signal is raised
// from the operator new that the table's insertion of a new name calls, so the handler
// runs right there, every time. Its zone's lookup finds the thread marked (SlowScope) and
// gives up instead of taking the lock again; the zone and the instant are dropped and
// counted (3 events a run), and the call site keeps no answer: used later outside, its
// zone is recorded in its category and hidden when that is switched off. Without the
// mark the handler waits forever on a lock its own thread holds (the watchdog ends the
// test, naming the case).
TEST(SignalInCategoryLookup, AHandlersFirstCategoryZoneThereNeverDeadlocks) {
  Watchdog watchdog("a signal handler inside the category lookup", std::chrono::seconds(60));
  auto census = std::make_shared<NameCensus>();
  ringtrace::Session session;
  session.add_exporter(census);
  struct sigaction action {};
  action.sa_handler = on_usr1;
  sigemptyset(&action.sa_mask);
  struct sigaction previous {};
  ASSERT_EQ(sigaction(SIGUSR1, &action, &previous), 0);
  session.start();
  RINGTRACE_INSTANT("bound");  // the thread's first event (its ring) before any handler
  // The table itself is allocated at its first use, before its lock is taken: make it
  // exist, so that the allocations below are the insertions, under the lock.
  EXPECT_TRUE(ringtrace::category_enabled("issue 22 point 16: the table exists"));

  // Inside set_category_enabled: a new name (longer than a short string) is allocated.
  t_raise_in_new = true;
  ringtrace::set_category_enabled("issue 22 point 16: a category switched while the handler comes", false);
  EXPECT_FALSE(t_raise_in_new);
  EXPECT_EQ(g_handler_runs.load(), 1);
  EXPECT_EQ(g_handler_nested.load(), 1);
  EXPECT_FALSE(ringtrace::category_enabled("issue 22 point 16: a category switched while the handler comes"));

  // Inside the lookup of a call site's first use of a new category.
  t_raise_in_new = true;
  { RINGTRACE_ZONE_IN("issue 22 point 16: a category looked up while the handler comes", "looked-up zone"); }
  EXPECT_FALSE(t_raise_in_new);
  EXPECT_EQ(g_handler_runs.load(), 2);
  EXPECT_EQ(g_handler_nested.load(), 2);

  // Outside: the handler's call site looks its category up now, and obeys its switch.
  handler_records();
  ringtrace::set_category_enabled("a signal handler's own category", false);
  handler_records();
  session.stop();
  sigaction(SIGUSR1, &previous, nullptr);
  ringtrace::set_category_enabled("a signal handler's own category", true);

  const ringtrace::SessionStats stats = session.stats();
  EXPECT_EQ(stats.dropped, 6u);  // the handlers' zones (begin and end) and instants
  // "bound", the looked-up zone, the handler's zone and instant, then its instant alone.
  EXPECT_EQ(stats.recorded, 1u + 2u + 3u + 1u);
  EXPECT_EQ(census->begins["looked-up zone"], 1u);
  EXPECT_EQ(census->begins["handler zone"], 1u);
  EXPECT_EQ(census->instants["handler instant"], 2u);
  EXPECT_EQ(stats.unbalanced_ends, 0u);
}

}  // namespace
