// Many threads, full rings, threads that come and go. Run by the sanitizer builds too
// (label `concurrency`), scaled down by RINGTRACE_TEST_SCALE there.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <map>
#include <thread>
#include <vector>

#include "ringtrace/ringtrace.hpp"
#include "support/validating_exporter.hpp"
#include "thread_registry.hpp"

namespace {

using ringtrace::testing::test_scale;
using ringtrace::testing::ValidatingExporter;

TEST(Concurrency, BlockModeIsLosslessWithEightThreads) {
  const int threads = 8;
  const std::int64_t zones_per_thread = static_cast<std::int64_t>(1'000'000 * test_scale()) / 2 * 2;
  ringtrace::Config config;
  config.overflow = ringtrace::OverflowPolicy::block;
  config.buffer_records = 1 << 14;  // small enough that threads really wait for the drainer
  ringtrace::Session session(config);
  auto validator = std::make_shared<ValidatingExporter>(1000);
  session.add_exporter(validator);
  session.start();
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([zones_per_thread] {
      for (std::int64_t i = 0; i < zones_per_thread / 2; ++i) {
        RINGTRACE_ZONE("outer");
        { RINGTRACE_ZONE("inner"); }
        if (i % 1000 == 0) RINGTRACE_COUNTER("sequence", i);  // per-thread order check
      }
    });
  }
  for (auto& w : workers) w.join();
  session.stop();

  EXPECT_EQ(validator->starts, 1);
  EXPECT_EQ(validator->finishes, 1);
  EXPECT_EQ(validator->order_errors, 0u);
  EXPECT_EQ(validator->thread_order_errors, 0u);
  EXPECT_EQ(validator->nesting_errors, 0u);
  EXPECT_EQ(validator->depth_errors, 0u);
  EXPECT_EQ(validator->unclosed_threads, 0u);
  ASSERT_EQ(validator->threads.size(), static_cast<std::size_t>(threads));
  for (const auto& [id, t] : validator->threads) {
    EXPECT_EQ(t.begins, static_cast<std::uint64_t>(zones_per_thread)) << "thread " << id;
    EXPECT_EQ(t.ends, static_cast<std::uint64_t>(zones_per_thread)) << "thread " << id;
    EXPECT_EQ(t.closed_at_stop, 0u);
    EXPECT_EQ(t.dropped, 0u);
    EXPECT_EQ(t.counter_gaps, 0u) << "thread " << id;
    EXPECT_EQ(static_cast<std::int64_t>(t.counters), (zones_per_thread / 2 + 999) / 1000);
  }
  const ringtrace::SessionStats stats = session.stats();
  EXPECT_EQ(stats.dropped, 0u);
  EXPECT_EQ(stats.recorded, validator->events_seen);
  EXPECT_EQ(stats.unbalanced_ends, 0u);
}

TEST(Concurrency, DropModeAccountsForEveryEvent) {
  const int threads = 8;
  const std::uint64_t zones_per_thread = static_cast<std::uint64_t>(200'000 * test_scale());
  ringtrace::Config config;
  config.overflow = ringtrace::OverflowPolicy::drop;
  config.buffer_records = 256;
  config.drain_interval = std::chrono::milliseconds(5);
  config.yield_to_drainer = false;  // drops must happen: no yield to let the drainer keep up
  ringtrace::Session session(config);
  auto validator = std::make_shared<ValidatingExporter>();
  session.add_exporter(validator);
  session.start();
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([zones_per_thread] {
      for (std::uint64_t i = 0; i < zones_per_thread / 2; ++i) {
        RINGTRACE_ZONE("outer");
        RINGTRACE_ZONE("inner");
      }
    });
  }
  for (auto& w : workers) w.join();
  session.stop();
  const ringtrace::SessionStats stats = session.stats();

  EXPECT_EQ(validator->nesting_errors, 0u);
  EXPECT_EQ(validator->depth_errors, 0u);
  EXPECT_EQ(validator->order_errors, 0u);
  ASSERT_EQ(stats.threads.size(), static_cast<std::size_t>(threads));
  std::uint64_t total_dropped = 0;
  // Rows come by first event; index them by ThreadId.
  std::map<ringtrace::ThreadId, ringtrace::ThreadStats> rows;
  for (const ringtrace::ThreadStats& row : stats.threads) rows[row.thread] = row;
  for (const auto& [id, t] : validator->threads) {
    // No half zones: every delivered begin has its end, none closed at stop.
    EXPECT_EQ(t.begins, t.ends) << "thread " << id;
    EXPECT_EQ(t.closed_at_stop, 0u);
    // delivered + dropped == produced, per thread; the markers in the stream agree.
    EXPECT_EQ(t.begins + t.ends + rows[id].dropped, 2 * zones_per_thread) << "thread " << id;
    EXPECT_EQ(t.dropped, rows[id].dropped) << "thread " << id;
    EXPECT_EQ(t.begins + t.ends, rows[id].recorded);
    total_dropped += rows[id].dropped;
  }
  EXPECT_EQ(total_dropped, stats.dropped);
  EXPECT_GT(stats.dropped, 0u) << "the ring was sized to overflow; the test lost its point";
}

