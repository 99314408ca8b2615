// Key-averages table on hand-built streams with known answers: self and total time,
// recursion (direct and mutual), grouping by stack, top-level rows, every sort column,
// row limit, time units, name truncation, footer with drops, empty sessions; golden
// text, CSV and JSON; the exporter on a live session and on files.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "ringtrace/exporters/table.hpp"
#include "ringtrace/recorded_trace.hpp"
#include "ringtrace/ringtrace.hpp"

namespace ringtrace {
namespace {

// forward [0,1000] { matmul [100,400], relu [400,450], matmul [500,700] }
// backward [1000,1600] { matmul [1100,1500] }
RecordedTrace model_trace() {
  TraceBuilder b("proc");
  const ThreadId t = b.thread("main", 100);
  const SiteId forward = b.site("forward");
  const SiteId backward = b.site("backward");
  const SiteId matmul = b.site("matmul");
  const SiteId relu = b.site("relu");
  b.begin(t, forward, 0);
  b.begin(t, matmul, 100).end(t, 400);
  b.begin(t, relu, 400).end(t, 450);
  b.begin(t, matmul, 500).end(t, 700);
  b.end(t, 1000);
  b.begin(t, backward, 1000);
  b.begin(t, matmul, 1100).end(t, 1500);
  b.end(t, 1600);
  return b.build();
}

const TableRow& row(const KeyAverages& table, const std::string& name, std::vector<std::string> stack = {}) {
  for (const TableRow& r : table.rows) {
    if (r.name == name && r.stack == stack) return r;
  }
  throw std::runtime_error("no row " + name);
}

std::vector<std::string> names(const KeyAverages& table) {
  std::vector<std::string> out;
  for (const TableRow& r : table.rows) out.push_back(r.name);
  return out;
}

TEST(KeyAverages, SelfTotalAndCallsOfAKnownStream) {
  const KeyAverages t = key_averages(model_trace());
  EXPECT_EQ(t.self_total_ns, 1600u);
  EXPECT_EQ(t.groups, 4u);
  EXPECT_EQ(names(t), (std::vector<std::string>{"matmul", "forward", "backward", "relu"}));  // by self
  const TableRow& matmul = row(t, "matmul");
  EXPECT_EQ(matmul.calls, 3u);
  EXPECT_EQ(matmul.self_ns, 900u);
  EXPECT_EQ(matmul.total_ns, 900u);
  EXPECT_EQ(matmul.avg_ns, 300u);
  EXPECT_EQ(matmul.min_ns, 200u);
  EXPECT_EQ(matmul.max_ns, 400u);
  EXPECT_EQ(matmul.p50_ns, 301u);  // the middle of the bucket [300, 303] holding 300
  EXPECT_EQ(matmul.p99_ns, 400u);  // clamped to the exact max
  EXPECT_DOUBLE_EQ(matmul.self_percent, 56.25);
  const TableRow& forward = row(t, "forward");
  EXPECT_EQ(forward.self_ns, 450u);
  EXPECT_EQ(forward.total_ns, 1000u);
  EXPECT_DOUBLE_EQ(forward.total_percent, 62.5);
  EXPECT_EQ(row(t, "backward").self_ns, 200u);
  EXPECT_EQ(row(t, "relu").total_ns, 50u);
}

TEST(KeyAverages, GoldenText) {
  const std::string expected =
      "Name      Self %   Self  Total %    Total      Avg      Min      Max      p50      p99  Calls\n"
      "---------------------------------------------------------------------------------------------\n"
      "matmul    56.25%  900ns   56.25%    900ns    300ns    200ns    400ns    301ns    400ns      3\n"
      "forward   28.13%  450ns   62.50%  1.000us  1.000us  1.000us  1.000us  1.000us  1.000us      1\n"
      "backward  12.50%  200ns   37.50%    600ns    600ns    600ns    600ns    600ns    600ns      1\n"
      "relu       3.13%   50ns    3.13%     50ns     50ns     50ns     50ns     50ns     50ns      1\n"
      "---------------------------------------------------------------------------------------------\n"
      "Self time total: 1.600us\n"
      "Dropped events: 0\n";
  EXPECT_EQ(format_table(key_averages(model_trace())), expected);
}

TEST(KeyAverages, GoldenCsvAndJson) {
  TableOptions options;
  options.format = TableOptions::Format::csv;
  options.sort_by = TableOptions::SortBy::name;
  const KeyAverages t = key_averages(model_trace(), options);
  EXPECT_EQ(format_table(t, options),
            "name,self_percent,self_ns,total_percent,total_ns,avg_ns,min_ns,max_ns,p50_ns,p99_ns,calls\r\n"
            "backward,12.50,200,37.50,600,600,600,600,600,600,1\r\n"
            "forward,28.13,450,62.50,1000,1000,1000,1000,1000,1000,1\r\n"
            "matmul,56.25,900,56.25,900,300,200,400,301,400,3\r\n"
            "relu,3.13,50,3.13,50,50,50,50,50,50,1\r\n");
  options.format = TableOptions::Format::json;
  options.row_limit = 1;
  EXPECT_EQ(format_table(key_averages(model_trace(), options), options),
            "{\"format\":\"ringtrace-key-averages\",\"version\":1,\"self_total_ns\":1600,\"groups\":4,\"dropped\":0,"
            "\"dropped_by_thread\":[],\"closed_at_stop\":0,\"rows\":[{\"name\":\"backward\",\"stack\":[],"
            "\"self_percent\":12.5,\"self_ns\":200,\"total_percent\":37.5,\"total_ns\":600,\"avg_ns\":600,"
            "\"min_ns\":600,\"max_ns\":600,\"p50_ns\":600,\"p99_ns\":600,\"calls\":1}]}\n");
}

TEST(KeyAverages, RecursionCountsTotalOnceAndSelfExactly) {
  TraceBuilder b;
  const ThreadId t = b.thread();
  const ThreadId u = b.thread();
  const SiteId fib = b.site("fib");
  const SiteId a = b.site("a");
  const SiteId bb = b.site("b");
  // fib [0,100] { fib [10,60] { fib [20,30] }, fib [60,90] }
  b.begin(t, fib, 0).begin(t, fib, 10).begin(t, fib, 20).end(t, 30).end(t, 60).begin(t, fib, 60).end(t, 90).end(t, 100);
  // mutual recursion: a [200,300] { b [210,290] { a [220,250] } }
  b.begin(t, a, 200).begin(t, bb, 210).begin(t, a, 220).end(t, 250).end(t, 290).end(t, 300);
  // the same recursion on another thread, overlapping in time: its outermost call counts too
  b.begin(u, fib, 50).begin(u, fib, 55).end(u, 65).end(u, 80);
  const KeyAverages table = key_averages(b.build());
  const TableRow& f = row(table, "fib");
  EXPECT_EQ(f.calls, 6u);
  EXPECT_EQ(f.self_ns, 100u + 30u);   // 20 + 40 + 10 + 30, and 20 + 10 on thread u
  EXPECT_EQ(f.total_ns, 100u + 30u);  // outermost activations only (PyTorch would say 190 + 40)
  EXPECT_EQ(f.min_ns, 10u);
  EXPECT_EQ(f.max_ns, 100u);
  EXPECT_EQ(f.avg_ns, 38u);  // (100 + 50 + 10 + 30 + 30 + 10) / 6 = 38.33
  const TableRow& ra = row(table, "a");
  const TableRow& rb = row(table, "b");
  EXPECT_EQ(ra.calls, 2u);
  EXPECT_EQ(ra.self_ns, 20u + 30u);
  EXPECT_EQ(ra.total_ns, 100u);
  EXPECT_EQ(rb.self_ns, 50u);
  EXPECT_EQ(rb.total_ns, 80u);
  EXPECT_EQ(table.self_total_ns, 100u + 30u + 100u);
  // Total % of a recursive group never exceeds 100%.
  EXPECT_LE(f.total_percent, 100.0);
}

// Nesting deeper than the exporter's stack scan (32 frames): outer activations of a group
// below and above that depth must still be found, on two threads at once, and the
// bookkeeping must be clean once the deep stack has unwound.
TEST(KeyAverages, DeepRecursionCountsTotalOnce) {
  TraceBuilder b;
  const ThreadId t = b.thread();
  const ThreadId u = b.thread();
  const SiteId a = b.site("a");
  const SiteId bb = b.site("b");
  const SiteId c = b.site("c");
  // t: a b a b ... 81 deep, starting at 0, each nested one starting 1 ns later and ending
  // 1 ns earlier: a [0,1000] is the only outermost a, b [1,999] the only outermost b.
  for (std::uint64_t i = 0; i <= 80; ++i) b.begin(t, i % 2 == 0 ? a : bb, i);
  for (std::uint64_t i = 80 + 1; i-- > 0;) b.end(t, 1000 - i);
  // u: c 40 deep, then a [100,500] { a [200,300] } entirely beyond the scan depth.
  for (std::uint64_t i = 0; i < 40; ++i) b.begin(u, c, i);
  b.begin(u, a, 100).begin(u, a, 200).end(u, 300).end(u, 500);
  for (std::uint64_t i = 40; i-- > 0;) b.end(u, 2000 - i);
  // t again, shallow: a [3000,3100] { a [3010,3020] } after the deep stack unwound.
  b.begin(t, a, 3000).begin(t, a, 3010).end(t, 3020).end(t, 3100);
  const KeyAverages table = key_averages(b.build());
  const TableRow& ra = row(table, "a");
  EXPECT_EQ(ra.calls, 41u + 2u + 2u);
  EXPECT_EQ(ra.total_ns, 1000u + 400u + 100u);
  const TableRow& rb = row(table, "b");
  EXPECT_EQ(rb.calls, 40u);
  EXPECT_EQ(rb.total_ns, 998u);
  const TableRow& rc = row(table, "c");
  EXPECT_EQ(rc.total_ns, 2000u);  // c [0,2000] outermost
  // Self times still sum to the busy time of both threads.
  EXPECT_EQ(table.self_total_ns, 1000u + 2000u + 100u);
}

TEST(KeyAverages, GroupByStackUsesTheInnermostFrames) {
  TableOptions options;
  options.group_by_stack_n = 1;
  KeyAverages t = key_averages(model_trace(), options);
  EXPECT_EQ(t.groups, 5u);
  EXPECT_EQ(row(t, "matmul", {"forward"}).calls, 2u);
  EXPECT_EQ(row(t, "matmul", {"forward"}).self_ns, 500u);
  EXPECT_EQ(row(t, "matmul", {"backward"}).self_ns, 400u);
  EXPECT_EQ(row(t, "forward").total_ns, 1000u);
  const std::string text = format_table(t, options);
  EXPECT_NE(text.find("  Stack\n"), std::string::npos) << text;
  EXPECT_NE(text.find("      2  forward\n"), std::string::npos) << text;

  // Deeper: only the innermost N frames count, outermost first.
  TraceBuilder b;
  const ThreadId th = b.thread();
  const SiteId x = b.site("x"), y = b.site("y"), z = b.site("z"), leaf = b.site("leaf");
  b.begin(th, x, 0).begin(th, y, 1).begin(th, z, 2).begin(th, leaf, 3).end(th, 4).end(th, 5).end(th, 6);
  b.begin(th, z, 7).begin(th, leaf, 8).end(th, 10).end(th, 11).end(th, 12);
  options.group_by_stack_n = 2;
  t = key_averages(b.build(), options);
  EXPECT_EQ(row(t, "leaf", {"y", "z"}).calls, 1u);
  EXPECT_EQ(row(t, "leaf", {"x", "z"}).self_ns, 2u);
  EXPECT_EQ(row(t, "z", {"x", "y"}).total_ns, 3u);
  options.format = TableOptions::Format::csv;
  const std::string csv = format_table(t, options);
  EXPECT_EQ(csv.rfind("name,stack,self_percent,", 0), 0u) << csv;  // the stack column only when grouped by stack
  EXPECT_NE(csv.find("\r\nleaf,y >> z,"), std::string::npos) << csv;
}

TEST(KeyAverages, TopLevelOnlyKeepsSessionPercentages) {
  TableOptions options;
  options.top_level_only = true;
  const KeyAverages t = key_averages(model_trace(), options);
  EXPECT_EQ(names(t), (std::vector<std::string>{"forward", "backward"}));
  EXPECT_EQ(t.self_total_ns, 1600u);
  EXPECT_DOUBLE_EQ(row(t, "forward").self_percent, 28.125);
  EXPECT_DOUBLE_EQ(row(t, "forward").total_percent + row(t, "backward").total_percent, 100.0);
  EXPECT_EQ(format_table(t, options).rfind("Top-level zones only\nName", 0), 0u);
}

TEST(KeyAverages, SortsByEveryColumnAndLimitsRows) {
  using S = TableOptions::SortBy;
  auto order = [](S by) {
    TableOptions options;
    options.sort_by = by;
    return names(key_averages(model_trace(), options));
  };
  using V = std::vector<std::string>;
  EXPECT_EQ(order(S::self), (V{"matmul", "forward", "backward", "relu"}));
  EXPECT_EQ(order(S::self_percent), (V{"matmul", "forward", "backward", "relu"}));
  EXPECT_EQ(order(S::total), (V{"forward", "matmul", "backward", "relu"}));
  EXPECT_EQ(order(S::total_percent), (V{"forward", "matmul", "backward", "relu"}));
  EXPECT_EQ(order(S::avg), (V{"forward", "backward", "matmul", "relu"}));
  EXPECT_EQ(order(S::min), (V{"forward", "backward", "matmul", "relu"}));
  EXPECT_EQ(order(S::max), (V{"forward", "backward", "matmul", "relu"}));
  EXPECT_EQ(order(S::p50), (V{"forward", "backward", "matmul", "relu"}));
  EXPECT_EQ(order(S::p99), (V{"forward", "backward", "matmul", "relu"}));
  EXPECT_EQ(order(S::calls), (V{"matmul", "backward", "forward", "relu"}));  // ties by name
  EXPECT_EQ(order(S::name), (V{"backward", "forward", "matmul", "relu"}));
  EXPECT_EQ(order(S::first_seen), (V{"matmul", "relu", "forward", "backward"}));  // order of first close

  TableOptions options;
  options.row_limit = 2;
  const KeyAverages t = key_averages(model_trace(), options);
  EXPECT_EQ(t.rows.size(), 2u);
  EXPECT_EQ(t.groups, 4u);
  EXPECT_NE(format_table(t, options).find("Rows shown: 2 of 4\n"), std::string::npos);
}

TEST(KeyAverages, FixedTimeUnits) {
  auto matmul_line = [](TableOptions::TimeUnit unit) {
    TableOptions options;
    options.time_unit = unit;
    options.row_limit = 1;
    const std::string text = format_table(key_averages(model_trace(), options), options);
    const std::size_t at = text.find("matmul");
    return text.substr(at, text.find('\n', at) - at);
  };
  EXPECT_EQ(matmul_line(TableOptions::TimeUnit::ns),
            "matmul  56.25%  900ns   56.25%  900ns  300ns  200ns  400ns  301ns  400ns      3");
  EXPECT_EQ(matmul_line(TableOptions::TimeUnit::us),
            "matmul  56.25%  0.900us   56.25%  0.900us  0.300us  0.200us  0.400us  0.301us  0.400us      3");
  EXPECT_EQ(matmul_line(TableOptions::TimeUnit::ms),
            "matmul  56.25%  0.001ms   56.25%  0.001ms  0.000ms  0.000ms  0.000ms  0.000ms  0.000ms      3");
  EXPECT_EQ(matmul_line(TableOptions::TimeUnit::s),
            "matmul  56.25%  0.000s   56.25%  0.000s  0.000s  0.000s  0.000s  0.000s  0.000s      3");
}

TEST(KeyAverages, LongNamesAreCutAndMarked) {
  TraceBuilder b;
  const ThreadId t = b.thread();
  const SiteId long_name = b.site("a_very_long_zone_name");
  const SiteId accents =
      b.site("\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9");
  const SiteId fits = b.site("ten_chars!");
  b.begin(t, long_name, 0).end(t, 30).begin(t, accents, 30).end(t, 50).begin(t, fits, 50).end(t, 60);
  TableOptions options;
  options.name_width = 10;
  const KeyAverages table = key_averages(b.build(), options);
  const std::string text = format_table(table, options);
  EXPECT_NE(text.find("\na_very_...  "), std::string::npos) << text;
  EXPECT_NE(text.find("\n\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9...  "), std::string::npos) << text;
  EXPECT_NE(text.find("\nten_chars!  "), std::string::npos) << text;
  EXPECT_EQ(text.find("a_very_long"), std::string::npos);
  // CSV and JSON keep the full name.
  options.format = TableOptions::Format::csv;
  EXPECT_NE(format_table(table, options).find("\r\na_very_long_zone_name,"), std::string::npos);
}

TEST(KeyAverages, FooterCountsDropsAndZonesClosedAtStop) {
  TraceBuilder b;
  const ThreadId w = b.thread("w", 7);
  const ThreadId v = b.thread("", 8);
  const SiteId op = b.site("op");
  b.dropped(w, 1, 5).dropped(v, 2, 2);
  b.begin(w, op, 10).end(w, 20).begin(v, op, 15);  // v's op is closed at stop
  const KeyAverages t = key_averages(b.build(40));
  EXPECT_EQ(t.dropped, 7u);
  ASSERT_EQ(t.dropped_by_thread.size(), 2u);
  EXPECT_EQ(t.dropped_by_thread[0].dropped, 5u);
  EXPECT_EQ(t.closed_at_stop, 1u);
  EXPECT_EQ(row(t, "op").total_ns, 35u);
  const std::string text = format_table(t);
  EXPECT_NE(text.find("\nSelf time total: 35ns\nDropped events: 7 (w: 5, tid 8: 2)\n"
                      "Zones still open at stop, closed at the stop time: 1\n"),
            std::string::npos)
      << text;
}

TEST(KeyAverages, EmptySessions) {
  TraceBuilder b;
  const ThreadId t = b.thread();
  b.instant(t, b.site("tick", SiteKind::instant), 5);
  const KeyAverages table = key_averages(b.build());
  EXPECT_TRUE(table.rows.empty());
  EXPECT_EQ(table.self_total_ns, 0u);
  EXPECT_EQ(format_table(table),
            "Name  Self %  Self  Total %  Total  Avg  Min  Max  p50  p99  Calls\n"
            "------------------------------------------------------------------\n"
            "------------------------------------------------------------------\n"
            "Self time total: 0ns\n"
            "Dropped events: 0\n");
  TableOptions csv;
  csv.format = TableOptions::Format::csv;
  EXPECT_EQ(format_table(table, csv),
            "name,self_percent,self_ns,total_percent,total_ns,avg_ns,min_ns,max_ns,p50_ns,p99_ns,calls\r\n");
  // Zero-length zones: percentages of a zero total are 0, not NaN.
  TraceBuilder z;
  const ThreadId zt = z.thread();
  z.begin(zt, z.site("instantaneous"), 3).end(zt, 3);
  const KeyAverages zero = key_averages(z.build());
  EXPECT_EQ(zero.rows.at(0).self_percent, 0.0);
  EXPECT_NE(format_table(zero).find("instantaneous   0.00%   0ns    0.00%"), std::string::npos) << format_table(zero);
}

TEST(TableExporter, LiveSessionStreamAndFile) {
  const auto dir = std::filesystem::temp_directory_path() / ("ringtrace_table_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::ostringstream text;
  auto live = std::dynamic_pointer_cast<TableExporter>(table_exporter(text));
  TableOptions csv;
  csv.format = TableOptions::Format::csv;
  auto file = table_exporter((dir / "table.csv").string(), csv);
  Session session;
  session.add_exporter(live);
  session.add_exporter(file);
  for (int run = 0; run < 2; ++run) {
    text.str("");
    session.start();
    for (int i = 0; i < 20; ++i) {
      RINGTRACE_ZONE("outer");
      for (int j = 0; j < 3; ++j) {
        RINGTRACE_ZONE("inner");
      }
    }
    session.stop();
    const KeyAverages& t = live->table();
    ASSERT_EQ(t.rows.size(), 2u);
    EXPECT_EQ(row(t, "outer").calls, 20u);
    EXPECT_EQ(row(t, "inner").calls, 60u);
    EXPECT_EQ(row(t, "outer").self_ns + row(t, "inner").self_ns, t.self_total_ns);
    EXPECT_EQ(row(t, "outer").total_ns, t.self_total_ns);
    EXPECT_NE(text.str().find("\nSelf time total: "), std::string::npos);
    std::ifstream in(dir / "table.csv", std::ios::binary);
    const std::string written((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    EXPECT_EQ(written, format_table(t, csv));
  }
  std::filesystem::remove_all(dir);
}

TEST(TableExporter, AnUnwritablePathFailsAtOnceNamingIt) {
  try {
    table_exporter("/nonexistent-dir/table.csv");
    FAIL() << "expected an exception";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent-dir/table.csv"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace ringtrace
