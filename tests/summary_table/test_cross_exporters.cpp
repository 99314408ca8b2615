// The table's numbers agree with the pstats and folded-stacks exporters of the same
// session, to the nanosecond: per name, self time = pstats tottime = the sum of the
// folded lines ending in that frame; calls = ncalls; total (outermost activations) =
// pstats cumtime (primitive calls); the sums of self time agree across all three.
// Sessions: random forests with recursion on three threads, and a live session.
#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <sstream>
#include <string>

#include "ringtrace/exporters/folded_stacks.hpp"
#include "ringtrace/exporters/pstats.hpp"
#include "ringtrace/exporters/table.hpp"
#include "ringtrace/recorded_trace.hpp"
#include "ringtrace/ringtrace.hpp"
#include "summary_table/random_forest.hpp"

namespace ringtrace {
namespace {

// Leaf frame -> summed value of the folded lines (value = self ns).
std::map<std::string, std::uint64_t> folded_self_by_leaf(const RecordedTrace& trace, std::uint64_t& sum) {
  std::ostringstream out;
  FoldedStacksOptions options;
  options.value = FoldedValue::self_ns;
  auto exporter = folded_stacks_exporter(out, options);
  replay(trace, *exporter);
  std::map<std::string, std::uint64_t> by_leaf;
  std::istringstream lines(out.str());
  std::string line;
  sum = 0;
  while (std::getline(lines, line)) {
    if (line.empty()) continue;
    const std::size_t space = line.rfind(' ');
    const std::string stack = line.substr(0, space);
    const std::uint64_t value = std::stoull(line.substr(space + 1));
    const std::size_t semi = stack.rfind(';');
    by_leaf[semi == std::string::npos ? stack : stack.substr(semi + 1)] += value;
    sum += value;
  }
  return by_leaf;
}

void expect_agreement(const RecordedTrace& trace) {
  TableOptions options;
  options.row_limit = 0;
  const KeyAverages table = key_averages(trace, options);
  const PstatsTable pstats = pstats_table(trace);
  std::uint64_t folded_sum = 0;
  const std::map<std::string, std::uint64_t> folded = folded_self_by_leaf(trace, folded_sum);

  EXPECT_EQ(table.self_total_ns, pstats.total_self_ns());
  EXPECT_EQ(table.self_total_ns, folded_sum);
  std::map<std::string, PstatsFunction> by_name;
  for (const PstatsFunction& f : pstats.functions) {
    PstatsFunction& sum = by_name[f.name];
    sum.calls += f.calls;
    sum.self_ns += f.self_ns;
    sum.cumulative_ns += f.cumulative_ns;
  }
  ASSERT_EQ(by_name.size(), table.rows.size());
  for (const TableRow& r : table.rows) {
    SCOPED_TRACE(r.name);
    ASSERT_EQ(by_name.count(r.name), 1u);
    const PstatsFunction& p = by_name[r.name];
    EXPECT_EQ(r.self_ns, p.self_ns);
    EXPECT_EQ(r.calls, p.calls);
    EXPECT_EQ(r.total_ns, p.cumulative_ns);  // one site per name: primitive calls = outermost activations
    const auto it = folded.find(r.name);
    EXPECT_EQ(r.self_ns, it == folded.end() ? 0 : it->second);
  }
}

class CrossExporters : public ::testing::TestWithParam<int> {};

TEST_P(CrossExporters, TablePstatsAndFoldedStacksAgreeOnRandomForests) {
  expect_agreement(testing::make_forest(static_cast<std::uint64_t>(GetParam()) * 7919, 3).trace);
}

INSTANTIATE_TEST_SUITE_P(Seeds, CrossExporters, ::testing::Values(1, 2, 3, 4));

// A recording cut off in the middle (no ends for the zones open at the cut): every
// exporter closes those zones the same way (ZoneTracker::close_open at the stop time),
// so they still agree, and every begin in the prefix is counted as a call.
TEST_P(CrossExporters, AgreeOnAStreamTruncatedWithZonesOpen) {
  RecordedTrace trace = testing::make_forest(static_cast<std::uint64_t>(GetParam()) * 104729, 3).trace;
  ASSERT_GT(trace.events.size(), 20u);
  trace.events.resize(trace.events.size() * 2 / 3);
  std::uint64_t begins = 0, depth_at_cut = 0;
  for (const Event& e : trace.events) begins += e.kind == EventKind::zone_begin;
  for (const Event& e : trace.events) depth_at_cut += e.kind == EventKind::zone_begin ? 1 : 0;
  for (const Event& e : trace.events) depth_at_cut -= e.kind == EventKind::zone_end ? 1 : 0;
  ASSERT_GT(depth_at_cut, 0u) << "the cut should leave zones open";
  trace.clock.stop_ns = trace.events.back().time_ns + 1000;
  expect_agreement(trace);
  std::uint64_t calls = 0;
  for (const PstatsFunction& f : pstats_table(trace).functions) calls += f.calls;
  EXPECT_EQ(calls, begins);
}

int fib(int n) {
  RINGTRACE_ZONE("fib");
  return n < 2 ? n : fib(n - 1) + fib(n - 2);
}

TEST(CrossExportersLive, AgreeOnALiveSession) {
  auto memory = std::make_shared<MemoryExporter>();
  Session session;
  session.add_exporter(memory);
  session.start();
  for (int i = 0; i < 30; ++i) {
    RINGTRACE_ZONE("step");
    {
      RINGTRACE_REGION("graph", i % 2);
      RINGTRACE_ZONE("matmul");
    }
    fib(6);
  }
  session.stop();
  const RecordedTrace trace = memory->trace();
  ASSERT_EQ(trace.stats.dropped, 0u);
  expect_agreement(trace);
  const KeyAverages table = key_averages(trace);
  bool found = false;
  for (const TableRow& r : table.rows) {
    if (r.name != "fib") continue;
    found = true;
    EXPECT_EQ(r.calls, 30u * 25u);  // fib(6) makes 25 calls
  }
  EXPECT_TRUE(found);
}

}  // namespace
}  // namespace ringtrace
