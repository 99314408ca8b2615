// Folded stacks exporter: golden output, frame-name sanitizing, the three value kinds,
// and self-time totals checked against an independent computation, on hand-built and
// random streams and on a live multi-threaded session.
#include <gtest/gtest.h>

#include <filesystem>
#include <functional>
#include <map>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "chrome_folded_streams.hpp"
#include "golden_files.hpp"
#include "ringtrace/exporters/folded_stacks.hpp"
#include "ringtrace/recorded_trace.hpp"
#include "ringtrace/ringtrace.hpp"

namespace ringtrace::testing {
namespace {

std::string folded_text(const RecordedTrace& trace, FoldedStacksOptions options = {}, std::size_t batch = 4096) {
  std::ostringstream out;
  auto exporter = folded_stacks_exporter(out, options);
  replay(trace, *exporter, batch);
  return out.str();
}

// Parses "stack value" lines as flamegraph.pl does (value after the last space).
std::map<std::string, std::uint64_t> parse_folded(const std::string& text) {
  std::map<std::string, std::uint64_t> lines;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    const std::size_t space = line.rfind(' ');
    if (space == std::string::npos) throw std::runtime_error("line without value: " + line);
    const std::string stack = line.substr(0, space);
    if (lines.count(stack) != 0) throw std::runtime_error("stack twice: " + stack);
    lines[stack] = std::stoull(line.substr(space + 1));
  }
  return lines;
}

std::uint64_t sum(const std::map<std::string, std::uint64_t>& lines) {
  std::uint64_t total = 0;
  for (const auto& [stack, value] : lines) total += value;
  return total;
}

// What the file must hold, from reference_zones (stack of site names; plain names only).
std::map<std::string, std::uint64_t> expected_lines(const RecordedTrace& trace, FoldedValue value, bool thread_root) {
  const std::vector<RefZone> zones = reference_zones(trace);
  std::map<std::string, std::uint64_t> lines;
  for (std::size_t i = 0; i < zones.size(); ++i) {
    std::string stack = trace.sites[zones[i].site].name;
    for (std::int64_t p = zones[i].parent; p >= 0; p = zones[static_cast<std::size_t>(p)].parent) {
      stack = trace.sites[zones[static_cast<std::size_t>(p)].site].name + ";" + stack;
    }
    if (thread_root) stack = trace.threads[zones[i].thread].name + ";" + stack;
    const std::uint64_t v = value == FoldedValue::self_ns    ? zones[i].self_ns
                            : value == FoldedValue::total_ns ? zones[i].end_ns - zones[i].begin_ns
                                                             : 1;
    lines[stack] += v;
  }
  std::erase_if(lines, [](const auto& line) { return line.second == 0; });
  return lines;
}

TEST(FoldedStacks, GoldenSelfTime) {
  const std::string text = folded_text(golden_trace());
  expect_golden("basic.folded", text);
  // Worked out by hand from golden_trace(): see the comments there.
  const auto lines = parse_folded(text);
  EXPECT_EQ(lines.at("main"), 2500u + 6000u);  // both threads' "main" merge: frames are names
  EXPECT_EQ(lines.at("main;parse"), 1750u);
  EXPECT_EQ(lines.at("main;parse;lex"), 750u);
  EXPECT_EQ(lines.at("main;lex"), 2000u);  // another site named "lex", closed at stop
  EXPECT_EQ(lines.at("main;graph"), 500u);
  EXPECT_EQ(lines.at("main;graph;parse"), 500u);
  EXPECT_EQ(sum(lines), 15300u);
  EXPECT_EQ(sum(lines), top_level_total(golden_trace()));
}

TEST(FoldedStacks, GoldenCallsWithThreadRoots) {
  FoldedStacksOptions options;
  options.value = FoldedValue::calls;
  options.thread_root = true;
  const std::string text = folded_text(golden_trace(), options);
  expect_golden("basic_calls_threads.folded", text);
  const auto lines = parse_folded(text);
  EXPECT_EQ(lines.at("main;main;parse"), 1u);
  EXPECT_EQ(lines.at("main;main;graph;parse"), 1u);
  EXPECT_EQ(sum(lines), 9u);  // every zone of the stream once
}

TEST(FoldedStacks, GoldenTotalTime) {
  FoldedStacksOptions options;
  options.value = FoldedValue::total_ns;
  const std::string text = folded_text(golden_trace(), options);
  expect_golden("basic_total.folded", text);
  const auto lines = parse_folded(text);
  EXPECT_EQ(lines.at("main"), 8000u + 6000u);
  EXPECT_EQ(lines.at("main;parse"), 2500u);
  EXPECT_EQ(lines.at("main;graph"), 1000u);
}

TEST(FoldedStacks, FrameNamesAreSanitized) {
  TraceBuilder b;
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"a;b", "a_b"},
      {"x 12", "x_12"},
      {"x 1.5", "x_1.5"},
      {"x12", "x12"},
      {"two  words", "two  words"},
      {"", "(empty)"},
      {"line\nbreak\r", "line_break_"},
      {"tab\t7", "tab_7"},
      {"v 1 x", "v 1 x"},
      {"emoji \xF0\x9F\x98\x80", "emoji \xF0\x9F\x98\x80"},
      {"bad \xC0\xAF", "bad \xEF\xBF\xBD\xEF\xBF\xBD"},
      {"ends 9 ", "ends 9_"},
      {" 9", "_9"},
      {"sp  ", "sp__"},
  };
  const ThreadId t = b.thread("t");
  std::uint64_t time = 0;
  for (const auto& [raw, clean] : cases) {
    const SiteId s = b.site(raw);
    b.begin(t, s, time).end(t, time + 1);
    time += 2;
  }
  const auto lines = parse_folded(folded_text(b.build()));
  ASSERT_EQ(lines.size(), cases.size());
  for (const auto& [raw, clean] : cases) EXPECT_EQ(lines.count(clean), 1u) << "frame for '" << raw << "'";
  // The golden stream's hostile names.
  const std::string text = folded_text(golden_trace(), FoldedStacksOptions{FoldedValue::self_ns, true});
  EXPECT_NE(
      text.find(
          "worker \"1\"_\\ \xF0\x9F\x9A\x80 \xEF\xBF\xBD(;q\"b\\s_l_x_ 12 \xF0\x9F\x99\x82 \xEF\xBF\xBD end_7 1200\n"),
      std::string::npos)
      << text;
}

