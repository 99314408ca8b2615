// Google Benchmark suites traced by ringtrace: each benchmark's reported run traced into
// a file of its own, bounded so that a viewer opens it, and ringtrace's counters added
// to the benchmark's report.
//
//   #include <ringtrace/benchmark.hpp>
//   static void BM_parse(benchmark::State& state) {
//     for (auto _ : state) { RINGTRACE_ZONE("parse"); ... }
//   }
//   RINGTRACE_BENCHMARK(BM_parse)->Arg(64);   // as BENCHMARK(BM_parse)->Arg(64)
//   RINGTRACE_BENCHMARK_MAIN();
//
// Run with --ringtrace_out=DIR: each benchmark's reported run is traced into
// DIR/<benchmark name>.json when the name is made of letters, digits, '.', '-' and '_',
// starts with neither '.' nor '-' and has at most 96 characters; any other name gets its
// first 96 characters, the others (and a first '.' or '-') replaced by '_', then '~' and
// 12 hex digits of its 64-bit FNV-1a hash (BM_f/8 -> BM_f_8~<hash>.json, -rf ->
// _rf~<hash>.json), so distinct benchmarks get distinct, bounded names that are neither
// hidden nor taken for an option; a trace that cannot be given its name is said on
// standard error and counted as ringtrace_trace_error 1 (it stays in DIR/.run-N.json).
// Its process and its thread 0 are named after the benchmark. Flags:
//   --ringtrace_format=chrome|perfetto|rtrace   .json (default), .perfetto-trace, .rtrace
//   --ringtrace_max_ms=N       the trace holds the first N ms of the run (default 100; 0: all)
//   --ringtrace_max_events=N   and at most N events (default 250000; 0: no limit): zones,
//                              instants, counter samples, values, texts, async spans
// so that a trace stays a size a viewer opens (the first 100 ms of a 10 ns zone are
// 10M zones, a 1 GB Chrome trace): a zone begun before the cut is kept whole, nothing
// begun after it is kept. The whole run is recorded (block policy: nothing lost; 1M-record
// rings, 16 MB per recording thread), so what the trace leaves out is counted exactly:
// the trace's metadata (the Chrome trace's last event's args.ringtrace_metadata, the
// Perfetto trace's metadata table) holds the bound, where it cut (cut_by: time, events
// or none; cut_after_ns), traced_zones, untraced_zones, traced/untraced_events and
// traced/untraced_iterations; the report (console, --benchmark_out) gains the counters
// ringtrace_zones_per_iter (zones recorded per iteration of the reported run),
// ringtrace_dropped, ringtrace_untraced_iters and ringtrace_untraced_zones, and its
// context the bound (ringtrace_out, ringtrace_format, ringtrace_max_ms,
// ringtrace_max_events). Traces are written when the run is reported (trial runs write
// nothing). Without --ringtrace_out nothing is recorded and the suite runs as with
// BENCHMARK_MAIN(); with it, Google Benchmark's reporters are the ones it would make
// (--benchmark_format, --benchmark_out, --benchmark_out_format, --benchmark_color,
// --benchmark_counters_tabular), wrapped to add the counters. Not with
// --benchmark_enable_random_interleaving (runs of different benchmarks would mix).
// Google Benchmark 1.7 (Debian 12's libbenchmark-dev) has no profiler hook: the macro
// adds Setup/Teardown to the registration. The CMake target `ringtrace::benchmark`
// (find_package(ringtrace COMPONENTS benchmark), or pkg-config ringtrace-benchmark)
// brings in Google Benchmark.
#pragma once

#include <benchmark/benchmark.h>

#include "ringtrace/detail/platform.hpp"
#include "ringtrace/ringtrace.hpp"

namespace ringtrace::bench {

RINGTRACE_API void setup(const ::benchmark::State& state);
RINGTRACE_API void teardown(const ::benchmark::State& state);
RINGTRACE_API int main(int argc, char** argv);

}  // namespace ringtrace::bench

#define RINGTRACE_BENCHMARK(fn) BENCHMARK(fn)->Setup(::ringtrace::bench::setup)->Teardown(::ringtrace::bench::teardown)

// As BENCHMARK_MAIN(), ending with a declaration so that `RINGTRACE_BENCHMARK_MAIN();`
// leaves no stray semicolon.
#define RINGTRACE_BENCHMARK_MAIN()                                                 \
  int main(int argc, char** argv) { return ::ringtrace::bench::main(argc, argv); } \
  int main(int, char**)
