// The call graph and flame graph exporters on hand-built streams with answers worked out
// by hand: labels, shares, colors, pruning, recursion, names, threads, escaping, the
// SVG through Graphviz (and without it); the flame graph's geometry, merging, leaks, and
// its agreement with the folded stacks exporter on random streams.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <regex>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "ringtrace/exporters/call_graph.hpp"
#include "ringtrace/exporters/flame_graph.hpp"
#include "ringtrace/exporters/folded_stacks.hpp"
#include "ringtrace/recorded_trace.hpp"
#include "ringtrace/ringtrace.hpp"

namespace ringtrace {
namespace {

std::string call_graph_dot(const RecordedTrace& trace, CallGraphOptions options = {}) {
  std::ostringstream out;
  auto exporter = call_graph_exporter(out, options);
  replay(trace, *exporter);
  return out.str();
}

std::string flame_svg(const RecordedTrace& trace, FlameGraphOptions options = {}) {
  std::ostringstream out;
  auto exporter = flame_graph_exporter(out, options);
  replay(trace, *exporter);
  return out.str();
}

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

std::filesystem::path scratch(const std::string& name) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / ("ringtrace_pictures_" + name);
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

// main [0, 1000] calls parse twice ([100, 400] with lex [150, 250], and [500, 800]).
// main: total 1000, self 400; parse: 2 calls, total 600, self 500; lex: total 100, self
// 100. Self times add up to 1000, the whole.
RecordedTrace known_tree() {
  TraceBuilder b("app");
  const ThreadId t = b.thread("main", 11);
  const SiteId main = b.site("main", SiteKind::zone, "app.cpp", 1),
               parse = b.site("parse", SiteKind::zone, "app.cpp", 2), lex = b.site("lex", SiteKind::zone, "app.cpp", 3);
  b.begin(t, main, 0).begin(t, parse, 100).begin(t, lex, 150).end(t, 250).end(t, 400);
  b.begin(t, parse, 500).end(t, 800).end(t, 1000);
  return b.build(1000);
}

TEST(CallGraph, LabelsSharesAndColorsOfAKnownTree) {
  const std::string dot = call_graph_dot(known_tree());
  // name, total share, (self share), total time, calls.
  EXPECT_TRUE(has(dot, "label=\"main\\n100.00%\\n(40.00%)\\n1.000 us\\n1\u00d7\"")) << dot;
  EXPECT_TRUE(has(dot, "label=\"parse\\n60.00%\\n(50.00%)\\n600 ns\\n2\u00d7\"")) << dot;
  EXPECT_TRUE(has(dot, "label=\"lex\\n10.00%\\n(10.00%)\\n100 ns\\n1\u00d7\"")) << dot;
  // Arrows: the callee's time in those calls over the whole, and the calls.
  EXPECT_TRUE(has(dot, "n0 -> n1 [") && has(dot, "label=\"60.00%\\n2\u00d7\"")) << dot;
  EXPECT_TRUE(has(dot, "n1 -> n2 [") && has(dot, "label=\"10.00%\\n1\u00d7\"")) << dot;
  // Share 1: HSL (0, 1, 0.5), red. Share 0.1: HSL (0.6, 0.82, 0.275) = (13, 59, 128), by hand.
  EXPECT_TRUE(has(dot, "n0 [color=\"#ff0000\"")) << dot;
  EXPECT_TRUE(has(dot, "n2 [color=\"#0d3b80\"")) << dot;
  // An arrow of share 0.6 is max(4 * 0.6, 0.5) = 2.40 wide, its head 0.5 * sqrt(2.4).
  EXPECT_TRUE(has(dot, "arrowsize=\"0.77\", fontsize=\"10.00\", labeldistance=\"2.40\", penwidth=\"2.40\"")) << dot;
  EXPECT_TRUE(has(dot, "left out: 0 boxes under 0.50% and 0 arrows under 0.10% of the whole")) << dot;
}

// main [0, 100000]: big [0, 50000] (calls x for 50 ns: 0.05%), small [50000, 50400]
// (0.4%), x [60000, 70000] (10%). small goes (below 0.5%) with its arrow; the arrow
// big -> x goes (below 0.1%) while both boxes stay.
TEST(CallGraph, PrunesBoxesAndArrowsAsGprof2dot) {
  TraceBuilder b("app");
  const ThreadId t = b.thread("main");
  const SiteId main = b.site("main"), big = b.site("big"), small = b.site("small"), x = b.site("x");
  b.begin(t, main, 0).begin(t, big, 0).begin(t, x, 100).end(t, 150).end(t, 50000);
  b.begin(t, small, 50000).end(t, 50400).begin(t, x, 60000).end(t, 70000).end(t, 100000);
  const RecordedTrace trace = b.build(100000);
  const std::string dot = call_graph_dot(trace);
  EXPECT_FALSE(has(dot, "label=\"small")) << dot;
  EXPECT_TRUE(has(dot, "label=\"x\\n10.05%")) << dot;
  EXPECT_TRUE(has(dot, "n0 -> n2")) << dot;   // main -> x, 10%
  EXPECT_FALSE(has(dot, "n1 -> n2")) << dot;  // big -> x, 0.05%
  EXPECT_TRUE(has(dot, "left out: 1 boxes under 0.50% and 2 arrows under 0.10% of the whole")) << dot;
  CallGraphOptions all;
  all.node_threshold = all.edge_threshold = 0;
  const std::string every = call_graph_dot(trace, all);
  EXPECT_TRUE(has(every, "label=\"small\\n0.40%")) << every;
  EXPECT_TRUE(has(every, "n1 -> n2")) << every;
  EXPECT_TRUE(has(every, "left out: 0 boxes under 0.00% and 0 arrows under 0.00% of the whole")) << every;
}

// f [0, 300] calls f [100, 200]: 2 calls, the inner one not primitive; cumtime counts
// the outer call only (300, 100%); the arrow f -> f is the inner call (100: 33.33%).
TEST(CallGraph, RecursionCountsPrimitiveCallsAsCProfile) {
  TraceBuilder b("app");
  const ThreadId t = b.thread("main");
  const SiteId f = b.site("f");
  b.begin(t, f, 0).begin(t, f, 100).end(t, 200).end(t, 300);
  const std::string dot = call_graph_dot(b.build(300));
  EXPECT_TRUE(has(dot, "label=\"f\\n100.00%\\n(100.00%)\\n300 ns\\n2\u00d7\"")) << dot;
  EXPECT_TRUE(has(dot, "n0 -> n0 [") && has(dot, "label=\"33.33%\\n1\u00d7\"")) << dot;
  EXPECT_TRUE(has(dot, "2 calls (1 primitive)")) << dot;
}

// Zones are boxes by name (two sites "x" are one); instrumented functions by their
// file, line and name (two functions "f" are two, each with its place).
TEST(CallGraph, ZonesByNameFunctionsByPlace) {
  TraceBuilder b("app");
  const ThreadId t = b.thread("main");
  const SiteId x1 = b.site("x", SiteKind::zone, "a.cpp", 1), x2 = b.site("x", SiteKind::zone, "b.cpp", 7);
  const SiteId f1 = b.site("f", SiteKind::zone, "src/a.cpp", 10, "f", {}, SiteOptions::function);
  const SiteId f2 = b.site("f", SiteKind::zone, "src/a.cpp", 90, "f", {}, SiteOptions::function);
  b.begin(t, x1, 0).end(t, 100).begin(t, x2, 100).end(t, 200);
  b.begin(t, f1, 200).end(t, 300).begin(t, f2, 300).end(t, 400);
  const std::string dot = call_graph_dot(b.build(400));
  EXPECT_TRUE(has(dot, "label=\"x\\n50.00%\\n(50.00%)\\n200 ns\\n2\u00d7\"")) << dot;
  EXPECT_TRUE(has(dot, "label=\"f\\na.cpp:10\\n25.00%")) << dot;
  EXPECT_TRUE(has(dot, "label=\"f\\na.cpp:90\\n25.00%")) << dot;
}

// Per thread: a cluster each, named after its thread, shares of its own time.
TEST(CallGraph, PerThreadGraphsHaveTheirThreadsShares) {
  TraceBuilder b("app");
  const ThreadId a = b.thread("alpha", 101), w = b.thread("", 202);
  const SiteId top = b.site("top"), child = b.site("child");
  b.begin(a, top, 0).begin(a, child, 0).end(a, 250).end(a, 1000);
  b.begin(w, top, 0).begin(w, child, 0).end(w, 3000).end(w, 4000);
  CallGraphOptions options;
  options.per_thread = true;
  const std::string dot = call_graph_dot(b.build(4000), options);
  EXPECT_TRUE(has(dot, "subgraph cluster_0 {\n  label=\"alpha (tid 101): 1.000 us\";")) << dot;
  EXPECT_TRUE(has(dot, "subgraph cluster_1 {\n  label=\"thread tid 202: 4.000 us\";")) << dot;
  EXPECT_TRUE(has(dot, "t0n1 [color=") && has(dot, "label=\"child\\n25.00%\\n(25.00%)\\n250 ns\\n1\u00d7\"")) << dot;
  EXPECT_TRUE(has(dot, "t1n1 [color=") && has(dot, "label=\"child\\n75.00%\\n(75.00%)\\n3.000 us\\n1\u00d7\"")) << dot;
  // Merged: both threads in one graph, shares of 5 us.
  const std::string merged = call_graph_dot(b.build(4000));
  EXPECT_TRUE(has(merged, "label=\"child\\n65.00%\\n(65.00%)\\n3.250 us\\n2\u00d7\"")) << merged;
}

TEST(CallGraph, NamesAreEscapedForDot) {
  TraceBuilder b("app");
  const ThreadId t = b.thread("main");
  b.begin(t, b.site("say \"hi\"\\\nnow\x01"), 0).end(t, 10);
  const std::string dot = call_graph_dot(b.build(10));
  EXPECT_TRUE(has(dot, "label=\"say \\\"hi\\\"\\\\ now \\n100.00%")) << dot;
}

// A ".svg" path: the DOT beside it, then the drawing; without Graphviz on PATH the .dot
// is written and the exporter says why there is no .svg.
TEST(CallGraph, SvgIsDrawnByDotAndItsAbsenceIsSaid) {
  ASSERT_TRUE(graphviz_dot_found()) << "Graphviz's dot is a test dependency (scripts/debian-packages.txt)";
  const std::filesystem::path dir = scratch("svg");
  auto drawn = call_graph_exporter(dir / "calls.svg");
  EXPECT_EQ(drawn->output_paths(), (std::vector<std::filesystem::path>{dir / "calls.dot", dir / "calls.svg"}));
  replay(known_tree(), *drawn);
  std::ifstream svg(dir / "calls.svg");
  const std::string text((std::istreambuf_iterator<char>(svg)), std::istreambuf_iterator<char>());
  EXPECT_TRUE(has(text, "<svg") && has(text, ">parse</text>") && has(text, ">60.00%</text>")) << text;

  const std::string path = std::getenv("PATH");
  setenv("PATH", (dir / "empty").c_str(), 1);
  auto undrawn = call_graph_exporter(dir / "nodot.svg");
  try {
    replay(known_tree(), *undrawn);
    ADD_FAILURE() << "no error without dot";
  } catch (const std::runtime_error& e) {
    EXPECT_TRUE(has(e.what(), "cannot draw '" + (dir / "nodot.svg").string() + "': Graphviz's dot is not on PATH"))
        << e.what();
  }
  setenv("PATH", path.c_str(), 1);
  EXPECT_GT(std::filesystem::file_size(dir / "nodot.dot"), 100u);
  EXPECT_FALSE(std::filesystem::exists(dir / "nodot.svg"));
  std::filesystem::remove_all(dir);
}

// A `dot` that is not Graphviz's: a script put first on PATH for one test.
class FakeDot {
 public:
  FakeDot(const std::filesystem::path& dir, const std::string& script) : path_(std::getenv("PATH")) {
    std::filesystem::create_directories(dir / "bin");
    std::ofstream(dir / "bin" / "dot") << "#!/bin/sh\n" << script << "\n";
    std::filesystem::permissions(dir / "bin" / "dot", std::filesystem::perms::owner_all);
    setenv("PATH", ((dir / "bin").string() + ":" + path_).c_str(), 1);
  }
  ~FakeDot() { setenv("PATH", path_.c_str(), 1); }