// A random multi-threaded stream: nesting up to 6 deep, sites sharing names.
RecordedTrace random_trace(std::uint32_t seed, int zones_per_thread) {
  std::mt19937_64 rng(seed);
  TraceBuilder b;
  std::vector<SiteId> sites;
  for (int i = 0; i < 12; ++i) sites.push_back(b.site(std::string("f") + std::to_string(i % 8)));
  for (int t = 0; t < 4; ++t) {
    const ThreadId thread = b.thread(std::string("thread-") + std::to_string(t));
    std::uint64_t now = rng() % 1000;
    int open = 0;
    for (int i = 0; i < zones_per_thread;) {
      if (open < 6 && (open == 0 || rng() % 2 == 0)) {
        b.begin(thread, sites[rng() % sites.size()], now);
        ++open;
        ++i;
      } else {
        b.end(thread, now);
        --open;
      }
      now += rng() % 50;  // zero-length zones too
    }
    // Some zones stay open: closed at stop by build().
  }
  return b.build(0);
}

TEST(FoldedStacks, EveryValueKindMatchesAnIndependentComputation) {
  const RecordedTrace trace = random_trace(42, 5000);
  for (const FoldedValue value : {FoldedValue::self_ns, FoldedValue::total_ns, FoldedValue::calls}) {
    for (const bool thread_root : {false, true}) {
      const auto lines = parse_folded(folded_text(trace, FoldedStacksOptions{value, thread_root}, 97));
      EXPECT_EQ(lines, expected_lines(trace, value, thread_root))
          << "value " << static_cast<int>(value) << " thread_root " << thread_root;
    }
  }
}

