// clang-format off
// (Not formatted: the line numbers of this file's functions are test data, __LINE__.)
// Compiled with -finstrument-functions: the addresses the compiler passes to
// __cyg_profile_func_enter (test_instrumented.cpp records them) are what the automatic
// instrumentation will record. Plain arithmetic only: anything inlined from a library
// would be instrumented too.
#include "instrumented.hpp"

namespace instrumented {

volatile int g_sink = 0;

[[gnu::noinline]] int leaf(int value) { g_sink = value; return value + 1; } constexpr int kLeafLine = __LINE__;

// An aggregate: initializing it calls no constructor (which would be instrumented too).
struct Accumulator {
  [[gnu::noinline]] int add(int value) { total += value; g_sink = total; return total; } static constexpr int kAddLine = __LINE__;
  int total;
};

[[gnu::noinline]] int root(int value) { Accumulator accumulator{0}; return accumulator.add(leaf(value)); } constexpr int kRootLine = __LINE__;

Expected expected() {
  return {{"instrumented::root(int)", kRootLine}, {"instrumented::leaf(int)", kLeafLine},
          {"instrumented::Accumulator::add(int)", Accumulator::kAddLine}};
}

}  // namespace instrumented
// clang-format on
