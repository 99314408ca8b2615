// Allocations on the rings (Config::memory): what the program allocates and frees, counted
// by the test itself, against the events and the session's stats.
#include <gtest/gtest.h>

#include <malloc.h>
#include <stdlib.h>

#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include <pthread.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <new>
#include <thread>

#include "ringtrace/exporter.hpp"
#include "ringtrace/exporters/binary_trace.hpp"
#include "ringtrace/ringtrace.hpp"
#include "support/validating_exporter.hpp"  // test_scale

// The sized delete, declared whether or not the compiler turns sized deallocation on
// (clang 14 does not by default): the test calls it by hand.
void operator delete(void* p, std::size_t size) noexcept;

#if defined(__SANITIZE_ADDRESS__)
#define RINGTRACE_TEST_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define RINGTRACE_TEST_ASAN 1
#endif
#endif

namespace {

using ringtrace::Event;
using ringtrace::EventKind;

// Every alloc and free event, with the zone it was in (innermost open on its thread).
class MemoryEvents final : public ringtrace::Exporter {
 public:
  struct Seen {
    EventKind kind;
    std::uint64_t bytes;
    std::uint8_t flags;
    std::string zone;  // "" outside every zone
  };
  void on_events(std::span<const Event> events, const ringtrace::TraceContext& context) override {
    for (const Event& e : events) {
      auto& stack = open[e.thread];
      if (e.kind == EventKind::zone_begin) {
        stack.push_back(context.site(e.site).name);
      } else if (e.kind == EventKind::zone_end) {
        if (!stack.empty()) stack.pop_back();
      } else if (e.kind == EventKind::alloc || e.kind == EventKind::free) {
        seen.push_back(Seen{e.kind, e.value.u, e.flags, stack.empty() ? "" : stack.back()});
      }
    }
  }
  // Bytes allocated and freed in the zone `name` (its own events: not its children's).
  std::pair<std::uint64_t, std::uint64_t> in(const std::string& name) const {
    std::pair<std::uint64_t, std::uint64_t> r{0, 0};
    for (const Seen& s : seen) {
      if (s.zone != name) continue;
      (s.kind == EventKind::alloc ? r.first : r.second) += s.bytes;
    }
    return r;
  }
  std::vector<Seen> seen;
  std::map<ringtrace::ThreadId, std::vector<std::string>> open;
};

// The stats a replay ends with (on_finish).
struct Finish final : ringtrace::Exporter {
  ringtrace::SessionStats stats;
  void on_events(std::span<const Event>, const ringtrace::TraceContext&) override {}
  void on_finish(const ringtrace::TraceContext&, const ringtrace::SessionStats& s) override { stats = s; }
};

ringtrace::Config memory_config() {
  ringtrace::Config config;
  config.memory = true;
  config.overflow = ringtrace::OverflowPolicy::block;
  return config;
}

// Opaque to the optimizer: a new/delete pair it could otherwise elide.
void* volatile g_sink;

TEST(Memory, MallocAndFreeInAZoneAreItsBytes) {
  ringtrace::Session session(memory_config());
  auto events = std::make_shared<MemoryEvents>();
  session.add_exporter(events);
  session.start();
  {
    RINGTRACE_ZONE("blocks");
    for (std::size_t size : {16u, 100u, 4000u, 123457u}) {
      void* p = std::malloc(size);
      g_sink = p;
      std::free(p);
    }
  }
  session.stop();
  const auto [allocated, freed] = events->in("blocks");
  EXPECT_EQ(allocated, 16u + 100u + 4000u + 123457u);
  EXPECT_EQ(freed, allocated);
  const ringtrace::MemoryStats& m = session.stats().memory;
  EXPECT_TRUE(m.known);
  EXPECT_GE(m.allocations, 4u);
  EXPECT_GE(m.peak_live_bytes, 123457u);
}

TEST(Memory, ALeakOfKnownSizeIsFoundInItsZone) {
  ringtrace::Session session(memory_config());
  session.start();
  void* kept = nullptr;
  {
    RINGTRACE_ZONE("leaky");
    kept = std::malloc(77777);
    g_sink = kept;
  }
  session.stop();
  const ringtrace::MemoryStats& m = session.stats().memory;
  bool found = false;
  for (const auto& leak : m.leaks) {
    if (leak.stack == "leaky") {
      found = true;
      EXPECT_EQ(leak.bytes, 77777u);
      EXPECT_EQ(leak.blocks, 1u);
    }
  }
  EXPECT_TRUE(found);
  std::free(kept);
}

// A session that collects the memory events, run around `body`.
template <class Body>
std::shared_ptr<MemoryEvents> record(Body&& body, ringtrace::Config config = memory_config(),
                                     ringtrace::SessionStats* stats = nullptr) {
  ringtrace::Session session(config);
  auto events = std::make_shared<MemoryEvents>();
  session.add_exporter(events);
  session.start();
  body();
  session.stop();
  if (stats != nullptr) *stats = session.stats();
  return events;
}

TEST(Memory, VectorGrowthIsEveryCapacityAllocatedAndFreed) {
  std::vector<std::size_t> capacities;  // the test's own count: every buffer the vector had
  capacities.reserve(64);               // its own growth stays out of the zone
  const auto events = record([&] {
    RINGTRACE_ZONE("grow");
    std::vector<std::uint64_t> v;
    std::size_t last = 0;
    for (int i = 0; i < 1000; ++i) {
      v.push_back(static_cast<std::uint64_t>(i));
      if (v.capacity() != last) {
        last = v.capacity();
        capacities.push_back(last * sizeof(std::uint64_t));
      }
    }
    g_sink = v.data();
  });
  std::uint64_t expected = 0;
  for (std::size_t c : capacities) expected += c;
  const auto [allocated, freed] = events->in("grow");
  EXPECT_EQ(allocated, expected);
  EXPECT_EQ(freed, expected);  // the last buffer too, when v went out of scope
}

TEST(Memory, StringsNewArraysCallocAndAlignedFormsAreTheirSizes) {
  const auto events = record([] {
    RINGTRACE_ZONE("forms");
    {
      std::string s(1000, 'x');  // past the small-string buffer: one block of 1001 bytes
      g_sink = s.data();
    }
    int* a = new int[300];
    g_sink = a;
    delete[] a;
    void* c = std::calloc(7, 13);
    g_sink = c;
    std::free(c);
    void* al = std::aligned_alloc(256, 512);
    g_sink = al;
    std::free(al);
    void* pm = nullptr;
    ASSERT_EQ(::posix_memalign(&pm, 64, 1000), 0);
    std::free(pm);
    void* ma = ::memalign(128, 333);
    g_sink = ma;
    std::free(ma);
    struct alignas(512) Wide {
      char bytes[1024];
    };
    Wide* w = new Wide;
    g_sink = w;
    delete w;
    void* nt = ::operator new(50, std::nothrow);
    ::operator delete(nt, std::nothrow);
  });
  const auto [allocated, freed] = events->in("forms");
  const std::uint64_t expected = 1001 + 300 * sizeof(int) + 7 * 13 + 512 + 1000 + 333 + 1024 + 50;
  EXPECT_EQ(allocated, expected);
  EXPECT_EQ(freed, expected);
}

TEST(Memory, ReallocThatMovesAndThatGrowsInPlace) {
  std::vector<std::pair<std::size_t, bool>> steps;  // (size, moved)
  steps.reserve(8);
  const auto events = record([&] {
    RINGTRACE_ZONE("realloc");
    void* p = std::malloc(100);
    for (std::size_t size : {200u, 100000u, 50u, 300000u}) {
      void* q = std::realloc(p, size);
      ASSERT_NE(q, nullptr);
      steps.emplace_back(size, q != p);
      p = q;
    }
    std::free(p);
  });
  // Each realloc is the free of the old block and the allocation of the new one, moved or not.
  std::uint64_t allocated = 100, freed = 100;
  std::size_t last = 100;
  for (const auto& [size, moved] : steps) {
    allocated += size;
    freed += last;
    last = size;
  }
  freed += last - 100;  // the final free, less the first block counted above
  const auto [a, f] = events->in("realloc");
  EXPECT_EQ(a, allocated);
  EXPECT_EQ(f, allocated);
  EXPECT_EQ(f, freed);
}

TEST(Memory, ABlockFreedOnAnotherThreadHasItsSize) {
  std::vector<void*> blocks;
  blocks.reserve(100);
  const auto events = record([&] {
    {
      RINGTRACE_ZONE("producer");
      for (int i = 0; i < 100; ++i) blocks.push_back(std::malloc(1000 + static_cast<std::size_t>(i)));
    }
    std::thread consumer([&] {
      RINGTRACE_ZONE("consumer");
      for (void* b : blocks) std::free(b);
    });
    consumer.join();
  });
  const std::uint64_t expected = 100 * 1000 + 99 * 100 / 2;
  EXPECT_EQ(events->in("producer").first, expected);
  EXPECT_EQ(events->in("consumer").second, expected);
  for (const auto& s : events->seen) EXPECT_EQ(s.flags & ringtrace::EventFlags::size_unknown, 0) << s.zone;
}

TEST(Memory, FreesOfBlocksFromBeforeTheSessionAreCountedNotGuessed) {
  void* before = std::malloc(4321);
  g_sink = before;
  void* sized = ::operator new(40);
  g_sink = sized;
  ringtrace::SessionStats stats;
  const auto events = record(
      [&] {
        RINGTRACE_ZONE("late");
        std::free(before);
        ::operator delete(sized, 40);  // its caller knows the size
      },
      memory_config(), &stats);
  EXPECT_EQ(events->in("late").second, 40u);
  int unknown = 0;
  for (const auto& s : events->seen) {
    if (s.zone == "late" && (s.flags & ringtrace::EventFlags::size_unknown) != 0) ++unknown;
  }
  EXPECT_EQ(unknown, 1);
  EXPECT_GE(stats.memory.frees_unmatched, 2u);
  EXPECT_GE(stats.memory.frees_size_unknown, 1u);
}

std::atomic<int> g_handler_allocs{0};
void allocating_handler(int) {
  // Not async-signal-safe in general; glibc's malloc is, when the thread was not inside it.
  void* p = std::malloc(24);
  g_sink = p;
  std::free(p);
  g_handler_allocs.fetch_add(1);
}

TEST(Memory, AllocationsInASignalHandlerAreRecordedOrCounted) {
  struct sigaction action {};
  action.sa_handler = allocating_handler;
  sigemptyset(&action.sa_mask);
  struct sigaction old {};
  ASSERT_EQ(sigaction(SIGUSR1, &action, &old), 0);
  ringtrace::SessionStats stats;
  const auto events = record(
      [&] {
        RINGTRACE_ZONE("signalled");
        for (int i = 0; i < 200; ++i) {
          void* p = std::malloc(64);
          g_sink = p;
          ::raise(SIGUSR1);
          std::free(p);
        }
      },
      memory_config(), &stats);
  sigaction(SIGUSR1, &old, nullptr);
  ASSERT_EQ(g_handler_allocs.load(), 200);
  std::uint64_t in_zone = 0;
  for (const auto& s : events->seen) {
    if (s.zone == "signalled" && s.kind == EventKind::alloc && s.bytes == 24) ++in_zone;
  }
  // Each of the handler's is recorded in the zone or counted as nested in the thread's slow
  // path (with the thread's own allocations there, when it binds its ring: ringtrace's).
  EXPECT_LE(in_zone, 200u);
  EXPECT_GE(in_zone + stats.memory.unrecorded_nested, 200u);
  EXPECT_EQ(stats.dropped, 0u);
}

TEST(Memory, AForkChildAllocatesWithoutTouchingTheParentsRing) {
  ringtrace::SessionStats stats;
  const auto events = record(
      [&] {
        RINGTRACE_ZONE("parent");
        const pid_t child = ::fork();
        ASSERT_GE(child, 0);
        if (child == 0) {
          std::vector<std::string> v(1000, std::string(100, 'c'));  // records nothing: no session here
          g_sink = v.data();
          ::_exit(0);
        }
        int status = 0;
        ASSERT_EQ(::waitpid(child, &status, 0), child);
        EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
        void* p = std::malloc(555);
        g_sink = p;
        std::free(p);
      },
      memory_config(), &stats);
  EXPECT_EQ(events->in("parent").first, 555u);
}

TEST(Memory, OffByDefaultRecordsNothing) {
  ringtrace::Config config;
  const auto events = record(
      [] {
        RINGTRACE_ZONE("quiet");
        void* p = std::malloc(100);
        g_sink = p;
        std::free(p);
      },
      config);
  EXPECT_TRUE(events->seen.empty());
}

TEST(Memory, TheBinaryFileGivesWhatTheLiveSessionGave) {
  const std::filesystem::path path =
      std::filesystem::temp_directory_path() / ("ringtrace_memory_" + std::to_string(::getpid()) + ".rtrace");
  ringtrace::Session session(memory_config());
  auto live = std::make_shared<MemoryEvents>();
  session.add_exporter(live);
  session.add_exporter(ringtrace::binary_trace_exporter(path));
  session.start();
  void* leak = nullptr;
  {
    RINGTRACE_ZONE("outer");
    std::vector<int> v(5000);
    g_sink = v.data();
    {
      RINGTRACE_ZONE("inner");
      leak = std::malloc(999);
      g_sink = leak;
    }
  }
  session.stop();
  const ringtrace::MemoryStats live_stats = session.stats().memory;
  MemoryEvents read;
  Finish finish;
  ringtrace::Exporter* exporters[] = {&read, &finish};
  const ringtrace::ReplayResult r = ringtrace::replay_file(path, exporters);
  std::free(leak);
  ASSERT_TRUE(r.complete) << r.problem;
  EXPECT_EQ(r.minor_version, 4u);
  ASSERT_EQ(read.seen.size(), live->seen.size());
  for (std::size_t i = 0; i < read.seen.size(); ++i) {
    EXPECT_EQ(read.seen[i].kind, live->seen[i].kind);
    EXPECT_EQ(read.seen[i].bytes, live->seen[i].bytes);
    EXPECT_EQ(read.seen[i].zone, live->seen[i].zone);
  }
  const ringtrace::MemoryStats& m = finish.stats.memory;
  EXPECT_TRUE(m.known);
  EXPECT_EQ(m.allocations, live_stats.allocations);
  EXPECT_EQ(m.allocated_bytes, live_stats.allocated_bytes);
  EXPECT_EQ(m.peak_live_bytes, live_stats.peak_live_bytes);
  EXPECT_EQ(m.peak_time_ns, live_stats.peak_time_ns);
  // Written again from the stream (as `convert`, a window or a snapshot writes it): the
  // same sizes, the same peak; no addresses, so no leaks.
  const std::filesystem::path again = path.string() + ".stream.rtrace";
  {
    auto writer = ringtrace::binary_trace_exporter(again);
    ringtrace::Exporter* to[] = {writer.get()};
    ASSERT_TRUE(ringtrace::replay_file(path, to).complete);
  }
  MemoryEvents streamed;
  Finish streamed_finish;
  ringtrace::Exporter* readers[] = {&streamed, &streamed_finish};
  ASSERT_TRUE(ringtrace::replay_file(again, readers).complete);
  std::filesystem::remove(again);
  ASSERT_EQ(streamed.seen.size(), live->seen.size());
  for (std::size_t i = 0; i < streamed.seen.size(); ++i) {
    EXPECT_EQ(streamed.seen[i].bytes, live->seen[i].bytes);
    EXPECT_EQ(streamed.seen[i].flags & ringtrace::EventFlags::size_unknown,
              live->seen[i].flags & ringtrace::EventFlags::size_unknown);
  }
  EXPECT_TRUE(streamed_finish.stats.memory.known);
  EXPECT_FALSE(streamed_finish.stats.memory.blocks_known);
  EXPECT_EQ(streamed_finish.stats.memory.allocated_bytes, live_stats.allocated_bytes);
  EXPECT_EQ(streamed_finish.stats.memory.peak_live_bytes, live_stats.peak_live_bytes);
  EXPECT_TRUE(streamed_finish.stats.memory.leaks.empty());
  ASSERT_FALSE(m.leaks.empty());
  EXPECT_EQ(m.leaks.size(), live_stats.leaks.size());
  bool found = false;
  std::string leaks;
  for (const auto& l : m.leaks) {
    found = found || (l.stack == "outer; inner" && l.bytes == 999 && l.blocks == 1);
    leaks += l.stack + ": " + std::to_string(l.blocks) + " blocks, " + std::to_string(l.bytes) + " bytes\n";
  }
  EXPECT_TRUE(found) << leaks;
  std::filesystem::remove(path);
}

// What the heap's accounting left out of the live heap where it was recorded (a free of a
// block from before the session, sized or not; an allocation past memory_max_blocks)
// stays out of it in a stream's file (a window's here; `convert` and snapshots write them
// the same way), whose records carry sizes and no addresses: the file's totals are the
// live session's.
TEST(Memory, AStreamFileKeepsWhatTheLiveHeapLeftOut) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("ringtrace_memory_left_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  void* before = std::malloc(4321);
  g_sink = before;
  void* sized = ::operator new(40);
  g_sink = sized;
  ringtrace::Config config = memory_config();
  config.memory_max_blocks = 4;
  ringtrace::Session session(config);
  session.add_exporter(std::make_shared<MemoryEvents>());  // a decoding exporter: the live session's accounting
  session.add_window_exporter([dir](const ringtrace::WindowInfo& window) {
    return ringtrace::binary_trace_exporter(dir / ("window-" + std::to_string(window.index) + ".rtrace"));
  });
  session.start();
  {
    RINGTRACE_ZONE("left out");
    std::free(before);             // unmatched, size unknown
    ::operator delete(sized, 40);  // unmatched, its caller's size
    void* blocks[8];
    for (std::size_t i = 0; i < 8; ++i) {
      blocks[i] = std::malloc(100 + i);  // past the 4th live block: not followed
      g_sink = blocks[i];
    }
    for (void* b : blocks) std::free(b);
  }
  session.stop();
  const ringtrace::MemoryStats live = session.stats().memory;
  ASSERT_GE(live.frees_unmatched, 2u);
  ASSERT_GE(live.untracked_blocks, 1u);
  Finish finish;
  ringtrace::Exporter* readers[] = {&finish};
  const ringtrace::ReplayResult r = ringtrace::replay_file(dir / "window-0.rtrace", readers);
  std::filesystem::remove_all(dir);
  ASSERT_TRUE(r.complete) << r.problem;
  const ringtrace::MemoryStats& m = finish.stats.memory;
  EXPECT_FALSE(m.blocks_known);
  EXPECT_EQ(m.allocations, live.allocations);
  EXPECT_EQ(m.frees, live.frees);
  EXPECT_EQ(m.allocated_bytes, live.allocated_bytes);
  EXPECT_EQ(m.freed_bytes, live.freed_bytes);
  EXPECT_EQ(m.frees_unmatched, live.frees_unmatched);
  EXPECT_EQ(m.frees_size_unknown, live.frees_size_unknown);
  EXPECT_EQ(m.untracked_blocks, live.untracked_blocks);
  EXPECT_EQ(m.live_bytes, live.live_bytes);
  EXPECT_EQ(m.live_blocks, live.live_blocks);
  EXPECT_EQ(m.peak_live_bytes, live.peak_live_bytes);
}

// Four threads allocating flat out: under the block policy every allocation and free is
// recorded; under the drop policy what is not recorded is counted, per thread, exactly.
void flat_out(ringtrace::OverflowPolicy policy) {
  const int n = std::max(2000, static_cast<int>(200000 * ringtrace::testing::test_scale()));
  ringtrace::Config config = memory_config();
  config.overflow = policy;
  config.buffer_records = 4096;  // small rings: the drop policy drops
  ringtrace::Session session(config);
  struct Counts final : ringtrace::Exporter {
    std::map<ringtrace::ThreadId, std::uint64_t> memory, zones;
    // Drop policy: the drainer's first delivery waits until the threads are done, so no
    // ring is read past that pass meanwhile, and each thread (128 KB of events, 64 KB of
    // ring) drops for certain.
    std::atomic<bool> hold{false};
    void on_events(std::span<const Event> events, const ringtrace::TraceContext&) override {
      const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(30);
      while (hold.load() && std::chrono::steady_clock::now() < until)
        std::this_thread::sleep_for(std::chrono::microseconds(100));
      for (const Event& e : events) {
        // In the thread's zone only: not what a sanitizer's runtime allocates on a new
        // thread before it runs the thread's function, or at its exit. (The zone is the
        // thread's first event: its ring is empty, its begin never dropped.)
        if ((e.kind == EventKind::alloc || e.kind == EventKind::free) && e.depth >= 1) ++memory[e.thread];
        if (e.kind == EventKind::zone_begin || e.kind == EventKind::zone_end) ++zones[e.thread];
      }
    }
  };
  auto counts = std::make_shared<Counts>();
  counts->hold = policy == ringtrace::OverflowPolicy::drop;
  session.add_exporter(counts);
  session.start();
  // pthreads, not std::thread: a std::thread's state is freed on its thread, an
  // allocation of the test's own there.
  struct Work {
    static void* run(void* arg) {
      const int count = *static_cast<const int*>(arg);
      RINGTRACE_ZONE("flat");
      for (int i = 0; i < count; ++i) {
        void* p = std::malloc(1000 + static_cast<std::size_t>(i % 512));
        g_sink = p;
        std::free(p);
      }
      return nullptr;
    }
  };
  pthread_t threads[4];
  for (pthread_t& t : threads) ASSERT_EQ(pthread_create(&t, nullptr, &Work::run, const_cast<int*>(&n)), 0);
  for (pthread_t t : threads) pthread_join(t, nullptr);
  counts->hold = false;
  session.stop();
  const ringtrace::SessionStats stats = session.stats();
  int threads_seen = 0;
  for (const ringtrace::ThreadStats& t : stats.threads) {
    if (counts->zones[t.thread] == 0 && t.dropped == 0) continue;  // not one of the four
    ++threads_seen;
    // Each thread: 2n allocations and frees, its zone's begin and end (a zone is dropped
    // whole: two events).
#ifdef RINGTRACE_TEST_ASAN
    // The sanitizer's own allocations on the thread after its zone may be dropped too.
    EXPECT_GE(counts->memory[t.thread] + counts->zones[t.thread] + t.dropped, 2u * n + 2u)
#else
    EXPECT_EQ(counts->memory[t.thread] + counts->zones[t.thread] + t.dropped, 2u * n + 2u)
#endif
        << "thread " << t.thread << ": " << counts->memory[t.thread] << " allocations and frees, "
        << counts->zones[t.thread] << " zone boundaries, " << t.dropped << " dropped";
    EXPECT_EQ(counts->zones[t.thread], 2u) << "thread " << t.thread << ": its zone's begin or end lost";
    if (policy == ringtrace::OverflowPolicy::block) {
      EXPECT_EQ(t.dropped, 0u);
      EXPECT_EQ(counts->memory[t.thread], 2u * n);
    } else {
      EXPECT_GT(t.dropped, 0u) << "thread " << t.thread << ": the drop policy, and nothing dropped";
    }
  }
  EXPECT_EQ(threads_seen, 4);
  EXPECT_EQ(
      stats.dropped, stats.dropped_without_ring + [&] {
        std::uint64_t d = 0;
        for (const auto& t : stats.threads) d += t.dropped;
        return d;
      }());
}

TEST(Memory, FourThreadsFlatOutKeepEveryAllocationUnderTheBlockPolicy) { flat_out(ringtrace::OverflowPolicy::block); }

TEST(Memory, FourThreadsFlatOutCountEveryDropUnderTheDropPolicy) { flat_out(ringtrace::OverflowPolicy::drop); }

}  // namespace
