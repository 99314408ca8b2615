// Functions as compilers really emit them: compiled.cpp, built at -O2 by g++ in one test
// binary and by clang in the other (tests/functions/CMakeLists.txt), runs in live sessions;
// every function counts its own calls, and each test compares what was recorded, per
// function, with those counts, and which calls were closed "unwound" with the frames an
// exception, a longjmp or an abort really left. g++ leaves every void function by a tail
// call to the exit hook (`jmp __cyg_profile_func_exit`): those are ordinary returns.
#include <gtest/gtest.h>
#include <pthread.h>
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <initializer_list>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "compiled.hpp"
#include "recording.hpp"
#include "stack_moves.hpp"

namespace {

using compiled::Function;
using function_tests::Call;
using function_tests::record;
using function_tests::Recording;

// What the session should have recorded of `f`: every call the program made, but those of
// a function inlined into another when the compiler left its hooks out (clang), and, unless
// the session keeps them (FunctionOptions::inlined), those of a function g++ inlined into
// an instrumented one (inlined_step into steps(); quiet_step is inlined into a function
// that is not instrumented: no frame to be inlined into, recorded as a call).
std::uint64_t expected_calls(Function f, bool keep_inlined) {
  if (compiled::inlined(f) && !compiled::hooks_in_inlined_functions()) return 0;
  if (f == Function::inlined_step && !keep_inlined) return 0;
  std::uint64_t n = compiled::calls(f);
  if (f == Function::numbers_resume && n != 0) n += compiled::extra_resume_calls();
  return n;
}

// Every function of compiled.cpp recorded as often as it ran (and the ones that did not run
// not at all); the calls closed "unwound" are exactly `unwound` (per function), nothing
// else, and nothing was left open at the stop. Counted per name: clang's coroutine
// functions share one.
void expect_calls(const Recording& r, const std::map<Function, std::uint64_t>& unwound = {},
                  bool keep_inlined = false) {
  std::map<std::string, std::uint64_t> recorded, marked, expected, expected_marked;
  for (const Call& c : r.calls) {
    ++recorded[c.name];
    if (c.unwound) ++marked[c.name];
  }
  std::uint64_t total = 0;
  for (int i = 0; i < compiled::kFunctions; ++i) {
    const auto f = static_cast<Function>(i);
    const std::uint64_t left = unwound.count(f) != 0 ? unwound.at(f) : 0;
    expected[compiled::name(f)] += expected_calls(f, keep_inlined);
    expected_marked[compiled::name(f)] += left;
    total += left;
  }
  for (const auto& [name, n] : expected) {
    EXPECT_EQ(recorded[name], n) << name;
    EXPECT_EQ(marked[name], expected_marked[name]) << name << " closed as unwound";
  }
  EXPECT_EQ(r.stats.functions.unwound, total);
  // g++'s inlined calls left out are counted, each once (at least inlined_step's: g++ also
  // inlines a coroutine's promise functions, for one, which no count here follows).
  const bool left_out = compiled::hooks_in_inlined_functions() && !keep_inlined;
  if (left_out) {
    EXPECT_GE(r.stats.functions.inlined, compiled::calls(Function::inlined_step));
    // Listed per function: inlined_step with exactly its calls, and the list sums to the count.
    std::uint64_t listed = 0, step = 0;
    for (const auto& [name, n] : r.stats.functions.inlined_by_function) {
      listed += n;
      if (name == compiled::name(Function::inlined_step)) step = n;
    }
    EXPECT_EQ(step, compiled::calls(Function::inlined_step));
    EXPECT_EQ(listed, r.stats.functions.inlined);
  } else {
    EXPECT_EQ(r.stats.functions.inlined, 0u);
    EXPECT_TRUE(r.stats.functions.inlined_by_function.empty());
  }
  EXPECT_EQ(r.stats.closed_at_stop, 0u);
  EXPECT_EQ(r.stats.functions.too_deep, 0u);
}

const Call* first(const std::vector<Call>& calls, Function f) { return function_tests::find(calls, compiled::name(f)); }

// The symbols of this test binary, demangled.
std::string symbols() {
  std::string out;
  const std::string command = "nm -C /proc/" + std::to_string(getpid()) + "/exe 2>/dev/null";
  FILE* nm = popen(command.c_str(), "r");
  if (nm == nullptr) return out;
  char buffer[4096];
  std::size_t n = 0;
  while ((n = fread(buffer, 1, sizeof buffer, nm)) > 0) out.append(buffer, n);
  pclose(nm);
  return out;
}

TEST(CompiledFunctions, TailExitsSiblingCallsAndRecursionAreOrdinaryReturns) {
  compiled::reset();
  const Recording r = record([] {
    compiled::tick_n(10);
    compiled::tick_twice_n(5);
    EXPECT_EQ(compiled::add_one_n(7), 28);
    compiled::countdown_from(6);
    EXPECT_EQ(compiled::sum_down_from(6), 21);
    compiled::steps_of(5);
    compiled::quiet_n(4);
  });
  EXPECT_EQ(compiled::calls(Function::tick), 20u);
  expect_calls(r);
  // Nothing else here is inlined into an instrumented function: exactly steps_of's five.
  EXPECT_EQ(r.stats.functions.inlined, compiled::hooks_in_inlined_functions() ? 5u : 0u);
  if (compiled::hooks_in_inlined_functions()) {
    using Listed = std::vector<std::pair<std::string, std::uint64_t>>;
    EXPECT_EQ(r.stats.functions.inlined_by_function, (Listed{{compiled::name(Function::inlined_step), 5}}));
  }
  std::uint32_t deepest = 0;
  for (const Call& c : r.calls) {
    if (c.name == compiled::name(Function::tick)) {
      EXPECT_TRUE(c.parent.empty() || c.parent == compiled::name(Function::tick_twice)) << c.parent;
    }
    if (c.name == compiled::name(Function::plus)) {
      EXPECT_EQ(c.parent, compiled::name(Function::add_one));
    }
    if (c.name == compiled::name(Function::inlined_step)) {
      EXPECT_EQ(c.parent, compiled::name(Function::steps));
    }
    if (c.name == compiled::name(Function::quiet_step)) {
      EXPECT_EQ(c.depth, 0u);
    }
    if (c.name == compiled::name(Function::countdown)) {
      EXPECT_TRUE(c.depth == 0 || c.parent == compiled::name(Function::countdown));
      deepest = std::max(deepest, c.depth);
    }
  }
  EXPECT_EQ(deepest, 5u);  // countdown(6) .. countdown(1) nested
}

// FunctionOptions::inlined: g++'s calls of a function it inlined are recorded too, nested
// in the function they were inlined into (by default left out, counted: above).
TEST(CompiledFunctions, InlinedCallsKeptWhenAsked) {
  compiled::reset();
  ringtrace::Config config;
  config.functions.inlined = true;
  const Recording r = record(
      [] {
        compiled::steps_of(5);
        compiled::tick_n(3);
      },
      config);
  EXPECT_EQ(compiled::calls(Function::inlined_step), 5u);
  expect_calls(r, {}, true);
  for (const Call& c : r.calls) {
    if (c.name == compiled::name(Function::inlined_step)) {
      EXPECT_EQ(c.parent, compiled::name(Function::steps));
    }
  }
}

// g++ -O2 puts the unlikely branch of checked() and checked_void() in a `.cold` part of the
// function (another symbol, the same frame); clang keeps one body.
TEST(CompiledFunctions, HotAndColdPartsOfOneFunction) {
  if (compiled::built_by_gcc()) {
    const std::string nm = symbols();
    ASSERT_FALSE(nm.empty()) << "nm printed nothing";
    EXPECT_NE(nm.find("compiled::checked(int) [clone .cold]"), std::string::npos);
    EXPECT_NE(nm.find("compiled::checked_void(int) [clone .cold]"), std::string::npos);
  }
  compiled::reset();
  const Recording r = record([] {
    compiled::checked_each(32);
    compiled::checked_void_each(32);
  });
  EXPECT_EQ(compiled::calls(Function::rare), 8u);
  expect_calls(r);
  for (const Call& c : r.calls) {
    if (c.name == compiled::name(Function::rare)) {
      EXPECT_TRUE(c.parent == compiled::name(Function::checked) || c.parent == compiled::name(Function::checked_void))
          << c.parent;
    }
  }
}

// A noreturn function throws; the exception is caught at several depths (once rethrown on
// the way, once by the program's own uninstrumented code). g++ calls the exit hooks of the
// frames it leaves; clang does not, and the runtime closes them, marked.
TEST(CompiledFunctions, ExceptionsCaughtAtSeveralDepths) {
  compiled::reset();
  const Recording r = record([] {
    EXPECT_FALSE(compiled::descend_from(6, 0, 0, true));  // leaves levels 1 .. 6 and fail()
    EXPECT_TRUE(compiled::descend_from(6, 2, 0, true));   // levels 3 .. 6 and fail(); then after_catch()
    EXPECT_TRUE(compiled::descend_from(6, 5, 0, false));  // level 6 and fail(); level 5 returns at once
    EXPECT_TRUE(compiled::descend_from(6, 2, 4, false));  // level 4 rethrows: levels 3 .. 6 and fail()
    EXPECT_TRUE(compiled::descend_from(6, 1, 0, false));  // levels 2 .. 6 and fail()
  });
  EXPECT_EQ(compiled::calls(Function::fail), 5u);
  EXPECT_EQ(compiled::calls(Function::descend), 30u);
  EXPECT_EQ(compiled::calls(Function::after_catch), 2u);
  if (compiled::exit_hooks_on_unwind()) {
    expect_calls(r);
  } else {
    expect_calls(r, {{Function::descend, 6 + 4 + 1 + 4 + 5}, {Function::fail, 5}});
  }
  for (const Call& c : r.calls) {
    if (c.name == compiled::name(Function::after_catch)) {
      EXPECT_TRUE(c.parent.empty() || c.parent == compiled::name(Function::descend)) << c.parent;
    }
  }
}

// longjmp and abort (a SIGABRT handler that siglongjmps back) leave frames with either
// compiler; the functions they land in then return by a tail exit (g++) over those frames.
TEST(CompiledFunctions, NoreturnCallsThatLongjmpOrAbort) {
  compiled::reset();
  const Recording r = record([] {
    compiled::land_from(4);   // leap() x 4 and jump_out() left
    compiled::abort_from(3);  // leap() x 3, give_up() and the handler on_abort() left
  });
  EXPECT_EQ(compiled::calls(Function::leap), 7u);
  EXPECT_EQ(compiled::calls(Function::on_abort), 1u);
  expect_calls(r, {{Function::leap, 7}, {Function::jump_out, 1}, {Function::give_up, 1}, {Function::on_abort, 1}});
  for (const Call& c : r.calls) {
    if (c.name == compiled::name(Function::land) || c.name == compiled::name(Function::abort_landing)) {
      EXPECT_EQ(c.depth, 0u) << c.name;
    }
  }
}

// Frames a longjmp left beneath a later call's frame on the shadow stack (its frame is
// deeper than theirs): that call's tail exit is still its own return, and closes them.
TEST(CompiledFunctions, FramesLeftBeneathALaterCall) {
  compiled::reset();
  const Recording r = record([] { compiled::hop_from(); });
  expect_calls(r, {{Function::hop, 1}, {Function::jump_out, 1}});
  // The shape this test is about: roomy() began with hop()'s frames still open beneath.
  const Call* roomy = first(r.calls, Function::roomy);
  ASSERT_NE(roomy, nullptr);
  EXPECT_EQ(roomy->parent, compiled::name(Function::jump_out));
}

// A longjmp through the program's own code leaves deeper calls of a recursive function
// above one of its levels, those from the same call site under that level's key; its tail
// exit is still its own return, not theirs.
TEST(CompiledFunctions, ALevelOfARecursionReturnsOverDeeperLevelsLeftByALongjmp) {
  compiled::reset();
  const Recording r = record([] { compiled::rebound_from(6); });
  EXPECT_EQ(compiled::calls(Function::rebound), 6u);
  expect_calls(r, {{Function::rebound, 4}});  // levels 3 .. 6
  for (const Call& c : r.calls) {
    EXPECT_EQ(c.unwound, c.depth >= 2) << c.name << " at depth " << c.depth;
  }
}

// A C++20 generator resumed until done: the ramp once, the resume function once per
// resume() (g++ adds a call from the ramp and one from destroy()), the destroy function once.
TEST(CompiledFunctions, ACoroutineResumedNTimes) {
  compiled::reset();
  long sum = 0;
  std::uint64_t resumes = 0;
  const Recording r = record([&] { resumes = compiled::generate(8, sum); });
  EXPECT_EQ(sum, 28);
  EXPECT_EQ(resumes, 9u);  // 8 values, then done
  EXPECT_EQ(compiled::calls(Function::numbers_resume), 9u);
  expect_calls(r);
}

// A signal handler that runs instrumented code: on the thread's stack, and on alternate
// stacks below and above it (the runtime tells the stacks apart by the thread's bounds).
TEST(CompiledFunctions, SignalHandlersOnTheThreadsStackAndOnAlternateStacks) {
  constexpr std::size_t kStack = std::size_t{1} << 20, kAlternate = std::size_t{256} << 10;
  for (const char* where : {"same stack", "alternate below", "alternate above"}) {
    SCOPED_TRACE(where);
    // One mapping: the thread's stack and the alternate one side by side, in either order.
    const std::size_t guard = 4096;
    char* region = static_cast<char*>(
        mmap(nullptr, kStack + kAlternate + 2 * guard, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
    ASSERT_NE(region, MAP_FAILED);
    const bool above = std::string(where) == "alternate above";
    char* thread_stack = above ? region : region + kAlternate + guard;
    char* alternate = above ? region + kStack + guard : region;
    struct Run {
      char* alternate;
      std::size_t size;
      bool use;
    } run{alternate, kAlternate, std::string(where) != "same stack"};
    compiled::reset();
    const Recording r = record([&] {
      pthread_attr_t attr;
      pthread_attr_init(&attr);
      ASSERT_EQ(pthread_attr_setstack(&attr, thread_stack, kStack), 0);
      pthread_t thread;
      ASSERT_EQ(pthread_create(
                    &thread, &attr,
                    [](void* arg) -> void* {
                      const Run& run = *static_cast<const Run*>(arg);
                      // The thread's previous alternate stack (a sanitizer's) is put back.
                      stack_t ss{}, old{};
                      if (run.use) {
                        ss.ss_sp = run.alternate;
                        ss.ss_size = run.size;
                        if (sigaltstack(&ss, &old) != 0) return nullptr;
                      }
                      compiled::raise_handled(SIGUSR1, 3, run.use);
                      compiled::tick_n(2);
                      if (run.use) sigaltstack(&old, nullptr);
                      return nullptr;
                    },
                    &run),
                0);
      pthread_attr_destroy(&attr);
      pthread_join(thread, nullptr);
    });
    EXPECT_EQ(compiled::calls(Function::on_signal), 3u);
    EXPECT_EQ(compiled::calls(Function::tick), 8u);
    expect_calls(r);
    for (const Call& c : r.calls) {
      if (c.name == compiled::name(Function::on_signal)) {
        EXPECT_EQ(c.parent, compiled::name(Function::raiser));
      }
    }
    munmap(region, kStack + kAlternate + 2 * guard);
  }
}

// Functions whose stack pointer moves between their hooks (stack_moves.cpp, built with
// -fno-exceptions): a variable-length array allocated after the entry hook, and under g++
// the stack arguments of a call popped only after the hooks that follow it (the function's
// own exit hook, or the entry of a function inlined after the call). Every call is closed
// at its own exit, none "unwound"; every call of an inlined function is either recorded
// (nested in the function it was inlined into: store(), or the slot's destructor that the
// driver calls) or left out and listed, once.
void expect_moves(const Recording& r, bool keep_inlined) {
  using stack_moves::Function;
  std::map<std::string, std::uint64_t> recorded, listed;
  for (const Call& c : r.calls) {
    ++recorded[c.name];
    EXPECT_FALSE(c.unwound) << c.name << " closed as unwound";
  }
  for (const auto& [name, n] : r.stats.functions.inlined_by_function) listed[name] += n;
  for (int i = 0; i < stack_moves::kFunctions; ++i) {
    const auto f = static_cast<Function>(i);
    const std::string name = stack_moves::name(f);
    const std::uint64_t n = stack_moves::calls(f);
    EXPECT_NE(n, 0u) << name << " never ran";
    if (!stack_moves::inlined(f)) {
      EXPECT_EQ(recorded[name], n) << name;
    } else if (!stack_moves::hooks_in_inlined_functions()) {
      EXPECT_EQ(recorded[name] + listed[name], 0u) << name;
    } else {
      EXPECT_EQ(recorded[name] + listed[name], n) << name << ": recorded and left out";
      if (keep_inlined) {
        EXPECT_EQ(listed[name], 0u) << name;
      }
    }
  }
  EXPECT_EQ(r.stats.functions.unwound, 0u);
  EXPECT_EQ(r.stats.closed_at_stop, 0u);
  const auto is = [](const std::string& name, Function f) { return name == stack_moves::name(f); };
  for (const Call& c : r.calls) {
    if (is(c.name, Function::sum8)) {
      EXPECT_TRUE(is(c.parent, Function::sum8_plus)) << c.parent;
    }
    if (is(c.name, Function::sum8_plus)) {
      EXPECT_TRUE(c.parent.empty() || is(c.parent, Function::scratch)) << c.parent;
    }
    if (is(c.name, Function::make)) {
      EXPECT_TRUE(is(c.parent, Function::store)) << c.parent;
    }
    if (is(c.name, Function::assign) || is(c.name, Function::release)) {
      EXPECT_TRUE(is(c.parent, Function::store) || c.parent == "stack_moves::Slot::~Slot()")
          << c.name << " in " << c.parent;
    }
  }
}

TEST(CompiledFunctions, StackPointerMovedBetweenHooks) {
  for (const bool keep_inlined : {false, true}) {
    SCOPED_TRACE(keep_inlined ? "inlined calls kept" : "inlined calls left out");
    stack_moves::reset();
    ringtrace::Config config;
    config.functions.inlined = keep_inlined;
    const Recording r = record(
        [] {
          stack_moves::store_n(20);
          EXPECT_EQ(stack_moves::sum8_plus_n(10), 10 * 28 + 8 * 45 + 10);
          stack_moves::scratch_n(10);
        },
        config);
    EXPECT_EQ(stack_moves::calls(stack_moves::Function::store), 20u);
    expect_moves(r, keep_inlined);
  }
}

}  // namespace
