// Built with -finstrument-functions (bench/CMakeLists.txt): every call of these goes
// through ringtrace::functions' hooks. The same bodies as calls.cpp's, which is not.
#include "calls.hpp"

namespace bench_functions {

[[gnu::noinline]] int instrumented(int v) {
  g_sink = v;
  return g_sink;
}

// fib(n) as calls.cpp's: the same code, every call instrumented.
[[gnu::noinline]] int instrumented_fib(int n) {
  if (n < 2) return n;
  const int a = instrumented_fib(n - 1);
  g_sink = instrumented_fib(n - 2);
  return a + g_sink;
}

}  // namespace bench_functions
