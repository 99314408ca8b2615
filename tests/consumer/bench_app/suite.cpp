// A tiny Google Benchmark suite adopting ringtrace, built against the package (CMake,
// installed or build tree) or through pkg-config.
#include <ringtrace/benchmark.hpp>

static void BM_consumer(benchmark::State& state) {
  for (auto _ : state) {
    RINGTRACE_ZONE("consumer");
    benchmark::ClobberMemory();
  }
}
RINGTRACE_BENCHMARK(BM_consumer)->Arg(8);

RINGTRACE_BENCHMARK_MAIN();
