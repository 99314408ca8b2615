// The pictures on a big recording: what `ringtrace convert --callgraph` and `--flamegraph`
// cost beside reading the file, and whether that grows with the events alone.
//
// A synthetic recording (made once per size in $TMPDIR/ringtrace_bench_pictures): two
// threads record zones of 256 interned names in 8 layers of 32 (a program's layers of
// functions: a call graph without cycles), each zone's children drawn from three names of
// the next layer, up to 8 deep (tens of thousands of distinct stacks, as a real program's
// recording has), 4.25 M and 17 M events (17 M: the size of issue 49's db_bench
// recording). A call graph of random calls among all 256 names, cycles everywhere, is
// drawn by Graphviz in minutes (192 ranks, 18,000 virtual nodes): the exporter stops dot
// after CallGraphOptions::dot_seconds; that is a property of Graphviz's layout, not of
// the number of events.
// Then replay_file into:
//   read        a null exporter (reading, decoding, merging: the floor)
//   folded      the folded stacks exporter (what the flame graph is drawn from)
//   flamegraph  the flame graph exporter, SVG written
//   callgraph   the call graph exporter, DOT and SVG (Graphviz's dot run at the end)
//   pstats      the pstats exporter (the call graph's aggregation, written as pstats)
// Counters: events/s, ns per event, the output's bytes. Run by hand
// (scripts/bench.sh), never by the tests.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "ringtrace/exporters/binary_trace.hpp"
#include "ringtrace/exporters/call_graph.hpp"
#include "ringtrace/exporters/flame_graph.hpp"
#include "ringtrace/exporters/folded_stacks.hpp"
#include "ringtrace/exporters/pstats.hpp"
#include "ringtrace/ringtrace.hpp"

namespace {

namespace fs = std::filesystem;

class NullExporter final : public ringtrace::Exporter {
 public:
  void on_events(std::span<const ringtrace::Event>, const ringtrace::TraceContext&) override {}
};

fs::path bench_dir() {
  const char* tmp = std::getenv("TMPDIR");
  const fs::path dir = fs::path(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") / "ringtrace_bench_pictures";
  fs::create_directories(dir);
  return dir;
}

std::vector<const ringtrace::SiteInfo*>& sites() {
  static std::vector<const ringtrace::SiteInfo*> all = [] {
    std::vector<const ringtrace::SiteInfo*> s;
    for (int i = 0; i < 256; ++i) s.push_back(ringtrace::intern("function_" + std::to_string(i)));
    return s;
  }();
  return all;
}

// A zone of `site` (in layer `depth`) with up to three children from three names of the
// next layer; `zones` counts down.
void walk(int site, int depth, std::int64_t& zones, std::minstd_rand& random) {
  RINGTRACE_ZONE_SITE(sites()[static_cast<std::size_t>(site)]);
  --zones;
  if (depth >= 7) return;
  const int children = static_cast<int>(random() % 4);
  for (int c = 0; c < children && zones > 0; ++c) {
    walk(32 * (depth + 1) + (site * 3 + static_cast<int>(random() % 3)) % 32, depth + 1, zones, random);
  }
}

// The recording of `events` events (made once, kept for the next runs).
fs::path recording(std::int64_t events) {
  const fs::path file = bench_dir() / ("synthetic_" + std::to_string(events) + ".rtrace");
  if (fs::exists(file)) return file;
  ringtrace::Config config;
  config.overflow = ringtrace::OverflowPolicy::block;
  config.process_name = "synthetic";
  ringtrace::Session session(config);
  session.add_exporter(ringtrace::binary_trace_exporter(file));
  session.start();
  std::vector<std::thread> threads;
  for (int t = 0; t < 2; ++t) {
    threads.emplace_back([events, t] {
      std::minstd_rand random(static_cast<unsigned>(49 + t));
      std::int64_t zones = events / 4;  // two events a zone, two threads
      while (zones > 0) walk(static_cast<int>(random() % 8), 0, zones, random);
    });
  }
  for (auto& t : threads) t.join();
  session.stop();
  return file;
}

template <typename Make>
void convert(benchmark::State& state, Make make) {
  const fs::path input = recording(state.range(0));
  const fs::path out = bench_dir() / "out";
  fs::create_directories(out);
  std::uint64_t events = 0;
  for (auto _ : state) {
    std::shared_ptr<ringtrace::Exporter> exporter = make(out);
    ringtrace::Exporter* const list[] = {exporter.get()};
    events = ringtrace::replay_file(input, list).events;
  }
  const double n = static_cast<double>(events);
  state.counters["events"] = n;
  state.counters["events/s"] =
      benchmark::Counter(n * static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
  state.counters["ns/event"] = benchmark::Counter(n * static_cast<double>(state.iterations()),
                                                  benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
  std::uintmax_t bytes = 0;
  for (const auto& entry : fs::directory_iterator(out)) bytes += entry.file_size();
  state.counters["output bytes"] = static_cast<double>(bytes);
  fs::remove_all(out);
}

void BM_Read(benchmark::State& state) {
  convert(state, [](const fs::path&) { return std::make_shared<NullExporter>(); });
}
void BM_Folded(benchmark::State& state) {
  convert(state, [](const fs::path& out) { return ringtrace::folded_stacks_exporter(out / "run.folded"); });
}
void BM_FlameGraph(benchmark::State& state) {
  convert(state, [](const fs::path& out) { return ringtrace::flame_graph_exporter(out / "flame.svg"); });
}
void BM_CallGraph(benchmark::State& state) {
  convert(state, [](const fs::path& out) { return ringtrace::call_graph_exporter(out / "calls.svg"); });
}
void BM_Pstats(benchmark::State& state) {
  convert(state, [](const fs::path& out) { return ringtrace::pstats_exporter(out / "run.prof"); });
}

constexpr std::int64_t kSmall = 4'250'000, kBig = 17'000'000;
BENCHMARK(BM_Read)->Arg(kSmall)->Arg(kBig)->Unit(benchmark::kMillisecond)->Iterations(3);
BENCHMARK(BM_Folded)->Arg(kSmall)->Arg(kBig)->Unit(benchmark::kMillisecond)->Iterations(3);
BENCHMARK(BM_FlameGraph)->Arg(kSmall)->Arg(kBig)->Unit(benchmark::kMillisecond)->Iterations(3);
BENCHMARK(BM_CallGraph)->Arg(kSmall)->Arg(kBig)->Unit(benchmark::kMillisecond)->Iterations(3);
BENCHMARK(BM_Pstats)->Arg(kSmall)->Arg(kBig)->Unit(benchmark::kMillisecond)->Iterations(3);

}  // namespace

BENCHMARK_MAIN();