 private:
  std::string path_;
};

// What `dot` does wrong is said, naming the SVG: its failure and first error line, an
// output that is no SVG, a run past the time limit (killed). The .dot is there each time.
TEST(CallGraph, DotsFailuresAreSaid) {
  const std::filesystem::path dir = scratch("fake_dot");
  const auto error_of = [&](const std::string& script, double seconds) -> std::string {
    FakeDot fake(dir, script);
    CallGraphOptions options;
    options.dot_seconds = seconds;
    auto exporter = call_graph_exporter(dir / "calls.svg", options);
    try {
      replay(known_tree(), *exporter);
    } catch (const std::runtime_error& e) {
      EXPECT_GT(std::filesystem::file_size(dir / "calls.dot"), 100u);
      EXPECT_FALSE(std::filesystem::exists(dir / "calls.svg"));
      return e.what();
    }
    return "no error";
  };
  const std::string prefix = "cannot draw '" + (dir / "calls.svg").string() + "': ";
  std::string e = error_of("cat >/dev/null; echo 'Error: <stdin>: syntax error in line 3' >&2; exit 3", 0);
  EXPECT_TRUE(has(e, prefix + "dot failed (exit status 3): Error: <stdin>: syntax error in line 3")) << e;
  e = error_of("cat >/dev/null; echo '<html>'", 0);
  EXPECT_TRUE(has(e, prefix + "dot wrote no whole SVG (7 bytes)")) << e;
  e = error_of("exec sleep 1000", 0.2);
  EXPECT_TRUE(has(e, prefix + "dot had not finished after 0.2 s")) << e;
  std::filesystem::remove_all(dir);
}

// A program with its standard streams closed (a daemon): the memory files dot reads and
// writes are then descriptors 0, 1 and 2 themselves (dup2 onto itself keeps close-on-exec
// unless posix_spawn clears it). Run in a child that closes its streams.
TEST(CallGraph, DrawsWhenTheProgramClosedItsStandardStreams) {
  const std::filesystem::path dir = scratch("closed_streams");
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    int status = 0;
    try {
      auto exporter = call_graph_exporter(dir / "calls.svg");  // its files opened first
      ::close(0);
      ::close(1);
      ::close(2);
      replay(known_tree(), *exporter);
    } catch (...) {
      status = 1;
    }
    ::_exit(status);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "the exporter threw, status " << status;
  std::ifstream svg(dir / "calls.svg");
  const std::string text((std::istreambuf_iterator<char>(svg)), std::istreambuf_iterator<char>());
  EXPECT_TRUE(has(text, "<svg") && has(text, ">parse</text>") && has(text, ">60.00%</text>")) << text;
  std::filesystem::remove_all(dir);
}

// The frames of a flame graph SVG: stack (from depth and offsets) -> (offset, value, x, width).
struct Frame {
  std::string name;
  std::uint64_t o, v, d;
  double x, w, y;
};
std::vector<Frame> frames_of(const std::string& svg) {
  static const std::regex frame(
      "<g class=\"f\" data-o=\"(\\d+)\" data-v=\"(\\d+)\" data-d=\"(\\d+)\"><title>(.*?) \\([^()]*\\)</title>"
      "<rect x=\"([\\d.]+)\" y=\"(\\d+)\" width=\"([\\d.]+)\"");
  std::vector<Frame> out;
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), frame); it != std::sregex_iterator(); ++it) {
    const std::smatch& m = *it;
    out.push_back(Frame{m[4], std::stoull(m[1]), std::stoull(m[2]), std::stoull(m[3]), std::stod(m[5]), std::stod(m[7]),
                        std::stod(m[6])});
  }
  return out;
}
std::map<std::string, Frame> by_stack(const std::vector<Frame>& frames) {
  std::map<std::string, Frame> out;
  std::vector<std::pair<std::string, Frame>> placed;
  for (std::uint64_t depth = 0;; ++depth) {
    bool any = false;
    for (const Frame& f : frames) {
      if (f.d != depth) continue;
      any = true;
      std::string stack = f.name;
      for (const auto& [s, p] : placed) {
        if (p.d + 1 == depth && p.o <= f.o && f.o + f.v <= p.o + p.v) stack = s + ";" + f.name;
      }
      placed.emplace_back(stack, f);
      out.emplace(stack, f);
    }
    if (!any) break;
  }
  return out;
}

