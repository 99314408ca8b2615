// The runtime at its edges: zones nested deeper than a ring holds in block mode,
// exporters that throw or call back into the session, the stop boundary, and memory
// that cannot be had.
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <memory>
#include <new>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "ringtrace/recorded_trace.hpp"
#include "ringtrace/ringtrace.hpp"
#include "support/validating_exporter.hpp"

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define RINGTRACE_TEST_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define RINGTRACE_TEST_SANITIZED 1
#endif
#endif
#ifndef RINGTRACE_TEST_SANITIZED
#define RINGTRACE_TEST_SANITIZED 0
#endif

namespace {

using ringtrace::Event;
using ringtrace::EventKind;
using ringtrace::testing::test_scale;

void nest(int depth) {
  RINGTRACE_ZONE("nest");
  if (depth > 1) nest(depth - 1);
}

// Depth 63 with 64-record rings used to wait forever: the open zones' reserved ends
// filled the ring, and no drain could make room.
// Zones nested far deeper than the ring holds (200 zones, 4800 bytes, in a ring of 4096),
// block policy: the begins go to the drainer as they are written, and the ends find the
// room kept for them, so nothing waits forever and nothing is lost.
TEST(BlockPolicy, NestingDeeperThanTheRingNeitherHangsNorLoses) {
  ringtrace::Config config;
  config.overflow = ringtrace::OverflowPolicy::block;
  config.buffer_records = 64;
  auto validator = std::make_shared<ringtrace::testing::ValidatingExporter>();
  ringtrace::Session session(config);
  session.add_exporter(validator);
  session.start();
  constexpr int kDepth = 200;
  constexpr int kRounds = 50;
  for (int i = 0; i < kRounds; ++i) nest(kDepth);
  session.stop();
  const ringtrace::SessionStats stats = session.stats();
  EXPECT_EQ(stats.recorded, std::uint64_t{2} * kDepth * kRounds);
  EXPECT_EQ(stats.dropped, 0u);
  EXPECT_EQ(stats.unbalanced_ends, 0u);
  EXPECT_EQ(stats.closed_at_stop, 0u);
  EXPECT_EQ(validator->nesting_errors, 0u);
  EXPECT_EQ(validator->depth_errors, 0u);
}

// Calls `what` from the chosen callback.
class CallbackExporter final : public ringtrace::Exporter {
 public:
  enum class At { start, events, flush, finish };
  CallbackExporter(At at, std::function<void()> what) : at_(at), what_(std::move(what)) {}
  void on_start(const ringtrace::TraceContext&) override { maybe(At::start); }
  void on_events(std::span<const Event>, const ringtrace::TraceContext&) override { maybe(At::events); }
  void on_flush(const ringtrace::TraceContext&) override { maybe(At::flush); }
  void on_finish(const ringtrace::TraceContext&, const ringtrace::SessionStats&) override { maybe(At::finish); }
  std::atomic<int> calls{0};

 private:
  void maybe(At at) {
    if (at != at_) return;
    ++calls;
    what_();
  }
  At at_;
  std::function<void()> what_;
};

const char* name_of(CallbackExporter::At at) {
  switch (at) {
    case CallbackExporter::At::start:
      return "on_start";
    case CallbackExporter::At::events:
      return "on_events";
    case CallbackExporter::At::flush:
      return "on_flush";
    case CallbackExporter::At::finish:
      return "on_finish";
  }
  return "?";
}

class HostileExporter : public ::testing::TestWithParam<CallbackExporter::At> {};

// Whatever an exporter throws, a std::exception or not, it is disabled and reported;
// the other exporters get the whole stream.
TEST_P(HostileExporter, ThrowingAnythingDisablesItAndIsReported) {
  const CallbackExporter::At at = GetParam();
  for (int kind = 0; kind < 2; ++kind) {
    ringtrace::Config config;
    config.drain_interval = std::chrono::microseconds(200);
    ringtrace::Session session(config);
    auto thrower = std::make_shared<CallbackExporter>(at, [kind] {
      if (kind == 0) throw 42;
      throw std::runtime_error("disk on fire");
    });
    auto memory = std::make_shared<ringtrace::MemoryExporter>();
    session.add_exporter(thrower);
    session.add_exporter(memory);
    session.start();
    for (int i = 0; i < 1000; ++i) {
      RINGTRACE_ZONE("work");
      if (i % 100 == 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));  // passes that flush
    }
    session.stop();
    const ringtrace::SessionStats stats = session.stats();
    ASSERT_EQ(stats.exporter_errors.size(), 1u) << name_of(at);
    EXPECT_NE(stats.exporter_errors[0].find(name_of(at)), std::string::npos) << stats.exporter_errors[0];
    EXPECT_NE(stats.exporter_errors[0].find(kind == 0 ? "not a std::exception" : "disk on fire"), std::string::npos)
        << stats.exporter_errors[0];
    EXPECT_EQ(thrower->calls.load(), 1) << "a disabled exporter is not called again";
    EXPECT_EQ(memory->trace().events.size(), 2000u);
  }
}

