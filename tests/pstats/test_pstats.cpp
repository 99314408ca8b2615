// The pstats exporter: the marshal encoder, cProfile's aggregation rules on hand-built
// streams with hand-computed answers, the key convention, the text reports, the factory's
// errors and a live multi-threaded session. (check_against_cprofile.py compares the files
// with cProfile itself; check_clients.py opens them in pyprof2calltree/callgrind_annotate.)
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "marshal_writer.hpp"
#include "ringtrace/exporters/pstats.hpp"
#include "ringtrace/files.hpp"
#include "ringtrace/recorded_trace.hpp"
#include "ringtrace/ringtrace.hpp"

namespace {

namespace fs = std::filesystem;
using ringtrace::PstatsEdge;
using ringtrace::PstatsFunction;
using ringtrace::PstatsTable;
using ringtrace::SiteKind;
using ringtrace::TraceBuilder;

std::string bytes(std::initializer_list<int> values) {
  std::string s;
  for (int v : values) s.push_back(static_cast<char>(v));
  return s;
}

template <typename Write>
std::string marshal(Write&& write) {
  std::string out;
  ringtrace::detail::MarshalWriter w(out);
  write(w);
  return out;
}

fs::path temp_dir() {
  const fs::path dir = fs::temp_directory_path() / ("ringtrace-pstats-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  return dir;
}

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

const PstatsFunction& fn(const PstatsTable& t, const std::string& name, const std::string& file = "a.cpp") {
  for (const PstatsFunction& f : t.functions) {
    if (f.name == name && f.file == file) return f;
  }
  throw std::runtime_error("no function " + name);
}

const PstatsEdge& edge(const PstatsTable& t, const std::string& caller, const std::string& callee) {
  for (const PstatsEdge& e : t.edges) {
    if (t.functions[e.caller].name == caller && t.functions[e.callee].name == callee) return e;
  }
  throw std::runtime_error("no edge " + caller + "->" + callee);
}

#define EXPECT_ROW(row, calls_, pcalls_, self_, cumulative_) \
  do {                                                       \
    EXPECT_EQ((row).calls, calls_uint(calls_));              \
    EXPECT_EQ((row).primitive_calls, calls_uint(pcalls_));   \
    EXPECT_EQ((row).self_ns, calls_uint(self_));             \
    EXPECT_EQ((row).cumulative_ns, calls_uint(cumulative_)); \
  } while (0)
constexpr std::uint64_t calls_uint(std::uint64_t v) { return v; }

// ---------------------------------------------------------------------------------------
// Marshal

TEST(MarshalWriter, IntsUseTypeIntWithin32BitsAndTypeLongBeyond) {
  EXPECT_EQ(marshal([](auto& w) { w.integer(std::int64_t{5}); }), bytes({'i', 5, 0, 0, 0}));
  EXPECT_EQ(marshal([](auto& w) { w.integer(std::int64_t{-2}); }), bytes({'i', 0xFE, 0xFF, 0xFF, 0xFF}));
  EXPECT_EQ(marshal([](auto& w) { w.integer(std::uint64_t{2147483647}); }), bytes({'i', 0xFF, 0xFF, 0xFF, 0x7F}));
  // 2^31: three 15-bit digits 0, 0, 2 (what Python's marshal.dumps(2**31) holds).
  EXPECT_EQ(marshal([](auto& w) { w.integer(std::uint64_t{1} << 31); }), bytes({'l', 3, 0, 0, 0, 0, 0, 0, 0, 2, 0}));
  // 2^40 = 1024 * 2^30 and -2^40 (a negative digit count). All byte strings here are
  // what Python's marshal.dumps gives for the same numbers (less its FLAG_REF bit).
  EXPECT_EQ(marshal([](auto& w) { w.integer(std::int64_t{1} << 40); }), bytes({'l', 3, 0, 0, 0, 0, 0, 0, 0, 0, 4}));
  EXPECT_EQ(marshal([](auto& w) { w.integer(-(std::int64_t{1} << 40)); }),
            bytes({'l', 0xFD, 0xFF, 0xFF, 0xFF, 0, 0, 0, 0, 0, 4}));
  // 2^64 - 1: five digits, the top one 2^4 - 1 = 15 (64 = 4 * 15 + 4).
  EXPECT_EQ(marshal([](auto& w) { w.integer(std::numeric_limits<std::uint64_t>::max()); }),
            bytes({'l', 5, 0, 0, 0, 0xFF, 0x7F, 0xFF, 0x7F, 0xFF, 0x7F, 0xFF, 0x7F, 0x0F, 0}));
  // INT64_MIN = -2^63: digits 0, 0, 0, 0, 8.
  EXPECT_EQ(marshal([](auto& w) { w.integer(std::numeric_limits<std::int64_t>::min()); }),
            bytes({'l', 0xFB, 0xFF, 0xFF, 0xFF, 0, 0, 0, 0, 0, 0, 0, 0, 8, 0}));
}

TEST(MarshalWriter, FloatsStringsTuplesAndDicts) {
  EXPECT_EQ(marshal([](auto& w) { w.float64(1.5); }), bytes({'g', 0, 0, 0, 0, 0, 0, 0xF8, 0x3F}));
  EXPECT_EQ(marshal([](auto& w) { w.string("h\xC3\xA9"); }), bytes({'u', 3, 0, 0, 0, 'h', 0xC3, 0xA9}));
  // Invalid UTF-8 would make marshal.load fail: replaced by U+FFFD.
  EXPECT_EQ(marshal([](auto& w) { w.string("a\xFF"); }), bytes({'u', 4, 0, 0, 0, 'a', 0xEF, 0xBF, 0xBD}));
  EXPECT_EQ(marshal([](auto& w) {
              w.begin_dict();
              w.begin_tuple(1);
              w.string("k");
              w.integer(std::int64_t{1});
              w.end_dict();
            }),
            bytes({'{', '(', 1, 0, 0, 0, 'u', 1, 0, 0, 0, 'k', 'i', 1, 0, 0, 0, '0'}));
}

// ---------------------------------------------------------------------------------------
// Aggregation: cProfile's rules, numbers computed by hand

TEST(PstatsAggregation, PlainNesting) {
  TraceBuilder b;
  const auto t = b.thread("main");
  const auto main = b.site("main", SiteKind::zone, "a.cpp", 1);
  const auto parse = b.site("parse", SiteKind::zone, "a.cpp", 2);
  const auto lex = b.site("lex", SiteKind::zone, "a.cpp", 3);
  const auto eval = b.site("eval", SiteKind::zone, "a.cpp", 4);
  b.begin(t, main, 0).begin(t, parse, 10).begin(t, lex, 20).end(t, 30).begin(t, lex, 40).end(t, 46).end(t, 60);
  b.begin(t, eval, 70).end(t, 90).end(t, 100);
  const PstatsTable table = ringtrace::pstats_table(b.build());
  ASSERT_EQ(table.functions.size(), 4u);
  EXPECT_ROW(fn(table, "main"), 1, 1, 100 - 50 - 20, 100);
  EXPECT_ROW(fn(table, "parse"), 1, 1, 50 - 16, 50);
  EXPECT_ROW(fn(table, "lex"), 2, 2, 16, 16);
  EXPECT_ROW(fn(table, "eval"), 1, 1, 20, 20);
  ASSERT_EQ(table.edges.size(), 3u);  // main has no caller entry
  EXPECT_ROW(edge(table, "main", "parse"), 1, 1, 34, 50);
  EXPECT_ROW(edge(table, "parse", "lex"), 2, 2, 16, 16);
  EXPECT_ROW(edge(table, "main", "eval"), 1, 1, 20, 20);
  EXPECT_EQ(table.total_self_ns(), 100u);  // the top-level zone's time, to the ns
  EXPECT_EQ(table.total_calls(), 5u);
  EXPECT_EQ(fn(table, "main").line, 1u);
}

TEST(PstatsAggregation, DirectRecursionCountsCumtimeOnceAndTottimeAlways) {
  TraceBuilder b;
  const auto t = b.thread();
  const auto f = b.site("f", SiteKind::zone, "a.cpp", 5);
  b.begin(t, f, 0).begin(t, f, 10).begin(t, f, 20).end(t, 50).end(t, 80).end(t, 100);
  const PstatsTable table = ringtrace::pstats_table(b.build());
  EXPECT_ROW(fn(table, "f"), 3, 1, 30 + 40 + 30, 100);
  // The f->f edge: two calls; the inner one runs while the edge is already active.
  EXPECT_ROW(edge(table, "f", "f"), 2, 1, 40 + 30, 70);
}

TEST(PstatsAggregation, MutualRecursionUsesEdgeRecursionLevels) {
  TraceBuilder b;
  const auto t = b.thread();
  const auto a = b.site("a", SiteKind::zone, "a.cpp", 6);
  const auto bb = b.site("b", SiteKind::zone, "a.cpp", 7);
  b.begin(t, a, 0).begin(t, bb, 10).begin(t, a, 20).begin(t, bb, 30).end(t, 70).end(t, 80).end(t, 90).end(t, 100);
  const PstatsTable table = ringtrace::pstats_table(b.build());
  EXPECT_ROW(fn(table, "a"), 2, 1, 20 + 20, 100);
  EXPECT_ROW(fn(table, "b"), 2, 1, 20 + 40, 80);
  EXPECT_ROW(edge(table, "a", "b"), 2, 1, 60, 80);
  EXPECT_ROW(edge(table, "b", "a"), 1, 1, 20, 60);
}

TEST(PstatsAggregation, PrimitiveIsPerThreadAndThreadsAreSummed) {
  TraceBuilder b;
  const auto t0 = b.thread();
  const auto t1 = b.thread();
  const auto f = b.site("f", SiteKind::zone, "a.cpp", 5);
  b.begin(t0, f, 0).begin(t0, f, 10).begin(t0, f, 20).end(t0, 50).end(t0, 80).end(t0, 100);
  b.begin(t1, f, 5).end(t1, 50);  // while f is open on thread 0: still primitive
  const PstatsTable table = ringtrace::pstats_table(b.build());
  EXPECT_ROW(fn(table, "f"), 4, 2, 100 + 45, 100 + 45);
  EXPECT_EQ(table.total_self_ns(), 145u);
}

TEST(PstatsAggregation, ZonesOpenAtStopEndAtTheStopTime) {
  TraceBuilder b;
  const auto t = b.thread();
  const auto g = b.site("g", SiteKind::zone, "a.cpp", 8);
  const auto h = b.site("h", SiteKind::zone, "a.cpp", 9);
  b.begin(t, g, 10).begin(t, h, 20);
  const PstatsTable table = ringtrace::pstats_table(b.build(100));
  EXPECT_ROW(fn(table, "g"), 1, 1, 10, 90);
  EXPECT_ROW(fn(table, "h"), 1, 1, 80, 80);
  EXPECT_EQ(table.closed_at_stop, 2u);
}

TEST(PstatsAggregation, DroppedEventsAreCountedNotCalled) {
  TraceBuilder b;
  const auto t = b.thread();
  const auto g = b.site("g", SiteKind::zone, "a.cpp", 8);
  b.dropped(t, 1, 42).begin(t, g, 10).dropped(t, 15, 8).end(t, 30);
  const PstatsTable table = ringtrace::pstats_table(b.build());
  ASSERT_EQ(table.functions.size(), 1u);
  EXPECT_ROW(fn(table, "g"), 1, 1, 20, 20);
  EXPECT_EQ(table.dropped_events, 50u);
}

TEST(PstatsAggregation, KeyConventionMergesSitesAndNamesInternedOnes) {
  TraceBuilder b;
  const auto t = b.thread();
  const auto x1 = b.site("x", SiteKind::zone, "a.cpp", 3, "f1");
  const auto x2 = b.site("x", SiteKind::zone, "a.cpp", 3, "f2");  // same key: one function
  const auto dyn = b.site("dyn \xE6\x97\xA5");                    // interned: no file, line 0
  const auto region = b.site("graph", SiteKind::region, "a.cpp", 12);
  const auto bad = b.site("bad\xFF", SiteKind::zone, "b\xFE.cpp", 4);
  b.begin(t, x1, 0).end(t, 10).begin(t, x2, 10).begin(t, dyn, 12).end(t, 15).end(t, 20);
  b.begin(t, region, 30, 7).begin(t, bad, 31).end(t, 32).end(t, 40);
  const PstatsTable table = ringtrace::pstats_table(b.build());
  ASSERT_EQ(table.functions.size(), 4u);
  EXPECT_ROW(fn(table, "x"), 2, 2, 10 + 7, 20);
  const PstatsFunction& d = fn(table, "dyn \xE6\x97\xA5", "~");
  EXPECT_EQ(d.line, 0u);
  EXPECT_ROW(d, 1, 1, 3, 3);
  EXPECT_ROW(fn(table, "graph"), 1, 1, 9, 10);
  EXPECT_ROW(fn(table, "bad\xEF\xBF\xBD", "b\xEF\xBF\xBD.cpp"), 1, 1, 1, 1);
  EXPECT_EQ(table.find("~", 0, "dyn \xE6\x97\xA5"), 1);
  EXPECT_EQ(table.find("a.cpp", 99, "x"), -1);
}

TEST(PstatsAggregation, LongTimesStayExactInNanoseconds) {
  TraceBuilder b;
  const auto t = b.thread();
  const auto g = b.site("g", SiteKind::zone, "a.cpp", 8);
  const std::uint64_t ten_hours = 36'000'000'000'000ull;  // beyond 2^32 and 2^53 / 1e3
  b.begin(t, g, 1).end(t, 1 + ten_hours).begin(t, g, 2 * ten_hours).end(t, 3 * ten_hours + 7);
  const PstatsTable table = ringtrace::pstats_table(b.build());
  EXPECT_ROW(fn(table, "g"), 2, 2, 2 * ten_hours + 7, 2 * ten_hours + 7);
  static_assert(sizeof(PstatsFunction::calls) == 8 && sizeof(PstatsEdge::primitive_calls) == 8);
}

TEST(PstatsAggregation, BatchBoundariesDoNotMatter) {
  TraceBuilder b;
  const auto t0 = b.thread();
  const auto t1 = b.thread();
  const auto a = b.site("a", SiteKind::zone, "a.cpp", 1);
  const auto c = b.site("c", SiteKind::zone, "a.cpp", 2);
  std::uint64_t now = 0;
  for (int i = 0; i < 200; ++i) {
    b.begin(t0, a, now).begin(t0, c, now + 1).begin(t0, a, now + 2).end(t0, now + 4).end(t0, now + 5).end(t0, now + 9);
    b.begin(t1, c, now + 3).end(t1, now + 8);
    now += 10;
  }
  const ringtrace::RecordedTrace trace = b.build();
  ringtrace::PstatsAggregator one;
  ringtrace::PstatsAggregator all;
  class Feed final : public ringtrace::Exporter {
   public:
    explicit Feed(ringtrace::PstatsAggregator& a) : agg(a) {}
    void on_events(std::span<const ringtrace::Event> events, const ringtrace::TraceContext& context) override {
      agg.add(events, context);
    }
    ringtrace::PstatsAggregator& agg;
  };
  Feed f1(one), f2(all);
  ringtrace::replay(trace, f1, 1);
  ringtrace::replay(trace, f2, 100000);
  const PstatsTable x = one.table(), y = all.table();
  EXPECT_EQ(ringtrace::encode_pstats(x), ringtrace::encode_pstats(y));
  EXPECT_ROW(fn(x, "a"), 400, 200, 200 * ((9 - 4) + 2), 200 * 9);
  EXPECT_ROW(fn(x, "c"), 400, 400, 200 * (4 - 2 + 5), 200 * (4 + 5));
}

// ---------------------------------------------------------------------------------------
// Encoding and reports

TEST(PstatsEncoding, AnEmptyTableStillLoads) {
  const std::string s = ringtrace::encode_pstats(PstatsTable{});
  // {('~', 0, '<ringtrace: no zones recorded>'): (0, 0, 0.0, 0.0, {})}
  std::string expected = bytes({'{', '(', 3, 0, 0, 0, 'u', 1, 0, 0, 0, '~', 'i', 0, 0, 0, 0, 'u', 30, 0, 0, 0});
  expected += "<ringtrace: no zones recorded>";
  expected += bytes({'(', 5, 0, 0, 0, 'i', 0, 0, 0, 0, 'i', 0, 0, 0, 0});
  expected += bytes({'g', 0, 0, 0, 0, 0, 0, 0, 0, 'g', 0, 0, 0, 0, 0, 0, 0, 0, '{', '0', '0'});
  EXPECT_EQ(s, expected);
}

TEST(PstatsEncoding, EdgeTuplesPutTotalCallsFirst) {
  PstatsTable t;
  t.functions.push_back({"a.cpp", 1, "a", 1, 1, 0, 0});
  t.functions.push_back({"a.cpp", 2, "b", 3, 2, 0, 0});
  t.edges.push_back({0, 1, 3, 2, 0, 0});
  const std::string s = ringtrace::encode_pstats(t);
  // b's value: (2, 3, ...) with cc first; its caller edge (3, 2, ...) with nc first.
  const std::string b_value = bytes({'(', 5, 0, 0, 0, 'i', 2, 0, 0, 0, 'i', 3, 0, 0, 0});
  const std::string edge_value = bytes({'(', 4, 0, 0, 0, 'i', 3, 0, 0, 0, 'i', 2, 0, 0, 0});
  EXPECT_NE(s.find(b_value), std::string::npos);
  EXPECT_NE(s.find(edge_value), std::string::npos);
}

PstatsTable ms_table() {
  TraceBuilder b;
  const auto t = b.thread();
  const auto main = b.site("main", SiteKind::zone, "a.cpp", 1);
  const auto lex = b.site("lex", SiteKind::zone, "a.cpp", 3);
  const auto f = b.site("f", SiteKind::zone, "a.cpp", 5);
  const std::uint64_t ms = 1'000'000;
  b.begin(t, main, 0).begin(t, lex, 20 * ms).end(t, 30 * ms).begin(t, lex, 40 * ms).end(t, 46 * ms);
  b.begin(t, f, 50 * ms).begin(t, f, 60 * ms).end(t, 70 * ms).end(t, 80 * ms).end(t, 100 * ms);
  return ringtrace::pstats_table(b.build());
}

TEST(PstatsReport, LooksLikePrintStatsSortedByCumulativeTime) {
  const std::string report = ringtrace::format_pstats_report(ms_table());
  const std::string expected =
      "         5 function calls (4 primitive calls) in 0.100 seconds\n"
      "\n"
      "   Ordered by: cumulative time\n"
      "\n"
      "   ncalls  tottime  percall  cumtime  percall filename:lineno(function)\n"
      "        1    0.054    0.054    0.100    0.100 a.cpp:1(main)\n"
      "      2/1    0.030    0.015    0.030    0.030 a.cpp:5(f)\n"
      "        2    0.016    0.008    0.016    0.008 a.cpp:3(lex)\n"
      "\n\n";
  EXPECT_EQ(report, expected);
  ringtrace::PstatsReportOptions limited;
  limited.limit = 1;
  EXPECT_NE(ringtrace::format_pstats_report(ms_table(), limited).find("List reduced from 3 to 1"), std::string::npos);
}

TEST(PstatsReport, RawTableListsCallsAndMilliseconds) {
  const std::string raw = ringtrace::format_pstats_raw_table(ms_table());
  EXPECT_NE(raw.find("           2           1        30.000ms        30.000ms  f (a.cpp:5)"), std::string::npos)
      << raw;
  EXPECT_NE(raw.find("Total calls: 5 (4 primitive), unique functions: 3, caller edges: 3"), std::string::npos);
  EXPECT_NE(raw.find("Sum tottime: 100.000ms"), std::string::npos);
}

// ---------------------------------------------------------------------------------------
// The exporter

TEST(PstatsExporter, RejectsGzipAndUnwritablePathsAtTheFactory) {
  EXPECT_THROW(ringtrace::pstats_exporter((temp_dir() / "t.prof.gz").string()), std::invalid_argument);
  try {
    ringtrace::pstats_exporter("/nonexistent-dir-ringtrace/t.prof");
    FAIL() << "no exception";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent-dir-ringtrace/t.prof"), std::string::npos) << e.what();
  }
}

// A write that fails at stop (here: past RLIMIT_FSIZE, as on a full disk; output paths
// must be regular files, so /dev/full is refused at the factory) is reported, naming the
// file, and the previous file stays.
TEST(PstatsExporter, AWriteFailureAtStopIsReportedBySession) {
  const fs::path path = temp_dir() / "full.prof";
  { std::ofstream(path) << "previous"; }
  ringtrace::Session session;
  session.add_exporter(ringtrace::pstats_exporter(path));
  session.start();
  { RINGTRACE_ZONE("z"); }
  rlimit saved{};
  ASSERT_EQ(::getrlimit(RLIMIT_FSIZE, &saved), 0);
  const auto saved_action = std::signal(SIGXFSZ, SIG_IGN);  // write() fails with EFBIG instead
  rlimit tiny = saved;
  tiny.rlim_cur = 16;
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &tiny), 0);
  session.stop();
  ::setrlimit(RLIMIT_FSIZE, &saved);
  std::signal(SIGXFSZ, saved_action);
  ASSERT_EQ(session.stats().exporter_errors.size(), 1u);
  EXPECT_NE(session.stats().exporter_errors[0].find("full.prof"), std::string::npos)
      << session.stats().exporter_errors[0];
  std::ifstream in(path);
  std::string previous;
  in >> previous;
  EXPECT_EQ(previous, "previous");
  for (const fs::path& partial : ringtrace::partial_files(path)) fs::remove(partial);
}

