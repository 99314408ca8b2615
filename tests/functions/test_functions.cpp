// Automatic function instrumentation, end to end: workload.cpp (built with
// -finstrument-functions, by g++ in one test binary and by clang in the other) runs known
// call trees in live sessions; every call is counted, named, placed in its file and line
// and nested as it ran. Exceptions and longjmp through instrumented frames, a library
// opened with dlopen and closed before stop(), the maximum depth, the filters, sessions
// that start and stop inside instrumented calls, several threads, the binary file.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <pthread.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "recording.hpp"
#include "ringtrace/exporters/binary_trace.hpp"
#include "ringtrace/recorded_trace.hpp"
#include "ringtrace/ringtrace.hpp"
#include "workload.hpp"

namespace {

namespace fs = std::filesystem;
using function_tests::Call;
using function_tests::calls_of;
using function_tests::counts;
using function_tests::find;
using function_tests::record;
using function_tests::Recording;

void expect_named(const std::vector<Call>& calls, const workload::Expected& expected) {
  const Call* c = find(calls, expected.name);
  ASSERT_NE(c, nullptr) << expected.name << " not recorded";
  EXPECT_EQ(c->file, workload::source_file()) << expected.name;
  EXPECT_EQ(c->line, static_cast<std::uint32_t>(expected.line)) << expected.name;
  EXPECT_TRUE(c->function) << expected.name;
}

TEST(Functions, EveryCallCountedNamedAndNested) {
  const Recording r = record([] {
    workload::Parser parser;
    parser.parse("hello");
    workload::fib(10);
    workload::outer(3);
  });
  const auto n = counts(r.calls);
  const std::string leaf = workload::leaf_function().name, parse = workload::parse_function().name,
                    fib = workload::fib_function().name, outer = workload::outer_function().name,
                    middle = workload::middle_function().name, inner = workload::inner_function().name;
  // Nothing but the workload's functions: the test's own code, gtest and ringtrace's are
  // not instrumented, and neither is the standard library.
  EXPECT_EQ(n, (std::map<std::string, int>{{parse, 1},
                                           {leaf, 5},
                                           {fib, static_cast<int>(workload::fib_calls(10))},
                                           {outer, 1},
                                           {middle, 3},
                                           {inner, 6}}));
  for (const auto& f : {workload::leaf_function(), workload::parse_function(), workload::fib_function(),
                        workload::outer_function(), workload::middle_function(), workload::inner_function()}) {
    expect_named(r.calls, f);
  }
  for (const Call& c : r.calls) {
    if (c.name == leaf) {
      EXPECT_EQ(c.parent, parse);
    }
    if (c.name == parse || c.name == outer) {
      EXPECT_EQ(c.depth, 0u);
    }
    if (c.name == middle) {
      EXPECT_EQ(c.parent, outer);
    }
    if (c.name == inner) {
      EXPECT_EQ(c.parent, middle);
    }
    if (c.name == inner) {
      EXPECT_EQ(c.depth, 2u);
    }
    if (c.name == fib) {
      EXPECT_TRUE(c.parent.empty() || c.parent == fib);
    }
    EXPECT_LE(c.begin, c.end) << c.name;
    EXPECT_FALSE(c.unwound) << c.name;
  }
  // fib(10)'s deepest call is 10 levels down.
  std::uint32_t deepest = 0;
  for (const Call& c : r.calls) {
    if (c.name == fib) deepest = std::max(deepest, c.depth);
  }
  EXPECT_EQ(deepest, 9u);
  EXPECT_EQ(r.stats.functions.unwound, 0u);
  EXPECT_EQ(r.stats.functions.too_deep, 0u);
  EXPECT_EQ(r.stats.closed_at_stop, 0u);
}

// g++ calls the exit hooks of the frames an exception unwinds; clang does not, and the
// runtime closes them where the thread next enters an instrumented function, marked.
TEST(Functions, AnExceptionThroughInstrumentedFramesLeavesTheStackBalanced) {
  const Recording r = record([] {
    workload::catcher(5);
    workload::outer(1);
  });
  const std::string thrower = workload::thrower_function().name, catcher = workload::catcher_function().name;
  const auto n = counts(r.calls);
  EXPECT_EQ(n.at(thrower), 5);
  EXPECT_EQ(n.at(catcher), 1);
  EXPECT_EQ(n.at(workload::leaf_function().name), 1);
  const bool hooks = workload::exit_hooks_on_unwind();
  int unwound = 0;
  for (const Call& c : r.calls) {
    if (c.name == thrower) {
      EXPECT_EQ(c.unwound, !hooks);
      unwound += c.unwound ? 1 : 0;
    }
    // After the catch: the leaf is the catcher's, the next call at the top again.
    if (c.name == workload::leaf_function().name) {
      EXPECT_EQ(c.parent, catcher);
    }
    if (c.name == workload::outer_function().name) {
      EXPECT_EQ(c.depth, 0u);
    }
    if (c.name == catcher) {
      EXPECT_FALSE(c.unwound);
    }
  }
  EXPECT_EQ(unwound, hooks ? 0 : 5);
  EXPECT_EQ(r.stats.functions.unwound, hooks ? 0u : 5u);
  EXPECT_EQ(r.stats.closed_at_stop, 0u);
  expect_named(r.calls, workload::thrower_function());
  expect_named(r.calls, workload::catcher_function());
}

// longjmp skips every exit hook, with either compiler.
TEST(Functions, ALongjmpOutOfInstrumentedFramesLeavesTheStackBalanced) {
  const Recording r = record([] {
    workload::landing(4);
    workload::outer(1);
  });
  const std::string jumper = workload::jumper_function().name, landing = workload::landing_function().name;
  const auto n = counts(r.calls);
  EXPECT_EQ(n.at(jumper), 4);
  EXPECT_EQ(n.at(landing), 1);
  for (const Call& c : r.calls) {
    if (c.name == jumper) {
      EXPECT_TRUE(c.unwound);
    }
    if (c.name == landing) {
      EXPECT_FALSE(c.unwound);
    }
    if (c.name == workload::leaf_function().name) {
      EXPECT_EQ(c.parent, landing);
    }
    if (c.name == workload::outer_function().name) {
      EXPECT_EQ(c.depth, 0u);
    }
  }
  EXPECT_EQ(r.stats.functions.unwound, 4u);
  EXPECT_EQ(r.stats.closed_at_stop, 0u);
  expect_named(r.calls, workload::jumper_function());
  expect_named(r.calls, workload::landing_function());
}

// Runs `work` on a thread with a stack of `bytes` (deep recursion).
void on_big_stack(std::size_t bytes, const std::function<void()>& work) {
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, bytes);
  pthread_t thread;
  auto* copy = new std::function<void()>(work);
  ASSERT_EQ(pthread_create(
                &thread, &attr,
                [](void* arg) -> void* {
                  auto* f = static_cast<std::function<void()>*>(arg);
                  (*f)();
                  delete f;
                  return nullptr;
                },
                copy),
            0);
  pthread_attr_destroy(&attr);
  pthread_join(thread, nullptr);
}

