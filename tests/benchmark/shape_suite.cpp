// One suite, built with BENCHMARK_MAIN (SHAPE_SUITE_PLAIN) and with
// RINGTRACE_BENCHMARK_MAIN, for check_shape.py: arguments, a user counter, a label, and
// repetitions (aggregate rows).
#include <cstdint>

#include <ringtrace/benchmark.hpp>

static void BM_sum(benchmark::State& state) {
  std::int64_t sum = 0;
  for (auto _ : state) {
    RINGTRACE_ZONE("sum");
    for (std::int64_t i = 0; i < state.range(0); ++i) benchmark::DoNotOptimize(sum += i);
  }
  state.counters["items"] = benchmark::Counter(static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
  state.SetLabel("a label");
}

static void BM_repeated(benchmark::State& state) {
  for (auto _ : state) {
    RINGTRACE_ZONE("repeated");
    benchmark::ClobberMemory();
  }
}

#ifdef SHAPE_SUITE_PLAIN
BENCHMARK(BM_sum)->Arg(8)->Arg(64);
BENCHMARK(BM_repeated)->Repetitions(3);
BENCHMARK_MAIN();
#else
RINGTRACE_BENCHMARK(BM_sum)->Arg(8)->Arg(64);
RINGTRACE_BENCHMARK(BM_repeated)->Repetitions(3);
RINGTRACE_BENCHMARK_MAIN();
#endif
