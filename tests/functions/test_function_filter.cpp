// The filter of instrumented functions' zones (runtime/core/function_filter.hpp) on
// streams built by hand: which zones go, how what was inside them moves up, what is held
// until it is decided; and the environment's session plan (runtime/launch/).
#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <string>
#include <vector>

#include "environment_session.hpp"
#include "function_filter.hpp"

namespace ringtrace::detail {
namespace {

// Sites: 0 dropped, 1 "f" (function), 2 "g" (function), 3 "zone" (a macro's), 4 "arg" (value).
std::vector<SiteInfo> sites() {
  return {SiteInfo{"dropped", "", "", 0, SiteKind::instant, 0, ""},
          SiteInfo{"ns::f()", "ns::f()", "f.cpp", 1, SiteKind::zone, SiteOptions::function, ""},
          SiteInfo{"ns::g()", "ns::g()", "g.cpp", 2, SiteKind::zone, SiteOptions::function, ""},
          SiteInfo{"zone", "", "z.cpp", 3, SiteKind::zone, 0, ""}, SiteInfo{"arg", "", "", 0, SiteKind::value, 0, ""}};
}

Event begin(std::uint64_t t, SiteId site, std::uint32_t depth) {
  Event e{t, site, 0, EventKind::zone_begin, 0, 0, depth, {}};
  e.value.u = 0;
  return e;
}
Event end(std::uint64_t t, SiteId site, std::uint32_t depth) {
  Event e{t, site, 0, EventKind::zone_end, 0, 0, depth, {}};
  e.value.u = 0;
  return e;
}
Event arg(std::uint64_t t, std::uint32_t depth) {
  Event e{t, 4, 0, EventKind::arg, 0, 0, depth, {}};
  e.value.i = 7;
  return e;
}

struct Filtered {
  FunctionFilter filter;
  FilteredThread thread;
  std::vector<SiteInfo> table = sites();
  explicit Filtered(const FunctionOptions& options) : filter(options) {}
  void add(const std::vector<Event>& events) {
    thread.add(events.data(), events.size(), filter, [this](SiteId id) -> const SiteInfo& { return table[id]; });
  }
  // Released up to `limit`: "b:name@depth", "e:name@depth", "a@depth".
  std::vector<std::string> release(std::uint64_t limit) {
    std::vector<Event> out(64);
    out.resize(thread.release(limit, out.data(), out.size()));
    std::vector<std::string> text;
    for (const Event& e : out) {
      const std::string d = "@" + std::to_string(e.depth);
      if (e.kind == EventKind::zone_begin) text.push_back("b:" + std::string(table[e.site].name) + d);
      if (e.kind == EventKind::zone_end) text.push_back("e:" + std::string(table[e.site].name) + d);
      if (e.kind == EventKind::arg) text.push_back("a" + d);
    }
    return text;
  }
};

using Strings = std::vector<std::string>;

TEST(FunctionFilter, ShortCallsGoWholeAndWhatWasInsideMovesUp) {
  FunctionOptions options;
  options.min_duration = std::chrono::nanoseconds(100);
  Filtered run(options);
  // f [0, 1000) holds g [10, 50) (short, with an arg and a macro zone inside) and g [60, 300).
  run.add({begin(0, 1, 0), begin(10, 2, 1), arg(11, 2), begin(20, 3, 2), arg(21, 3), end(30, 3, 2), end(50, 2, 1),
           begin(60, 2, 1), end(300, 2, 1), end(1000, 1, 0)});
  EXPECT_EQ(run.release(~std::uint64_t{0}),
            (Strings{"b:ns::f()@0", "b:zone@1", "a@2", "e:zone@1", "b:ns::g()@1", "e:ns::g()@1", "e:ns::f()@0"}));
  EXPECT_EQ(run.filter.short_calls(), 1u);
  const auto rows = run.filter.short_by_function([&](SiteId id) -> const SiteInfo& { return run.table[id]; });
  EXPECT_EQ(rows, (std::vector<std::pair<std::string, std::uint64_t>>{{"ns::g()", 1}}));
}

TEST(FunctionFilter, NothingIsReleasedBeforeItIsDecided) {
  FunctionOptions options;
  options.min_duration = std::chrono::nanoseconds(100);
  Filtered run(options);
  run.add({begin(0, 1, 0), begin(10, 2, 1)});
  // Neither f nor g has ended or is known long: nothing goes, whatever the limit.
  EXPECT_EQ(run.thread.undecided_since(), 0u);
  EXPECT_EQ(run.release(~std::uint64_t{0} - 1), Strings{});
  run.add({end(40, 2, 1)});  // g was short
  EXPECT_EQ(run.release(40), Strings{});
  EXPECT_EQ(run.filter.short_calls(), 1u);
  // An event of the thread at 150 (after f's begin + 100): f is long, released while open,
  // up to the limit.
  run.add({begin(150, 3, 1)});
  EXPECT_EQ(run.thread.undecided_since(), ~std::uint64_t{0});
  EXPECT_EQ(run.release(149), (Strings{"b:ns::f()@0"}));
  EXPECT_EQ(run.release(150), (Strings{"b:zone@1"}));
  run.add({end(160, 3, 1), end(170, 1, 0)});
  EXPECT_EQ(run.release(~std::uint64_t{0}), (Strings{"e:zone@1", "e:ns::f()@0"}));
  EXPECT_TRUE(run.thread.empty());
}

// The end of a short call that its thread publishes long after the begin (preempted
// between reading the clock and the store): the call was never released, and goes whole
// when its end comes, however late. What comes after it waits with it.
TEST(FunctionFilter, AShortCallWhoseEndComesLateIsLeftOut) {
  FunctionOptions options;
  options.min_duration = std::chrono::nanoseconds(100);
  Filtered run(options);
  run.add({begin(0, 3, 0), end(5, 3, 0), begin(10, 1, 0)});
  for (std::uint64_t limit : {1'000u, 1'000'000u, 1'000'000'000u}) {
    EXPECT_EQ(run.release(limit), limit == 1'000u ? (Strings{"b:zone@0", "e:zone@0"}) : Strings{});
    EXPECT_EQ(run.thread.undecided_since(), 10u);
  }
  run.add({end(60, 1, 0), begin(2'000'000'000, 2, 0)});  // f's end: 50 ns after its begin
  EXPECT_EQ(run.thread.undecided_since(), 2'000'000'000u);
  EXPECT_EQ(run.release(~std::uint64_t{0}), Strings{});
  EXPECT_EQ(run.filter.short_calls(), 1u);
}

// The caller's prove(t) (the drainer knows every end stamped up to t was decoded): open
// calls begun at or before t - min_duration are long; later ones still wait.
TEST(FunctionFilter, ACallProvenLongBeforeItsEndIsReleased) {
  FunctionOptions options;
  options.min_duration = std::chrono::nanoseconds(100);
  Filtered run(options);
  run.add({begin(0, 1, 0), begin(50, 2, 1)});
  run.thread.prove(99);
  EXPECT_EQ(run.release(~std::uint64_t{0} - 1), Strings{});
  run.thread.prove(100);  // f: 0 + 100 <= 100; g: 50 + 100 > 100
  EXPECT_EQ(run.thread.undecided_since(), 50u);
  EXPECT_EQ(run.release(~std::uint64_t{0} - 1), (Strings{"b:ns::f()@0"}));
  run.add({end(70, 2, 1)});  // g short: goes
  EXPECT_EQ(run.thread.undecided_since(), ~std::uint64_t{0});
  run.add({end(80, 1, 0)});
  EXPECT_EQ(run.release(~std::uint64_t{0}), (Strings{"e:ns::f()@0"}));
  EXPECT_EQ(run.filter.short_calls(), 1u);
}

TEST(FunctionFilter, ExcludedFunctionsAndMacroZonesAreNeverTimed) {
  FunctionOptions options;
  options.min_duration = std::chrono::nanoseconds(100);
  options.exclude = {"^ns::f"};
  Filtered run(options);
  // f is excluded, however long; the macro zone is short and stays.
  run.add({begin(0, 1, 0), arg(1, 1), begin(10, 3, 1), end(20, 3, 1), begin(30, 2, 1), end(500, 2, 1), end(900, 1, 0)});
  EXPECT_EQ(run.release(~std::uint64_t{0}), (Strings{"b:zone@0", "e:zone@0", "b:ns::g()@0", "e:ns::g()@0"}));
  EXPECT_EQ(run.filter.excluded(), 1u);
  EXPECT_EQ(run.filter.short_calls(), 0u);
}

TEST(FunctionFilter, IncludeKeepsOnlyMatchingFunctions) {
  FunctionOptions options;
  options.include = {"g\\(\\)$"};
  Filtered run(options);
  EXPECT_TRUE(run.filter.active());
  run.add({begin(0, 1, 0), begin(10, 2, 1), end(20, 2, 1), end(30, 1, 0)});
  EXPECT_EQ(run.release(~std::uint64_t{0}), (Strings{"b:ns::g()@0", "e:ns::g()@0"}));
  EXPECT_FALSE(FunctionFilter(FunctionOptions{}).active());
  options.include = {"("};
  EXPECT_THROW(FunctionFilter{options}, std::invalid_argument);
}

EnvironmentPlan plan(std::map<std::string, std::string> vars) {
  return plan_from_environment(
      [&](const char* name) -> const char* {
        const auto it = vars.find(name);
        return it == vars.end() ? nullptr : it->second.c_str();
      },
      4242);
}

TEST(EnvironmentSession, OutputsFormatsAndSettings) {
  EXPECT_FALSE(plan({}).wanted);
  EXPECT_FALSE(plan({{"RINGTRACE_OUTPUT", ""}}).wanted);
  EnvironmentPlan p = plan({{"RINGTRACE_OUTPUT",
                             "run.rtrace,t.json.gz,pstats:out/%p.data,x.perfetto-trace,f.folded,"
                             "table:t.txt,summary:s.txt,chrome:a:b.json"},
                            {"RINGTRACE_BUFFER", "4096"},
                            {"RINGTRACE_POLICY", "block"},
                            {"RINGTRACE_MIN_DURATION", "1.5us"},
                            {"RINGTRACE_MAX_DEPTH", "64"},
                            {"RINGTRACE_INCLUDE", "^app::"},
                            {"RINGTRACE_EXCLUDE", "std::"}});
  ASSERT_EQ(p.error, "");
  std::vector<std::string> outputs;
  for (const EnvironmentOutput& o : p.outputs) outputs.push_back(o.format + " " + o.path);
  EXPECT_EQ(outputs, (std::vector<std::string>{"rtrace run.rtrace", "chrome t.json.gz", "pstats out/4242.data",
                                               "perfetto x.perfetto-trace", "folded f.folded", "table t.txt",
                                               "summary s.txt", "chrome a:b.json"}));
  EXPECT_EQ(p.config.buffer_records, 4096u);
  EXPECT_EQ(p.config.overflow, OverflowPolicy::block);
  EXPECT_EQ(p.config.functions.min_duration, std::chrono::nanoseconds(1500));
  EXPECT_EQ(p.config.functions.max_depth, 64u);
  EXPECT_EQ(p.config.functions.include, std::vector<std::string>{"^app::"});
  EXPECT_EQ(p.config.functions.exclude, std::vector<std::string>{"std::"});
  EXPECT_FALSE(p.config.context_switches);
  // Without RINGTRACE_BUFFER, rings of 8 MiB (524288 records of 16 bytes), not Config's 1 MiB:
  // a whole program's functions fill 1 MiB in a millisecond or two.
  EXPECT_EQ(plan({{"RINGTRACE_OUTPUT", "a.rtrace"}}).config.buffer_records, std::size_t{1} << 19);
  // RINGTRACE_CONTEXT_SWITCHES (ringtrace record --context-switches): 1 on, 0 off.
  EXPECT_TRUE(plan({{"RINGTRACE_OUTPUT", "a.rtrace"}, {"RINGTRACE_CONTEXT_SWITCHES", "1"}}).config.context_switches);
  EXPECT_FALSE(plan({{"RINGTRACE_OUTPUT", "a.rtrace"}, {"RINGTRACE_CONTEXT_SWITCHES", "0"}}).config.context_switches);
}

TEST(EnvironmentSession, WhatIsWrongIsSaid) {
  EXPECT_NE(plan({{"RINGTRACE_OUTPUT", "trace.txt"}}).error.find("names no format"), std::string::npos);
  EXPECT_NE(plan({{"RINGTRACE_OUTPUT", "chrome:"}}).error.find("has no path"), std::string::npos);
  EXPECT_NE(plan({{"RINGTRACE_OUTPUT", "a.rtrace"}, {"RINGTRACE_POLICY", "wait"}}).error.find("drop nor block"),
            std::string::npos);
  EXPECT_NE(plan({{"RINGTRACE_OUTPUT", "a.rtrace"}, {"RINGTRACE_MIN_DURATION", "5 parsecs"}}).error.find("duration"),
            std::string::npos);
  EXPECT_NE(plan({{"RINGTRACE_OUTPUT", "a.rtrace"}, {"RINGTRACE_MAX_DEPTH", "0"}}).error.find("depth"),
            std::string::npos);
  EXPECT_NE(plan({{"RINGTRACE_OUTPUT", "a.rtrace"}, {"RINGTRACE_EXCLUDE", "(x"}}).error.find("regular expression"),
            std::string::npos);
  EXPECT_NE(
      plan({{"RINGTRACE_OUTPUT", "a.rtrace"}, {"RINGTRACE_CONTEXT_SWITCHES", "yes"}}).error.find("neither 1 nor 0"),
      std::string::npos);
  std::chrono::nanoseconds d{};
  EXPECT_TRUE(parse_duration("100", d));
  EXPECT_EQ(d.count(), 100);
  EXPECT_TRUE(parse_duration("2ms", d));
  EXPECT_EQ(d.count(), 2'000'000);
  EXPECT_FALSE(parse_duration("-1us", d));
  EXPECT_FALSE(parse_duration("us", d));
}

}  // namespace
}  // namespace ringtrace::detail