// 100,000 deep (less under the sanitizers, RINGTRACE_TEST_SCALE: ThreadSanitizer keeps a
// shadow stack of its own).
int deep_recursion() {
  const char* scale = std::getenv("RINGTRACE_TEST_SCALE");
  const double s = scale != nullptr && std::atof(scale) > 0 ? std::atof(scale) : 1.0;
  return std::max(5000, static_cast<int>(100000 * std::min(s, 1.0)));
}

TEST(Functions, RecursionPastTheMaximumDepthIsBounded) {
  ringtrace::Config config;
  config.functions.max_depth = 1000;
  const int depth = deep_recursion();
  const Recording r = record(
      [depth] {
        on_big_stack(std::size_t{512} << 20, [depth] {
          workload::recurse(depth);
          workload::outer(1);  // the stack is kept again once the deep calls returned
        });
      },
      config);
  const auto n = counts(r.calls);
  EXPECT_EQ(n.at(workload::recurse_function().name), 1000);
  EXPECT_EQ(n.at(workload::outer_function().name), 1);
  EXPECT_EQ(n.at(workload::inner_function().name), 2);
  EXPECT_EQ(r.stats.functions.too_deep, static_cast<std::uint64_t>(depth - 1000));
  for (const Call& c : r.calls) {
    if (c.name == workload::recurse_function().name) {
      EXPECT_LT(c.depth, 1000u);
    }
    if (c.name == workload::outer_function().name) {
      EXPECT_EQ(c.depth, 0u);
    }
  }
}

