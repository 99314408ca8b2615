// Threads that come and go, for long: every event arrives or is counted, and the
// runtime's memory does not keep what exited threads used.
#include <gtest/gtest.h>
#include <malloc.h>

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "ringtrace/exporters/binary_trace.hpp"
#include "ringtrace/exporters/chrome_trace.hpp"
#include "ringtrace/exporters/folded_stacks.hpp"
#include "ringtrace/exporters/ops_summary.hpp"
#include "ringtrace/recorded_trace.hpp"
#include "ringtrace/ringtrace.hpp"
#include "support/validating_exporter.hpp"
#include "thread_registry.hpp"  // buffers_created(): the pool of exited threads' buffers

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
// RINGTRACE_SOAK_SECONDS (default 15 s per policy: half a minute in all, times
// RINGTRACE_TEST_SCALE in the sanitizer builds): no hang, every event recorded or
// counted, zones whole.
TEST(Threads, SoakBothPolicies) {
  const char* env = std::getenv("RINGTRACE_SOAK_SECONDS");
  const double seconds = (env != nullptr ? std::atof(env) : 15.0) * test_scale();
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

// Counts events and keeps nothing per thread: what remains of the heap is the runtime's.
class CountingExporter final : public ringtrace::Exporter {
 public:
  void on_events(std::span<const ringtrace::Event> events, const ringtrace::TraceContext&) override {
    events_ += events.size();
  }
  std::uint64_t events() const { return events_; }

 private:
  std::uint64_t events_ = 0;
};

// Waits (at most 20 s) until the session has folded `count` exited threads.
bool wait_folded(const ringtrace::Session& session, std::uint64_t count) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (session.stats().folded_threads < count) {
    if (std::chrono::steady_clock::now() > until) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

// 50,000 short threads in one session: past the first Config::max_thread_rows threads,
// each exited thread's row is folded into "(exited threads)" with exact counts, and the
// heap stays flat however many threads came and went (it used to keep about 150 bytes
// for every thread until stop()).
TEST(Threads, ShortThreadsKeepMemoryFlatWithinASession) {
  const std::uint64_t n = std::max<std::uint64_t>(12000, static_cast<std::uint64_t>(50000 * test_scale()));
  const std::uint64_t checkpoint = 8000;
  auto counter = std::make_shared<CountingExporter>();
  ringtrace::Session session;
  const std::uint64_t cap = ringtrace::Config{}.max_thread_rows;
  ASSERT_LT(cap, checkpoint);
  session.add_exporter(counter);
  session.start();
  std::int64_t heap_at_checkpoint = 0;
  const auto& registry = ringtrace::detail::Registry::instance();
  std::uint64_t created_at_checkpoint = 0;
  for (std::uint64_t i = 0; i < n; ++i) {
    std::thread([] {
      RINGTRACE_ZONE("short");
      RINGTRACE_INSTANT("tick");
    }).join();
    if (i + 1 == checkpoint) {
      ASSERT_TRUE(wait_folded(session, checkpoint - cap));
      heap_at_checkpoint = heap_in_use();
      created_at_checkpoint = registry.buffers_created();
    }
  }
  ASSERT_TRUE(wait_folded(session, n - cap));
  const std::int64_t heap_at_end = heap_in_use();
  const std::uint64_t created = registry.buffers_created() - created_at_checkpoint;
  session.stop();
  const ringtrace::SessionStats stats = session.stats();
  EXPECT_EQ(stats.recorded, 3 * n);
  EXPECT_EQ(counter->events(), 3 * n);
  EXPECT_EQ(stats.dropped, 0u);
  EXPECT_EQ(stats.folded_threads, n - cap);
  ASSERT_EQ(stats.threads.size(), cap + 1);
  const ringtrace::ThreadStats& folded = stats.threads.back();
  EXPECT_EQ(folded.thread, ringtrace::kFoldedThread);
  EXPECT_EQ(folded.name, "(exited threads)");
  EXPECT_EQ(folded.recorded, 3 * (n - cap));
  std::uint64_t sum = 0;
  for (const auto& row : stats.threads) sum += row.recorded;
  EXPECT_EQ(sum, stats.recorded);
  // 42,000 threads more: a few kB at most (the hash table's buckets), and the buffers the
  // pool of exited threads' rings gained. The pool holds the rings the drainer has not
  // emptied yet: it grows with the drainer's lag behind the threads (a loaded machine),
  // not with their number, so a few dozen buffers at most.
  const std::int64_t growth = heap_at_end - heap_at_checkpoint;
  EXPECT_LT(created, 256u) << created << " buffers created for " << (n - checkpoint) << " threads";
  const auto pool = static_cast<std::int64_t>(created * sizeof(ringtrace::detail::ThreadBuffer));
  EXPECT_LT(growth - pool, 64 << 10) << "heap grew " << growth << " bytes over " << (n - checkpoint) << " threads, "
                                     << created << " buffers created";
}

// Threads whose rows were folded keep their names in every exporter that names
// threads, also those that name them at on_finish, and in the binary file.
TEST(Threads, FoldedThreadsKeepTheirNamesInEveryExporter) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("ringtrace_folded_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::ostringstream chrome, folded;  // outlive the session, which writes them until stopped
  ringtrace::Config config;
  config.max_thread_rows = 2;
  ringtrace::Session session(config);
  auto memory = std::make_shared<ringtrace::MemoryExporter>();
  auto ops = ringtrace::ops_summary_exporter(dir / "ops.txt");
  ringtrace::FoldedStacksOptions folded_options;
  folded_options.thread_root = true;
  folded_options.value = ringtrace::FoldedValue::calls;
  session.add_exporter(memory);
  session.add_exporter(ops);
  session.add_exporter(ringtrace::chrome_trace_exporter(chrome));
  session.add_exporter(ringtrace::folded_stacks_exporter(folded, folded_options));
  session.add_exporter(ringtrace::binary_trace_exporter(dir / "run.rtrace"));
  session.start();
  { RINGTRACE_ZONE("main"); }  // the main thread takes id 0
  const int workers = 12;
  for (int w = 0; w < workers; ++w) {
    std::thread([w] {
      ringtrace::set_thread_name("worker-" + std::to_string(w));
      RINGTRACE_REGION("graph", w);
      RINGTRACE_ZONE("op");
    }).join();
    // Threads past the first two are folded before the next one starts (and long
    // before on_finish names them).
    if (w >= 1) {
      ASSERT_TRUE(wait_folded(session, static_cast<std::uint64_t>(w)));
    }
  }
  session.stop();
  const ringtrace::SessionStats stats = session.stats();
  EXPECT_EQ(stats.folded_threads, static_cast<std::uint64_t>(workers - 1));
  ASSERT_EQ(stats.threads.size(), 3u);
  EXPECT_EQ(stats.threads[0].recorded, 2u);  // main
  EXPECT_EQ(stats.threads[1].name, "worker-0");
  EXPECT_EQ(stats.threads[2].recorded, 4u * (workers - 1));
  EXPECT_TRUE(stats.exporter_errors.empty());

  const ringtrace::RecordedTrace trace = memory->trace();
  std::set<std::string> named;
  for (const ringtrace::Event& e : trace.events) named.insert(trace.threads.at(e.thread).name);
  const auto& summary = dynamic_cast<ringtrace::OpsSummaryExporter&>(*ops).summary();
  std::set<std::string> ops_named;
  for (const auto& t : summary.threads) ops_named.insert(t.name);
  ringtrace::MemoryExporter replayed;
  const ringtrace::ReplayResult replay = ringtrace::replay_file(dir / "run.rtrace", replayed);
  EXPECT_TRUE(replay.complete) << replay.problem;
  const ringtrace::RecordedTrace back = replayed.trace();
  std::set<std::string> file_named;
  for (const ringtrace::Event& e : back.events) file_named.insert(back.threads.at(e.thread).name);
  for (int w = 0; w < workers; ++w) {
    const std::string name = "worker-" + std::to_string(w);
    EXPECT_TRUE(named.count(name)) << name << " in the memory trace";
    EXPECT_TRUE(ops_named.count(name)) << name << " in the ops summary";
    EXPECT_TRUE(file_named.count(name)) << name << " in the binary file";
    EXPECT_NE(chrome.str().find("\"" + name + "\""), std::string::npos) << name << " in the Chrome trace";
    EXPECT_NE(folded.str().find(name + ";graph;op 1\n"), std::string::npos) << name << " in the folded stacks";
  }
  EXPECT_EQ(folded.str().find("exited thread"), std::string::npos);
  EXPECT_EQ(chrome.str().find("\"(exited thread)\""), std::string::npos);
  fs::remove_all(dir);
}

}  // namespace
