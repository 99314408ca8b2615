// The drainer's own allocations failing (issue 44: an exhausted address space made the
// drainer's first allocation of a ring's staging array throw, and the host ended in
// std::terminate). RINGTRACE_TEST_DRAINER_ALLOC_FAILURES makes those allocations fail as
// that did; the program must go on, threads under the block policy must not wait for a
// drainer that cannot make room, and what happened must be counted.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <cstdint>
#include <memory>
#include <span>
#include <sstream>

#include "ringtrace/exporters/binary_trace.hpp"
#include "ringtrace/exporters/table.hpp"
#include "ringtrace/ringtrace.hpp"

namespace {

constexpr int kZones = 50'000;  // 100,000 events: many times a 1,024-record ring

struct FailingStages {
  explicit FailingStages(const char* n) { ::setenv("RINGTRACE_TEST_DRAINER_ALLOC_FAILURES", n, 1); }
  ~FailingStages() { ::unsetenv("RINGTRACE_TEST_DRAINER_ALLOC_FAILURES"); }
};

ringtrace::Config small_blocking_rings() {
  ringtrace::Config config;
  config.overflow = ringtrace::OverflowPolicy::block;
  config.buffer_records = 1024;
  return config;
}

std::uint64_t zone_calls(const ringtrace::KeyAverages& t) {
  for (const ringtrace::TableRow& r : t.rows) {
    if (r.name == "z") return r.calls;
  }
  return 0;
}

struct ZonesRun {
  ringtrace::SessionStats stats;
  std::uint64_t zones = 0;  // "z" zones in the live table
};

// kZones zones on 1,024-record blocking rings, the drainer's first `failures` merges failing.
ZonesRun zones_with_failing_merges(const char* failures) {
  FailingStages failing(failures);
  ringtrace::Session session(small_blocking_rings());
  std::ostringstream text;
  const std::shared_ptr<ringtrace::Exporter> table = ringtrace::table_exporter(text);
  session.add_exporter(table);
  session.start();
  for (int i = 0; i < kZones; ++i) {
    RINGTRACE_ZONE("z");
  }
  session.stop();
  return {session.stats(), zone_calls(dynamic_cast<const ringtrace::TableExporter&>(*table).table())};
}

// Every staging array refused: the drainer never reads a ring. Without the fix the
// program ended in std::terminate (the drainer's bad_alloc); with the exception caught but
// threads still waiting, it would hang on its first full ring.
TEST(DrainerMemory, ADrainerThatCannotAllocateNeverEndsNorStopsTheProgram) {
  const ZonesRun run = zones_with_failing_merges("1000000000");
  const ringtrace::SessionStats& s = run.stats;
  // Here: the thread went through its 50,000 zones (it dropped at a full ring rather than
  // wait; how many it dropped is in its ring, which no pass read).
  EXPECT_GE(s.drainer_out_of_memory, 1u);
  EXPECT_EQ(s.recorded, 0u) << "no pass finished: nothing can have been delivered";
  EXPECT_EQ(run.zones, 0u);
}

// One refusal, then memory again: the pass that failed took nothing from the ring, the
// next ones deliver everything; what the thread dropped meanwhile is counted, so the
// zones delivered and the events dropped account for every event.
TEST(DrainerMemory, AfterAFailedPassTheDrainerGoesOnAndEveryEventIsAccountedFor) {
  const ZonesRun run = zones_with_failing_merges("1");
  const ringtrace::SessionStats& s = run.stats;
  EXPECT_EQ(s.drainer_out_of_memory, 1u);
  const std::uint64_t zones = run.zones;
  EXPECT_GT(zones, 0u);
  if (s.dropped == 0) {
    EXPECT_EQ(zones, static_cast<std::uint64_t>(kZones)) << "nothing dropped: every zone delivered";
  } else {
    EXPECT_LT(zones, static_cast<std::uint64_t>(kZones));
    EXPECT_GE(zones + s.dropped, static_cast<std::uint64_t>(kZones)) << "each zone lost is at least one event dropped";
  }
}

// Counts the events the exporters are given, but drop markers (not events recorded: their
// counts are in `dropped`).
class CountingExporter final : public ringtrace::Exporter {
 public:
  void on_events(std::span<const ringtrace::Event> events, const ringtrace::TraceContext&) override {
    for (const ringtrace::Event& e : events) events_ += e.kind != ringtrace::EventKind::dropped;
  }
  std::uint64_t events() const { return events_; }

 private:
  std::uint64_t events_ = 0;
};

struct DeliveryFailures {
  explicit DeliveryFailures(const char* n) { ::setenv("RINGTRACE_TEST_DRAINER_DELIVER_FAILURES", n, 1); }
  ~DeliveryFailures() { ::unsetenv("RINGTRACE_TEST_DRAINER_DELIVER_FAILURES"); }
};

struct CountedRun {
  ringtrace::SessionStats stats;
  std::uint64_t delivered = 0;
};

// kZones zones on 1,024-record blocking rings, the first `failures` batches failing after
// the rings were read.
CountedRun zones_with_failing_deliveries(const char* failures) {
  DeliveryFailures failing(failures);
  ringtrace::Session session(small_blocking_rings());
  const auto counting = std::make_shared<CountingExporter>();
  session.add_exporter(counting);
  session.start();
  for (int i = 0; i < kZones; ++i) {
    RINGTRACE_ZONE("z");
  }
  session.stop();
  return {session.stats(), counting->events()};
}

// A pass broken after it read the rings: what it had decoded and not delivered is counted
// (before, "how many events: unknown"), and every event the thread recorded is delivered,
// dropped, or counted lost. Without failures, the same run delivers all it recorded.
TEST(DrainerMemory, WhatABrokenPassHadReadIsCountedLost) {
  const CountedRun whole = zones_with_failing_deliveries("0");
  ASSERT_EQ(whole.stats.drainer_out_of_memory, 0u);
  ASSERT_EQ(whole.stats.dropped, 0u);
  ASSERT_EQ(whole.stats.recorded, 2u * kZones);
  ASSERT_EQ(whole.delivered, whole.stats.recorded) << "without failures every recorded event is delivered";

  const CountedRun broken = zones_with_failing_deliveries("3");
  const ringtrace::SessionStats& s = broken.stats;
  EXPECT_EQ(s.drainer_out_of_memory, 3u);
  EXPECT_GT(s.drainer_events_lost, 0u) << "the failures came after the rings were read";
  EXPECT_EQ(broken.delivered + s.drainer_events_lost, s.recorded)
      << "recorded = delivered + lost; closed at stop " << s.closed_at_stop << ", unbalanced ends " << s.unbalanced_ends
      << ", late " << s.late_events;
  EXPECT_EQ(s.recorded + s.dropped, 2u * kZones) << "every event the thread wrote: recorded or dropped";
}

}  // namespace