TEST(FoldedStacks, SelfTimeSumEqualsAllZonesSelfTimeToTheNanosecond) {
  for (std::uint32_t seed = 1; seed <= 5; ++seed) {
    const RecordedTrace trace = random_trace(seed, 2000);
    std::uint64_t self_sum = 0;
    for (const RefZone& z : reference_zones(trace)) self_sum += z.self_ns;
    const auto lines = parse_folded(folded_text(trace));
    EXPECT_EQ(sum(lines), self_sum);
    EXPECT_EQ(sum(lines), top_level_total(trace));
  }
}

TEST(FoldedStacks, LinesAreSortedAndStableAcrossBatchSizes) {
  const RecordedTrace trace = random_trace(7, 3000);
  const std::string text = folded_text(trace);
  EXPECT_EQ(folded_text(trace, {}, 1), text);
  EXPECT_EQ(folded_text(trace, {}, 13), text);
  std::istringstream in(text);
  std::string previous, line;
  while (std::getline(in, line)) {
    const std::string stack = line.substr(0, line.rfind(' '));
    EXPECT_LT(previous, stack);
    previous = stack;
  }
}

TEST(FoldedStacks, LiveSessionSelfTimeSumMatchesTheSession) {
  const std::filesystem::path path = test_out_dir() / "live_sum.folded";
  Session session;
  auto memory = std::make_shared<MemoryExporter>();
  session.add_exporter(memory);
  session.add_exporter(folded_stacks_exporter(path.string()));
  session.start();
  std::function<int(int)> fib = [&](int n) -> int {
    RINGTRACE_ZONE("fib");
    return n < 2 ? n : fib(n - 1) + fib(n - 2);
  };
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      set_thread_name(std::string("sum-") + std::to_string(t));
      for (int i = 0; i < 50; ++i) {
        RINGTRACE_ZONE("step");
        {
          RINGTRACE_ZONE("work");
          fib(8 + t);
        }
        RINGTRACE_REGION("region", i);
        { RINGTRACE_ZONE("work"); }
      }
    });
  }
  for (auto& t : threads) t.join();
  session.stop();
  ASSERT_TRUE(session.stats().exporter_errors.empty());
  const RecordedTrace trace = memory->trace();
  ASSERT_EQ(trace.stats.dropped, 0u);
  std::uint64_t self_sum = 0;
  for (const RefZone& z : reference_zones(trace)) self_sum += z.self_ns;
  const auto lines = parse_folded(read_text(path));
  EXPECT_GT(sum(lines), 0u);
  EXPECT_EQ(sum(lines), self_sum);
  EXPECT_EQ(lines, expected_lines(trace, FoldedValue::self_ns, false));
}

TEST(FoldedStacks, ASecondRunStartsFromScratch) {
  const std::filesystem::path path = test_out_dir() / "restart.folded";
  FoldedStacksOptions options;
  options.value = FoldedValue::calls;
  Session session;
  session.add_exporter(folded_stacks_exporter(path.string(), options));
  session.start();
  { RINGTRACE_ZONE("first"); }
  session.stop();
  EXPECT_EQ(read_text(path), "first 1\n");
  session.start();
  for (int i = 0; i < 3; ++i) {
    RINGTRACE_ZONE("second");
  }
  session.stop();
  EXPECT_EQ(read_text(path), "second 3\n");
}

TEST(FoldedStacks, UnwritablePathThrowsAtTheFactory) {
  const std::string path = "/nonexistent-ringtrace-dir/stacks.folded";
  try {
    folded_stacks_exporter(path);
    FAIL() << "no exception";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace ringtrace::testing
