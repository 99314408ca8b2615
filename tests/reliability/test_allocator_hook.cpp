// A program whose operator new records an event: the thread's first event allocates its
// ring from inside the recording path, and every allocation made by the runtime while a
// thread records re-enters it. Nothing deadlocks; nested events are dropped and counted.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <memory>
#include <new>
#include <thread>
#include <vector>

#include "ringtrace/ringtrace.hpp"
#include "support/validating_exporter.hpp"

namespace {
std::atomic<bool> g_hook_on{false};
thread_local std::uint64_t t_hook_events = 0;
std::atomic<std::uint64_t> g_hook_events{0};
}  // namespace

void* operator new(std::size_t size) {
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

}  // namespace
