// The symbolizer (runtime/symbols/): what turning recorded function addresses back into
// names costs, on a generated library of 10,000 functions with DWARF (-g), 10 units.
//
//   loaded_modules         one call: can a drainer afford it every pass?
//   module_generation      one call: the cheap check that says when to call the above
//   symbolize all          a fresh Symbolizer naming every one of the 10,000 functions:
//                          opening the file, reading its DWARF, indexing, demangling
//   open                   a fresh Symbolizer naming one function: the fixed part
//   distinct, warm         functions/s once the module is open (the marginal rate)
//   cached                 resolve() of an address already named: a hash lookup
#include <benchmark/benchmark.h>
#include <dlfcn.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "symbols/modules.hpp"
#include "symbols/symbolizer.hpp"

namespace {

using ringtrace::symbols::loaded_modules;
using ringtrace::symbols::Symbolizer;

// The generated library's function entries, from its generated_unit_K tables.
const std::vector<std::uint64_t>& program_functions() {
  static const std::vector<std::uint64_t> functions = [] {
    std::vector<std::uint64_t> out;
    void* library = dlopen(RINGTRACE_SYMBOLS_PROGRAM, RTLD_NOW | RTLD_LOCAL);
    if (library == nullptr) {
      std::fprintf(stderr, "dlopen: %s\n", dlerror());
      return out;
    }
    std::vector<const void*> table(100000);
    for (int unit = 0; unit < RINGTRACE_SYMBOLS_UNITS; ++unit) {
      const std::string name = "generated_unit_" + std::to_string(unit);
      auto fill = reinterpret_cast<std::size_t (*)(const void**)>(dlsym(library, name.c_str()));
      if (fill == nullptr) return std::vector<std::uint64_t>{};
      const std::size_t n = fill(table.data());
      for (std::size_t i = 0; i < n; ++i) out.push_back(reinterpret_cast<std::uintptr_t>(table[i]));
    }
    return out;
  }();
  return functions;
}

void BM_LoadedModules(benchmark::State& state) {
  std::size_t modules = 0;
  for (auto _ : state) {
    auto list = loaded_modules();
    modules = list.size();
    benchmark::DoNotOptimize(list.data());
  }
  state.counters["modules"] = static_cast<double>(modules);
}

void BM_ModuleGeneration(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(ringtrace::symbols::module_generation());
}

void BM_SymbolizeAll(benchmark::State& state) {
  const auto& functions = program_functions();
  const auto modules = loaded_modules();
  for (auto _ : state) {
    Symbolizer symbolizer(modules);
    std::size_t resolved = 0;
    for (std::uint64_t address : functions) resolved += symbolizer.resolve(address).resolved;
    if (resolved != functions.size()) state.SkipWithError("a generated function was not resolved");
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * functions.size()));
}

void BM_Open(benchmark::State& state) {
  const auto& functions = program_functions();
  const auto modules = loaded_modules();
  for (auto _ : state) {
    Symbolizer symbolizer(modules);
    benchmark::DoNotOptimize(symbolizer.resolve(functions.front()).resolved);
  }
}

// Timed: every function but the first, after the first has opened the module.
void BM_DistinctWarm(benchmark::State& state) {
  const auto& functions = program_functions();
  const auto modules = loaded_modules();
  for (auto _ : state) {
    Symbolizer symbolizer(modules);
    symbolizer.resolve(functions.front());
    const auto begin = std::chrono::steady_clock::now();
    for (std::size_t i = 1; i < functions.size(); ++i) benchmark::DoNotOptimize(symbolizer.resolve(functions[i]).line);
    state.SetIterationTime(std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count());
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * (functions.size() - 1)));
}

void BM_Cached(benchmark::State& state) {
  const auto& functions = program_functions();
  Symbolizer symbolizer(loaded_modules());
  for (std::uint64_t address : functions) symbolizer.resolve(address);
  std::size_t i = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(symbolizer.resolve(functions[i]).line);
    if (++i == functions.size()) i = 0;
  }
  state.SetItemsProcessed(state.iterations());
}

// Medians of 5 repetitions: the machine may be shared.
BENCHMARK(BM_LoadedModules)->Repetitions(5)->ReportAggregatesOnly(true);
BENCHMARK(BM_ModuleGeneration)->Repetitions(5)->ReportAggregatesOnly(true);
BENCHMARK(BM_SymbolizeAll)->Unit(benchmark::kMillisecond)->Iterations(3)->Repetitions(5)->ReportAggregatesOnly(true);
BENCHMARK(BM_Open)->Unit(benchmark::kMillisecond)->Iterations(10)->Repetitions(5)->ReportAggregatesOnly(true);
BENCHMARK(BM_DistinctWarm)
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond)
    ->Iterations(3)
    ->Repetitions(5)
    ->ReportAggregatesOnly(true);
BENCHMARK(BM_Cached)->Repetitions(5)->ReportAggregatesOnly(true);

// Keeps each benchmark's median wall time per iteration (ns) for the summary.
class CollectingReporter final : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    for (const Run& run : runs) {
      if (run.error_occurred || run.run_type != Run::RT_Aggregate || run.aggregate_name != "median") continue;
      ns[run.run_name.function_name] = run.GetAdjustedRealTime() *
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
  const std::size_t count = program_functions().size();
  if (count == 0) return 1;
  CollectingReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  auto& ns = reporter.ns;
  const double all = ns["BM_SymbolizeAll"], warm = ns["BM_DistinctWarm"];
  std::printf("\n%zu generated functions in %d units, with DWARF (medians, wall time):\n", count,
              RINGTRACE_SYMBOLS_UNITS);
  std::printf("  loaded_modules()             %10.2f us per call (%zu modules)\n", ns["BM_LoadedModules"] / 1e3,
              loaded_modules().size());
  std::printf("  module_generation()          %10.3f us per call\n", ns["BM_ModuleGeneration"] / 1e3);
  std::printf("  symbolize all, fresh         %10.1f ms for all, %.0f functions/s\n", all / 1e6, 1e9 * count / all);
  std::printf("  open + first function        %10.2f ms\n", ns["BM_Open"] / 1e6);
  std::printf("  distinct functions, warm     %10.0f functions/s (%.2f us each)\n", 1e9 * (count - 1) / warm,
              warm / 1e3 / (count - 1));
  std::printf("  cached address               %10.1f ns per resolve()\n", ns["BM_Cached"]);
  return 0;
}
