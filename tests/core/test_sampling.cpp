// 1-in-N sampling (RINGTRACE_ZONE_SAMPLED, Config::sample_every): exact counts, whole
// zones, nested sites recorded exactly with their sampled ancestors, deterministic per
// thread, the rate in effect visible to exporters and kept in the binary file.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "ringtrace/exporters/binary_trace.hpp"
#include "ringtrace/exporters/folded_stacks.hpp"
#include "ringtrace/exporters/ops_summary.hpp"
#include "ringtrace/exporters/pstats.hpp"
#include "ringtrace/exporters/table.hpp"
#include "ringtrace/recorded_trace.hpp"
#include "ringtrace/ringtrace.hpp"
#include "support/validating_exporter.hpp"

namespace ringtrace {
namespace {

using testing::test_scale;

struct Counts {
  std::map<std::string, std::uint64_t> begins, ends, instants, counters, args;
  std::map<std::string, std::uint32_t> rate;  // TraceContext::site().sample_every
};

Counts count(const RecordedTrace& t) {
  Counts c;
  for (const Event& e : t.events) {
    const std::string& name = t.sites[e.site].name;
    switch (e.kind) {
      case EventKind::zone_begin:
        ++c.begins[name];
        break;
      case EventKind::zone_end:
        ++c.ends[name];
        break;
      case EventKind::instant:
        ++c.instants[name];
        break;
      case EventKind::counter:
        ++c.counters[name];
        break;
      case EventKind::arg:
        ++c.args[name];
        break;
      default:
        break;
    }
  }
  for (const RecordedSite& s : t.sites) c.rate[s.name] = s.sample_every;
  return c;
}

// The case: N = 10 over 1M zones at one site keeps exactly 100,000, never a
// half zone; what the sampled zone holds (a plain zone, a nested sampled site, an
// instant, a counter, a value) is recorded exactly in the zones kept.
TEST(Sampling, OneInTenKeepsExactlyATenthWithWholeSubtrees) {
  const std::uint64_t n = std::max<std::uint64_t>(20000, static_cast<std::uint64_t>(1000000 * test_scale())) / 20 * 20;
  Config config;
  config.overflow = OverflowPolicy::block;  // lossless: what is missing was sampled out
  Session session(config);
  auto memory = std::make_shared<MemoryExporter>();
  auto validator = std::make_shared<testing::ValidatingExporter>();
  session.add_exporter(memory);
  session.add_exporter(validator);
  session.start();
  for (std::uint64_t i = 0; i < n; ++i) {
    RINGTRACE_ZONE_SAMPLED("outer", 10);
    RINGTRACE_ZONE_VALUE("i", i);
    RINGTRACE_INSTANT("inside");
    RINGTRACE_COUNTER("gauge", i);
    {
      RINGTRACE_ZONE("child");
      RINGTRACE_ZONE_SAMPLED("nested", 2);  // one in two of the children of kept outers
    }
  }
  { RINGTRACE_ZONE("after"); }  // recording resumes after the last sampled-out zone
  session.stop();
  const SessionStats stats = session.stats();
  EXPECT_EQ(stats.dropped, 0u);
  EXPECT_EQ(validator->nesting_errors, 0u);
  const RecordedTrace trace = memory->trace();
  const Counts c = count(trace);
  EXPECT_EQ(c.begins.at("outer"), n / 10);
  EXPECT_EQ(c.ends.at("outer"), n / 10);
  EXPECT_EQ(c.begins.at("child"), n / 10);
  EXPECT_EQ(c.begins.at("nested"), n / 20);
  EXPECT_EQ(c.ends.at("nested"), n / 20);
  EXPECT_EQ(c.instants.at("inside"), n / 10);
  EXPECT_EQ(c.counters.at("gauge"), n / 10);
  EXPECT_EQ(c.args.at("i"), n / 10);
  EXPECT_EQ(c.begins.at("after"), 1u);
  EXPECT_EQ(c.rate.at("outer"), 10u);
  EXPECT_EQ(c.rate.at("nested"), 2u);
  EXPECT_EQ(c.rate.at("child"), 1u);
  EXPECT_EQ(stats.recorded, trace.events.size());
  // The first zone is recorded, then every tenth: the values say which.
  std::uint64_t expected = 0;
  for (const Event& e : trace.events) {
    if (e.kind != EventKind::arg) continue;
    ASSERT_EQ(e.value.u, expected);
    expected += 10;
  }
}

// Per thread and per site: each thread keeps its own first zone and every Nth after it.
TEST(Sampling, DeterministicPerThreadAndSite) {
  Session session;
  auto memory = std::make_shared<MemoryExporter>();
  session.add_exporter(memory);
  session.start();
  std::vector<std::thread> threads;
  for (int t = 0; t < 3; ++t) {
    threads.emplace_back([] {
      for (int i = 0; i < 700; ++i) {
        {
          RINGTRACE_ZONE_SAMPLED("seven", 7);
          RINGTRACE_ZONE_VALUE("i", i);
        }
        RINGTRACE_ZONE_SAMPLED("five", 5);
      }
    });
  }
  for (auto& t : threads) t.join();
  session.stop();
  const RecordedTrace trace = memory->trace();
  std::map<ThreadId, std::vector<std::uint64_t>> values;
  std::map<ThreadId, int> fives;
  for (const Event& e : trace.events) {
    if (e.kind == EventKind::arg) values[e.thread].push_back(e.value.u);
    if (e.kind == EventKind::zone_begin && trace.sites[e.site].name == "five") ++fives[e.thread];
  }
  ASSERT_EQ(values.size(), 3u);
  for (const auto& [thread, v] : values) {
    ASSERT_EQ(v.size(), 100u);
    for (std::size_t k = 0; k < v.size(); ++k) EXPECT_EQ(v[k], 7 * k);
    EXPECT_EQ(fives[thread], 140);
  }
}

// A site that gives 0 takes Config::sample_every; the binary file keeps each site's rate.
TEST(Sampling, TheSessionsDefaultRateAndTheBinaryFile) {
  const std::filesystem::path file =
      std::filesystem::temp_directory_path() / ("ringtrace_sampling_" + std::to_string(::getpid()) + ".rtrace");
  Config config;
  config.sample_every = 4;
  Session session(config);
  auto memory = std::make_shared<MemoryExporter>();
  session.add_exporter(memory);
  session.add_exporter(binary_trace_exporter(file));
  session.start();
  for (int i = 0; i < 1000; ++i) {
    RINGTRACE_ZONE_SAMPLED("default", 0);
    RINGTRACE_ZONE("inner");
  }
  session.stop();
  MemoryExporter replayed;
  const ReplayResult result = replay_file(file, replayed);
  std::filesystem::remove(file);
  ASSERT_TRUE(result.complete) << result.problem;
  for (const RecordedTrace& t : {memory->trace(), replayed.trace()}) {
    const Counts c = count(t);
    EXPECT_EQ(c.begins.at("default"), 250u);
    EXPECT_EQ(c.begins.at("inner"), 250u);
    EXPECT_EQ(c.rate.at("default"), 4u);
    EXPECT_EQ(c.rate.at("inner"), 1u);
  }
}

// Three recorded zones of a site sampled one in ten, each holding a region with an op,
// and one zone of a site not sampled: with estimates, every aggregator counts what is
// inside a sampled zone ten times, and says so where its format has room.
RecordedTrace sampled_trace() {
  TraceBuilder b;
  const ThreadId main = b.thread("main", 7);
  const SiteId step = b.site("step", SiteKind::zone, "f.cpp", 1, "", "", 0, 10);
  const SiteId graph = b.site("graph", SiteKind::region, "f.cpp", 2);
  const SiteId op = b.site("op", SiteKind::zone, "f.cpp", 3);
  const SiteId plain = b.site("plain", SiteKind::zone, "f.cpp", 4);
  for (std::uint64_t k = 0; k < 3; ++k) {
    const std::uint64_t t = 1000 + k * 1000;
    b.begin(main, step, t).begin(main, graph, t + 10, 1).begin(main, op, t + 20);
    b.end(main, t + 60).end(main, t + 100).end(main, t + 200);
  }
  b.begin(main, plain, 5000).end(main, 5050);
  return b.build(6000);
}

TEST(Sampling, EstimatesScaleSampledSitesInEveryAggregator) {
  const RecordedTrace trace = sampled_trace();
  ASSERT_EQ(trace.sites[1].sample_every, 10u);
  ASSERT_NE(trace.sites[1].options & SiteOptions::sampled, 0);

  TableOptions table_options;
  table_options.estimate_sampled = true;
  const KeyAverages table = key_averages(trace, table_options);
  std::map<std::string, TableRow> rows;
  for (const TableRow& r : table.rows) rows[r.name] = r;
  EXPECT_TRUE(table.estimated);
  EXPECT_EQ(rows.at("step").calls, 30u);
  EXPECT_EQ(rows.at("step").total_ns, 6000u);
  EXPECT_EQ(rows.at("step").self_ns, 3300u);
  EXPECT_EQ(rows.at("graph").calls, 30u);
  EXPECT_EQ(rows.at("graph").self_ns, 1500u);
  EXPECT_EQ(rows.at("op").calls, 30u);
  EXPECT_EQ(rows.at("op").total_ns, 1200u);
  EXPECT_EQ(rows.at("op").p50_ns, 40u);
  EXPECT_EQ(rows.at("plain").calls, 1u);
  EXPECT_EQ(table.self_total_ns, 3300u + 1500u + 1200u + 50u);
  EXPECT_NE(format_table(table, table_options).find("Estimates:"), std::string::npos);
  table_options.format = TableOptions::Format::json;
  EXPECT_NE(format_table(table, table_options).find("\"estimated\":true"), std::string::npos);
  // Without the option: what was recorded, and no note.
  const KeyAverages plain_table = key_averages(trace);
  EXPECT_FALSE(plain_table.estimated);
  for (const TableRow& r : plain_table.rows) {
    if (r.name == "step") {
      EXPECT_EQ(r.calls, 3u);
    }
  }
  EXPECT_EQ(format_table(plain_table).find("Estimates:"), std::string::npos);

  PstatsAggregator pstats;
  pstats.set_estimate_sampled(true);
  {
    RecordedTraceContext context(trace);
    pstats.add(trace.events, context);
  }
  pstats.finish(trace.stats.clock.stop_ns);
  const PstatsTable p = pstats.table();
  EXPECT_TRUE(p.estimated);
  const auto& step_row = p.functions.at(static_cast<std::size_t>(p.find("f.cpp", 1, "step")));
  EXPECT_EQ(step_row.calls, 30u);
  EXPECT_EQ(step_row.primitive_calls, 30u);
  EXPECT_EQ(step_row.self_ns, 3300u);
  EXPECT_EQ(step_row.cumulative_ns, 6000u);
  EXPECT_EQ(p.functions.at(static_cast<std::size_t>(p.find("f.cpp", 3, "op"))).calls, 30u);
  for (const PstatsEdge& e : p.edges) EXPECT_EQ(e.calls, 30u);
  EXPECT_NE(format_pstats_report(p).find("Estimates:"), std::string::npos);

  std::ostringstream folded;
  FoldedStacksOptions folded_options;
  folded_options.value = FoldedValue::calls;
  folded_options.estimate_sampled = true;
  replay(trace, *folded_stacks_exporter(folded, folded_options));
  EXPECT_EQ(folded.str(), "plain 1\nstep 30\nstep;graph 30\nstep;graph;op 30\n");

  OpsSummaryOptions ops_options;
  ops_options.estimate_sampled = true;
  ops_options.transparent_names = {"step"};
  const OpsSummary ops = ops_summary(trace, ops_options);
  EXPECT_TRUE(ops.estimated);
  EXPECT_EQ(ops.total.graph_calls, 30u);
  EXPECT_EQ(ops.total.captured_ops, 30u);
  EXPECT_EQ(ops.total.captured_ns, 1200u);
  EXPECT_EQ(ops.total.total_ops, 31u);
  EXPECT_NE(format_ops_summary(ops, ops_options).find("Estimates:"), std::string::npos);
}

// Each session starts a sampled site's count afresh, on every thread: the first zone of
// the site in a session is recorded, whatever the sessions before left in the countdown.
// (It used to carry over: recorded, then not, then recorded.)
TEST(Sampling, EverySessionRecordsTheSitesFirstZoneOnEveryThread) {
  const auto one_zone = [] { RINGTRACE_ZONE_SAMPLED("fresh", 3); };
  for (int session_number = 0; session_number < 3; ++session_number) {
    Session session;
    auto memory = std::make_shared<MemoryExporter>();
    session.add_exporter(memory);
    session.start();
    one_zone();  // the main thread, which ran the sessions before
    std::thread([&] { one_zone(); }).join();
    session.stop();
    EXPECT_EQ(count(memory->trace()).begins["fresh"], 2u) << "session " << session_number;
  }
}

}  // namespace
}  // namespace ringtrace