// The tests' pass on demand: with passes an hour apart, what a thread recorded before the
// call has reached the exporters when it returns (the newest records too: the pass does
// not hold back the merge grace), and a later call delivers what came after.
TEST(Concurrency, ADrainerPassOnDemandDeliversEverythingRecordedBefore) {
  ringtrace::Config config;
  config.drain_interval = std::chrono::hours(1);
  ringtrace::Session session(config);
  auto validator = std::make_shared<ValidatingExporter>();
  session.add_exporter(validator);
  EXPECT_FALSE(ringtrace::detail::run_drainer_pass(std::chrono::milliseconds(50)));  // no session yet
  session.start();
  std::thread([] {
    for (int i = 0; i < 100; ++i) {
      RINGTRACE_ZONE("before");
    }
  }).join();
  for (int round = 1; round <= 3; ++round) {
    { RINGTRACE_INSTANT("now"); }
    ASSERT_TRUE(ringtrace::detail::run_drainer_pass());
    EXPECT_EQ(validator->events_seen, 200u + round);  // this thread's instants up to this one
  }
  session.stop();
}

TEST(Concurrency, ThousandsOfShortLivedThreadsLoseNothingAndReuseBuffers) {
  const int total = std::max(200, static_cast<int>(2000 * test_scale()));
  const int wave = 20;
  ringtrace::Config config;
  config.overflow = ringtrace::OverflowPolicy::block;
  config.buffer_records = 1024;
  config.drain_interval = std::chrono::milliseconds(1);
  ringtrace::Session session(config);
  auto validator = std::make_shared<ValidatingExporter>();
  session.add_exporter(validator);
  const std::uint64_t created_before = ringtrace::detail::Registry::instance().buffers_created();
  session.start();
  for (int started = 0; started < total; started += wave) {
    std::vector<std::thread> workers;
    for (int k = 0; k < wave; ++k) {
      workers.emplace_back([n = started + k] {
        // Longer than std::string's inline buffer: the name lives on the heap.
        ringtrace::set_thread_name("short-lived-thread-" + std::to_string(n));
        for (int i = 0; i < 10; ++i) {
          RINGTRACE_ZONE("work");
          RINGTRACE_INSTANT("tick");
        }
      });
    }
    for (auto& w : workers) w.join();
    ASSERT_TRUE(
        ringtrace::detail::run_drainer_pass());  // the drainer empties the exited threads' rings and recycles them
  }
  session.stop();
  const std::uint64_t created = ringtrace::detail::Registry::instance().buffers_created() - created_before;

  ASSERT_EQ(validator->threads.size(), static_cast<std::size_t>(total));
  for (const auto& [id, t] : validator->threads) {
    EXPECT_EQ(t.begins, 10u);
    EXPECT_EQ(t.ends, 10u);
    EXPECT_EQ(t.instants, 10u);
    EXPECT_EQ(t.name.rfind("short-lived-thread-", 0), 0u) << t.name;
  }
  EXPECT_EQ(validator->nesting_errors, 0u);
  EXPECT_EQ(session.stats().recorded, static_cast<std::uint64_t>(total) * 30);
  // Memory follows the threads alive at once, not the threads ever started.
  EXPECT_LT(created, static_cast<std::uint64_t>(total) / 4) << "buffers were not recycled";
}

TEST(Concurrency, ThreadsStartingAndStoppingDuringSessionChanges) {
  // Sessions start and stop while threads record: nothing crashes, each run's stream
  // is well formed, and zones cut by stop() are closed at the stop time.
  std::atomic<bool> done{false};
  std::vector<std::thread> workers;
  for (int t = 0; t < 4; ++t) {
    workers.emplace_back([&done] {
      while (!done.load(std::memory_order_relaxed)) {
        RINGTRACE_ZONE("busy");
        RINGTRACE_COUNTER("value", 1.5);
      }
    });
  }
  const int runs = std::max(3, static_cast<int>(20 * test_scale()));
  for (int run = 0; run < runs; ++run) {
    ringtrace::Config config;
    config.buffer_records = 512;
    ringtrace::Session session(config);
    auto validator = std::make_shared<ValidatingExporter>();
    session.add_exporter(validator);
    session.start();
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    session.stop();
    EXPECT_EQ(validator->nesting_errors, 0u) << "run " << run;
    EXPECT_EQ(validator->order_errors, 0u) << "run " << run;
    EXPECT_EQ(validator->unclosed_threads, 0u) << "run " << run;
    EXPECT_EQ(validator->finishes, 1);
  }
  done = true;
  for (auto& w : workers) w.join();
}

}  // namespace
