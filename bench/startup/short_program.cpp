// A short program that links ringtrace: about 2 ms of work in 200 zones on its main
// thread, nothing else. Run plain (no session: RINGTRACE_OUTPUT unset) and under
// `ringtrace record` by bench/startup/startup.sh, which times the two alternately: the
// difference is what a recording adds to a process's start and exit.
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "ringtrace/ringtrace.hpp"

namespace {

volatile double g_sink = 0;  // keeps the work from being optimised away

void work(int iterations) {
  RINGTRACE_ZONE("work");
  double x = 1.0;
  for (int i = 0; i < iterations; ++i) x = std::sqrt(x + i);
  g_sink = g_sink + x;
}

}  // namespace

int main(int argc, char** argv) {
  // Iterations per zone: 200 zones of 10,000 square roots are about 2 ms on the VM of
  // docs/performance.md.
  const int iterations = argc > 1 ? std::atoi(argv[1]) : 10000;
  for (int i = 0; i < 200; ++i) work(iterations);
  return g_sink > 0 ? 0 : 1;
}
