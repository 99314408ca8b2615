// clang-format off
// (Not formatted: the line numbers of this file's functions are test data, __LINE__.)
// Built with -finstrument-functions (and, with clang, -finstrument-functions-after-
// inlining; with g++, -finstrument-functions-exclude-file-list=/usr/include). Every
// function here is entered through the hooks; the lines are those of their definitions.
#include "workload.hpp"

#include <time.h>

#include <csetjmp>
#include <stdexcept>

namespace workload {

namespace {
thread_local volatile int g_sink = 0;
thread_local std::jmp_buf g_jump;
}  // namespace

[[gnu::noinline]] int leaf(int value) { g_sink = value; return g_sink + 1; } constexpr int kLeafLine = __LINE__;

[[gnu::noinline]] int Parser::parse(std::string_view text) { int total = 0; for (std::size_t i = 0; i < text.size(); ++i) total += leaf(static_cast<unsigned char>(text.data()[i])); return total; } constexpr int kParseLine = __LINE__;

// Neither call in a tail position (clang turns an accumulating one into a loop).
[[gnu::noinline]] int fib(int n) { if (n < 2) return n; const int a = fib(n - 1); g_sink = fib(n - 2); return a + g_sink; } constexpr int kFibLine = __LINE__;


[[gnu::noinline]] int inner(int v) { g_sink = v; return g_sink; } constexpr int kInnerLine = __LINE__;
[[gnu::noinline]] int middle(int v) { return inner(v) + inner(v + 1); } constexpr int kMiddleLine = __LINE__;
[[gnu::noinline]] int outer(int n) { int t = 0; for (int i = 0; i < n; ++i) t += middle(i); return t; } constexpr int kOuterLine = __LINE__;

[[gnu::noinline]] int thrower(int depth) { g_sink = depth; if (depth <= 1) throw std::runtime_error("down"); return thrower(depth - 1) + g_sink; } constexpr int kThrowerLine = __LINE__;
[[gnu::noinline]] int catcher(int depth) { try { return thrower(depth); } catch (const std::runtime_error&) { return leaf(depth); } } constexpr int kCatcherLine = __LINE__;

[[gnu::noinline]] int jumper(int depth) { g_sink = depth; if (depth <= 1) std::longjmp(g_jump, 1); return jumper(depth - 1) + g_sink; } constexpr int kJumperLine = __LINE__;
[[gnu::noinline]] int landing(int depth) { if (setjmp(g_jump) == 0) return jumper(depth); return leaf(depth); } constexpr int kLandingLine = __LINE__;

[[gnu::noinline]] int recurse(int depth) { g_sink = depth; return depth <= 1 ? g_sink : recurse(depth - 1) + g_sink; } constexpr int kRecurseLine = __LINE__;

// g++ instruments a function inlined into another too, calling its hooks from the outer
// function's frame (the same stack pointer); clang, after inlining, does not instrument it.
[[gnu::always_inline]] inline int inlined_step(int v) { g_sink = v; return g_sink + 2; } constexpr int kInlinedStepLine = __LINE__;
[[gnu::noinline]] int inliner(int n) { int t = 0; for (int i = 0; i < n; ++i) t += inlined_step(i); return leaf(t); } constexpr int kInlinerLine = __LINE__;

[[gnu::noinline]] void call_back(void (*callback)()) { callback(); g_sink = 0; } constexpr int kCallBackLine = __LINE__;

[[gnu::noinline]] void spin(std::uint64_t ns) { timespec t0{}, t{}; clock_gettime(CLOCK_MONOTONIC, &t0); do { clock_gettime(CLOCK_MONOTONIC, &t); } while (static_cast<std::uint64_t>((t.tv_sec - t0.tv_sec) * 1000000000LL + (t.tv_nsec - t0.tv_nsec)) < ns); } constexpr int kSpinLine = __LINE__;

// Not instrumented: the tests' view of the functions above.
#define WORKLOAD_INFO __attribute__((no_instrument_function))
WORKLOAD_INFO Expected leaf_function() { return {"workload::leaf(int)", kLeafLine}; }
WORKLOAD_INFO Expected parse_function() { return {"workload::Parser::parse(std::string_view)", kParseLine}; }
WORKLOAD_INFO Expected fib_function() { return {"workload::fib(int)", kFibLine}; }
WORKLOAD_INFO Expected outer_function() { return {"workload::outer(int)", kOuterLine}; }
WORKLOAD_INFO Expected middle_function() { return {"workload::middle(int)", kMiddleLine}; }
WORKLOAD_INFO Expected inner_function() { return {"workload::inner(int)", kInnerLine}; }
WORKLOAD_INFO Expected thrower_function() { return {"workload::thrower(int)", kThrowerLine}; }
WORKLOAD_INFO Expected catcher_function() { return {"workload::catcher(int)", kCatcherLine}; }
WORKLOAD_INFO Expected jumper_function() { return {"workload::jumper(int)", kJumperLine}; }
WORKLOAD_INFO Expected landing_function() { return {"workload::landing(int)", kLandingLine}; }
WORKLOAD_INFO Expected recurse_function() { return {"workload::recurse(int)", kRecurseLine}; }
WORKLOAD_INFO Expected spin_function() { return {"workload::spin(unsigned long)", kSpinLine}; }
WORKLOAD_INFO Expected call_back_function() { return {"workload::call_back(void (*)())", kCallBackLine}; }
WORKLOAD_INFO Expected inlined_step_function() { return {"workload::inlined_step(int)", kInlinedStepLine}; }
WORKLOAD_INFO Expected inliner_function() { return {"workload::inliner(int)", kInlinerLine}; }
WORKLOAD_INFO bool hooks_in_inlined_functions() {
#if defined(__clang__)
  return false;
#else
  return true;
#endif
}
WORKLOAD_INFO const char* source_file() { return __FILE__; }
WORKLOAD_INFO std::uint64_t fib_calls(int n) { return n < 2 ? 1 : 1 + fib_calls(n - 1) + fib_calls(n - 2); }
WORKLOAD_INFO bool exit_hooks_on_unwind() {
#if defined(__clang__)
  return false;
#else
  return true;
#endif
}

}  // namespace workload
// clang-format on