// An exception thrown past the maximum depth: what was kept of the stack is repaired, the
// calls past it were never recorded.
TEST(Functions, AnExceptionFromPastTheMaximumDepth) {
  ringtrace::Config config;
  config.functions.max_depth = 3;
  const Recording r = record([] { workload::catcher(10); }, config);
  const auto n = counts(r.calls);
  const bool hooks = workload::exit_hooks_on_unwind();
  EXPECT_EQ(n.at(workload::catcher_function().name), 1);
  EXPECT_EQ(n.at(workload::thrower_function().name), 2);  // depths 2 and 3 of 10
  EXPECT_EQ(n.at(workload::leaf_function().name), 1);
  EXPECT_EQ(r.stats.functions.too_deep, 8u);
  EXPECT_EQ(r.stats.functions.unwound, hooks ? 0u : 2u);
  for (const Call& c : r.calls) {
    if (c.name == workload::leaf_function().name) {
      EXPECT_EQ(c.parent, workload::catcher_function().name);
    }
  }
}

// A function inlined into another: g++ calls its hooks from the outer function's frame,
// at the same stack pointer. By default those calls are left out and counted
// (FunctionOptions::inlined), as clang does not instrument it after inlining; kept, it nests
// inside the outer call, which is not taken for a call an exception left (nothing unwound).
void inlined_into_another(bool keep) {
  ringtrace::Config config;
  config.functions.inlined = keep;
  const Recording r = record([] { workload::inliner(5); }, config);
  const auto n = counts(r.calls);
  EXPECT_EQ(n.at(workload::inliner_function().name), 1);
  EXPECT_EQ(n.at(workload::leaf_function().name), 1);
  EXPECT_EQ(r.stats.functions.unwound, 0u);
  const int inlined =
      n.count(workload::inlined_step_function().name) ? n.at(workload::inlined_step_function().name) : 0;
  const bool hooks = workload::hooks_in_inlined_functions();
  EXPECT_EQ(inlined, hooks && keep ? 5 : 0);
  EXPECT_EQ(r.stats.functions.inlined, hooks && !keep ? 5u : 0u);
  // Listed per function: the one inlined function, with its five calls.
  using Listed = std::vector<std::pair<std::string, std::uint64_t>>;
  EXPECT_EQ(r.stats.functions.inlined_by_function,
            (hooks && !keep ? Listed{{workload::inlined_step_function().name, 5}} : Listed{}));
  for (const Call& c : r.calls) {
    if (c.name == workload::inlined_step_function().name || c.name == workload::leaf_function().name) {
      EXPECT_EQ(c.parent, workload::inliner_function().name) << c.name;
    }
    if (c.name == workload::inliner_function().name) {
      EXPECT_EQ(c.parent, "");
    }
  }
}

TEST(Functions, AFunctionInlinedIntoAnotherLeftOutAndCounted) { inlined_into_another(false); }
TEST(Functions, AFunctionInlinedIntoAnotherKeptWhenAsked) { inlined_into_another(true); }

TEST(Functions, ALibraryOpenedWithDlopenAndClosedBeforeStop) {
  const Recording r = record([] {
    void* library = dlopen(RINGTRACE_FUNCTIONS_PLUGIN, RTLD_NOW | RTLD_LOCAL);
    ASSERT_NE(library, nullptr) << dlerror();
    auto entry = reinterpret_cast<int (*)(int)>(dlsym(library, "plugin_entry"));
    auto step_line = reinterpret_cast<int (*)()>(dlsym(library, "plugin_step_line"));
    ASSERT_NE(entry, nullptr);
    ASSERT_NE(step_line, nullptr);
    EXPECT_EQ(entry(3), 6);
    ASSERT_EQ(dlclose(library), 0);
    workload::outer(1);
  });
  const auto n = counts(r.calls);
  EXPECT_EQ(n.at("plugin_entry"), 1);
  EXPECT_EQ(n.at("plugin::plugin_step(int)"), 3);
  const Call* step = find(r.calls, "plugin::plugin_step(int)");
  ASSERT_NE(step, nullptr);
  EXPECT_EQ(step->parent, "plugin_entry");
  EXPECT_EQ(fs::path(step->file).filename(), "plugin.cpp");
  EXPECT_GT(step->line, 0u);
  EXPECT_EQ(n.at(workload::outer_function().name), 1);
}

