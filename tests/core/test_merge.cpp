// The drainer's merge with timestamps chosen by the test: records are written straight
// into the calling thread's ring (as the macros do, but with fabricated ticks), so the
// interleaving of threads is exact and known. Covers the merge of several threads'
// staged chunks (2 to 9 threads, chunks refilled many times, payload records), and
// late events (older than what was already delivered) raised, flagged and counted.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "ringtrace/recorded_trace.hpp"
#include "ringtrace/ringtrace.hpp"
#include "thread_registry.hpp"  // run_drainer_pass

namespace {

namespace rd = ringtrace::detail;
using ringtrace::Event;
using ringtrace::EventKind;
namespace EventFlags = ringtrace::EventFlags;

constexpr ringtrace::SiteInfo kZone{"merge_zone", "f", "test_merge.cpp", 1, ringtrace::SiteKind::zone};
constexpr ringtrace::SiteInfo kRegion{"merge_region", "f", "test_merge.cpp", 2, ringtrace::SiteKind::region};
constexpr ringtrace::SiteInfo kCounter{"merge_counter", "f", "test_merge.cpp", 3, ringtrace::SiteKind::counter};
constexpr ringtrace::SiteInfo kInstant{"merge_instant", "f", "test_merge.cpp", 4, ringtrace::SiteKind::instant};

// Writes one record (and its payload) at `ticks` into this thread's ring, as the hot path
// does (include/ringtrace/detail/record.hpp).
void put(std::uint64_t ticks, const ringtrace::SiteInfo* site, rd::RecordKind kind,
         const std::uint64_t* payload = nullptr) {
  const std::uint32_t epoch = rd::g_epoch.load(std::memory_order_relaxed);
  if (rd::t_writer.epoch != epoch) {
    ASSERT_TRUE(rd::bind_thread(epoch));
  }
  rd::WriterBlock* b = rd::writable(rd::t_writer, epoch);
  ASSERT_NE(b, nullptr) << "no room, no session or no TSC";
  if (kind == rd::record_zone_end) {
    rd::publish(rd::reserve(*b, 8), rd::end_slot(ticks));
    return;
  }
  const std::uintptr_t at = rd::reserve(*b, payload != nullptr ? 24 : 16);
  rd::put(at + 8, ticks);
  if (payload != nullptr) rd::put(at + 16, *payload);
  rd::publish(at, rd::record_header(site, kind));
}

// Whether the session's clock is the TSC (else the fast path, and put(), are closed).
bool writer_uses_tsc() {
  const std::uint32_t epoch = rd::g_epoch.load(std::memory_order_relaxed);
  if (rd::t_writer.epoch != epoch && !rd::bind_thread(epoch)) return false;
  return rd::writable(rd::t_writer, epoch) != nullptr;
}

std::uint32_t thread_index(const ringtrace::RecordedTrace& trace, ringtrace::ThreadId id) {
  const std::string& name = trace.threads.at(id).name;
  return name.rfind("w", 0) == 0 ? static_cast<std::uint32_t>(std::stoul(name.substr(1))) : ~0u;
}

class InterleavedMerge : public ::testing::TestWithParam<int> {};

constexpr std::uint64_t kItems = 4 * 800;  // per thread: several of the drainer's 512-event chunks

// k threads, item j of thread t at ticks base + (j * k + t) * 16: the merged stream must
// be item-major, thread-minor, exactly. Items cycle begin (every fifth a region with an
// id), counter, end, instant, so every record shape crosses the staging chunks.
TEST_P(InterleavedMerge, ThreadsComeOutInExactTimeOrder) {
  const int k = GetParam();
  ringtrace::Config config;
  config.buffer_records = std::size_t{1} << 14;
  config.drain_interval = std::chrono::hours(1);
  config.high_water = 1.0;
  // No pass before stop() reaches the fabricated times (a pass holds back the newest
  // merge_grace), so the final pass merges every thread's whole sequence at once.
  config.merge_grace = std::chrono::milliseconds(50);
  ringtrace::Session session(config);
  auto memory = std::make_shared<ringtrace::MemoryExporter>();
  session.add_exporter(memory);
  session.start();
  const bool tsc = writer_uses_tsc();
  // Every worker binds its ring and a pass accepts them all before the times begin, and
  // no worker exits before stop(): then nothing wakes the drainer until stop(). (A pass
  // that a thread's registration or exit woke more than merge_grace after `base` delivered
  // the first threads' items before the last had written theirs: under ThreadSanitizer on
  // a loaded machine, 9 threads' writes take longer than that.)
  std::atomic<int> bound{0}, written{0};
  std::atomic<std::uint64_t> start{0};
  std::atomic<bool> stopped{false};
  std::vector<std::thread> workers;
  for (int t = 0; t < k; ++t) {
    workers.emplace_back([t, k, &bound, &start, &written, &stopped] {
      ringtrace::set_thread_name(std::string("w").append(std::to_string(t)));
      writer_uses_tsc();  // binds this thread's ring
      bound.fetch_add(1);
      std::uint64_t base;
      while ((base = start.load()) == 0) std::this_thread::yield();
      for (std::uint64_t j = 0; j < kItems; ++j) {
        const std::uint64_t ticks = base + (j * static_cast<std::uint64_t>(k) + static_cast<std::uint64_t>(t)) * 16;
        switch (j % 4) {
          case 0:
            if ((j / 4) % 5 == 0) {
              const std::uint64_t id = j;
              put(ticks, &kRegion, rd::record_region_begin, &id);
            } else {
              put(ticks, &kZone, rd::record_zone_begin);
            }
            break;
          case 1:
            put(ticks, &kCounter, rd::record_timed_int, &j);
            break;
          case 2:
            put(ticks, &kZone, rd::record_zone_end);
            break;
          case 3:
            put(ticks, &kInstant, rd::record_instant);
            break;
        }
      }
      written.fetch_add(1);
      while (!stopped.load()) std::this_thread::yield();
    });
  }
  while (bound.load() < k) std::this_thread::yield();
  const bool passed = rd::run_drainer_pass();
  const std::uint64_t base = rd::read_ticks(tsc);
  start.store(base);
  while (written.load() < k) std::this_thread::yield();
  // stop() delivers nothing stamped after it: let the clock pass the last fabricated time.
  const std::uint64_t last = base + kItems * static_cast<std::uint64_t>(k) * 16;
  while (rd::read_ticks(tsc) <= last) std::this_thread::sleep_for(std::chrono::microseconds(100));
  session.stop();
  stopped.store(true);
  for (auto& w : workers) w.join();
  ASSERT_TRUE(passed) << "no drainer pass on demand";
  const ringtrace::RecordedTrace trace = memory->trace();
  std::vector<const Event*> mine;
  for (const Event& e : trace.events) {
    if (thread_index(trace, e.thread) != ~0u) mine.push_back(&e);
  }
  ASSERT_EQ(mine.size(), kItems * static_cast<std::uint64_t>(k));
  for (std::size_t i = 0; i < mine.size(); ++i) {
    const Event& e = *mine[i];
    const std::uint64_t j = i / static_cast<std::size_t>(k);
    const std::uint32_t t = static_cast<std::uint32_t>(i % static_cast<std::size_t>(k));
    ASSERT_EQ(thread_index(trace, e.thread), t) << "event " << i;
    if (i > 0) {
      ASSERT_LT(mine[i - 1]->time_ns, e.time_ns) << "event " << i;
    }
    ASSERT_EQ(e.flags & EventFlags::late, 0) << "event " << i;
    switch (j % 4) {
      case 0:
        ASSERT_EQ(e.kind, EventKind::zone_begin) << i;
        ASSERT_EQ(e.depth, 0u) << i;
        if ((j / 4) % 5 == 0) {
          ASSERT_NE(e.flags & EventFlags::region, 0) << i;
          ASSERT_EQ(e.value.u, j) << i;
        }
        break;
      case 1:
        ASSERT_EQ(e.kind, EventKind::counter) << i;
        ASSERT_EQ(e.value.u, j) << i;
        ASSERT_EQ(e.depth, 1u) << i;
        break;
      case 2:
        ASSERT_EQ(e.kind, EventKind::zone_end) << i;
        ASSERT_EQ(e.depth, 0u) << i;
        break;
      case 3:
        ASSERT_EQ(e.kind, EventKind::instant) << i;
        break;
    }
  }
  EXPECT_EQ(session.stats().late_events, 0u);
}

INSTANTIATE_TEST_SUITE_P(Threads, InterleavedMerge, ::testing::Values(2, 3, 5, 9));

// Records older than what the drainer already delivered (a thread preempted between
// reading the clock and publishing, for longer than the merge grace) are raised to the
// last time delivered, flagged late and counted; the stream stays ordered. Two threads
// bring late records at once, so they are usually merged together.
TEST(Merge, LateEventsAreRaisedFlaggedAndCounted) {
  ringtrace::Config config;
  config.merge_grace = std::chrono::microseconds(0);
  config.drain_interval = std::chrono::microseconds(500);
  ringtrace::Session session(config);
  auto memory = std::make_shared<ringtrace::MemoryExporter>();
  session.add_exporter(memory);
  session.start();
  ringtrace::set_thread_name("first");
  const std::uint64_t old_ticks = rd::read_ticks(writer_uses_tsc());
  { RINGTRACE_ZONE("delivered"); }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (memory->event_count() < 2 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ASSERT_GE(memory->event_count(), 2u) << "the drainer never delivered the first zone";
  std::atomic<int> ready{0};
  std::atomic<bool> go{false};
  std::vector<std::thread> late;
  for (int t = 0; t < 2; ++t) {
    late.emplace_back([&, t] {
      ringtrace::set_thread_name(std::string("w").append(std::to_string(t)));
      ready.fetch_add(1);
      while (!go.load()) std::this_thread::yield();
      put(old_ticks + static_cast<std::uint64_t>(t), &kZone, rd::record_zone_begin);  // older than "delivered"
      put(rd::read_ticks(writer_uses_tsc()), &kZone, rd::record_zone_end);            // now: on time
    });
  }
  while (ready.load() < 2) std::this_thread::yield();
  go.store(true);
  for (auto& t : late) t.join();
  { RINGTRACE_ZONE("after"); }
  session.stop();
  const ringtrace::RecordedTrace trace = memory->trace();
  std::uint64_t delivered_end = 0;
  int late_begins = 0, ends = 0;
  for (std::size_t i = 0; i < trace.events.size(); ++i) {
    const Event& e = trace.events[i];
    if (i > 0) {
      ASSERT_LE(trace.events[i - 1].time_ns, e.time_ns) << "event " << i;
    }
    const std::string& site = trace.sites.at(e.site).name;
    if (site == "delivered" && e.kind == EventKind::zone_end) delivered_end = e.time_ns;
    if (thread_index(trace, e.thread) == ~0u) continue;
    if (e.kind == EventKind::zone_begin) {
      EXPECT_NE(e.flags & EventFlags::late, 0);
      EXPECT_GE(e.time_ns, delivered_end);  // raised to at least what was delivered
      EXPECT_GT(delivered_end, 0u);         // ...which came first in the stream
      ++late_begins;
    } else if (e.kind == EventKind::zone_end) {
      EXPECT_EQ(e.flags & EventFlags::late, 0);
      ++ends;
    }
  }
  EXPECT_EQ(late_begins, 2);
  EXPECT_EQ(ends, 2);
  EXPECT_EQ(session.stats().late_events, 2u);
}

}  // namespace

// Threads are listed by the time of their first event, not by when they registered:
// here they register in the order 0..4 but their first records carry times in the
// opposite order.
TEST(Merge, ThreadsAreOrderedByTheirFirstEventNotTheirRegistration) {
  ringtrace::Config config;
  config.drain_interval = std::chrono::hours(1);
  config.merge_grace = std::chrono::milliseconds(50);
  ringtrace::Session session(config);
  auto memory = std::make_shared<ringtrace::MemoryExporter>();
  session.add_exporter(memory);
  session.start();
  const bool tsc = writer_uses_tsc();
  const std::uint64_t base = rd::read_ticks(tsc);
  constexpr int kThreads = 5;
  for (int k = 0; k < kThreads; ++k) {
    std::thread([k, base] {
      ringtrace::set_thread_name(std::string("w").append(std::to_string(k)));
      put(base + static_cast<std::uint64_t>(kThreads - k) * 1000, &kInstant, rd::record_instant);
    }).join();
  }
  while (rd::read_ticks(tsc) <= base + 10 * 1000) std::this_thread::sleep_for(std::chrono::microseconds(100));
  session.stop();
  const auto stats = session.stats();
  std::vector<std::string> rows;
  for (const auto& row : stats.threads) {
    if (!row.name.empty() && row.name[0] == 'w') rows.push_back(row.name);
  }
  EXPECT_EQ(rows, (std::vector<std::string>{"w4", "w3", "w2", "w1", "w0"}));
}