TEST(FlameGraph, WidthsAreTheTablesValues) {
  const std::vector<FlameStack> table{{{"a", "b"}, 30}, {{"a"}, 10}, {{"c"}, 60}};
  const auto frames = by_stack(frames_of(flame_graph_svg(table, {})));
  ASSERT_EQ(frames.size(), 4u);
  const Frame& a = frames.at("all;a");
  EXPECT_EQ(frames.at("all").v, 100u);
  EXPECT_EQ(a.v, 40u);
  EXPECT_EQ(a.o, 0u);
  EXPECT_DOUBLE_EQ(a.w, 472.0);  // 40% of 1180 px
  EXPECT_EQ(frames.at("all;a;b").v, 30u);
  EXPECT_EQ(frames.at("all;c").o, 40u);  // after a, in name order
  EXPECT_DOUBLE_EQ(frames.at("all;c").x, 482.0);
  EXPECT_LT(frames.at("all;a;b").y, a.y);  // a flame grows upwards
  FlameGraphOptions icicle;
  icicle.icicle = true;
  const auto down = by_stack(frames_of(flame_graph_svg(table, icicle)));
  EXPECT_GT(down.at("all;a;b").y, down.at("all;a").y);
  const std::string svg = flame_graph_svg(table, {});
  EXPECT_TRUE(has(svg, "<title>a (40 ns, 40.00%; 40 ns)</title>")) << svg;
  EXPECT_TRUE(has(svg, "data-total=\"100\" data-unit=\"ns\"")) << svg;
}

