// The hot path's cost ladder and the drainer's merge rate, measured in one run and
// printed as ratios to the raw clock read and to the floor of a zone.
//
//   raw clock read        one TSC read
//   zone floor            two TSC reads and two 16-byte stores into a thread-local ring
//   zone, no session      RINGTRACE_ZONE compiled in, no session running
//   zone, enabled         RINGTRACE_ZONE with a session and a null exporter (1 and 2 threads);
//                         and with the binary file's rings in a file mapping (rings_in_file)
//   zone, run-time name   RINGTRACE_ZONE_DYNAMIC with a 20-byte std::string_view (one record, the
//                         name copied), with and without a session
//   zone, two arguments   RINGTRACE_ZONE("name", "k1", v1, "k2", v2) (one reservation, one record
//                         per argument), with and without a session
//   manual zone           RINGTRACE_ZONE_BEGIN / RINGTRACE_ZONE_END, with and without a session
//   drain                 stop() draining N threads' full rings into a null exporter
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include <filesystem>

#include "ringtrace/exporter.hpp"
#include "ringtrace/exporters/binary_trace.hpp"
#include "ringtrace/ringtrace.hpp"

namespace {

class NullExporter final : public ringtrace::Exporter {
 public:
  void on_events(std::span<const ringtrace::Event> events, const ringtrace::TraceContext&) override {
    count += events.size();
    benchmark::DoNotOptimize(events.data());
  }
  std::uint64_t count = 0;
};

// The loop every zone benchmark runs in, with nothing in it: what "net of the loop" subtracts.
void BM_EmptyLoop(benchmark::State& state) {
  for (auto _ : state) benchmark::ClobberMemory();
}

void BM_RawClockRead(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(ringtrace::detail::read_ticks(true));
}

// What a zone cannot go below: read the clock, store 16 bytes, twice.
struct FloorRecord {
  std::uint64_t ticks;
  std::uint64_t word;
};
struct FloorRing {
  FloorRecord slots[4096];
  std::uint64_t pos = 0;
};
thread_local FloorRing t_floor;

void BM_ZoneFloor(benchmark::State& state) {
  static constexpr ringtrace::SiteInfo site{"floor", "", "", 0, ringtrace::SiteKind::zone};
  FloorRing& ring = t_floor;
  for (auto _ : state) {
    ring.slots[ring.pos++ & 4095] = {ringtrace::detail::read_ticks(true), reinterpret_cast<std::uintptr_t>(&site)};
    benchmark::ClobberMemory();
    ring.slots[ring.pos++ & 4095] = {ringtrace::detail::read_ticks(true), reinterpret_cast<std::uintptr_t>(&site) | 1};
    benchmark::ClobberMemory();
  }
}

void BM_Zone(benchmark::State& state) {
  for (auto _ : state) {
    RINGTRACE_ZONE("bench");
    benchmark::ClobberMemory();
  }
}

// Disabled and enabled runs use the same function; main() runs it twice.
void BM_ZoneNoSession(benchmark::State& state) { BM_Zone(state); }

// A zone in a category: with no session (as cheap as a zone), and in a session with the
// category switched off.
void BM_ZoneInCategory(benchmark::State& state) {
  for (auto _ : state) {
    RINGTRACE_ZONE_IN("bench_off", "bench");
    benchmark::ClobberMemory();
  }
}
void BM_ZoneInCategoryNoSession(benchmark::State& state) { BM_ZoneInCategory(state); }

// A sampled site at one in 65,535 in a running session: nearly every zone is left out
// (the one recorded adds 25 ns / 65,535, under 0.001 ns); with no session, the same
// compare as any zone.
void BM_ZoneSampled(benchmark::State& state) {
  for (auto _ : state) {
    RINGTRACE_ZONE_SAMPLED("bench_sampled", 65535);
    benchmark::ClobberMemory();
  }
}
void BM_ZoneSampledOut(benchmark::State& state) { BM_ZoneSampled(state); }
void BM_ZoneSampledNoSession(benchmark::State& state) { BM_ZoneSampled(state); }
void BM_ZoneInCategoryOff(benchmark::State& state) { BM_ZoneInCategory(state); }

// A zone with one value: at most one more record than a zone, and no clock read.
void BM_ZoneWithValue(benchmark::State& state) {
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  std::int64_t n = 0;
  for (auto _ : state) {
    RINGTRACE_ZONE("bench");
    RINGTRACE_ZONE_VALUE("n", ++n);
    benchmark::ClobberMemory();
  }
}
// A zone named at run time: the name copied into the ring (one record, a few slots more).
void BM_ZoneDynamic(benchmark::State& state) {
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  const std::string name = "bench/dynamic/name01";  // 20 bytes: three slots
  const std::string_view view = name;
  for (auto _ : state) {
    RINGTRACE_ZONE_DYNAMIC(view);
    benchmark::ClobberMemory();
  }
}
void BM_ZoneDynamicNoSession(benchmark::State& state) { BM_ZoneDynamic(state); }

// A zone with two arguments at its own macro: one reservation for the begin and both.
void BM_ZoneTwoArgs(benchmark::State& state) {
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  std::int64_t n = 0;
  for (auto _ : state) {
    ++n;
    RINGTRACE_ZONE("bench", "bytes", n, "ratio", 0.5);
    benchmark::ClobberMemory();
  }
}
void BM_ZoneTwoArgsNoSession(benchmark::State& state) { BM_ZoneTwoArgs(state); }

// A manual zone (RINGTRACE_ZONE_BEGIN / _END): a zone plus the thread's token stack.
void BM_ZoneManual(benchmark::State& state) {
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  for (auto _ : state) {
    RINGTRACE_ZONE_BEGIN("bench");
    benchmark::ClobberMemory();
    RINGTRACE_ZONE_END();
  }
}
void BM_ZoneManualNoSession(benchmark::State& state) { BM_ZoneManual(state); }

void BM_ZoneEnabled(benchmark::State& state) {
  // Not timed: let the drainer empty the ring left by the previous repetition, so the
  // timed burst (400k records in a 1M-record ring) only ever takes the fast path.
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  BM_Zone(state);
}
// The same with the ring in a shared file mapping (BinaryTraceOptions::rings_in_file).
void BM_ZoneEnabledRingsInFile(benchmark::State& state) { BM_ZoneEnabled(state); }

// Session::step(): in wait steps (no window boundary, nothing recorded) and in active
// steps (each step one marker record: a zone "step #N" on the steps track).
void BM_StepWait(benchmark::State& state) {
  ringtrace::Config config;
  config.schedule = ringtrace::Schedule{.skip_first = 0, .wait = 1 << 30, .warmup = 0, .active = 1, .repeat = 1};
  ringtrace::Session session(config);
  session.add_exporter(std::make_shared<NullExporter>());
  session.start();
  for (auto _ : state) session.step();
  session.stop();
}
// Active steps: the ring's pages are touched (and drained) first, and the timed steps fit
// it, so the figure is step()'s own (a spin lock taken and one record), not the
// drainer's.
void BM_StepActive(benchmark::State& state) {
  ringtrace::Config config;
  config.buffer_records = std::size_t{1} << 20;
  config.overflow = ringtrace::OverflowPolicy::block;
  config.schedule = ringtrace::Schedule{.skip_first = 0, .wait = 0, .warmup = 0, .active = 1 << 30, .repeat = 1};
  ringtrace::Session session(config);
  session.add_exporter(std::make_shared<NullExporter>());
  session.start();
  for (int i = 0; i < (1 << 19); ++i) {
    RINGTRACE_ZONE("warm");
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  for (auto _ : state) session.step();
  session.stop();
  if (session.stats().dropped != 0) state.SkipWithError("steps were dropped");
}

BENCHMARK(BM_EmptyLoop);
BENCHMARK(BM_StepWait);
BENCHMARK(BM_StepActive)->Iterations(100000);
BENCHMARK(BM_RawClockRead);
BENCHMARK(BM_ZoneInCategoryNoSession);
BENCHMARK(BM_ZoneInCategoryOff)->Repetitions(5)->ReportAggregatesOnly(true);
BENCHMARK(BM_ZoneSampledOut)->Repetitions(5)->ReportAggregatesOnly(true);
BENCHMARK(BM_ZoneSampledNoSession);
BENCHMARK(BM_ZoneWithValue)->Iterations(200000)->Repetitions(30)->ReportAggregatesOnly(true);
BENCHMARK(BM_ZoneFloor);
BENCHMARK(BM_ZoneDynamic)->Iterations(200000)->Repetitions(30)->ReportAggregatesOnly(true);
BENCHMARK(BM_ZoneTwoArgs)->Iterations(200000)->Repetitions(30)->ReportAggregatesOnly(true);
BENCHMARK(BM_ZoneManual)->Iterations(200000)->Repetitions(30)->ReportAggregatesOnly(true);
BENCHMARK(BM_ZoneDynamicNoSession);
BENCHMARK(BM_ZoneTwoArgsNoSession);
BENCHMARK(BM_ZoneManualNoSession);
BENCHMARK(BM_ZoneNoSession);
// Bursts that fit the ring (1M records) and repetitions between which the drainer
// empties it: every iteration takes the fast path, none is dropped.
BENCHMARK(BM_ZoneEnabled)->Threads(1)->Threads(2)->Iterations(200000)->Repetitions(30)->ReportAggregatesOnly(true);
BENCHMARK(BM_ZoneEnabledRingsInFile)->Iterations(200000)->Repetitions(30)->ReportAggregatesOnly(true);
// The same in sessions without and with Config::context_switches (run alternately by
// main()): the recording thread's zone must cost the same.
void BM_ZoneSwitchesOff(benchmark::State& state) { BM_ZoneEnabled(state); }
void BM_ZoneSwitchesOn(benchmark::State& state) { BM_ZoneEnabled(state); }
BENCHMARK(BM_ZoneSwitchesOff)->Iterations(200000)->Repetitions(15)->ReportAggregatesOnly(true);
BENCHMARK(BM_ZoneSwitchesOn)->Iterations(200000)->Repetitions(15)->ReportAggregatesOnly(true);

// The drainer: threads fill their rings (timing paused), then stop() merges and
// delivers everything on the drainer thread; items/s is events merged per second.
void BM_DrainMerge(benchmark::State& state) {
  const int threads = static_cast<int>(state.range(0));
  const bool recorder = state.range(1) != 0;  // the flight recorder keeps the last 100 ms
  const int zones = 1'000'000;
  std::uint64_t events = 0;
  for (auto _ : state) {
    ringtrace::Config config;
    config.buffer_records = std::size_t{1} << 22;
    config.high_water = 1.0;
    config.drain_interval = std::chrono::hours(1);
    config.batch_events = 1 << 14;
    if (recorder) config.flight_recorder.keep = std::chrono::milliseconds(100);
    ringtrace::Session session(config);
    if (recorder)
      session.add_window_exporter([](const ringtrace::WindowInfo&) { return std::make_shared<NullExporter>(); });
    auto sink = std::make_shared<NullExporter>();
    session.add_exporter(sink);
    session.start();
    std::vector<std::thread> workers;
    for (int t = 0; t < threads; ++t) {
      workers.emplace_back([=] {
        for (int i = 0; i < zones; ++i) {
          RINGTRACE_ZONE("merge");
        }
      });
    }
    for (auto& w : workers) w.join();
    const auto begin = std::chrono::steady_clock::now();
    session.stop();
    const auto end = std::chrono::steady_clock::now();
    state.SetIterationTime(std::chrono::duration<double>(end - begin).count());
    events += sink->count;
    if (session.stats().dropped != 0) state.SkipWithError("events were dropped; the merge figure would be wrong");
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(events));
}
BENCHMARK(BM_DrainMerge)
    ->Args({1, 0})
    ->Args({2, 0})
    ->Args({4, 0})
    ->Args({1, 1})
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond)
    ->Iterations(5);

// Keeps every run's per-iteration CPU time (ns) for the ratio table.
class CollectingReporter final : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    for (const Run& run : runs) {
      if (run.error_occurred) continue;
      if (run.run_type == Run::RT_Aggregate && run.aggregate_name != "median") continue;
      ns[run.benchmark_name()] = run.GetAdjustedCPUTime() * benchmark::GetTimeUnitMultiplier(benchmark::kNanosecond) /
                                 benchmark::GetTimeUnitMultiplier(run.time_unit);
      const auto items = run.counters.find("items_per_second");
      if (items != run.counters.end()) rate[run.benchmark_name()] = items->second.value;
    }
    ConsoleReporter::ReportRuns(runs);
  }
  std::map<std::string, double> ns;
  std::map<std::string, double> rate;
};

