// Each zone's bytes (ZoneTracker: allocated, freed, PyTorch's cpu_memory_usage and its
// self part) on hand-built streams with known answers, against an independent count on
// random streams, and through the deepest nesting; the live heap's counter samples
// (HeapCounter) against the rule heap_counter.hpp states.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "heap_counter.hpp"
#include "memory_streams.hpp"
#include "zone_tracker.hpp"

namespace ringtrace {
namespace {

using memory_test::MemoryStream;

// Every zone the tracker closes, by name and begin time.
struct Closed {
  std::string name;
  std::uint64_t begin_ns;
  detail::ZoneMemory memory, self;
};
std::vector<Closed> closed_zones(const RecordedTrace& trace) {
  const RecordedTraceContext context(trace);
  detail::ZoneTracker tracker;
  std::vector<Closed> out;
  const auto on_close = [&](const detail::ClosedZone& z, std::span<const detail::OpenZone>) {
    out.push_back(Closed{trace.sites[z.site].name, z.begin_ns, z.memory, z.self_memory});
  };
  for (const Event& e : trace.events) tracker.feed(e, on_close);
  tracker.close_open(trace.clock.stop_ns, on_close);
  return out;
}
const Closed& zone(const std::vector<Closed>& zones, const std::string& name) {
  for (const Closed& z : zones) {
    if (z.name == name) return z;
  }
  throw std::runtime_error("no zone " + name);
}

// outer [0,100] { alloc 1000; inner [20,50] { alloc 300; free 300; alloc 50 }; free 1000;
// free of unknown size } and, outside every zone, alloc 7.
RecordedTrace nested_stream() {
  MemoryStream m;
  const ThreadId t = m.b.thread("main", 1);
  const SiteId outer = m.b.site("outer"), inner = m.b.site("inner");
  m.b.begin(t, outer, 0);
  m.alloc(t, 10, 1000);
  m.b.begin(t, inner, 20);
  m.alloc(t, 25, 300).free(t, 30, 300).alloc(t, 40, 50);
  m.b.end(t, 50);
  m.free(t, 60, 1000).free(t, 70, 0, EventFlags::size_unknown);
  m.b.end(t, 100);
  m.alloc(t, 150, 7);
  return m.build();
}

TEST(ZoneMemory, AZoneHasItsChildrensBytesAndItsSelfPartExcludesThem) {
  const std::vector<Closed> zones = closed_zones(nested_stream());
  ASSERT_EQ(zones.size(), 2u);
  const Closed& inner = zone(zones, "inner");
  EXPECT_EQ(inner.memory.allocated_bytes, 350u);
  EXPECT_EQ(inner.memory.allocations, 2u);
  EXPECT_EQ(inner.memory.freed_bytes, 300u);
  EXPECT_EQ(inner.memory.frees, 1u);
  EXPECT_EQ(inner.memory.net_bytes(), 50);
  EXPECT_EQ(inner.self.net_bytes(), 50);  // no children: self is all of it
  const Closed& outer = zone(zones, "outer");
  EXPECT_EQ(outer.memory.allocated_bytes, 1350u);
  EXPECT_EQ(outer.memory.allocations, 3u);
  EXPECT_EQ(outer.memory.freed_bytes, 1300u);  // the free of unknown size counts, with 0 bytes
  EXPECT_EQ(outer.memory.frees, 3u);
  EXPECT_EQ(outer.memory.net_bytes(), 50);
  EXPECT_EQ(outer.self.allocated_bytes, 1000u);
  EXPECT_EQ(outer.self.allocations, 1u);
  EXPECT_EQ(outer.self.freed_bytes, 1000u);
  EXPECT_EQ(outer.self.frees, 2u);
  EXPECT_EQ(outer.self.net_bytes(), 0);  // PyTorch: cpu_memory_usage - children's
  EXPECT_EQ(outer.self.net_bytes(), outer.memory.net_bytes() - inner.memory.net_bytes());
}

TEST(ZoneMemory, AZoneThatFreesMoreThanItAllocatedIsNegative) {
  MemoryStream m;
  const ThreadId t = m.b.thread("main", 1);
  m.b.begin(t, m.b.site("releases"), 0);
  m.alloc(t, 1, 10).free(t, 2, 4096);
  m.b.end(t, 3);
  const auto zones = closed_zones(m.build());  // kept: z refers into it
  const Closed& z = zone(zones, "releases");
  EXPECT_EQ(z.memory.net_bytes(), 10 - 4096);
}

TEST(ZoneMemory, ZonesWithoutMemoryEventsHaveNone) {
  MemoryStream m;
  const ThreadId t = m.b.thread("main", 1);
  const ThreadId u = m.b.thread("other", 2);
  m.b.begin(t, m.b.site("a"), 0).end(t, 10);  // closes before any memory event
  m.b.begin(u, m.b.site("b"), 5);
  m.alloc(t, 20, 64);  // outside every zone of its thread: another thread's zone gets nothing
  m.b.end(u, 30);
  m.b.begin(t, m.b.site("c"), 40).end(t, 50);
  const std::vector<Closed> zones = closed_zones(m.build());
  for (const Closed& z : zones) EXPECT_EQ(z.memory.allocations + z.memory.frees, 0u) << z.name;
}

// Random streams: several threads, random nesting, random memory events; each zone's
// numbers counted again from the events between its begin and end on its thread.
TEST(ZoneMemory, RandomStreamsAgainstAnIndependentCount) {
  std::mt19937_64 rng(20261128);
  for (int round = 0; round < 30; ++round) {
    MemoryStream m;
    std::vector<ThreadId> threads;
    for (const char* name : {"t0", "t1", "t2"}) threads.push_back(m.b.thread(name, 10 + threads.size()));
    std::vector<SiteId> sites;
    for (const char* name : {"z0", "z1", "z2", "z3", "z4"}) sites.push_back(m.b.site(name));
    // Per thread, the events as the test sees them: +1 begin, -1 end, or memory.
    struct Step {
      int what;  // 1 begin, -1 end, 2 alloc, 3 free
      std::uint64_t time, bytes;
      bool unknown;
    };
    std::map<ThreadId, std::vector<Step>> steps;
    for (const ThreadId t : threads) {
      std::uint64_t time = 1;
      int depth = 0;
      for (int i = 0; i < 300; ++i, time += 1 + rng() % 3) {
        const unsigned r = rng() % 10;
        if (r < 3 && depth < 12) {
          m.b.begin(t, sites[rng() % sites.size()], time);
          steps[t].push_back({1, time, 0, false});
          ++depth;
        } else if (r < 6 && depth > 0) {
          m.b.end(t, time);
          steps[t].push_back({-1, time, 0, false});
          --depth;
        } else if (r < 8) {
          const std::uint64_t bytes = 1 + rng() % 5000;
          m.alloc(t, time, bytes);
          steps[t].push_back({2, time, bytes, false});
        } else {
          const bool unknown = rng() % 5 == 0;
          const std::uint64_t bytes = unknown ? 0 : 1 + rng() % 5000;
          m.free(t, time, bytes, unknown ? EventFlags::size_unknown : 0);
          steps[t].push_back({3, time, bytes, unknown});
        }
      }
      for (; depth > 0; --depth, ++time) {
        m.b.end(t, time);
        steps[t].push_back({-1, time, 0, false});
      }
    }
    const RecordedTrace trace = m.build();
    // The independent count: for each zone (thread, begin index), sum everything up to
    // its end, and separately what no deeper zone encloses.
    struct Want {
      detail::ZoneMemory memory, self;
    };
    std::map<std::pair<ThreadId, std::uint64_t>, Want> want;  // (thread, begin time)
    for (const auto& [t, list] : steps) {
      for (std::size_t i = 0; i < list.size(); ++i) {
        if (list[i].what != 1) continue;
        Want w;
        int level = 0;
        for (std::size_t j = i + 1; j < list.size(); ++j) {
          const Step& s = list[j];
          if (s.what == 1) ++level;
          if (s.what == -1 && level-- == 0) break;
          if (s.what < 2) continue;
          for (detail::ZoneMemory* into : {&w.memory, level == 0 ? &w.self : nullptr}) {
            if (into == nullptr) continue;
            if (s.what == 2) {
              into->allocated_bytes += s.bytes;
              into->allocations += 1;
            } else {
              into->freed_bytes += s.bytes;
              into->frees += 1;
            }
          }
        }
        want[{t, list[i].time}] = w;
      }
    }
    const RecordedTraceContext context(trace);
    detail::ZoneTracker tracker;
    std::size_t seen = 0;
    const auto on_close = [&](const detail::ClosedZone& z, std::span<const detail::OpenZone>) {
      const Want& w = want.at({z.thread, z.begin_ns});
      ++seen;
      for (const auto& [got, expect] : {std::pair{z.memory, w.memory}, std::pair{z.self_memory, w.self}}) {
        ASSERT_EQ(got.allocated_bytes, expect.allocated_bytes) << round;
        ASSERT_EQ(got.allocations, expect.allocations) << round;
        ASSERT_EQ(got.freed_bytes, expect.freed_bytes) << round;
        ASSERT_EQ(got.frees, expect.frees) << round;
      }
    };
    for (const Event& e : trace.events) tracker.feed(e, on_close);
    EXPECT_EQ(seen, want.size()) << round;
    EXPECT_TRUE(tracker.any_memory());
  }
}

// A recursion 100,000 deep with an allocation at its bottom: every level has it (with
// its children), only the bottom has it as its own; the tracker's memory stack follows
// the nesting, not the number of events.
TEST(ZoneMemory, TheDeepestNestingKeepsEveryLevelsBytes) {
  constexpr std::uint64_t kDepth = 100'000;
  MemoryStream m;
  const ThreadId t = m.b.thread("main", 1);
  const SiteId rec = m.b.site("rec");
  std::uint64_t time = 0;
  for (std::uint64_t i = 0; i < kDepth; ++i) m.b.begin(t, rec, time++);
  m.alloc(t, time++, 4096);
  for (std::uint64_t i = 0; i < kDepth; ++i) m.b.end(t, time++);
  const RecordedTrace trace = m.build();
  detail::ZoneTracker tracker;
  std::uint64_t closes = 0, with_self = 0;
  for (const Event& e : trace.events) {
    tracker.feed(e, [&](const detail::ClosedZone& z, std::span<const detail::OpenZone>) {
      ++closes;
      EXPECT_EQ(z.memory.allocated_bytes, 4096u);
      if (z.self_memory.allocated_bytes != 0) ++with_self;
    });
  }
  EXPECT_EQ(closes, kDepth);
  EXPECT_EQ(with_self, 1u);
}

// The heap counter on random alloc/free sequences of two processes: every sample is a
// value the heap had at that time, the highest value and the first time it was reached
// are among the samples, the value at the end is the last sample, at most three samples
// per interval; with interval 0, one sample per change.
TEST(HeapCounter, SamplesFollowTheRule) {
  std::mt19937_64 rng(33);
  for (const std::uint64_t interval : {std::uint64_t{0}, std::uint64_t{50}, std::uint64_t{1000}}) {
    for (int round = 0; round < 20; ++round) {
      detail::HeapCounter counter(interval);
      std::map<std::uint32_t, std::vector<detail::HeapCounter::Sample>> samples;
      const auto emit = [&](const detail::HeapCounter::Sample& s) { samples[s.pid].push_back(s); };
      // The truth, per process: (time, value) after each event.
      std::map<std::uint32_t, std::vector<std::pair<std::uint64_t, std::uint64_t>>> truth;
      std::map<std::uint32_t, std::vector<std::uint64_t>> live_blocks;
      std::uint64_t time = 0;
      for (int i = 0; i < 2000; ++i) {
        time += rng() % 7;
        const std::uint32_t pid = 100 + static_cast<std::uint32_t>(rng() % 2);
        std::vector<std::uint64_t>& blocks = live_blocks[pid];
        Event e{};
        e.time_ns = time;
        e.thread = pid - 100;
        if (blocks.empty() || rng() % 2 == 0) {
          e.kind = EventKind::alloc;
          e.value.u = 1 + rng() % 1000;
          if (rng() % 10 == 0) {
            e.flags = EventFlags::untracked;  // not in the heap
          } else {
            blocks.push_back(e.value.u);
          }
        } else {
          const std::size_t k = rng() % blocks.size();
          e.kind = EventKind::free;
          e.value.u = blocks[k];
          blocks.erase(blocks.begin() + static_cast<std::ptrdiff_t>(k));
        }
        counter.feed(e, pid, emit);
        std::uint64_t live = 0;
        for (const std::uint64_t b : blocks) live += b;
        truth[pid].push_back({time, live});
      }
      counter.finish(emit);
      for (const auto& [pid, values] : truth) {
        const std::vector<detail::HeapCounter::Sample>& got = samples[pid];
        ASSERT_FALSE(got.empty());
        // Each sample: a value the heap had at its time (after some event of that ns).
        for (const auto& s : got) {
          const bool had = std::any_of(values.begin(), values.end(),
                                       [&](const auto& v) { return v.first == s.time_ns && v.second == s.bytes; });
          EXPECT_TRUE(had) << "sample " << s.bytes << " at " << s.time_ns << " interval " << interval;
        }
        for (std::size_t i = 1; i < got.size(); ++i) EXPECT_LE(got[i - 1].time_ns, got[i].time_ns);
        // The peak, at the first time it was reached.
        const auto peak = std::max_element(values.begin(), values.end(),
                                           [](const auto& a, const auto& b) { return a.second < b.second; });
        const auto sampled_peak =
            std::max_element(got.begin(), got.end(), [](const auto& a, const auto& b) { return a.bytes < b.bytes; });
        EXPECT_EQ(sampled_peak->bytes, peak->second) << interval;
        EXPECT_EQ(sampled_peak->time_ns, peak->first) << interval;
        EXPECT_EQ(got.back().bytes, values.back().second) << interval;
        if (interval == 0) {
          std::size_t changes = 0;
          std::uint64_t before = 0;
          for (const auto& v : values) changes += v.second != before ? 1 : 0, before = v.second;
          EXPECT_EQ(got.size(), changes);
        } else {
          const std::uint64_t span = values.back().first - values.front().first;
          EXPECT_LE(got.size(), 3 * (span / interval + 1)) << interval;
        }
      }
    }
  }
}

}  // namespace
}  // namespace ringtrace