// An exporter may ask the session how it is doing from any callback: no deadlock with
// stop(), which used to hold the lock that stats() and running() take.
TEST_P(HostileExporter, CallingBackIntoTheSessionDoesNotDeadlock) {
  const CallbackExporter::At at = GetParam();
  ringtrace::Config config;
  config.drain_interval = std::chrono::microseconds(200);
  ringtrace::Session session(config);
  std::atomic<int> running_answers{0};
  auto caller = std::make_shared<CallbackExporter>(at, [&] {
    (void)session.stats();
    if (session.running()) ++running_answers;
  });
  session.add_exporter(caller);
  session.start();
  for (int i = 0; i < 1000; ++i) {
    RINGTRACE_ZONE("work");
    if (i % 100 == 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  session.stop();
  EXPECT_GE(caller->calls.load(), 1);
  EXPECT_TRUE(session.stats().exporter_errors.empty());
  // running() is false from the moment stop() begins, so on_finish sees it false.
  if (at == CallbackExporter::At::finish) {
    EXPECT_EQ(running_answers.load(), 0);
  }
}

INSTANTIATE_TEST_SUITE_P(Callbacks, HostileExporter,
                         ::testing::Values(CallbackExporter::At::start, CallbackExporter::At::events,
                                           CallbackExporter::At::flush, CallbackExporter::At::finish),
                         [](const auto& info) { return std::string(name_of(info.param)).substr(3); });

TEST(HostileExporterStop, StopFromACallbackIsRefusedNotADeadlock) {
  ringtrace::Session session;
  auto stopper = std::make_shared<CallbackExporter>(CallbackExporter::At::events, [&] { session.stop(); });
  session.add_exporter(stopper);
  session.start();
  { RINGTRACE_ZONE("work"); }
  session.stop();
  const ringtrace::SessionStats stats = session.stats();
  ASSERT_EQ(stats.exporter_errors.size(), 1u);
  EXPECT_NE(stats.exporter_errors[0].find("stop() called from an exporter"), std::string::npos);
}

// Nothing stamped after stats().clock.stop_ns is delivered, over many start/stop cycles
// with threads recording through every boundary.
TEST(StopBoundary, NothingAfterTheStopTimeIsDelivered) {
  const int cycles = std::max(20, static_cast<int>(500 * test_scale()));
  std::atomic<bool> done{false};
  std::vector<std::thread> load;
  for (int t = 0; t < 2; ++t) {
    load.emplace_back([&] {
      while (!done.load(std::memory_order_relaxed)) {
        RINGTRACE_ZONE("load");
        RINGTRACE_INSTANT("tick");
      }
    });
  }
  ringtrace::Config config;
  config.drain_interval = std::chrono::microseconds(500);
  ringtrace::Session session(config);
  auto memory = std::make_shared<ringtrace::MemoryExporter>();
  session.add_exporter(memory);
  std::uint64_t late = 0, early = 0, events = 0;
  for (int i = 0; i < cycles; ++i) {
    session.start();
    std::this_thread::sleep_for(std::chrono::microseconds(200));
    session.stop();
    const ringtrace::RecordedTrace trace = memory->trace();
    const ringtrace::ClockInfo clock = session.stats().clock;
    for (const Event& e : trace.events) {
      late += e.time_ns > clock.stop_ns;
      early += e.time_ns + 1'000'000 < clock.start_ns;  // before start, beyond a clock re-fit's slack
    }
    events += trace.events.size();
  }
  done = true;
  for (auto& t : load) t.join();
  EXPECT_GT(events, 0u);
  EXPECT_EQ(late, 0u) << "events stamped after stop_ns";
  EXPECT_EQ(early, 0u);
}

// Runs `body` in a child process with the address space limited to `limit_extra` bytes
// above what the process maps now; the child reports failures on stderr and its exit
// code. Sanitizers reserve terabytes of shadow memory, so RLIMIT_AS cannot be used there:
// these tests are not built under one (neither run nor skipped).
#if !RINGTRACE_TEST_SANITIZED
void in_limited_child(std::size_t limit_extra, const std::function<int()>& body) {
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    alarm(60);  // a hang is a failure, not a stuck CI
    long pages = 0;
    if (FILE* f = std::fopen("/proc/self/statm", "r")) {
      if (std::fscanf(f, "%ld", &pages) != 1) pages = 0;
      std::fclose(f);
    }
    const rlim_t now = static_cast<rlim_t>(pages) * static_cast<rlim_t>(sysconf(_SC_PAGESIZE));
    rlimit limit{now + limit_extra, RLIM_INFINITY};
    if (setrlimit(RLIMIT_AS, &limit) != 0) _exit(90);
    _exit(body());
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status)) << "child died by signal " << (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
  EXPECT_EQ(WEXITSTATUS(status), 0) << "see the child's stderr above";
}

// A thread whose ring cannot be allocated loses its events, and they are counted.
TEST(AllocationFailure, ARingThatCannotBeAllocatedCountsItsEventsAsDropped) {
  in_limited_child(std::size_t{256} << 20, [] {
    ringtrace::Config config;
    config.buffer_records = std::size_t{1} << 26;  // 1 GiB ring: over the limit
    ringtrace::Session session(config);
    auto memory = std::make_shared<ringtrace::MemoryExporter>();
    session.add_exporter(memory);
    session.start();
    std::thread([] {
      for (int i = 0; i < 3000; ++i) {
        RINGTRACE_ZONE("lost");
      }
    }).join();
    session.stop();
    const ringtrace::SessionStats stats = session.stats();
    if (stats.dropped != 6000 || stats.dropped_without_ring != 6000 || stats.recorded != 0) {
      std::fprintf(stderr, "dropped %llu without ring %llu recorded %llu\n", (unsigned long long)stats.dropped,
                   (unsigned long long)stats.dropped_without_ring, (unsigned long long)stats.recorded);
      return 1;
    }
    return 0;
  });
}

// A start() that fails (its batch cannot be allocated) leaves nothing behind: the next
// session delivers each event of a thread that was recording all along exactly once.
TEST(AllocationFailure, AFailedStartLeavesNoRegistrationBehind) {
  in_limited_child(std::size_t{256} << 20, [] {
    std::atomic<bool> done{false};
    std::thread worker([&] {
      while (!done.load(std::memory_order_relaxed)) {
        RINGTRACE_ZONE("always");
      }
    });
    ringtrace::Config huge;
    huge.batch_events = std::size_t{1} << 24;  // a 512 MiB batch: over the limit
    ringtrace::Session failing(huge);
    bool threw = false;
    try {
      failing.start();
    } catch (const std::bad_alloc&) {
      threw = true;
    }
    if (!threw || failing.running()) {
      std::fprintf(stderr, "the oversized start did not fail cleanly\n");
      done = true;
      worker.join();
      return 1;
    }
    ringtrace::Session session;
    auto memory = std::make_shared<ringtrace::MemoryExporter>();
    session.add_exporter(memory);
    session.start();
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    session.stop();
    done = true;
    worker.join();
    std::set<std::uint64_t> begins;
    std::uint64_t duplicates = 0, count = 0;
    for (const Event& e : memory->trace().events) {
      if (e.kind != EventKind::zone_begin) continue;
      ++count;
      duplicates += !begins.insert(e.time_ns).second;
    }
    if (count == 0 || duplicates != 0) {
      std::fprintf(stderr, "begins %llu duplicates %llu\n", (unsigned long long)count, (unsigned long long)duplicates);
      return 1;
    }
    return 0;
  });
}
#endif  // !RINGTRACE_TEST_SANITIZED

}  // namespace
