// The capture API end to end, through a real session and the in-memory exporter.
#include <gtest/gtest.h>

#include <dlfcn.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <span>
#include <stdexcept>
#include <thread>

#include "ringtrace/recorded_trace.hpp"
#include "ringtrace/ringtrace.hpp"

namespace {

using ringtrace::Event;
using ringtrace::EventKind;
using ringtrace::RecordedTrace;

std::string site_name(const RecordedTrace& trace, const Event& e) { return trace.sites.at(e.site).name; }

RecordedTrace capture(const std::function<void()>& body, ringtrace::Config config = {}) {
  ringtrace::Session session(config);
  auto memory = std::make_shared<ringtrace::MemoryExporter>();
  session.add_exporter(memory);
  session.start();
  body();
  session.stop();
  return memory->trace();
}

void named_function() { RINGTRACE_FUNCTION(); }

TEST(Capture, EveryMacroReachesTheExporterWithItsCallSite) {
  const RecordedTrace trace = capture([] {
    ringtrace::set_thread_name("main-thread");
    {
      RINGTRACE_ZONE("parse");
      RINGTRACE_INSTANT("checkpoint");
      RINGTRACE_COUNTER("queue_depth", 17);
      RINGTRACE_COUNTER("load", 0.25);
      named_function();
    }
    { RINGTRACE_REGION("compiled_graph", 3); }
  });
  ASSERT_EQ(trace.events.size(), 9u);
  const auto& e = trace.events;
  EXPECT_EQ(e[0].kind, EventKind::zone_begin);
  EXPECT_EQ(site_name(trace, e[0]), "parse");
  EXPECT_EQ(e[0].depth, 0u);
  EXPECT_EQ(trace.sites[e[0].site].kind, ringtrace::SiteKind::zone);
  EXPECT_NE(std::string(trace.sites[e[0].site].file).find("test_capture.cpp"), std::string::npos);
  EXPECT_GT(trace.sites[e[0].site].line, 0u);
  EXPECT_STREQ(trace.sites[e[0].site].function.c_str(), "operator()");  // the lambda in this test
  EXPECT_EQ(e[1].kind, EventKind::instant);
  EXPECT_EQ(site_name(trace, e[1]), "checkpoint");
  EXPECT_EQ(e[1].depth, 1u);
  EXPECT_EQ(e[2].kind, EventKind::counter);
  EXPECT_EQ(e[2].value.i, 17);
  EXPECT_EQ(e[2].flags & ringtrace::EventFlags::counter_double, 0);
  EXPECT_EQ(e[3].kind, EventKind::counter);
  EXPECT_NE(e[3].flags & ringtrace::EventFlags::counter_double, 0);
  EXPECT_DOUBLE_EQ(e[3].value.d, 0.25);
  EXPECT_EQ(site_name(trace, e[4]), "named_function");
  EXPECT_EQ(e[4].depth, 1u);
  EXPECT_EQ(e[5].kind, EventKind::zone_end);
  EXPECT_EQ(site_name(trace, e[5]), "named_function");
  EXPECT_EQ(e[6].kind, EventKind::zone_end);
  EXPECT_EQ(site_name(trace, e[6]), "parse");
  EXPECT_EQ(e[7].kind, EventKind::zone_begin);
  EXPECT_EQ(site_name(trace, e[7]), "compiled_graph");
  EXPECT_NE(e[7].flags & ringtrace::EventFlags::region, 0);
  EXPECT_EQ(e[7].value.i, 3);
  EXPECT_EQ(e[8].kind, EventKind::zone_end);
  EXPECT_EQ(e[8].value.i, 3);
  for (std::size_t i = 1; i < e.size(); ++i) EXPECT_LE(e[i - 1].time_ns, e[i].time_ns);
}

TEST(Capture, ThreadNamesAndIdsResolve) {
  std::uint64_t worker_tid = 0;
  const RecordedTrace trace = capture([&] {
    ringtrace::set_thread_name("main-thread");
    RINGTRACE_INSTANT("from main");
    std::thread worker([&] {
      ringtrace::set_thread_name("worker \"1\"");
      worker_tid = static_cast<std::uint64_t>(gettid());
      RINGTRACE_INSTANT("from worker");
    });
    worker.join();
  });
  ASSERT_EQ(trace.threads.size(), 2u);
  // ThreadIds follow the order in which the drainer first saw each thread.
  const std::size_t main_id = trace.threads[0].name == "main-thread" ? 0 : 1;
  const std::size_t worker_id = 1 - main_id;
  EXPECT_EQ(trace.threads[main_id].name, "main-thread");
  EXPECT_EQ(trace.threads[worker_id].name, "worker \"1\"");
  EXPECT_EQ(trace.threads[worker_id].os_tid, worker_tid);
  EXPECT_EQ(trace.threads[main_id].os_tid, static_cast<std::uint64_t>(gettid()));
  for (std::size_t id = 0; id < 2; ++id) {
    EXPECT_EQ(trace.threads[id].id, id);
    EXPECT_EQ(trace.threads[id].sort_index, id);
  }
  ASSERT_EQ(trace.stats.threads.size(), 2u);
  EXPECT_EQ(trace.stats.threads[worker_id].name, "worker \"1\"");
  EXPECT_EQ(trace.stats.threads[worker_id].recorded, 1u);
  for (const auto& e : trace.events) {
    EXPECT_EQ(site_name(trace, e), e.thread == main_id ? "from main" : "from worker");
  }
}

TEST(Capture, InternedNamesAreStableAndRecorded) {
  const ringtrace::SiteInfo* a = ringtrace::intern("dynamic op \xff");
  const ringtrace::SiteInfo* b = ringtrace::intern(std::string("dynamic op ") + "\xff");
  EXPECT_EQ(a, b);
  EXPECT_NE(a, ringtrace::intern("dynamic op \xff", ringtrace::SiteKind::instant));
  EXPECT_STREQ(a->file, "");
  EXPECT_EQ(a->line, 0u);
  const RecordedTrace trace = capture([a] {
    RINGTRACE_ZONE_SITE(a);
    RINGTRACE_INSTANT_SITE(ringtrace::intern("dynamic instant", ringtrace::SiteKind::instant));
    RINGTRACE_COUNTER_SITE(ringtrace::intern("dynamic counter", ringtrace::SiteKind::counter), 5);
  });
  ASSERT_EQ(trace.events.size(), 4u);
  EXPECT_EQ(site_name(trace, trace.events[0]), "dynamic op \xff");
  EXPECT_EQ(site_name(trace, trace.events[1]), "dynamic instant");
  EXPECT_EQ(trace.events[2].value.i, 5);
}

TEST(Capture, NoSessionRecordsNothing) {
  for (int i = 0; i < 1000; ++i) {
    RINGTRACE_ZONE("before any session");
    RINGTRACE_INSTANT("before");
  }
  const RecordedTrace trace = capture([] {});
  EXPECT_TRUE(trace.events.empty());
  EXPECT_EQ(trace.stats.recorded, 0u);
}

TEST(Capture, StartStopAndStartAgain) {
  ringtrace::Session session;
  auto memory = std::make_shared<ringtrace::MemoryExporter>();
  session.add_exporter(memory);
  session.start();
  for (int i = 0; i < 10; ++i) {
    RINGTRACE_ZONE("first run");
  }
  session.stop();
  EXPECT_EQ(memory->trace().events.size(), 20u);
  EXPECT_FALSE(session.running());
  session.start();
  for (int i = 0; i < 5; ++i) {
    RINGTRACE_ZONE("second run");
  }
  session.stop();
  const RecordedTrace second = memory->trace();
  ASSERT_EQ(second.events.size(), 10u);
  EXPECT_EQ(site_name(second, second.events[0]), "second run");
  EXPECT_EQ(second.stats.recorded, 10u);

  ringtrace::Session other;  // a new session after the first has stopped
  auto other_memory = std::make_shared<ringtrace::MemoryExporter>();
  other.add_exporter(other_memory);
  other.start();
  RINGTRACE_INSTANT("third");
  other.stop();
  EXPECT_EQ(other_memory->trace().events.size(), 1u);
}

TEST(Capture, EventsAfterStopAreIgnoredAndOpenZonesClosedAtStop) {
  ringtrace::Session session;
  auto memory = std::make_shared<ringtrace::MemoryExporter>();
  session.add_exporter(memory);
  session.start();
  {
    RINGTRACE_ZONE("spans stop");
    RINGTRACE_INSTANT("inside");
    session.stop();
    RINGTRACE_INSTANT("after stop");
    RINGTRACE_ZONE("after stop zone");
    RINGTRACE_COUNTER("after stop counter", 1);
  }                // the end of "spans stop" comes after stop(): ignored
  session.stop();  // a second stop does nothing
  const RecordedTrace trace = memory->trace();
  ASSERT_EQ(trace.events.size(), 3u);
  EXPECT_EQ(trace.events[2].kind, EventKind::zone_end);
  EXPECT_NE(trace.events[2].flags & ringtrace::EventFlags::closed_at_stop, 0);
  EXPECT_EQ(trace.stats.closed_at_stop, 1u);
  EXPECT_GE(trace.events[2].time_ns, trace.events[1].time_ns);
  EXPECT_LE(trace.events[2].time_ns, trace.clock.stop_ns + 1000);

  // The stale end left in this thread's ring must not leak into the next run.
  session.start();
  RINGTRACE_INSTANT("next run");
  session.stop();
  const RecordedTrace next = memory->trace();
  ASSERT_EQ(next.events.size(), 1u);
  EXPECT_EQ(next.stats.unbalanced_ends, 0u);
}

TEST(Capture, OneSessionAtATime) {
  ringtrace::Session a;
  ringtrace::Session b;
  a.start();
  EXPECT_THROW(b.start(), std::logic_error);
  EXPECT_THROW(a.start(), std::logic_error);
  EXPECT_THROW(a.add_exporter(std::make_shared<ringtrace::MemoryExporter>()), std::logic_error);
  a.stop();
  EXPECT_THROW(b.add_exporter(nullptr), std::invalid_argument);
  b.start();
  b.stop();
}

class ThrowingExporter final : public ringtrace::Exporter {
 public:
  void on_events(std::span<const ringtrace::Event>, const ringtrace::TraceContext&) override {
    throw std::runtime_error("disk full");
  }
};

TEST(Capture, AThrowingExporterIsReportedAndTheOthersContinue) {
  ringtrace::Session session;
  auto memory = std::make_shared<ringtrace::MemoryExporter>();
  session.add_exporter(std::make_shared<ThrowingExporter>());
  session.add_exporter(memory);
  session.start();
  for (int i = 0; i < 100; ++i) RINGTRACE_INSTANT("x");
  session.stop();
  EXPECT_EQ(memory->trace().events.size(), 100u);
  const auto stats = session.stats();
  ASSERT_EQ(stats.exporter_errors.size(), 1u);
  EXPECT_NE(stats.exporter_errors[0].find("disk full"), std::string::npos);
}

// Holds the drainer inside its first delivery until released (or 20 s pass), so that a
// test knows nothing reads the rings meanwhile; then records into a MemoryExporter.
class HoldingExporter : public ringtrace::Exporter {
 public:
  explicit HoldingExporter(std::shared_ptr<ringtrace::MemoryExporter> memory) : memory_(std::move(memory)) {}
  void on_start(const ringtrace::TraceContext& context) override { memory_->on_start(context); }
  void on_events(std::span<const Event> events, const ringtrace::TraceContext& context) override {
    if (!held_.exchange(true)) {
      const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(20);
      while (!released_.load() && std::chrono::steady_clock::now() < until) std::this_thread::yield();
    }
    memory_->on_events(events, context);
  }
  void on_flush(const ringtrace::TraceContext& context) override { memory_->on_flush(context); }
  void on_finish(const ringtrace::TraceContext& context, const ringtrace::SessionStats& stats) override {
    memory_->on_finish(context, stats);
  }
  bool held() const { return held_.load(); }
  void release() { released_.store(true); }

