// A Google Benchmark suite adopting ringtrace (include/ringtrace/benchmark.hpp), for
// check_suite.py: known zones per iteration in each benchmark.
#include <ringtrace/benchmark.hpp>

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

RINGTRACE_BENCHMARK_MAIN();
