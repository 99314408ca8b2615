// An example of a Google Benchmark suite adopting ringtrace (include/ringtrace/benchmark.hpp):
// RINGTRACE_BENCHMARK instead of BENCHMARK, RINGTRACE_BENCHMARK_MAIN instead of
// BENCHMARK_MAIN. Run it as usual; with --ringtrace_out=DIR each benchmark's reported run
// is also traced into DIR/<name>.json (the first 100 ms or 250000 events of the run;
// --ringtrace_format, --ringtrace_max_ms, --ringtrace_max_events), and the report gains
// ringtrace_zones_per_iter, ringtrace_dropped, ringtrace_untraced_iters and
// ringtrace_untraced_zones:
//   build/release/bench/bench_suite_example --ringtrace_out=traces --benchmark_out=report.json
#include <cmath>
#include <vector>

#include <ringtrace/benchmark.hpp>

namespace {

double normalize(std::vector<double>& v) {
  RINGTRACE_FUNCTION();
  double sum = 0;
  {
    RINGTRACE_ZONE("sum");
    for (double x : v) sum += x * x;
  }
  RINGTRACE_ZONE("scale");
  const double norm = std::sqrt(sum);
  for (double& x : v) x /= norm;
  return norm;
}

void BM_normalize(benchmark::State& state) {
  std::vector<double> v(static_cast<std::size_t>(state.range(0)), 1.5);
  for (auto _ : state) benchmark::DoNotOptimize(normalize(v));
}

}  // namespace

RINGTRACE_BENCHMARK(BM_normalize)->Arg(64)->Arg(4096);

RINGTRACE_BENCHMARK_MAIN();
