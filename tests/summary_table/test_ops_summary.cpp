// Captured-ops summary on hand-built streams with known answers: ops before, inside and
// after regions, ops that straddle a region, nested ops, regions on two threads,
// repeated region ids, name-based and transparent zones, the missing-ops list, empty
// sessions; golden text, CSV and JSON; the exporter on a live session and on files.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>

#include "ringtrace/exporters/ops_summary.hpp"
#include "ringtrace/recorded_trace.hpp"
#include "ringtrace/ringtrace.hpp"

namespace ringtrace {
namespace {

// One thread: ops before, inside and after regions; a nested op; a repeated region id
// (a call with no ops); a second region id.
RecordedTrace basic_trace() {
  TraceBuilder b("proc");
  const ThreadId t = b.thread("main", 100);
  const SiteId graph = b.site("graph", SiteKind::region);
  const SiteId a = b.site("a");
  const SiteId op_b = b.site("b");
  const SiteId c = b.site("c");
  const SiteId d = b.site("d");
  b.begin(t, a, 0).end(t, 100);       // before: missing, 100 ns
  b.begin(t, graph, 200, 1);          // region id 1
  b.begin(t, op_b, 210).end(t, 300);  //   captured, 90
  b.begin(t, c, 300);                 //   captured, 150
  b.begin(t, d, 310).end(t, 320);     //     nested op: not counted
  b.end(t, 450);
  b.end(t, 600);
  b.begin(t, a, 700).end(t, 760);         // after: missing, 60
  b.begin(t, graph, 800, 1).end(t, 900);  // repeated id, no ops
  b.begin(t, graph, 1000, 2);             // region id 2
  b.begin(t, op_b, 1010).end(t, 1030);    //   captured, 20
  b.end(t, 1100);
  return b.build();
}

TEST(OpsSummary, OpsBeforeInsideAndAfterRegions) {
  const OpsSummary s = ops_summary(basic_trace());
  EXPECT_EQ(s.total.unique_graphs, 2u);
  EXPECT_EQ(s.total.graph_calls, 3u);
  EXPECT_EQ(s.total.captured_ops, 3u);  // b, c, b (d is nested in c)
  EXPECT_EQ(s.total.total_ops, 5u);     // a, b, c, a, b
  EXPECT_EQ(s.total.captured_ns, 260u);
  EXPECT_EQ(s.total.total_ns, 420u);
  EXPECT_DOUBLE_EQ(s.total.ops_percent(), 60.0);
  EXPECT_DOUBLE_EQ(s.total.time_percent(), 100.0 * 260 / 420);
  EXPECT_EQ(one_line(s.total), "2 graphs 3 graph calls 3/5 = 60% ops 62% time");
  ASSERT_EQ(s.threads.size(), 1u);
  EXPECT_EQ(s.threads[0].name, "main");
  EXPECT_EQ(s.threads[0].os_tid, 100u);
  EXPECT_EQ(s.threads[0].counts.total_ops, 5u);
  EXPECT_EQ(s.threads[0].counts.unique_graphs, 2u);
  ASSERT_EQ(s.missing.size(), 1u);
  EXPECT_EQ(s.missing[0].name, "a");
  EXPECT_TRUE(s.missing[0].stack.empty());
  EXPECT_EQ(s.missing[0].calls, 2u);
  EXPECT_EQ(s.missing[0].total_ns, 160u);
  EXPECT_EQ(s.missing[0].max_ns, 100u);
}

TEST(OpsSummary, GoldenText) {
  const std::string text = format_ops_summary(ops_summary(basic_trace()));
  const std::string expected =
      "Captured ops: 2 graphs 3 graph calls 3/5 = 60% ops 62% time\n"
      "Thread          Graphs  Graph calls  Captured ops  Total ops   Ops %  Captured time  Total time  Time %\n"
      "-------------------------------------------------------------------------------------------------------\n"
      "main (tid 100)       2            3             3          5  60.00%          260ns       420ns  61.90%\n"
      "total                2            3             3          5  60.00%          260ns       420ns  61.90%\n"
      "-------------------------------------------------------------------------------------------------------\n"
      "Ops outside any region, most expensive first:\n"
      "Total  Calls   Avg    Max  Op  Stack (innermost frames)\n"
      "-------------------------------------------------------\n"
      "160ns      2  80ns  100ns  a   -\n"
      "-------------------------------------------------------\n";
  EXPECT_EQ(text, expected);
}

TEST(OpsSummary, GoldenCsvAndJson) {
  OpsSummaryOptions options;
  options.format = OpsSummaryOptions::Format::csv;
  const OpsSummary s = ops_summary(basic_trace());
  EXPECT_EQ(format_ops_summary(s, options),
            "scope,thread,os_tid,thread_name,unique_graphs,graph_calls,captured_ops,total_ops,ops_percent,"
            "captured_ns,total_ns,time_percent\r\n"
            "thread,0,100,main,2,3,3,5,60.00,260,420,61.90\r\n"
            "total,,,,2,3,3,5,60.00,260,420,61.90\r\n");
  options.format = OpsSummaryOptions::Format::json;
  EXPECT_EQ(format_ops_summary(s, options),
            "{\"format\":\"ringtrace-ops-summary\",\"version\":1,\"total\":{\"unique_graphs\":2,\"graph_calls\":3,"
            "\"captured_ops\":3,\"total_ops\":5,\"ops_percent\":60,\"captured_ns\":260,\"total_ns\":420,"
            "\"time_percent\":61.904761904761905},\"threads\":[{\"thread\":0,\"os_tid\":100,\"name\":\"main\","
            "\"unique_graphs\":2,\"graph_calls\":3,\"captured_ops\":3,\"total_ops\":5,\"ops_percent\":60,"
            "\"captured_ns\":260,\"total_ns\":420,\"time_percent\":61.904761904761905}],\"missing\":[{\"name\":\"a\","
            "\"stack\":[],\"calls\":2,\"total_ns\":160,\"max_ns\":100}],\"dropped\":0,\"closed_at_stop\":0}\n");
}

TEST(OpsSummary, OpsStraddlingARegionAreNotCaptured) {
  TraceBuilder b;
  const ThreadId t1 = b.thread("t1");
  const ThreadId t2 = b.thread("t2");
  const SiteId graph = b.site("graph", SiteKind::region);
  const SiteId outer = b.site("outer");
  const SiteId x = b.site("x");
  const SiteId y = b.site("y");
  const SiteId z = b.site("z");
  const SiteId w = b.site("w");
  // t1: an op that contains a region (it straddles the region's start and end); the
  // op inside that region is nested in `outer`, so it is not an op of its own.
  b.begin(t1, outer, 0).begin(t1, graph, 100, 5).begin(t1, x, 120).end(t1, 130).end(t1, 200).end(t1, 500);
  // t2 holds a region [1000, 2000]; t1's ops overlap it in time but run on another thread.
  b.begin(t2, graph, 1000, 5);
  b.begin(t1, w, 1100).end(t1, 1200);  // during t2's region
  b.begin(t1, y, 1500);                // straddles the end of t2's region
  b.end(t2, 2000);
  b.begin(t2, z, 2000).end(t2, 2100);  // starts exactly when the region ended
  b.end(t1, 2500);
  const OpsSummary s = ops_summary(b.build());
  EXPECT_EQ(s.total.graph_calls, 2u);
  EXPECT_EQ(s.total.unique_graphs, 1u);  // ("graph", 5) on both threads
  EXPECT_EQ(s.total.total_ops, 4u);      // outer, w, y on t1; z on t2
  EXPECT_EQ(s.total.captured_ops, 0u);
  EXPECT_EQ(s.total.captured_ns, 0u);
  EXPECT_EQ(s.total.total_ns, 500u + 100u + 1000u + 100u);
  EXPECT_EQ(one_line(s.total), "1 graphs 2 graph calls 0/4 = 0% ops 0% time");
  ASSERT_EQ(s.threads.size(), 2u);
  EXPECT_EQ(s.threads[0].counts.total_ops, 3u);
  EXPECT_EQ(s.threads[0].counts.graph_calls, 1u);
  EXPECT_EQ(s.threads[1].counts.total_ops, 1u);
  EXPECT_EQ(s.threads[1].counts.graph_calls, 1u);
  ASSERT_EQ(s.missing.size(), 4u);
  EXPECT_EQ(s.missing[0].name, "y");  // most expensive first
  EXPECT_EQ(s.missing[1].name, "outer");
  EXPECT_EQ(s.missing[2].name, "w");  // 100 ns ties with z: by name
  EXPECT_EQ(s.missing[3].name, "z");
}

TEST(OpsSummary, NestedOpsCountOnlyTheOuterOne) {
  TraceBuilder b;
  const ThreadId t = b.thread();
  const SiteId graph = b.site("graph", SiteKind::region);
  const SiteId f = b.site("f");
  const SiteId g = b.site("g");
  // An op with two levels of nested ops inside a region, and a nested region inside the
  // op (regions are transparent but an op inside `f` stays nested in `f`).
  b.begin(t, graph, 0, 1);
  b.begin(t, f, 10).begin(t, g, 20).begin(t, f, 30).end(t, 40).end(t, 50);
  b.begin(t, graph, 60, 2).begin(t, g, 70).end(t, 80).end(t, 90);
  b.end(t, 100);
  b.end(t, 200);
  const OpsSummary s = ops_summary(b.build());
  EXPECT_EQ(s.total.total_ops, 1u);
  EXPECT_EQ(s.total.captured_ops, 1u);
  EXPECT_EQ(s.total.total_ns, 90u);
  EXPECT_EQ(s.total.captured_ns, 90u);
  EXPECT_EQ(s.total.graph_calls, 2u);  // every region zone is a call, nested ones too
  EXPECT_EQ(s.total.unique_graphs, 2u);
  EXPECT_TRUE(s.missing.empty());
  EXPECT_EQ(one_line(s.total), "2 graphs 2 graph calls 1/1 = 100% ops 100% time");
}

TEST(OpsSummary, RegionsInsideRegionsAndTransparentZonesKeepOpsTopLevel) {
  TraceBuilder b;
  const ThreadId t = b.thread();
  const SiteId outer_graph = b.site("outer_graph", SiteKind::region);
  const SiteId inner_graph = b.site("inner_graph", SiteKind::region);
  const SiteId step = b.site("step");
  const SiteId op = b.site("op");
  b.begin(t, step, 0);
  b.begin(t, outer_graph, 10, 1).begin(t, inner_graph, 20, 1);
  b.begin(t, op, 30).end(t, 40);                        // captured: inside two regions
  b.end(t, 50).begin(t, op, 60).end(t, 70).end(t, 80);  // captured: inside outer_graph
  b.begin(t, op, 90).end(t, 100);                       // missing
  b.end(t, 110);

  // Without options, `step` is an op: everything else is nested in it.
  OpsSummary s = ops_summary(b.build());
  EXPECT_EQ(s.total.total_ops, 1u);
  EXPECT_EQ(s.total.captured_ops, 0u);
  EXPECT_EQ(s.total.graph_calls, 2u);
  EXPECT_EQ(s.total.unique_graphs, 2u);  // ("outer_graph", 1) and ("inner_graph", 1)

  OpsSummaryOptions options;
  options.transparent_names = {"step"};
  s = ops_summary(b.build(), options);
  EXPECT_EQ(s.total.total_ops, 3u);
  EXPECT_EQ(s.total.captured_ops, 2u);
  EXPECT_EQ(s.total.total_ns, 30u);
  EXPECT_EQ(s.total.captured_ns, 20u);
  ASSERT_EQ(s.missing.size(), 1u);
  EXPECT_EQ(s.missing[0].name, "op");
  EXPECT_EQ(s.missing[0].stack, std::vector<std::string>{"step"});
  EXPECT_EQ(one_line(s.total), "2 graphs 2 graph calls 2/3 = 67% ops 67% time");
}

TEST(OpsSummary, RegionsOnTwoThreadsAndRepeatedIds) {
  TraceBuilder b;
  const ThreadId ta = b.thread("a", 11);
  const ThreadId tb = b.thread("b", 12);
  const SiteId graph = b.site("graph", SiteKind::region);
  const SiteId p = b.site("p");
  const SiteId q = b.site("q");
  b.begin(ta, graph, 0, 1).begin(ta, p, 10).end(ta, 20).begin(ta, q, 20).end(ta, 40).end(ta, 50);
  b.begin(tb, graph, 5, 1).begin(tb, p, 6).end(tb, 16).end(tb, 20);
  b.begin(tb, graph, 30, 3).end(tb, 31);
  b.begin(ta, graph, 60, 1).begin(ta, p, 61).end(ta, 71).end(ta, 80);
  b.begin(tb, q, 100).end(tb, 140);  // missing on b
  const OpsSummary s = ops_summary(b.build());
  ASSERT_EQ(s.threads.size(), 2u);
  const CaptureCounts& a = s.threads[0].counts;
  const CaptureCounts& bb = s.threads[1].counts;
  EXPECT_EQ(a.unique_graphs, 1u);
  EXPECT_EQ(a.graph_calls, 2u);
  EXPECT_EQ(a.captured_ops, 3u);
  EXPECT_EQ(a.total_ops, 3u);
  EXPECT_EQ(a.captured_ns, 40u);
  EXPECT_EQ(bb.unique_graphs, 2u);
  EXPECT_EQ(bb.graph_calls, 2u);
  EXPECT_EQ(bb.captured_ops, 1u);
  EXPECT_EQ(bb.total_ops, 2u);
  EXPECT_EQ(bb.captured_ns, 10u);
  EXPECT_EQ(bb.total_ns, 50u);
  EXPECT_EQ(s.total.unique_graphs, 2u);  // (graph, 1) and (graph, 3): not 1 + 2
  EXPECT_EQ(s.total.graph_calls, 4u);
  EXPECT_EQ(s.total.captured_ops, 4u);
  EXPECT_EQ(s.total.total_ops, 5u);
  EXPECT_EQ(s.total.captured_ns, 50u);
  EXPECT_EQ(s.total.total_ns, 90u);
  EXPECT_EQ(one_line(s.total), "2 graphs 4 graph calls 4/5 = 80% ops 56% time");
  EXPECT_EQ(one_line(a), "1 graphs 2 graph calls 3/3 = 100% ops 100% time");
}

TEST(OpsSummary, ZonesNamedAsRegionsByOption) {
  TraceBuilder b;
  const ThreadId t = b.thread();
  const SiteId dynamo = b.site("TORCHDYNAMO");
  const SiteId op = b.site("aten::add");
  b.begin(t, dynamo, 0).begin(t, op, 1).end(t, 3).end(t, 4);
  b.begin(t, dynamo, 10).end(t, 12);
  b.begin(t, op, 20).end(t, 26);
  OpsSummaryOptions options;
  options.region_names = {"TORCHDYNAMO"};
  const OpsSummary s = ops_summary(b.build(), options);
  EXPECT_EQ(s.total.graph_calls, 2u);
  EXPECT_EQ(s.total.unique_graphs, 1u);  // one name, id 0
  EXPECT_EQ(s.total.captured_ops, 1u);
  EXPECT_EQ(s.total.total_ops, 2u);  // no `total_ops -= 1` corrections
  EXPECT_EQ(s.total.captured_ns, 2u);
  EXPECT_EQ(s.total.total_ns, 8u);
  EXPECT_EQ(one_line(s.total), "1 graphs 2 graph calls 1/2 = 50% ops 25% time");
}

TEST(OpsSummary, MissingOpsCarryTheInnermostFramesAndComeMostExpensiveFirst) {
  TraceBuilder b;
  const ThreadId t = b.thread();
  const SiteId run = b.site("run");
  const SiteId train = b.site("train");
  const SiteId epoch = b.site("epoch");
  const SiteId step = b.site("step");
  const SiteId allreduce = b.site("allreduce");
  const SiteId load = b.site("load");
  b.begin(t, run, 0).begin(t, train, 1).begin(t, epoch, 2);
  for (std::uint64_t i = 0; i < 3; ++i) {
    const std::uint64_t at = 10 + i * 100;
    b.begin(t, step, at).begin(t, allreduce, at + 1).end(t, at + 21).end(t, at + 50);
  }
  b.begin(t, load, 400).end(t, 470);  // directly under epoch
  b.end(t, 500).end(t, 501).end(t, 502);
  OpsSummaryOptions options;
  options.transparent_names = {"run", "train", "epoch", "step"};
  OpsSummary s = ops_summary(b.build(), options);
  ASSERT_EQ(s.missing.size(), 2u);
  EXPECT_EQ(s.missing[0].name, "load");
  EXPECT_EQ(s.missing[0].total_ns, 70u);
  EXPECT_EQ(s.missing[0].stack, (std::vector<std::string>{"run", "train", "epoch"}));
  EXPECT_EQ(s.missing[1].name, "allreduce");
  EXPECT_EQ(s.missing[1].calls, 3u);
  EXPECT_EQ(s.missing[1].total_ns, 60u);
  EXPECT_EQ(s.missing[1].stack, (std::vector<std::string>{"train", "epoch", "step"}));
  EXPECT_EQ(s.total.total_ops, 4u);

  options.stack_frames = 1;
  options.missing_limit = 1;
  s = ops_summary(b.build(), options);
  EXPECT_EQ(s.missing[1].stack, std::vector<std::string>{"step"});
  const std::string text = format_ops_summary(s, options);
  EXPECT_NE(text.find("Ops outside any region, most expensive first (1 of 2):\n"), std::string::npos) << text;
  EXPECT_NE(text.find("load  epoch\n"), std::string::npos) << text;
  EXPECT_EQ(text.find("allreduce"), std::string::npos) << text;
}

TEST(OpsSummary, EmptySessionsReportZeros) {
  TraceBuilder b;
  b.thread("idle");
  const OpsSummary empty = ops_summary(b.build());
  EXPECT_TRUE(empty.threads.empty());
  EXPECT_EQ(empty.total.total_ops, 0u);
  EXPECT_EQ(empty.total.ops_percent(), 0.0);
  EXPECT_EQ(empty.total.time_percent(), 0.0);
  EXPECT_EQ(one_line(empty.total), "0 graphs 0 graph calls 0/0 = 0% ops 0% time");
  EXPECT_EQ(format_ops_summary(empty), "Captured ops: 0 graphs 0 graph calls 0/0 = 0% ops 0% time\nNo ops.\n");
  OpsSummaryOptions csv;
  csv.format = OpsSummaryOptions::Format::csv;
  EXPECT_EQ(format_ops_summary(empty, csv),
            "scope,thread,os_tid,thread_name,unique_graphs,graph_calls,captured_ops,total_ops,ops_percent,"
            "captured_ns,total_ns,time_percent\r\ntotal,,,,0,0,0,0,0.00,0,0,0.00\r\n");

  // Regions but no ops; ops of zero length.
  TraceBuilder r;
  const ThreadId t = r.thread();
  const SiteId graph = r.site("graph", SiteKind::region);
  const SiteId op = r.site("op");
  r.begin(t, graph, 5, 9).end(t, 7);
  OpsSummary s = ops_summary(r.build());
  EXPECT_EQ(one_line(s.total), "1 graphs 1 graph calls 0/0 = 0% ops 0% time");
  EXPECT_NE(format_ops_summary(s).find("No ops.\n"), std::string::npos);
  r.begin(t, graph, 10, 9).begin(t, op, 10).end(t, 10).end(t, 10);
  s = ops_summary(r.build());
  EXPECT_EQ(one_line(s.total), "1 graphs 2 graph calls 1/1 = 100% ops 0% time");
  EXPECT_NE(format_ops_summary(s).find("Every op ran inside a region.\n"), std::string::npos);
}

TEST(OpsSummary, WholePercentagesNeverRoundToAllOrNothing) {
  CaptureCounts c;
  c.captured_ops = 999;
  c.total_ops = 1000;
  c.captured_ns = 1;
  c.total_ns = 1000;
  EXPECT_EQ(one_line(c), "0 graphs 0 graph calls 999/1000 = 99% ops 1% time");
  c.captured_ops = 1000;
  c.captured_ns = 0;
  EXPECT_EQ(one_line(c), "0 graphs 0 graph calls 1000/1000 = 100% ops 0% time");
  c.captured_ops = 3;
  c.total_ops = 4;
  c.captured_ns = 5;
  c.total_ns = 8;  // 62.5: rounds half up
  EXPECT_EQ(one_line(c), "0 graphs 0 graph calls 3/4 = 75% ops 63% time");
}

TEST(OpsSummary, ZonesOpenAtStopAndDropsAreReported) {
  TraceBuilder b;
  const ThreadId t = b.thread("w");
  const SiteId graph = b.site("graph", SiteKind::region);
  const SiteId op = b.site("op");
  b.dropped(t, 1, 7);
  b.begin(t, graph, 10, 4).begin(t, op, 20);  // both left open: closed at 100
  const OpsSummary s = ops_summary(b.build(100));
  EXPECT_EQ(s.total.captured_ops, 1u);
  EXPECT_EQ(s.total.captured_ns, 80u);
  EXPECT_EQ(s.total.graph_calls, 1u);
  EXPECT_EQ(s.dropped, 7u);
  EXPECT_EQ(s.closed_at_stop, 2u);
  const std::string text = format_ops_summary(s);
  EXPECT_NE(text.find("Dropped events: 7 (the counts above are a lower bound)\n"), std::string::npos) << text;
  EXPECT_NE(text.find("Zones still open at stop, closed at the stop time: 2\n"), std::string::npos) << text;
}

TEST(OpsSummary, HostileNamesAreEscapedInEveryFormat) {
  TraceBuilder b;
  const ThreadId t = b.thread("we,ird \"thread\"\n");
  const SiteId op = b.site("op,\"x\"\n\xff");
  b.begin(t, op, 0).end(t, 5);
  const OpsSummary s = ops_summary(b.build());
  OpsSummaryOptions options;
  options.format = OpsSummaryOptions::Format::csv;
  const std::string csv = format_ops_summary(s, options);
  EXPECT_NE(csv.find("thread,0,1,\"we,ird \"\"thread\"\"\n\",0,0,0,1,0.00,0,5,0.00\r\n"), std::string::npos) << csv;
  options.format = OpsSummaryOptions::Format::json;
  const std::string json = format_ops_summary(s, options);
  EXPECT_NE(json.find("\"name\":\"op,\\\"x\\\"\\n\xEF\xBF\xBD\""), std::string::npos) << json;
  const std::string text = format_ops_summary(s);
  EXPECT_NE(text.find("op,\"x\"?\xEF\xBF\xBD"), std::string::npos) << text;
  EXPECT_EQ(text.find('\xff'), std::string::npos);
}

TEST(OpsSummaryExporter, LiveSessionStreamAndFile) {
  const auto dir = std::filesystem::temp_directory_path() / ("ringtrace_ops_summary_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::ostringstream text;
  auto live = std::dynamic_pointer_cast<OpsSummaryExporter>(ops_summary_exporter(text));
  OpsSummaryOptions csv;
  csv.format = OpsSummaryOptions::Format::csv;
  auto file = ops_summary_exporter((dir / "summary.csv").string(), csv);
  Session session;
  session.add_exporter(live);
  session.add_exporter(file);
  for (int run = 0; run < 2; ++run) {  // a restarted session starts from zero
    text.str("");
    session.start();
    for (int i = 0; i < 10; ++i) {
      if (i % 2 == 0) {
        RINGTRACE_REGION("graph", i % 3);
        {
          RINGTRACE_ZONE("captured");
          { RINGTRACE_ZONE("nested"); }
        }
      } else {
        RINGTRACE_ZONE("eager");
      }
    }
    session.stop();
    const OpsSummary& s = live->summary();
    EXPECT_EQ(s.total.graph_calls, 5u);
    EXPECT_EQ(s.total.unique_graphs, 3u);
    EXPECT_EQ(s.total.captured_ops, 5u);
    EXPECT_EQ(s.total.total_ops, 10u);
    EXPECT_LE(s.total.captured_ns, s.total.total_ns);
    ASSERT_EQ(s.missing.size(), 1u);
    EXPECT_EQ(s.missing[0].name, "eager");
    EXPECT_EQ(s.missing[0].calls, 5u);
    EXPECT_EQ(text.str().rfind("Captured ops: 3 graphs 5 graph calls 5/10 = 50% ops ", 0), 0u) << text.str();
    std::ifstream in(dir / "summary.csv", std::ios::binary);
    const std::string written((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    EXPECT_EQ(written, format_ops_summary(s, csv));
  }
  std::filesystem::remove_all(dir);
}

TEST(OpsSummaryExporter, AnUnwritablePathFailsAtOnceNamingIt) {
  try {
    ops_summary_exporter("/nonexistent-dir/summary.csv");
    FAIL() << "expected an exception";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent-dir/summary.csv"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace ringtrace
