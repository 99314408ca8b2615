// Google Benchmark suites traced by ringtrace: each benchmark's runs recorded into their
// own Chrome trace, and ringtrace's counters added to the benchmark's report.
//
//   #include <ringtrace/benchmark.hpp>
//   static void BM_parse(benchmark::State& state) {
//     for (auto _ : state) { RINGTRACE_ZONE("parse"); ... }
//   }
//   RINGTRACE_BENCHMARK(BM_parse)->Arg(64);   // as BENCHMARK(BM_parse)->Arg(64)
//   RINGTRACE_BENCHMARK_MAIN();
//
// Run with --ringtrace_out=DIR: every benchmark run is recorded (block policy: nothing
// lost; 1M-record rings, 16 MB per recording thread, so that a run rarely waits for the
// drainer; when it does, the benchmark's wall time shows it) and the reported run's trace is kept as DIR/<benchmark name>.json (characters
// other than letters, digits, '.', '-' and '_' become '_'); the report (console and
// --benchmark_out JSON) gains the counters `ringtrace_zones_per_iter` (zones recorded
// per iteration of the reported run) and `ringtrace_dropped`. Without the flag nothing
// is recorded and the suite runs as plain Google Benchmark. Google Benchmark 1.7 (Debian
// 12's libbenchmark-dev) has no profiler hook: the macro adds Setup/Teardown to the
// registration, and the main wraps the reporters. The CMake target
// `ringtrace::benchmark` brings in Google Benchmark.
#pragma once

#include <benchmark/benchmark.h>

#include "ringtrace/detail/platform.hpp"
#include "ringtrace/ringtrace.hpp"

namespace ringtrace::bench {

RINGTRACE_API void setup(const ::benchmark::State& state);
RINGTRACE_API void teardown(const ::benchmark::State& state);
RINGTRACE_API int main(int argc, char** argv);

}  // namespace ringtrace::bench

#define RINGTRACE_BENCHMARK(fn) \
  BENCHMARK(fn)->Setup(::ringtrace::bench::setup)->Teardown(::ringtrace::bench::teardown)

#define RINGTRACE_BENCHMARK_MAIN() \
  int main(int argc, char** argv) { return ::ringtrace::bench::main(argc, argv); }
