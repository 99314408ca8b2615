// Benchmarks of millions of iterations with trivial bodies (each a zone or three of a
// few ns): each runs exactly kIterations (a count, not a time: however fast the machine
// is, the same millions of zones, hundreds of MB of Chrome trace unbounded); with
// --ringtrace_out each trace must stay under 64 MB and load in trace_processor
// (run_consumer.sh, mode benchmark-big, which checks the report's iterations against
// kIterations and the zones in each trace against them).
#include <cmath>
#include <cstdint>
#include <string>

#include <ringtrace/benchmark.hpp>

constexpr benchmark::IterationCount kIterations = 2'000'000;  // run_consumer.sh checks this number

static void BM_concat(benchmark::State& state) {
  std::string text;
  for (auto _ : state) {
    RINGTRACE_ZONE("concat");
    text = "ring";
    text += "trace";
    benchmark::DoNotOptimize(text.data());
  }
}
RINGTRACE_BENCHMARK(BM_concat)->Iterations(kIterations);

static void BM_sqrt(benchmark::State& state) {
  double x = 2;
  for (auto _ : state) {
    RINGTRACE_ZONE("sqrt");
    for (std::int64_t i = 0; i < state.range(0); ++i) x = std::sqrt(x + 1.0);
    benchmark::DoNotOptimize(x);
  }
}
RINGTRACE_BENCHMARK(BM_sqrt)->Arg(10)->Iterations(kIterations);

// Nested zones and a value on each: more bytes per zone.
static void BM_nested(benchmark::State& state) {
  std::int64_t n = 0;
  for (auto _ : state) {
    RINGTRACE_ZONE("request");
    RINGTRACE_ZONE_VALUE("request_id", ++n);
    {
      RINGTRACE_ZONE("parse");
      benchmark::ClobberMemory();
    }
    {
      RINGTRACE_ZONE("respond");
      benchmark::ClobberMemory();
    }
  }
}
RINGTRACE_BENCHMARK(BM_nested)->Iterations(kIterations);

RINGTRACE_BENCHMARK_MAIN();