 private:
  std::shared_ptr<ringtrace::MemoryExporter> memory_;
  std::atomic<bool> held_{false};
  std::atomic<bool> released_{false};
};

// 200 nested zones while the drainer reads nothing (it is held in the exporter until the
// recursion has reached its bottom): their begins cannot all fit a 64-record ring with
// their ends, so some are dropped, and each zone is recorded whole or dropped whole.
TEST(Capture, DeepRecursionBeyondTheRingDropsWholeZones) {
  ringtrace::Config config;
  config.buffer_records = 64;
  config.overflow = ringtrace::OverflowPolicy::drop;
  ringtrace::Session session(config);
  auto memory = std::make_shared<ringtrace::MemoryExporter>();
  auto holding = std::make_shared<HoldingExporter>(memory);
  session.add_exporter(holding);
  session.start();
  RINGTRACE_INSTANT("before");  // the drainer's first delivery, where it is held
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (!holding->held() && std::chrono::steady_clock::now() < until) std::this_thread::yield();
  ASSERT_TRUE(holding->held()) << "the drainer never delivered the first event";
  std::function<void(int)> recurse = [&](int depth) {
    RINGTRACE_ZONE("recurse");
    if (depth > 0) {
      recurse(depth - 1);
    } else {
      holding->release();  // every begin tried: the ends may need the drainer
    }
  };
  recurse(200);
  session.stop();
  const RecordedTrace trace = memory->trace();
  std::uint64_t begins = 0, ends = 0, instants = 0;
  for (const Event& e : trace.events) {
    begins += e.kind == EventKind::zone_begin;
    ends += e.kind == EventKind::zone_end;
    instants += e.kind == EventKind::instant;
  }
  EXPECT_EQ(instants, 1u);
  EXPECT_EQ(begins, ends);
  EXPECT_EQ(begins * 2 + trace.stats.dropped, 402u);
  EXPECT_GT(trace.stats.dropped, 0u);
  EXPECT_EQ(trace.stats.closed_at_stop, 0u);
}

TEST(Capture, RuntimeAllocationsDoNotReplaceTheHostMalloc) {
  const RecordedTrace trace = capture([] { RINGTRACE_INSTANT("x"); });
#if defined(__SANITIZE_THREAD__)
  EXPECT_EQ(trace.stats.allocator, "system");  // ThreadSanitizer's allocator (runtime/live/allocator.cpp)
#else
  EXPECT_EQ(trace.stats.allocator, "mimalloc");
#endif
  // Whatever provides malloc and free (libc, or a sanitizer's interceptor), it is not
  // mimalloc: the runtime loads it with RTLD_LOCAL and calls only its mi_* functions.
  for (const char* symbol : {"malloc", "free", "calloc", "realloc"}) {
    Dl_info info{};
    ASSERT_NE(dladdr(dlsym(RTLD_DEFAULT, symbol), &info), 0) << symbol;
    ASSERT_NE(info.dli_fname, nullptr);
    EXPECT_EQ(std::string(info.dli_fname).find("mimalloc"), std::string::npos) << symbol << " from " << info.dli_fname;
  }
  void* block = std::malloc(64);
  Dl_info block_owner{};
  EXPECT_EQ(dladdr(block, &block_owner), 0) << "heap memory is not inside any loaded object";
  std::free(block);
}

}  // namespace