void leaf(int spin) {
  RINGTRACE_ZONE("leaf");
  volatile int x = 0;
  for (int i = 0; i < spin; ++i) x = x + i;
}

void recurse(int n) {
  RINGTRACE_ZONE("recurse");
  leaf(10);
  if (n > 0) recurse(n - 1);
}

TEST(PstatsExporter, LiveSessionWithThreadsMatchesTheRecordedStream) {
  const fs::path path = temp_dir() / "live.prof";
  ringtrace::Config config;
  config.overflow = ringtrace::OverflowPolicy::block;  // lossless: exact counts
  ringtrace::Session session(config);
  ringtrace::PstatsOptions options;
  options.report_path = (temp_dir() / "live.txt").string();
  const auto prof = std::dynamic_pointer_cast<ringtrace::PstatsExporter>(ringtrace::pstats_exporter(path, options));
  const auto memory = std::make_shared<ringtrace::MemoryExporter>();
  session.add_exporter(prof);
  session.add_exporter(memory);
  constexpr int kThreads = 4;
  constexpr int kSteps = 300;
  session.start();
  std::vector<std::thread> threads;
  for (int w = 0; w < kThreads; ++w) {
    threads.emplace_back([] {
      for (int step = 0; step < kSteps; ++step) {
        RINGTRACE_ZONE("step");
        recurse(3);  // recurse x4 (1 primitive), leaf x4
        leaf(5);
      }
    });
  }
  for (auto& t : threads) t.join();
  session.stop();
  EXPECT_TRUE(session.stats().exporter_errors.empty());
  const PstatsTable table = prof->table();
  const std::string file = __FILE__;
  EXPECT_EQ(fn(table, "step", file).calls, std::uint64_t{kThreads * kSteps});
  EXPECT_EQ(fn(table, "recurse", file).calls, std::uint64_t{4 * kThreads * kSteps});
  EXPECT_EQ(fn(table, "recurse", file).primitive_calls, std::uint64_t{kThreads * kSteps});
  EXPECT_EQ(fn(table, "leaf", file).calls, std::uint64_t{5 * kThreads * kSteps});
  EXPECT_EQ(edge(table, "recurse", "recurse").calls, std::uint64_t{3 * kThreads * kSteps});
  EXPECT_EQ(edge(table, "recurse", "recurse").primitive_calls, std::uint64_t{kThreads * kSteps});
  EXPECT_EQ(edge(table, "recurse", "leaf").calls, std::uint64_t{4 * kThreads * kSteps});
  EXPECT_EQ(edge(table, "step", "leaf").calls, std::uint64_t{kThreads * kSteps});

  // The same numbers from the recorded stream of the same session, and the total to the
  // ns from the top-level zones (what Chrome's trace and the folded stacks add up to).
  const ringtrace::RecordedTrace trace = memory->trace();
  const PstatsTable replayed = ringtrace::pstats_table(trace);
  EXPECT_EQ(ringtrace::encode_pstats(replayed), ringtrace::encode_pstats(table));
  std::uint64_t top_level_ns = 0;
  std::vector<std::uint64_t> open_at(trace.threads.size());
  for (const ringtrace::Event& e : trace.events) {
    if (e.kind == ringtrace::EventKind::zone_begin && e.depth == 0) open_at[e.thread] = e.time_ns;
    if (e.kind == ringtrace::EventKind::zone_end && e.depth == 0) top_level_ns += e.time_ns - open_at[e.thread];
  }
  EXPECT_EQ(table.total_self_ns(), top_level_ns);
  EXPECT_EQ(fn(table, "step", file).cumulative_ns, top_level_ns);

  const std::string bytes_on_disk = read_file(path);
  EXPECT_EQ(bytes_on_disk, ringtrace::encode_pstats(table));
  EXPECT_NE(read_file(options.report_path).find("function calls"), std::string::npos);

  // A second run rewrites the file.
  session.start();
  { RINGTRACE_ZONE("second_run"); }
  session.stop();
  EXPECT_EQ(prof->table().functions.size(), 1u);
  EXPECT_EQ(read_file(path), ringtrace::encode_pstats(prof->table()));
}

}  // namespace