TEST(FlameGraph, SmallFramesMergeIntoTheirParentAndThePictureSaysSo) {
  const std::vector<FlameStack> table{{{"a"}, 100000}, {{"a", "tiny"}, 50}, {{"a", "tiny", "tinier"}, 10}};
  const std::string svg = flame_graph_svg(table, {});
  const auto frames = by_stack(frames_of(svg));
  EXPECT_EQ(frames.size(), 2u);
  EXPECT_EQ(frames.at("all;a").v, 100060u);
  EXPECT_TRUE(has(svg, "2 frames under 0.1% of the whole (0.06% of it) merged into their parents")) << svg;
  FlameGraphOptions every;
  every.merge_below = 0;
  EXPECT_EQ(frames_of(flame_graph_svg(table, every)).size(), 4u);
}

TEST(FlameGraph, NamesAreEscapedForXml) {
  const std::vector<FlameStack> table{{{"<a&b>\x01\xEF\xBF\xBF"}, 10}};
  const std::string svg = flame_graph_svg(table, {});
  EXPECT_TRUE(has(svg, "<title>&lt;a&amp;b&gt;?? (10 ns")) << svg;
}

TEST(FlameGraph, FoldedTextIsReadOrRefusedByLine) {
  const std::vector<FlameStack> stacks = parse_folded_stacks("a;b c 12\n\nd 3\n", "t.folded");
  ASSERT_EQ(stacks.size(), 2u);
  EXPECT_EQ(stacks[0].frames, (std::vector<std::string>{"a", "b c"}));
  EXPECT_EQ(stacks[0].value, 12u);
  try {
    parse_folded_stacks("a 1\nb x\n", "t.folded");
    ADD_FAILURE() << "no error";
  } catch (const std::runtime_error& e) {
    EXPECT_TRUE(has(e.what(), "t.folded line 2")) << e.what();
  }
}

