// Not instrumented: the plain calls and the calls with a zone that instrumented.cpp's are
// measured against.
#include "calls.hpp"

#include "ringtrace/instrument.hpp"

namespace bench_functions {

[[gnu::noinline]] int plain(int v) {
  g_sink = v;
  return g_sink;
}

[[gnu::noinline]] int zoned(int v) {
  RINGTRACE_ZONE("zoned");
  g_sink = v;
  return g_sink;
}

[[gnu::noinline]] int plain_fib(int n) {
  if (n < 2) return n;
  const int a = plain_fib(n - 1);
  g_sink = plain_fib(n - 2);
  return a + g_sink;
}

[[gnu::noinline]] int zoned_fib(int n) {
  RINGTRACE_ZONE("fib");
  if (n < 2) return n;
  const int a = zoned_fib(n - 1);
  g_sink = zoned_fib(n - 2);
  return a + g_sink;
}

}  // namespace bench_functions
