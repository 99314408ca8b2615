// TraceBuilder and replay: the recorded-stream path that exporters' golden tests use.
#include <gtest/gtest.h>

#include <stdexcept>

#include "ringtrace/recorded_trace.hpp"
#include "ringtrace/ringtrace.hpp"
#include "support/validating_exporter.hpp"

namespace {

TEST(TraceBuilder, MergesThreadsInTimeOrderAndClosesOpenZones) {
  ringtrace::TraceBuilder b("proc");
  const auto main = b.thread("main", 100);
  const auto worker = b.thread("worker", 101);
  const auto op = b.site("op", ringtrace::SiteKind::zone, "a.cpp", 10, "f");
  const auto region = b.site("graph", ringtrace::SiteKind::region);
  b.begin(main, op, 100).end(main, 300);
  b.begin(worker, region, 150, 7).begin(worker, op, 160);  // left open
  const ringtrace::RecordedTrace trace = b.build(1000);
  ASSERT_EQ(trace.events.size(), 6u);
  EXPECT_EQ(trace.events[0].time_ns, 100u);
  EXPECT_EQ(trace.events[1].time_ns, 150u);
  EXPECT_EQ(trace.events[1].value.i, 7);
  EXPECT_NE(trace.events[1].flags & ringtrace::EventFlags::region, 0);
  EXPECT_EQ(trace.events[2].time_ns, 160u);
  EXPECT_EQ(trace.events[2].depth, 1u);
  EXPECT_EQ(trace.events[3].time_ns, 300u);
  EXPECT_EQ(trace.events[4].time_ns, 1000u);
  EXPECT_EQ(trace.events[4].site, op);
  EXPECT_NE(trace.events[4].flags & ringtrace::EventFlags::closed_at_stop, 0);
  EXPECT_EQ(trace.events[5].site, region);
  EXPECT_EQ(trace.events[5].value.i, 7);
  EXPECT_EQ(trace.stats.closed_at_stop, 2u);
  EXPECT_EQ(trace.sites[0].name, "ringtrace: dropped events");
  EXPECT_EQ(trace.process_name, "proc");
}

TEST(TraceBuilder, RejectsMisuseWithAClearError) {
  ringtrace::TraceBuilder b;
  const auto t = b.thread("t");
  const auto s = b.site("s");
  EXPECT_THROW(b.end(t, 10), std::logic_error);  // unbalanced end
  b.begin(t, s, 20);
  EXPECT_THROW(b.begin(t, s, 5), std::logic_error);  // time goes backwards
  EXPECT_THROW(b.begin(t + 1, s, 30), std::logic_error);
  EXPECT_THROW(b.begin(t, 99, 30), std::logic_error);
}

TEST(Replay, ALiveCaptureReplaysIdentically) {
  ringtrace::Session session;
  auto memory = std::make_shared<ringtrace::MemoryExporter>();
  session.add_exporter(memory);
  session.start();
  for (int i = 0; i < 50; ++i) {
    RINGTRACE_ZONE("a");
    RINGTRACE_COUNTER("i", i);
  }
  session.stop();
  const ringtrace::RecordedTrace live = memory->trace();
  ringtrace::MemoryExporter copy;
  ringtrace::replay(live, copy, 7);
  const ringtrace::RecordedTrace replayed = copy.trace();
  ASSERT_EQ(replayed.events.size(), live.events.size());
  for (std::size_t i = 0; i < live.events.size(); ++i) {
    EXPECT_EQ(replayed.events[i].time_ns, live.events[i].time_ns);
    EXPECT_EQ(replayed.events[i].kind, live.events[i].kind);
    EXPECT_EQ(replayed.sites[replayed.events[i].site].name, live.sites[live.events[i].site].name);
  }
  ringtrace::testing::ValidatingExporter validator;
  ringtrace::replay(live, validator);
  EXPECT_EQ(validator.nesting_errors, 0u);
  EXPECT_EQ(validator.threads.at(0).begins, 50u);
}

}  // namespace