// Random nesting on three threads: every frame of the flame graph is worth what the
// folded stacks exporter's lines under its stack add up to.
TEST(FlameGraph, DrawsTheFoldedStacksExportersNumbers) {
  std::mt19937_64 random(49);
  TraceBuilder b("random");
  std::vector<SiteId> sites;
  for (const char* name : {"a", "b", "c", "d", "e"}) sites.push_back(b.site(name));
  for (int k = 0; k < 3; ++k) {
    const ThreadId t = b.thread(std::string("t").append(std::to_string(k)));
    std::uint64_t now = 0;
    int depth = 0;
    for (int i = 0; i < 3000; ++i) {
      now += 1 + random() % 1000;
      if (depth > 0 && (depth >= 6 || random() % 2 == 0)) {
        b.end(t, now);
        --depth;
      } else {
        b.begin(t, sites[random() % sites.size()], now);
        ++depth;
      }
    }
    for (; depth > 0; --depth) b.end(t, now += 7);
  }
  const RecordedTrace trace = b.build();
  for (const bool roots : {false, true}) {
    FoldedStacksOptions folded_options;
    folded_options.thread_root = roots;
    std::ostringstream folded;
    auto folder = folded_stacks_exporter(folded, folded_options);
    replay(trace, *folder);
    std::map<std::string, std::uint64_t> expected;  // "all;stack prefix" -> value
    std::istringstream lines(folded.str());
    for (std::string line; std::getline(lines, line);) {
      const std::uint64_t value = std::stoull(line.substr(line.rfind(' ') + 1));
      std::string prefix = "all";
      expected[prefix] += value;
      std::istringstream frames(line.substr(0, line.rfind(' ')));
      for (std::string frame; std::getline(frames, frame, ';');) expected[prefix += ";" + frame] += value;
    }
    FlameGraphOptions options;
    options.thread_root = roots;
    options.merge_below = 0;
    const auto frames = by_stack(frames_of(flame_svg(trace, options)));
    ASSERT_EQ(frames.size(), expected.size()) << "roots " << roots;
    for (const auto& [stack, value] : expected) {
      ASSERT_EQ(frames.count(stack), 1u) << stack;
      EXPECT_EQ(frames.at(stack).v, value) << stack;
    }
  }
}