// Calls shorter than min_duration left out, counted per function. A call whose end its
// thread publishes late (preempted between reading the clock and the store) waits for
// that end: test_late_ends.cpp makes such ends by the hundred.
TEST(Functions, ShortCallsLeftOutAndCountedPerFunction) {
  ringtrace::Config config;
  config.functions.min_duration = std::chrono::microseconds(200);
  const Recording r = record(
      [] {
        workload::outer(4);  // 13 calls, each far shorter than 200 us but for a preemption
        for (int i = 0; i < 3; ++i) workload::spin(2'000'000);  // 2 ms each: always kept
      },
      config);
  const auto n = counts(r.calls);
  EXPECT_EQ(n.at(workload::spin_function().name), 3);
  // Every call is either in the stream or counted, per function.
  std::map<std::string, std::uint64_t> left_out(r.stats.functions.short_by_function.begin(),
                                                r.stats.functions.short_by_function.end());
  const std::map<std::string, int> made = {{workload::outer_function().name, 1},
                                           {workload::middle_function().name, 4},
                                           {workload::inner_function().name, 8}};
  std::uint64_t total = 0;
  for (const auto& [name, calls] : made) {
    const int kept = n.count(name) != 0 ? n.at(name) : 0;
    EXPECT_EQ(kept + static_cast<int>(left_out[name]), calls) << name;
    total += left_out[name];
  }
  EXPECT_EQ(left_out.count(workload::spin_function().name), 0u);
  EXPECT_EQ(r.stats.functions.short_calls, total);
  EXPECT_GT(total, 0u);
  // What is kept still nests (a kept call inside a left-out one moves up a level: checked
  // by calls_of's depth test).
  for (const Call& c : r.calls) EXPECT_GE(c.end - c.begin, 200'000u) << c.name;
}

TEST(Functions, NameFiltersDecideOncePerFunction) {
  ringtrace::Config config;
  config.functions.exclude = {"::inner\\("};
  Recording r = record([] { workload::outer(3); }, config);
  auto n = counts(r.calls);
  EXPECT_EQ(n,
            (std::map<std::string, int>{{workload::outer_function().name, 1}, {workload::middle_function().name, 3}}));
  EXPECT_EQ(r.stats.functions.excluded, 6u);

  config = {};
  config.functions.include = {"^workload::(middle|inner)"};
  r = record([] { workload::outer(2); }, config);
  n = counts(r.calls);
  EXPECT_EQ(n,
            (std::map<std::string, int>{{workload::middle_function().name, 2}, {workload::inner_function().name, 4}}));
  for (const Call& c : r.calls) {
    if (c.name == workload::middle_function().name) {
      EXPECT_EQ(c.depth, 0u);  // its caller left out
    }
  }
  EXPECT_EQ(r.stats.functions.excluded, 1u);

  config = {};
  config.functions.exclude = {"(unclosed"};
  ringtrace::Session bad(config);
  EXPECT_THROW(bad.start(), std::invalid_argument);
}

// A session that starts inside an instrumented call records nothing of that call; one
// that stops inside one closes it at the stop; the next session starts afresh.
TEST(Functions, SessionsStartingAndStoppingInsideInstrumentedCalls) {
  auto memory = std::make_shared<ringtrace::MemoryExporter>();
  ringtrace::Config config;
  config.overflow = ringtrace::OverflowPolicy::block;
  ringtrace::Session session(config);
  session.add_exporter(memory);
  static ringtrace::Session* current = nullptr;
  current = &session;
  workload::call_back([] { current->start(); });  // began before the session
  workload::outer(1);
  workload::call_back([] { current->stop(); });  // ends after it
  ringtrace::SessionStats stats = session.stats();
  std::vector<Call> calls = calls_of(memory->trace());
  auto n = counts(calls);
  EXPECT_EQ(n, (std::map<std::string, int>{{workload::outer_function().name, 1},
                                           {workload::middle_function().name, 1},
                                           {workload::inner_function().name, 2},
                                           {workload::call_back_function().name, 1}}));
  EXPECT_EQ(stats.unbalanced_ends, 0u);
  EXPECT_EQ(stats.closed_at_stop, 1u);  // the call that stopped it

  session.start();
  workload::outer(2);
  session.stop();
  stats = session.stats();
  calls = calls_of(memory->trace());
  n = counts(calls);
  EXPECT_EQ(n, (std::map<std::string, int>{{workload::outer_function().name, 1},
                                           {workload::middle_function().name, 2},
                                           {workload::inner_function().name, 4}}));
  EXPECT_EQ(stats.unbalanced_ends, 0u);
  EXPECT_EQ(stats.closed_at_stop, 0u);
}

TEST(Functions, EveryThreadItsOwnStack) {
  const Recording r = record([] {
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t) {
      threads.emplace_back([t] {
        workload::outer(50 + t);
        workload::landing(3);
      });
    }
    for (std::thread& t : threads) t.join();
  });
  std::map<ringtrace::ThreadId, std::map<std::string, int>> per_thread;
  for (const Call& c : r.calls) ++per_thread[c.thread][c.name];
  ASSERT_EQ(per_thread.size(), 4u);
  std::vector<int> middles;
  for (auto& [thread, n] : per_thread) {
    middles.push_back(n[workload::middle_function().name]);
    EXPECT_EQ(n[workload::inner_function().name], 2 * n[workload::middle_function().name]);
    EXPECT_EQ(n[workload::jumper_function().name], 3);
  }
  std::sort(middles.begin(), middles.end());
  EXPECT_EQ(middles, (std::vector<int>{50, 51, 52, 53}));
  EXPECT_EQ(r.stats.functions.unwound, 12u);
}

