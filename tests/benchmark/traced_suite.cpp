// A Google Benchmark suite adopting ringtrace (include/ringtrace/benchmark.hpp), for
// check_suite.py: known zones per iteration in each benchmark, and names that a plain
// character substitution would give one file, that are too long for one, or that start
// with '-' or '.'.
#include <ringtrace/benchmark.hpp>

#include <string>

static void BM_three_zones(benchmark::State& state) {
  for (auto _ : state) {
    RINGTRACE_ZONE("outer");
    { RINGTRACE_ZONE("a"); }
    { RINGTRACE_ZONE("b"); }
  }
}
RINGTRACE_BENCHMARK(BM_three_zones);

static void BM_n_zones(benchmark::State& state) {
  for (auto _ : state) {
    for (std::int64_t i = 0; i < state.range(0); ++i) {
      RINGTRACE_ZONE("item");
      benchmark::ClobberMemory();
    }
  }
}
RINGTRACE_BENCHMARK(BM_n_zones)->Arg(4)->Arg(7);

// Names a plain character substitution maps to one file ("BM_collide/x" and
// "BM_collide_x"), and one too long for a file name: each keeps its own trace.
static void BM_two_zones(benchmark::State& state) {
  for (auto _ : state) {
    { RINGTRACE_ZONE("x"); }
    { RINGTRACE_ZONE("y"); }
  }
}
static void BM_five_zones(benchmark::State& state) {
  for (auto _ : state) {
    for (int i = 0; i < 5; ++i) {
      RINGTRACE_ZONE("five");
    }
  }
}
static void BM_six_zones(benchmark::State& state) {
  for (auto _ : state) {
    for (int i = 0; i < 6; ++i) {
      RINGTRACE_ZONE("six");
    }
  }
}
RINGTRACE_BENCHMARK(BM_two_zones)->Name("BM_collide/x");
RINGTRACE_BENCHMARK(BM_five_zones)->Name("BM_collide_x");
RINGTRACE_BENCHMARK(BM_six_zones)->Name("BM_long_" + std::string(292, 'L'));
// Names of safe characters whose file, named as they are, would be hidden ('.') or
// taken for an option by the commands it is typed to ('-').
RINGTRACE_BENCHMARK(BM_two_zones)->Name("-rf");
RINGTRACE_BENCHMARK(BM_two_zones)->Name(".hidden");

RINGTRACE_BENCHMARK_MAIN();