TEST(FlameGraph, LeaksComeFromTheSessionsStats) {
  RecordedTrace trace = known_tree();
  trace.stats.memory.known = true;
  const auto leak = [](const char* stack, std::uint64_t blocks, std::uint64_t bytes) {
    MemoryStats::Leak l;
    l.stack = stack;
    l.blocks = blocks;
    l.bytes = bytes;
    return l;
  };
  trace.stats.memory.leaks = {leak("outer; leaky", 1, 77777), leak("kept", 10, 4000)};
  FlameGraphOptions options;
  options.value = FlameValue::leaked_bytes;
  const std::string svg = flame_svg(trace, options);
  const auto frames = by_stack(frames_of(svg));
  EXPECT_EQ(frames.at("all").v, 81777u);
  EXPECT_EQ(frames.at("all;outer;leaky").v, 77777u);
  EXPECT_EQ(frames.at("all;kept").v, 4000u);
  EXPECT_TRUE(has(svg, "Flame graph: bytes still live at the end (leaks)")) << svg;
  EXPECT_TRUE(has(svg, "data-unit=\"bytes\"")) << svg;
}

TEST(FlameGraph, NothingToDrawIsSaid) {
  TraceBuilder b("empty");
  b.thread("main");
  const RecordedTrace empty = b.build(10);
  EXPECT_TRUE(has(flame_svg(empty), "empty: no zones recorded"));
  FlameGraphOptions memory;
  memory.value = FlameValue::alloc_bytes;
  EXPECT_TRUE(has(flame_svg(known_tree(), memory), "app: no allocations recorded"));
  EXPECT_TRUE(frames_of(flame_svg(empty)).empty());
}

// A live session (the drainer calls the exporters): two threads' calls counted in the
// call graph, and the flame graph equal to the folded stacks of the same session.
TEST(Pictures, LiveSessionDrawsBoth) {
  constexpr int kOuter = 300, kInner = 4;
  std::ostringstream dot, flame, folded;
  {
    Config config;
    config.overflow = OverflowPolicy::block;
    Session session(config);
    session.add_exporter(call_graph_exporter(dot));
    FlameGraphOptions flame_options;
    flame_options.merge_below = 0;
    session.add_exporter(flame_graph_exporter(flame, flame_options));
    session.add_exporter(folded_stacks_exporter(folded));
    session.start();
    const auto work = [] {
      for (int i = 0; i < kOuter; ++i) {
        RINGTRACE_ZONE("outer");
        for (int j = 0; j < kInner; ++j) {
          RINGTRACE_ZONE("inner");
        }
      }
    };
    std::thread other(work);
    work();
    other.join();
    session.stop();
    ASSERT_EQ(session.stats().dropped, 0u);
  }
  EXPECT_TRUE(has(dot.str(), "\\n" + std::to_string(2 * kOuter) + "\u00d7\", tooltip=\"outer")) << dot.str();
  EXPECT_TRUE(has(dot.str(), "\\n" + std::to_string(2 * kOuter * kInner) + "\u00d7\", tooltip=\"inner")) << dot.str();
  std::map<std::string, std::uint64_t> expected;
  std::istringstream lines(folded.str());
  for (std::string line; std::getline(lines, line);) {
    const std::uint64_t value = std::stoull(line.substr(line.rfind(' ') + 1));
    std::string prefix = "all";
    expected[prefix] += value;
    std::istringstream frames(line.substr(0, line.rfind(' ')));
    for (std::string frame; std::getline(frames, frame, ';');) expected[prefix += ";" + frame] += value;
  }
  const auto frames = by_stack(frames_of(flame.str()));
  ASSERT_EQ(frames.size(), expected.size()) << flame.str();
  for (const auto& [stack, value] : expected) EXPECT_EQ(frames.count(stack) == 1 ? frames.at(stack).v : 0, value);
}

}  // namespace
}  // namespace ringtrace
