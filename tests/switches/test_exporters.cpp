// The exporters' on-CPU numbers (Config::context_switches) on a hand-built stream whose
// every value is known: the key-averages table's on-CPU columns, the captured-ops
// summary's on-CPU share, folded stacks and pstats written with on-CPU times (and saying
// so), and the flight recorder's trigger on a zone's on-CPU or off-CPU time. The
// expected values are written out by hand below and cross-checked with the test's own
// computation from the events (session_support.hpp's zone_times).
#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <vector>

#include "flight_recorder.hpp"  // runtime/streams: the recorder alone
#include "ringtrace/exporters/folded_stacks.hpp"
#include "ringtrace/exporters/ops_summary.hpp"
#include "ringtrace/exporters/pstats.hpp"
#include "ringtrace/exporters/table.hpp"
#include "ringtrace/recorded_trace.hpp"
#include "session_support.hpp"

namespace {

using namespace ringtrace;
using switch_session::zone_times;
using switch_session::ZoneTimes;

// Thread "t" (switches tracked from 1 us):
//   outer  10..200 us: off 20..50 (in its self time) and 70..80 (inside inner #1)
//     inner  60..100 us (off 10 us: on 30 us)
//     inner 110..130 us (on 20 us)
//   outer 300..420 us: off 310..410 (on 20 us)
// Thread "u" (no switches ever): plain 0.1..0.6 us, closed before any switch event in
// the stream: its on-CPU time is its wall time.
//
//            calls  wall total  on-CPU total  on-CPU self  on-CPU avg  on-CPU p50/p99
//   outer      2      310 us       170 us        120 us       85 us     20 / 150 us
//   inner      2       60 us        50 us         50 us       25 us     20 /  30 us
//   plain      1      0.5 us       0.5 us        0.5 us      0.5 us
constexpr std::uint64_t us = 1000;

RecordedTrace scenario() {
  TraceBuilder b("switches");
  const ThreadId t = b.thread("t", 100), u = b.thread("u", 101);
  const SiteId outer = b.site("outer"), inner = b.site("inner"), plain = b.site("plain");
  b.begin(u, plain, 100).end(u, 600);
  b.switch_in(t, 1 * us, SwitchBits::stream_start);
  b.begin(t, outer, 10 * us);
  b.switch_out(t, 20 * us).switch_in(t, 50 * us);
  b.begin(t, inner, 60 * us);
  b.switch_out(t, 70 * us, SwitchBits::preempted).switch_in(t, 80 * us);
  b.end(t, 100 * us);
  b.begin(t, inner, 110 * us).end(t, 130 * us);
  b.end(t, 200 * us);
  b.begin(t, outer, 300 * us);
  b.switch_out(t, 310 * us).switch_in(t, 410 * us);
  b.end(t, 420 * us);
  return b.build(500 * us);
}

// A scenario without any switch: the on-CPU columns are left out everywhere.
RecordedTrace without_switches() {
  TraceBuilder b("plain");
  const ThreadId t = b.thread("t", 100);
  const SiteId outer = b.site("outer");
  b.begin(t, outer, 10 * us).end(t, 200 * us);
  return b.build(300 * us);
}

const TableRow& row(const KeyAverages& table, const std::string& name) {
  for (const TableRow& r : table.rows) {
    if (r.name == name) return r;
  }
  throw std::runtime_error("no row " + name);
}

// Percentiles come from a histogram: within 1/128 of the nearest-rank value.
void expect_percentile(std::uint64_t got, std::uint64_t want, const char* what) {
  EXPECT_NEAR(static_cast<double>(got), static_cast<double>(want), static_cast<double>(want) / 128 + 1) << what;
}

TEST(SwitchExporters, TheTestsOwnComputationAgreesWithTheScenario) {
  std::map<std::string, std::vector<std::uint64_t>> on;
  for (const ZoneTimes& z : zone_times(scenario())) on[z.name].push_back(z.end_ns - z.begin_ns - z.off_ns);
  EXPECT_EQ(on["outer"], (std::vector<std::uint64_t>{150 * us, 20 * us}));
  EXPECT_EQ(on["inner"], (std::vector<std::uint64_t>{30 * us, 20 * us}));
  EXPECT_EQ(on["plain"], (std::vector<std::uint64_t>{500}));
}

TEST(SwitchExporters, TableHasOnCpuColumns) {
  const KeyAverages table = key_averages(scenario());
  ASSERT_TRUE(table.on_cpu);
  const TableRow& outer = row(table, "outer");
  EXPECT_EQ(outer.calls, 2u);
  EXPECT_EQ(outer.total_ns, 310 * us);  // wall, unchanged
  EXPECT_EQ(outer.on_cpu_total_ns, 170 * us);
  EXPECT_EQ(outer.on_cpu_self_ns, 120 * us);
  EXPECT_EQ(outer.on_cpu_avg_ns, 85 * us);
  expect_percentile(outer.on_cpu_p50_ns, 20 * us, "outer p50");
  expect_percentile(outer.on_cpu_p99_ns, 150 * us, "outer p99");
  EXPECT_EQ(outer.on_cpu_max_ns, 150 * us);
  EXPECT_EQ(outer.max_ns, 190 * us);
  const TableRow& inner = row(table, "inner");
  EXPECT_EQ(inner.on_cpu_total_ns, 50 * us);
  EXPECT_EQ(inner.on_cpu_self_ns, 50 * us);
  EXPECT_EQ(inner.on_cpu_avg_ns, 25 * us);
  expect_percentile(inner.on_cpu_p50_ns, 20 * us, "inner p50");
  expect_percentile(inner.on_cpu_p99_ns, 30 * us, "inner p99");
  const TableRow& plain = row(table, "plain");  // closed before the first switch
  EXPECT_EQ(plain.on_cpu_total_ns, 500u);
  EXPECT_EQ(plain.on_cpu_self_ns, 500u);
  EXPECT_EQ(plain.on_cpu_p50_ns, 500u);

  // Every form shows them.
  TableOptions text;
  text.time_unit = TableOptions::TimeUnit::us;
  const std::string t = format_table(table, text);
  EXPECT_NE(t.find("On-CPU Self"), std::string::npos) << t;
  EXPECT_NE(t.find("On-CPU p99"), std::string::npos) << t;
  TableOptions csv;
  csv.format = TableOptions::Format::csv;
  const std::string c = format_table(table, csv);
  EXPECT_NE(c.find(",on_cpu_self_ns,on_cpu_total_ns,on_cpu_avg_ns,on_cpu_p50_ns,on_cpu_p99_ns\r\n"), std::string::npos)
      << c;
  EXPECT_NE(c.find(",120000,170000,85000,"), std::string::npos) << c;
  TableOptions json;
  json.format = TableOptions::Format::json;
  const std::string j = format_table(table, json);
  EXPECT_NE(j.find("\"on_cpu\":true"), std::string::npos);
  EXPECT_NE(j.find("\"on_cpu_total_ns\":170000"), std::string::npos) << j;

  // Sorting by an on-CPU column.
  TableOptions by_cpu;
  by_cpu.sort_by = TableOptions::SortBy::on_cpu_self;
  const KeyAverages sorted = key_averages(scenario(), by_cpu);
  ASSERT_EQ(sorted.rows.size(), 3u);
  EXPECT_EQ(sorted.rows[0].name, "outer");
  EXPECT_EQ(sorted.rows[1].name, "inner");

  // Without switches: no on-CPU columns in any form.
  const KeyAverages wall = key_averages(without_switches());
  EXPECT_FALSE(wall.on_cpu);
  EXPECT_EQ(format_table(wall, csv).find("on_cpu"), std::string::npos);
  EXPECT_EQ(format_table(wall).find("On-CPU"), std::string::npos);
}

// The live exporter gives the replayed trace's numbers (the table() path that starts the
// on-CPU groups at the first close after a switch, and the one that starts them at the end).
TEST(SwitchExporters, TableExporterLiveMatches) {
  std::ostringstream sink;
  auto exporter = std::dynamic_pointer_cast<TableExporter>(table_exporter(sink));
  replay(scenario(), *exporter, 3);  // small batches
  const KeyAverages live = exporter->table();
  ASSERT_TRUE(live.on_cpu);
  EXPECT_EQ(row(live, "outer").on_cpu_self_ns, 120 * us);
  EXPECT_EQ(row(live, "inner").on_cpu_total_ns, 50 * us);
  // A stream whose only zone closed before its one switch.
  TraceBuilder b;
  const ThreadId t = b.thread("t", 1);
  b.begin(t, b.site("early"), 10).end(t, 20);
  b.switch_out(t, 30).switch_in(t, 40);
  const KeyAverages late = key_averages(b.build(50));
  ASSERT_TRUE(late.on_cpu);
  EXPECT_EQ(row(late, "early").on_cpu_total_ns, 10u);
}

TEST(SwitchExporters, OpsSummaryHasAnOnCpuShare) {
  // Ops "outer" (top-level) inside a region for the first call only.
  TraceBuilder b;
  const ThreadId t = b.thread("t", 1);
  const SiteId region = b.site("graph"), op = b.site("op");
  b.switch_in(t, 1 * us, SwitchBits::stream_start);
  b.begin(t, region, 5 * us, 7);
  b.begin(t, op, 10 * us).switch_out(t, 20 * us).switch_in(t, 80 * us).end(t, 110 * us);  // wall 100, on 40
  b.end(t, 120 * us);
  b.begin(t, op, 200 * us).end(t, 300 * us);  // wall 100, on 100, not captured
  OpsSummaryOptions options;
  options.region_names = {"graph"};
  const OpsSummary s = ops_summary(b.build(400 * us), options);
  ASSERT_TRUE(s.total.on_cpu);
  EXPECT_EQ(s.total.captured_ns, 100 * us);
  EXPECT_EQ(s.total.total_ns, 200 * us);
  EXPECT_EQ(s.total.captured_on_cpu_ns, 40 * us);
  EXPECT_EQ(s.total.total_on_cpu_ns, 140 * us);
  EXPECT_NEAR(s.total.on_cpu_time_percent(), 100.0 * 40 / 140, 1e-9);
  const std::string line = one_line(s.total);
  EXPECT_NE(line.find("50% time 29% on-CPU time"), std::string::npos) << line;
  OpsSummaryOptions csv = options;
  csv.format = OpsSummaryOptions::Format::csv;
  const std::string c = format_ops_summary(s, csv);
  EXPECT_NE(c.find(",captured_on_cpu_ns,total_on_cpu_ns,on_cpu_time_percent\r\n"), std::string::npos) << c;
  EXPECT_NE(c.find(",40000,140000,"), std::string::npos) << c;
  EXPECT_NE(format_ops_summary(s, options).find("On-CPU time %"), std::string::npos);
  EXPECT_FALSE(ops_summary(without_switches()).total.on_cpu);
}

// Folded lines "a;b value": the values, by stack.
std::map<std::string, std::uint64_t> folded(const RecordedTrace& trace, FoldedStacksOptions options) {
  std::ostringstream out;
  auto exporter = folded_stacks_exporter(out, options);
  replay(trace, *exporter);
  std::map<std::string, std::uint64_t> lines;
  std::istringstream in(out.str());
  std::string line;
  while (std::getline(in, line)) {
    const std::size_t space = line.rfind(' ');
    lines[line.substr(0, space)] += std::stoull(line.substr(space + 1));
  }
  return lines;
}

TEST(SwitchExporters, FoldedStacksOnCpuSayItAndSumToOnCpu) {
  FoldedStacksOptions options;
  options.on_cpu = true;
  const auto on = folded(scenario(), options);
  const std::map<std::string, std::uint64_t> want_on = {
      {"[on-CPU time];outer", 120 * us}, {"[on-CPU time];outer;inner", 50 * us}, {"[on-CPU time];plain", 500}};
  EXPECT_EQ(on, want_on);
  // Self values sum to the on-CPU time of the outermost zones (170 us + 0.5 us).
  std::uint64_t sum = 0;
  for (const auto& line : on) sum += line.second;
  EXPECT_EQ(sum, 170 * us + 500);
  options.value = FoldedValue::total_ns;
  EXPECT_EQ(folded(scenario(), options)["[on-CPU time];outer"], 170 * us);
  // Wall times by default, without the frame.
  const auto wall = folded(scenario(), {});
  const std::map<std::string, std::uint64_t> want_wall = {
      {"outer", 250 * us}, {"outer;inner", 60 * us}, {"plain", 500}};
  EXPECT_EQ(wall, want_wall);
}

TEST(SwitchExporters, PstatsOnCpuSayItAndSumToOnCpu) {
  const RecordedTrace trace = scenario();
  const RecordedTraceContext context(trace);
  PstatsAggregator on;
  on.set_on_cpu(true);
  on.add(trace.events, context);
  on.finish(500 * us);
  const PstatsTable table = on.table();
  ASSERT_TRUE(table.on_cpu);
  std::map<std::string, PstatsFunction> f;
  for (const PstatsFunction& fn : table.functions) f[fn.name] = fn;
  EXPECT_EQ(f["outer"].self_ns, 120 * us);
  EXPECT_EQ(f["outer"].cumulative_ns, 170 * us);
  EXPECT_EQ(f["inner"].self_ns, 50 * us);
  EXPECT_EQ(f["inner"].cumulative_ns, 50 * us);
  EXPECT_EQ(f["plain"].self_ns, 500u);
  std::uint64_t self = 0;
  for (const PstatsFunction& fn : table.functions) self += fn.self_ns;
  EXPECT_EQ(self, 170 * us + 500);
  // outer -> inner edge
  ASSERT_EQ(table.edges.size(), 1u);
  EXPECT_EQ(table.edges[0].cumulative_ns, 50 * us);
  // The file says so (an entry of no calls), and so does the report.
  const std::string file = encode_pstats(table);
  EXPECT_NE(file.find("<ringtrace: times are on-CPU>"), std::string::npos);
  EXPECT_NE(format_pstats_report(table).find("Times are on-CPU"), std::string::npos);
  // Wall times by default, and no note.
  PstatsAggregator wall;
  wall.add(trace.events, context);
  wall.finish(500 * us);
  const PstatsTable w = wall.table();
  EXPECT_FALSE(w.on_cpu);
  EXPECT_EQ(encode_pstats(w).find("on-CPU"), std::string::npos);
  for (const PstatsFunction& fn : w.functions) {
    if (fn.name == "outer") {
      EXPECT_EQ(fn.self_ns, 250 * us);
    }
  }
}

// The flight recorder's trigger, on a stream of "request" zones: one that waited (wall
// 100 us, off-CPU 90 us) and one that ran (wall 100 us, all on the CPU).
struct Snapshots {
  std::mutex mutex;
  std::vector<std::string> reasons;
  WindowExporterFactory factory() {
    return [this](const WindowInfo& info) {
      std::lock_guard<std::mutex> lock(mutex);
      reasons.push_back(info.reason);
      return std::make_shared<MemoryExporter>();
    };
  }
};

std::vector<std::string> triggered(Trigger::Measure measure, std::uint64_t longer_than_ns) {
  TraceBuilder b;
  const ThreadId t = b.thread("t", 1);
  const SiteId request = b.site("request");
  b.switch_in(t, 1 * us, SwitchBits::stream_start);
  b.begin(t, request, 10 * us).switch_out(t, 15 * us).switch_in(t, 105 * us).end(t, 110 * us);  // waited
  b.begin(t, request, 50000 * us).end(t, 50100 * us);                                           // ran
  b.begin(t, b.site("other"), 60000 * us).end(t, 60100 * us);
  Config config;
  config.flight_recorder.keep = std::chrono::milliseconds(5);
  config.flight_recorder.min_interval = std::chrono::milliseconds(0);
  config.trigger.zone = "request";
  config.trigger.longer_than = std::chrono::nanoseconds(longer_than_ns);
  config.trigger.measure = measure;
  Snapshots snapshots;
  detail::FlightRecorderHandle recorder = detail::make_flight_recorder(config, {snapshots.factory()});
  replay(b.build(100000 * us), *detail::as_exporter(recorder));
  return snapshots.reasons;
}

TEST(SwitchExporters, FlightRecorderTriggersOnOffCpuAndOnCpuTime) {
  using M = Trigger::Measure;
  // Off-CPU longer than 50 us: the request that waited, not the one that ran.
  EXPECT_EQ(triggered(M::off_cpu, 50 * us), (std::vector<std::string>{"zone 'request' waited 0.090 ms off-CPU"}));
  // On-CPU longer than 50 us: the one that ran.
  EXPECT_EQ(triggered(M::on_cpu, 50 * us), (std::vector<std::string>{"zone 'request' ran 0.100 ms on-CPU"}));
  // Wall longer than 50 us: both.
  EXPECT_EQ(triggered(M::wall, 50 * us).size(), 2u);
  // Off-CPU longer than the 90 us waited: none.
  EXPECT_TRUE(triggered(M::off_cpu, 90 * us).empty());
}

}  // namespace