// The first run whose name starts with `prefix` and contains `part` (e.g. "threads:2").
double find(const std::map<std::string, double>& m, const std::string& prefix, const std::string& part = "") {
  for (const auto& [name, value] : m) {
    if (name.rfind(prefix, 0) == 0 && name.find(part) != std::string::npos) return value;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  CollectingReporter reporter;
  if (std::getenv("RINGTRACE_BENCH_ONLY") != nullptr) {  // profiling one benchmark: RINGTRACE_BENCH_ONLY=regex
    benchmark::RunSpecifiedBenchmarks(&reporter, std::getenv("RINGTRACE_BENCH_ONLY"));
    return 0;
  }
  benchmark::RunSpecifiedBenchmarks(
      &reporter,
      "BM_EmptyLoop|BM_RawClockRead|BM_ZoneFloor|BM_ZoneNoSession|BM_ZoneInCategoryNoSession|BM_ZoneSampledNoSession|"
      "BM_ZoneDynamicNoSession|BM_ZoneTwoArgsNoSession|BM_ZoneManualNoSession");
  {
    ringtrace::Config config;
    config.buffer_records = std::size_t{1} << 20;
    // Block, not drop: if a burst ever found the ring full it would wait (and the figure
    // would be too high), never drop (which would make it too low).
    config.overflow = ringtrace::OverflowPolicy::block;
    ringtrace::Session session(config);
    session.add_exporter(std::make_shared<NullExporter>());
    session.start();
    benchmark::RunSpecifiedBenchmarks(
        &reporter, "BM_ZoneEnabled/|BM_ZoneWithValue|BM_ZoneDynamic/|BM_ZoneTwoArgs/|BM_ZoneManual/");
    ringtrace::set_category_enabled("bench_off", false);
    benchmark::RunSpecifiedBenchmarks(&reporter, "BM_ZoneInCategoryOff|BM_ZoneSampledOut");
    session.stop();
    const auto stats = session.stats();
    std::printf("enabled-zone runs: %llu events recorded, %llu dropped (block policy: must be 0)\n",
                static_cast<unsigned long long>(stats.recorded), static_cast<unsigned long long>(stats.dropped));
  }
  {
    ringtrace::Config config;
    config.buffer_records = std::size_t{1} << 20;
    config.overflow = ringtrace::OverflowPolicy::block;
    ringtrace::Session session(config);
    ringtrace::BinaryTraceOptions options;
    options.rings_in_file = true;
    const std::filesystem::path file = std::filesystem::temp_directory_path() / "ringtrace-bench-core.rtrace";
    session.add_exporter(ringtrace::binary_trace_exporter(file, options));
    session.start();
    benchmark::RunSpecifiedBenchmarks(&reporter, "BM_ZoneEnabledRingsInFile");
    session.stop();
    std::filesystem::remove(file);
  }
  // Zones with and without context switches, sessions alternating (three of each).
  std::vector<double> switches_off, switches_on;
  std::string switches_unavailable;
  for (int round = 0; round < 3; ++round) {
    for (const bool on : {false, true}) {
      ringtrace::Config config;
      config.buffer_records = std::size_t{1} << 20;
      config.overflow = ringtrace::OverflowPolicy::block;
      config.context_switches = on;
      ringtrace::Session session(config);
      session.add_exporter(std::make_shared<NullExporter>());
      session.start();
      const char* name = on ? "BM_ZoneSwitchesOn" : "BM_ZoneSwitchesOff";
      benchmark::RunSpecifiedBenchmarks(&reporter, name);
      session.stop();
      if (on) switches_unavailable = session.stats().context_switches_unavailable;
      (on ? switches_on : switches_off).push_back(find(reporter.ns, name, "_median"));
    }
  }
  benchmark::RunSpecifiedBenchmarks(&reporter, "BM_DrainMerge|BM_Step");
  benchmark::Shutdown();

  const double clock = find(reporter.ns, "BM_RawClockRead");
  const double floor = find(reporter.ns, "BM_ZoneFloor");
  const double disabled = find(reporter.ns, "BM_ZoneNoSession");
  const double loop = find(reporter.ns, "BM_EmptyLoop");
  const double category_none = find(reporter.ns, "BM_ZoneInCategoryNoSession");
  const double category_off = find(reporter.ns, "BM_ZoneInCategoryOff", "_median");
  const double with_value = find(reporter.ns, "BM_ZoneWithValue", "_median");
  const double one = find(reporter.ns, "BM_ZoneEnabled/", "threads:1_median");
  const double two = find(reporter.ns, "BM_ZoneEnabled/", "threads:2_median");
  const double dynamic = find(reporter.ns, "BM_ZoneDynamic/", "_median");
  const double two_args = find(reporter.ns, "BM_ZoneTwoArgs/", "_median");
  const double manual = find(reporter.ns, "BM_ZoneManual/", "_median");
  const double dynamic_none = find(reporter.ns, "BM_ZoneDynamicNoSession");
  const double two_args_none = find(reporter.ns, "BM_ZoneTwoArgsNoSession");
  const double manual_none = find(reporter.ns, "BM_ZoneManualNoSession");
  std::printf("\ncost ladder (per zone, CPU time)          ns   x clock   x floor   target\n");
  std::printf("  raw clock read                    %8.2f   %7.2f\n", clock, 1.0);
  std::printf("  zone floor (2 reads + 2 stores)   %8.2f   %7.2f   %7.2f\n", floor, floor / clock, 1.0);
  std::printf("  empty loop (subtracted below)     %8.2f\n", loop);
  std::printf("  zone, no session, net of loop     %8.2f   %7.2f   %7.2f   <= 0.4 ns\n", disabled - loop,
              (disabled - loop) / clock, (disabled - loop) / floor);
  std::printf("  zone in category, no session, net %8.2f   %7.2f   %7.2f   as a zone with no session\n",
              category_none - loop, (category_none - loop) / clock, (category_none - loop) / floor);
  std::printf("  zone in category switched off, net%8.2f   %7.2f   %7.2f   (session running)\n", category_off - loop,
              (category_off - loop) / clock, (category_off - loop) / floor);
  const double sampled_none = find(reporter.ns, "BM_ZoneSampledNoSession");
  const double sampled_out = find(reporter.ns, "BM_ZoneSampledOut", "_median");
  std::printf("  sampled zone, no session, net     %8.2f   %7.2f   %7.2f   as a zone with no session\n",
              sampled_none - loop, (sampled_none - loop) / clock, (sampled_none - loop) / floor);
  std::printf("  sampled zone left out, net        %8.2f   %7.2f   %7.2f   <= 1 ns (session running)\n",
              sampled_out - loop, (sampled_out - loop) / clock, (sampled_out - loop) / floor);
  std::printf("  zone, enabled, 1 thread           %8.2f   %7.2f   %7.2f   <= 1.15 x floor\n", one, one / clock,
              one / floor);
  const double in_file = find(reporter.ns, "BM_ZoneEnabledRingsInFile", "_median");
  std::printf("  zone, enabled, ring in a file     %8.2f   %7.2f   %7.2f   (rings_in_file: %.2f x heap ring)\n",
              in_file, in_file / clock, in_file / floor, in_file / one);
  std::printf("  zone + value, enabled, 1 thread   %8.2f   %7.2f   %7.2f   (value: +1 record, no clock)\n", with_value,
              with_value / clock, with_value / floor);
  std::printf("  zone, enabled, 2 threads (each)   %8.2f   %7.2f   %7.2f   <= 1.1 x 1-thread (%.2f)\n", two,
              two / clock, two / floor, two / one);
  std::printf("\nthe API beside RINGTRACE_ZONE (same run)     ns   x clock   x zone\n");
  std::printf("  zone, enabled (RINGTRACE_ZONE)    %8.2f   %7.2f   %7.2f\n", one, one / clock, 1.0);
  std::printf("  zone, run-time name, enabled      %8.2f   %7.2f   %7.2f   (20-byte name: +2 slots, one record)\n",
              dynamic, dynamic / clock, dynamic / one);
  std::printf("  zone + 2 arguments, enabled       %8.2f   %7.2f   %7.2f   (one reservation, +2 records)\n", two_args,
              two_args / clock, two_args / one);
  std::printf("  manual begin/end, enabled         %8.2f   %7.2f   %7.2f\n", manual, manual / clock, manual / one);
  std::printf("  zone, no session, net of loop     %8.2f\n", disabled - loop);
  std::printf("  run-time name, no session, net    %8.2f   (x zone with no session: %.2f)\n", dynamic_none - loop,
              (dynamic_none - loop) / std::max(disabled - loop, 0.01));
  std::printf("  2 arguments, no session, net      %8.2f   (x zone with no session: %.2f)\n", two_args_none - loop,
              (two_args_none - loop) / std::max(disabled - loop, 0.01));
  std::printf("  manual begin/end, no session, net %8.2f   (x zone with no session: %.2f)\n", manual_none - loop,
              (manual_none - loop) / std::max(disabled - loop, 0.01));
  std::printf("  step(), wait step (no boundary)   %8.2f   %7.2f              a few ns\n",
              find(reporter.ns, "BM_StepWait"), find(reporter.ns, "BM_StepWait") / clock);
  std::printf("  step(), active step (step zone)   %8.2f   %7.2f              one clock read\n",
              find(reporter.ns, "BM_StepActive"), find(reporter.ns, "BM_StepActive") / clock);
  for (std::size_t i = 0; i < switches_on.size(); ++i) {
    std::printf(
        "  zone, context_switches off / on   %8.2f / %.2f   on/off %.3f   (sessions alternating, round %zu)%s\n",
        switches_off[i], switches_on[i], switches_on[i] / switches_off[i], i + 1,
        switches_unavailable.empty() ? "" : " SWITCHES UNAVAILABLE");
  }
  if (!switches_unavailable.empty())
    std::printf("  (context switches unavailable: %s)\n", switches_unavailable.c_str());
  for (const char* arg : {"1", "2", "4"}) {
    const double rate = find(reporter.rate, std::string("BM_DrainMerge/") + arg + "/0/", "");
    std::printf("  drain merge, %s thread(s)          %8.1f M events/s   target >= 100\n", arg, rate / 1e6);
  }
  const double plain = find(reporter.rate, "BM_DrainMerge/1/0/", "");
  const double recorded = find(reporter.rate, "BM_DrainMerge/1/1/", "");
  std::printf("  drain merge + flight recorder     %8.1f M events/s   (+%.2f ns per event on the drainer)\n",
              recorded / 1e6, 1e9 / recorded - 1e9 / plain);
  return 0;
}
