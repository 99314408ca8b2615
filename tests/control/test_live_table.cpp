// The live table of `ringtrace top` (runtime/launch/live_table.hpp) joined to a running
// session as a tap (runtime/live/taps.hpp): each zone counted in the interval it ends in,
// the totals since it joined, nothing of what began before it joined, and the session's
// own exporters unchanged.
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "live_table.hpp"
#include "outside.hpp"
#include "ringtrace/ringtrace.hpp"
#include "thread_registry.hpp"  // run_drainer_pass

namespace {

using namespace std::chrono_literals;

std::map<std::string, std::uint64_t> calls_of(const ringtrace::KeyAverages& table) {
  std::map<std::string, std::uint64_t> calls;
  for (const ringtrace::TableRow& r : table.rows) calls[r.name] = r.calls;
  return calls;
}

TEST(LiveTable, CountsEachZoneInTheIntervalItEndsAndNothingBegunBeforeItJoined) {
  auto own = std::make_shared<ringtrace::MemoryExporter>();
  ringtrace::Session session;
  session.add_exporter(own);
  session.start();
  RINGTRACE_ZONE_BEGIN("early");  // open, and delivered, when the table joins: never counted
  ASSERT_TRUE(ringtrace::detail::run_drainer_pass());
  auto table = std::make_shared<ringtrace::detail::LiveTable>(1'000'000);
  std::string why;
  ASSERT_TRUE(ringtrace::detail::attach_tap(table, why)) << why;
  ASSERT_TRUE(ringtrace::detail::run_drainer_pass());  // the tap joins at a pass's start
  std::optional<ringtrace::detail::LiveSample> s;
  {
    RINGTRACE_ZONE("outer");  // open across the first sample
    for (int i = 0; i < 100; ++i) {
      RINGTRACE_ZONE("a");
    }
    ASSERT_TRUE(ringtrace::detail::run_drainer_pass());  // everything recorded so far delivered
    s = table->sample(10s);
    ASSERT_TRUE(s.has_value());
    EXPECT_EQ(calls_of(s->interval), (std::map<std::string, std::uint64_t>{{"a", 100}}));
    EXPECT_EQ(calls_of(s->total), (std::map<std::string, std::uint64_t>{{"a", 100}}));
    EXPECT_LT(s->begin_ns, s->end_ns);
  }
  RINGTRACE_ZONE_END();  // "early"
  for (int i = 0; i < 50; ++i) {
    RINGTRACE_ZONE("b");
  }
  ASSERT_TRUE(ringtrace::detail::run_drainer_pass());
  const std::uint64_t first_end = s->end_ns;
  s = table->sample(10s);
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(calls_of(s->interval), (std::map<std::string, std::uint64_t>{{"b", 50}, {"outer", 1}}));
  EXPECT_EQ(calls_of(s->total), (std::map<std::string, std::uint64_t>{{"a", 100}, {"b", 50}, {"outer", 1}}));
  EXPECT_EQ(s->begin_ns, first_end);  // intervals follow one another
  ringtrace::detail::detach_tap(table.get());
  session.stop();
  EXPECT_FALSE(table->sample(100ms).has_value());  // detached: nothing more
  // The session's own exporter got every zone, "early" too.
  std::map<std::string, int> begins;
  const ringtrace::RecordedTrace trace = own->trace();
  for (const ringtrace::Event& e : trace.events) {
    if (e.kind == ringtrace::EventKind::zone_begin) ++begins[trace.sites.at(e.site).name];
  }
  EXPECT_EQ(begins["a"], 100);
  EXPECT_EQ(begins["b"], 50);
  EXPECT_EQ(begins["outer"], 1);
  EXPECT_EQ(begins["early"], 1);
}

TEST(LiveTable, EndsWithItsSession) {
  ringtrace::Session session;
  session.start();
  auto table = std::make_shared<ringtrace::detail::LiveTable>(1'000'000);
  std::string why;
  ASSERT_TRUE(ringtrace::detail::attach_tap(table, why)) << why;
  session.stop();
  EXPECT_TRUE(table->ended());
  EXPECT_FALSE(table->sample(10s).has_value());
  EXPECT_FALSE(ringtrace::detail::attach_tap(table, why));
  EXPECT_EQ(why, "no session is running");
}

}  // namespace
