// Threads that come and go, for long: every event arrives or is counted, and the
// runtime's memory does not keep what exited threads used.
#include <gtest/gtest.h>
#include <malloc.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "ringtrace/ringtrace.hpp"
#include "support/validating_exporter.hpp"

namespace {

using ringtrace::testing::test_scale;

std::int64_t heap_in_use() { return static_cast<std::int64_t>(mallinfo2().uordblks); }

// 50,000 short threads over three sessions (a short warm-up, then two of 24,000):
// every event delivered, and after stop() the heap is back where it was, session after
// session (the registration queues used to keep about
// 60 bytes for every thread ever started). Within a session the drainer keeps each
// thread's identity (tid, name, counts) for the exporters: released at stop().
TEST(Threads, ShortThreadsLeaveNothingBehindAcrossSessions) {
  const int n = std::max(1000, static_cast<int>(24000 * test_scale()));
  std::vector<std::int64_t> after;
  for (int round = 0; round < 3; ++round) {
    const int threads = round == 0 ? 2000 : n;
    {
      auto validator = std::make_shared<ringtrace::testing::ValidatingExporter>();
      ringtrace::Session session;
      session.add_exporter(validator);
      session.start();
      for (int i = 0; i < threads; ++i) {
        std::thread([] {
          RINGTRACE_ZONE("short");
          RINGTRACE_INSTANT("tick");
        }).join();
      }
      session.stop();
      EXPECT_EQ(session.stats().recorded, 3u * static_cast<std::uint64_t>(threads));
      EXPECT_EQ(session.stats().dropped, 0u);
      EXPECT_EQ(validator->nesting_errors, 0u);
    }
    after.push_back(heap_in_use());
  }
  // Sessions two and three started every thread anew and kept nothing of them.
  const std::int64_t growth = after[2] - after[1];
  EXPECT_LT(growth, n * 4 + (256 << 10)) << "heap grew " << growth << " bytes over " << n << " threads";
}

// Soak: 8 threads that come and go, nested zones, counters, both policies, for
// RINGTRACE_SOAK_SECONDS (default 10 s per policy; the one-minute soak is
// RINGTRACE_SOAK_SECONDS=60): no hang, every event recorded or counted, zones whole.
TEST(Threads, SoakBothPolicies) {
  const char* env = std::getenv("RINGTRACE_SOAK_SECONDS");
  const double seconds = (env != nullptr ? std::atof(env) : 10.0) * test_scale();
  for (const auto policy : {ringtrace::OverflowPolicy::drop, ringtrace::OverflowPolicy::block}) {
    ringtrace::Config config;
    config.overflow = policy;
    config.buffer_records = 1 << 12;
    auto validator = std::make_shared<ringtrace::testing::ValidatingExporter>();
    ringtrace::Session session(config);
    session.add_exporter(validator);
    session.start();
    std::atomic<std::uint64_t> produced{0};
    const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    std::vector<std::thread> threads;
    for (int t = 0; t < 8; ++t) {
      threads.emplace_back([&, t] {
        int generation = 0;
        while (std::chrono::steady_clock::now() < until) {
          // Each generation is a fresh thread: threads come and go all the time.
          std::thread([&, t, generation] {
            ringtrace::set_thread_name("soak-" + std::to_string(t) + "-" + std::to_string(generation));
            std::uint64_t mine = 0;
            for (int i = 0; i < 20000; ++i) {
              RINGTRACE_ZONE("outer");
              {
                RINGTRACE_ZONE("inner");
                RINGTRACE_COUNTER("i", i);
              }
              mine += 5;
            }
            produced += mine;
          }).join();
          ++generation;
        }
      });
    }
    for (auto& t : threads) t.join();
    session.stop();
    const ringtrace::SessionStats stats = session.stats();
    EXPECT_EQ(stats.recorded + stats.dropped, produced.load()) << "policy " << static_cast<int>(policy);
    EXPECT_EQ(validator->nesting_errors, 0u);
    EXPECT_EQ(validator->order_errors, 0u);
    EXPECT_EQ(stats.unbalanced_ends, 0u);
    if (policy == ringtrace::OverflowPolicy::block) {
      EXPECT_EQ(stats.dropped, 0u);
    }
  }
}

}  // namespace
