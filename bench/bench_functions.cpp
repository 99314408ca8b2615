// An instrumented function's call (-finstrument-functions, ringtrace::functions) beside
// the same call plain and with a RINGTRACE_ZONE, measured in one run and printed as
// ratios (docs/functions.md, "Costs"):
//
//   call                   a plain noinline call (the workload's floor)
//   zoned call, enabled    the same call with a RINGTRACE_ZONE at its top, a session running
//   instrumented, enabled  the same call built with -finstrument-functions, a session running
//   ..., no session        both with no session
//   fib(20)                21,891 calls of the recursive fib uftrace and XRay are measured on
//                          (bench/functions/compare.sh), per call
// Enabled runs record into a null exporter, in bursts that fit the ring (block policy:
// never a drop), the drainer emptying it between repetitions.
#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <thread>

#include "functions/calls.hpp"
#include "ringtrace/exporter.hpp"
#include "ringtrace/ringtrace.hpp"

namespace {

using namespace bench_functions;

class NullExporter final : public ringtrace::Exporter {
 public:
  void on_events(std::span<const ringtrace::Event> events, const ringtrace::TraceContext&) override {
    benchmark::DoNotOptimize(events.data());
  }
};

constexpr int kFib = 20;
constexpr double kFibCalls = 21891;  // calls fib(20) makes

void BM_EmptyLoop(benchmark::State& state) {
  for (auto _ : state) benchmark::ClobberMemory();
}
template <int (*F)(int)>
void BM_Call(benchmark::State& state) {
  int i = 0;
  for (auto _ : state) benchmark::DoNotOptimize(F(++i));
}
template <int (*F)(int)>
void BM_Fib(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(F(kFib));
}
// Enabled: a pause (not timed) lets the drainer empty the ring between repetitions.
template <int (*F)(int)>
void BM_CallEnabled(benchmark::State& state) {
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  BM_Call<F>(state);
}
template <int (*F)(int)>
void BM_FibEnabled(benchmark::State& state) {
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  BM_Fib<F>(state);
}

BENCHMARK(BM_EmptyLoop);
BENCHMARK_TEMPLATE(BM_Call, plain)->Repetitions(5)->ReportAggregatesOnly(true);
BENCHMARK_TEMPLATE(BM_Call, zoned)->Name("BM_ZonedNoSession")->Repetitions(5)->ReportAggregatesOnly(true);
BENCHMARK_TEMPLATE(BM_Call, instrumented)->Name("BM_InstrumentedNoSession")->Repetitions(5)->ReportAggregatesOnly(true);
BENCHMARK_TEMPLATE(BM_Fib, plain_fib)->Name("BM_FibPlain")->Repetitions(5)->ReportAggregatesOnly(true);
BENCHMARK_TEMPLATE(BM_Fib, instrumented_fib)
    ->Name("BM_FibInstrumentedNoSession")
    ->Repetitions(5)
    ->ReportAggregatesOnly(true);
// 200,000 calls (400,000 records) per burst in a ring of 1M records.
BENCHMARK_TEMPLATE(BM_CallEnabled, zoned)
    ->Name("BM_ZonedEnabled")
    ->Iterations(200000)
    ->Repetitions(30)
    ->ReportAggregatesOnly(true);
BENCHMARK_TEMPLATE(BM_CallEnabled, instrumented)
    ->Name("BM_InstrumentedEnabled")
    ->Iterations(200000)
    ->Repetitions(30)
    ->ReportAggregatesOnly(true);
BENCHMARK_TEMPLATE(BM_FibEnabled, zoned_fib)
    ->Name("BM_FibZonedEnabled")
    ->Iterations(10)
    ->Repetitions(30)
    ->ReportAggregatesOnly(true);
BENCHMARK_TEMPLATE(BM_FibEnabled, instrumented_fib)
    ->Name("BM_FibInstrumentedEnabled")
    ->Iterations(10)
    ->Repetitions(30)
    ->ReportAggregatesOnly(true);

class CollectingReporter final : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    for (const Run& run : runs) {
      if (run.error_occurred || (run.run_type == Run::RT_Aggregate && run.aggregate_name != "median")) continue;
      ns[run.run_name.function_name] = run.GetAdjustedCPUTime() *
                                       benchmark::GetTimeUnitMultiplier(benchmark::kNanosecond) /
                                       benchmark::GetTimeUnitMultiplier(run.time_unit);
    }
    ConsoleReporter::ReportRuns(runs);
  }
  std::map<std::string, double> ns;
};

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  CollectingReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter, "NoSession|BM_Call|BM_FibPlain|BM_EmptyLoop");
  std::uint64_t dropped = 0;
  {
    ringtrace::Config config;
    config.buffer_records = std::size_t{1} << 20;
    config.overflow = ringtrace::OverflowPolicy::block;
    ringtrace::Session session(config);
    session.add_exporter(std::make_shared<NullExporter>());
    session.start();
    benchmark::RunSpecifiedBenchmarks(&reporter, "Enabled");
    session.stop();
    dropped = session.stats().dropped;
  }
  benchmark::Shutdown();
  auto& ns = reporter.ns;
  const double loop = ns["BM_EmptyLoop"], call = ns["BM_Call<plain>"];
  const double zoned = ns["BM_ZonedEnabled"], instrumented = ns["BM_InstrumentedEnabled"];
  const double zoned_off = ns["BM_ZonedNoSession"], instrumented_off = ns["BM_InstrumentedNoSession"];
  const double fib = ns["BM_FibPlain"] / kFibCalls, fib_zoned = ns["BM_FibZonedEnabled"] / kFibCalls,
               fib_instrumented = ns["BM_FibInstrumentedEnabled"] / kFibCalls,
               fib_off = ns["BM_FibInstrumentedNoSession"] / kFibCalls;
  std::printf("\nper call (median CPU time)                  ns   x call   x zoned   target\n");
  std::printf("  plain call                          %7.2f   %6.2f             (loop %.2f ns)\n", call, 1.0, loop);
  std::printf("  zoned call, enabled                 %7.2f   %6.2f   %7.2f\n", zoned, zoned / call, 1.0);
  std::printf("  instrumented call, enabled          %7.2f   %6.2f   %7.2f   <= 1.3 x zoned\n", instrumented,
              instrumented / call, instrumented / zoned);
  std::printf("  zoned call, no session, net         %7.2f\n", zoned_off - call);
  std::printf("  instrumented call, no session, net  %7.2f\n", instrumented_off - call);
  std::printf("  fib(%d): plain call                 %7.2f   %6.2f\n", kFib, fib, 1.0);
  std::printf("  fib(%d): zoned call, enabled        %7.2f   %6.2f   %7.2f\n", kFib, fib_zoned, fib_zoned / fib, 1.0);
  std::printf("  fib(%d): instrumented, enabled      %7.2f   %6.2f   %7.2f   <= 1.3 x zoned\n", kFib, fib_instrumented,
              fib_instrumented / fib, fib_instrumented / fib_zoned);
  std::printf("  fib(%d): instrumented, no session   %7.2f   %6.2f             (net %.2f)\n", kFib, fib_off,
              fib_off / fib, fib_off - fib);
  std::printf("events dropped in the enabled runs: %llu (block policy: must be 0)\n",
              static_cast<unsigned long long>(dropped));
  return 0;
}