// The binary file: each function once, with its module; named by the recording, or when
// the file is read (BinaryTraceOptions::name_functions false), from the module's file.
TEST(Functions, TheBinaryFileNamesFunctionsWithOrWithoutTheRecordingsNames) {
  for (const bool named : {true, false}) {
    SCOPED_TRACE(named ? "named by the recording" : "named when read");
    const fs::path path = fs::path(::testing::TempDir()) / ("functions_" + std::to_string(named) + ".rtrace");
    ringtrace::BinaryTraceOptions options;
    options.name_functions = named;
    ringtrace::Config config;
    config.overflow = ringtrace::OverflowPolicy::block;
    {
      ringtrace::Session session(config);
      session.add_exporter(ringtrace::binary_trace_exporter(path, options));
      session.start();
      workload::Parser().parse("abc");
      workload::landing(2);
      void* library = dlopen(RINGTRACE_FUNCTIONS_PLUGIN, RTLD_NOW | RTLD_LOCAL);
      ASSERT_NE(library, nullptr) << dlerror();
      reinterpret_cast<int (*)(int)>(dlsym(library, "plugin_entry"))(2);
      ASSERT_EQ(dlclose(library), 0);
      session.stop();
    }
    ringtrace::MemoryExporter memory;
    const ringtrace::ReplayResult result = ringtrace::replay_file(path, memory);
    EXPECT_TRUE(result.complete) << result.problem;
    EXPECT_EQ(result.problem, "");
    const std::vector<Call> calls = calls_of(memory.trace());
    const auto n = counts(calls);
    EXPECT_EQ(n, (std::map<std::string, int>{{workload::parse_function().name, 1},
                                             {workload::leaf_function().name, 4},
                                             {workload::landing_function().name, 1},
                                             {workload::jumper_function().name, 2},
                                             {"plugin_entry", 1},
                                             {"plugin::plugin_step(int)", 2}}));
    for (const auto& f : {workload::parse_function(), workload::leaf_function(), workload::landing_function(),
                          workload::jumper_function()}) {
      expect_named(calls, f);
    }
    for (const Call& c : calls) EXPECT_EQ(c.unwound, c.name == workload::jumper_function().name) << c.name;
    fs::remove(path);
  }
}

}  // namespace
