// The bound of ringtrace::benchmark's traces (google_benchmark/bounded_recorder.hpp) on
// hand-built streams with known answers: where it cuts, that every kept zone is whole
// with its values, and the exact counts of what it leaves out.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "bounded_recorder.hpp"
#include "ringtrace/recorded_trace.hpp"

namespace ringtrace::bench {
namespace {

struct Zone {
  std::string name;
  std::uint64_t begin_ns, end_ns;
  bool operator==(const Zone&) const = default;
};

// The zones of a recorded trace, by their begin, with their real ends.
std::vector<Zone> zones(const RecordedTrace& trace) {
  std::vector<Zone> out;
  std::vector<std::vector<std::size_t>> open(trace.threads.size());
  for (const Event& e : trace.events) {
    if (e.kind == EventKind::zone_begin) {
      open[e.thread].push_back(out.size());
      out.push_back(Zone{trace.sites[e.site].name, e.time_ns, 0});
    } else if (e.kind == EventKind::zone_end) {
      out[open[e.thread].back()].end_ns = e.time_ns;
      open[e.thread].pop_back();
    }
  }
  for (const auto& stack : open) EXPECT_TRUE(stack.empty()) << "a kept zone without its end";
  return out;
}

std::size_t count(const RecordedTrace& trace, EventKind kind) {
  std::size_t n = 0;
  for (const Event& e : trace.events) n += e.kind == kind;
  return n;
}

// Ten iterations of outer { a b }, 100 ns apart, one thread.
RecordedTrace iterations() {
  TraceBuilder b("suite");
  const ThreadId t = b.thread("main", 7);
  const SiteId outer = b.site("outer"), a = b.site("a"), bee = b.site("b");
  for (std::uint64_t i = 0; i < 10; ++i) {
    const std::uint64_t at = 1000 + i * 100;
    b.begin(t, outer, at).begin(t, a, at + 10).end(t, at + 20).begin(t, bee, at + 30).end(t, at + 40).end(t, at + 90);
  }
  return b.build();
}

TEST(BoundedRecorder, AnEventBoundCutsAtTheFirstEventPastItAndKeepsOpenZonesWhole) {
  BoundedRecorder recorder(0, 5);
  replay(iterations(), recorder);
  // outer0 a0 b0 outer1 a1 kept; b1 is the sixth: cut there. outer1 ends at its real end.
  const std::vector<Zone> kept = zones(recorder.trace());
  EXPECT_EQ(
      kept,
      (std::vector<Zone>{
          {"outer", 1000, 1090}, {"a", 1010, 1020}, {"b", 1030, 1040}, {"outer", 1100, 1190}, {"a", 1110, 1120}}));
  const Counts& n = recorder.counts();
  EXPECT_EQ(n.zones, 5u);
  EXPECT_EQ(n.untraced_zones, 25u);
  EXPECT_STREQ(n.cut_by, "events");
  EXPECT_EQ(n.first_ns, 1000u);
  EXPECT_EQ(n.cut_ns, 1130u);
}

TEST(BoundedRecorder, ATimeBoundKeepsWhatBeginsBeforeIt) {
  BoundedRecorder recorder(250, 0);  // zones that begin before 1000 + 250 ns
  replay(iterations(), recorder);
  const std::vector<Zone> kept = zones(recorder.trace());
  ASSERT_EQ(kept.size(), 9u);  // three iterations
  EXPECT_EQ(kept.back(), (Zone{"b", 1230, 1240}));
  EXPECT_EQ(recorder.counts().untraced_zones, 21u);
  EXPECT_STREQ(recorder.counts().cut_by, "time");
  EXPECT_EQ(recorder.counts().cut_ns, 1300u);
}

TEST(BoundedRecorder, NoBoundKeepsEverything) {
  BoundedRecorder recorder(0, 0);
  const RecordedTrace all = iterations();
  replay(all, recorder);
  EXPECT_EQ(recorder.trace().events.size(), all.events.size());
  EXPECT_EQ(recorder.counts().zones, 30u);
  EXPECT_EQ(recorder.counts().untraced_zones, 0u);
  EXPECT_STREQ(recorder.counts().cut_by, "none");
}

// Values attach to their zone: one on a kept zone recorded after the cut is kept, one on
// a zone left out is left out; both counted. Instants and counters after the cut go.
TEST(BoundedRecorder, ValuesFollowTheirZoneAndOtherEventsStopAtTheCut) {
  TraceBuilder b;
  const ThreadId t = b.thread("main", 7);
  const SiteId outer = b.site("outer"), inner = b.site("inner"), late = b.site("late");
  const SiteId key = b.site("key", SiteKind::value), tick = b.site("tick", SiteKind::instant);
  const SiteId depth = b.site("depth", SiteKind::counter);
  b.begin(t, outer, 100).value(t, key, 100, std::int64_t{1}).instant(t, tick, 110);
  b.begin(t, inner, 120).end(t, 130);     // items so far: outer, value, tick, inner = 4
  b.begin(t, late, 140);                  // the fifth item: cut
  b.value(t, key, 140, std::int64_t{2});  // on `late`, left out
  b.end(t, 150);
  b.value(t, key, 150, std::int64_t{3});  // on `outer`, kept
  b.counter(t, depth, 160, std::int64_t{5}).instant(t, tick, 170).end(t, 200);
  BoundedRecorder recorder(0, 4);
  replay(b.build(), recorder);
  const RecordedTrace trace = recorder.trace();
  EXPECT_EQ(zones(trace), (std::vector<Zone>{{"outer", 100, 200}, {"inner", 120, 130}}));
  std::vector<std::int64_t> values;
  for (const Event& e : trace.events) {
    if (e.kind == EventKind::arg) values.push_back(e.value.i);
  }
  EXPECT_EQ(values, (std::vector<std::int64_t>{1, 3}));
  EXPECT_EQ(count(trace, EventKind::instant), 1u);
  EXPECT_EQ(count(trace, EventKind::counter), 0u);
  const Counts& n = recorder.counts();
  EXPECT_EQ(n.zones, 2u);
  EXPECT_EQ(n.untraced_zones, 1u);
  EXPECT_EQ(n.events, 3u);           // value 1, the first tick, value 3
  EXPECT_EQ(n.untraced_events, 3u);  // value 2, the counter, the second tick
}

// The cut is one moment of the merged stream for every thread: a zone another thread
// began before it is kept whole, its zones begun after it are not.
TEST(BoundedRecorder, TheCutIsOneMomentForEveryThread) {
  TraceBuilder b;
  const ThreadId one = b.thread("one", 1), two = b.thread("two", 2);
  const SiteId work = b.site("work"), step = b.site("step");
  b.begin(two, work, 100);
  for (std::uint64_t i = 0; i < 5; ++i) b.begin(one, step, 110 + i * 10).end(one, 115 + i * 10);
  b.begin(two, step, 200).end(two, 210).end(two, 300);
  BoundedRecorder recorder(0, 4);  // work, step x3; the fourth step cuts
  replay(b.build(), recorder);
  const RecordedTrace trace = recorder.trace();
  EXPECT_EQ(zones(trace),
            (std::vector<Zone>{{"work", 100, 300}, {"step", 110, 115}, {"step", 120, 125}, {"step", 130, 135}}));
  EXPECT_EQ(recorder.counts().untraced_zones, 3u);
  EXPECT_EQ(recorder.counts().cut_ns, 140u);
}

// An async span begun before the cut keeps its end (on any thread); one begun after goes.
TEST(BoundedRecorder, AsyncSpansBegunBeforeTheCutEnd) {
  TraceBuilder b;
  const ThreadId one = b.thread("one", 1), two = b.thread("two", 2);
  const SiteId begin = b.site("upload", SiteKind::async_begin), end = b.site("upload", SiteKind::async_end);
  const SiteId zone = b.site("z");
  b.async_begin(one, begin, 100, 7).begin(one, zone, 110).end(one, 120);
  b.async_begin(one, begin, 130, 8);  // the third item: cut
  b.async_end(two, end, 140, 7).async_end(two, end, 150, 8);
  BoundedRecorder recorder(0, 2);
  replay(b.build(), recorder);
  const RecordedTrace trace = recorder.trace();
  EXPECT_EQ(count(trace, EventKind::async_begin), 1u);
  ASSERT_EQ(count(trace, EventKind::async_end), 1u);
  for (const Event& e : trace.events) {
    if (e.kind == EventKind::async_end) {
      EXPECT_EQ(e.value.u, 7u);
    }
  }
  EXPECT_EQ(recorder.counts().untraced_events, 1u);
}

}  // namespace
}  // namespace ringtrace::bench
