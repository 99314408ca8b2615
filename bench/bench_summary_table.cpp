// Throughput of the captured-ops summary and the key-averages table on the drainer
// thread: events per second through on_events (batches of 16,384, as the drainer
// hands them), on_start and on_finish (formatting to a null stream) included.
//
// The stream: 4 threads, steps of ops inside and outside capture regions, each op with
// nested kernels (depth up to 5), and a recursive zone; `names` distinct zone names.
// Baseline: ZoneTracker alone (the stack work every zone exporter does).
//
//   build/h5/bench/bench_summary_table --benchmark_min_time=2
#include <benchmark/benchmark.h>

#include <algorithm>
#include <ostream>
#include <streambuf>
#include <string>
#include <vector>

#include "ringtrace/exporters/ops_summary.hpp"
#include "ringtrace/exporters/table.hpp"
#include "ringtrace/recorded_trace.hpp"
#include "zone_tracker.hpp"

namespace {

using namespace ringtrace;

struct NullBuffer : std::streambuf {
  int overflow(int c) override { return c; }
  std::streamsize xsputn(const char*, std::streamsize n) override { return n; }
};

RecordedTrace make_stream(int names, std::size_t target_events) {
  TraceBuilder b("bench");
  std::vector<ThreadId> threads;
  for (int t = 0; t < 4; ++t) threads.push_back(b.thread("worker-" + std::to_string(t)));
  const SiteId step = b.site("step");
  const SiteId graph = b.site("compiled_graph", SiteKind::region);
  const SiteId fib = b.site("fib");
  std::vector<SiteId> ops;
  for (int i = 0; i < names; ++i) ops.push_back(b.site("op_" + std::to_string(i)));
  std::vector<std::uint64_t> now(4, 1000);
  std::uint64_t events = 0, counter = 0;
  while (events < target_events) {
    for (int t = 0; t < 4; ++t) {
      const ThreadId th = threads[static_cast<std::size_t>(t)];
      std::uint64_t& ts = now[static_cast<std::size_t>(t)];
      auto op = [&](int depth) {
        const auto run = [&](auto& self, int d) -> void {
          b.begin(th, ops[counter++ % ops.size()], ts += 3);
          events += 2;
          if (d > 0) {
            self(self, d - 1);
            self(self, d - 1);
          }
          b.end(th, ts += 17 + counter % 13);
        };
        run(run, depth);
      };
      b.begin(th, step, ts += 5);
      events += 2;
      const bool captured = counter % 4 != 3;
      if (captured) {
        b.begin(th, graph, ts += 2, static_cast<std::int64_t>(counter % 5));
        events += 2;
      }
      for (int k = 0; k < 3; ++k) op(2);  // 7 zones each, depth 3
      if (captured) b.end(th, ts += 2);
      op(1);
      for (int d = 0; d < 4; ++d) {  // recursion, depth 4
        b.begin(th, fib, ts += 1);
        events += 2;
      }
      for (int d = 0; d < 4; ++d) b.end(th, ts += 4);
      b.end(th, ts += 5);
    }
  }
  return b.build();
}

const RecordedTrace& stream(int names) {
  static const RecordedTrace few = make_stream(64, std::size_t{1} << 20);
  static const RecordedTrace many = make_stream(4096, std::size_t{1} << 20);
  return names <= 64 ? few : many;
}

constexpr std::size_t kBatch = std::size_t{1} << 14;

// Full runs (state.range(last) == 0): every iteration is a whole session, on_start to
// on_finish, so the per-session set-up of every name's aggregate is included. Steady
// state (== 1): one session fed the stream again and again (a long capture).
void run(benchmark::State& state, Exporter& exporter, const RecordedTrace& trace, bool steady) {
  if (!steady) {
    for (auto _ : state) replay(trace, exporter, kBatch);
  } else {
    RecordedTraceContext context(trace);
    exporter.on_start(context);
    for (std::size_t i = 0; i < trace.events.size(); i += kBatch) {  // warm: every aggregate exists
      exporter.on_events(std::span<const Event>(trace.events).subspan(i, std::min(kBatch, trace.events.size() - i)),
                         context);
    }
    for (auto _ : state) {
      for (std::size_t i = 0; i < trace.events.size(); i += kBatch) {
        exporter.on_events(std::span<const Event>(trace.events).subspan(i, std::min(kBatch, trace.events.size() - i)),
                           context);
      }
    }
    exporter.on_finish(context, trace.stats);
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * trace.events.size()));
}

void BM_ZoneTrackerBaseline(benchmark::State& state) {
  const RecordedTrace& trace = stream(static_cast<int>(state.range(0)));
  struct Tracker final : Exporter {
    detail::ZoneTracker tracker;
    std::uint64_t sum = 0;
    void on_events(std::span<const Event> events, const TraceContext&) override {
      for (const Event& e : events) {
        tracker.feed(e, [this](const detail::ClosedZone& z, std::span<const detail::OpenZone>) { sum += z.self_ns; });
      }
    }
  } exporter;
  run(state, exporter, trace, state.range(1) != 0);
  benchmark::DoNotOptimize(exporter.sum);
}

void BM_OpsSummary(benchmark::State& state) {
  const RecordedTrace& trace = stream(static_cast<int>(state.range(0)));
  NullBuffer null;
  std::ostream out(&null);
  OpsSummaryOptions options;
  options.transparent_names = {"step"};
  auto exporter = std::dynamic_pointer_cast<OpsSummaryExporter>(ops_summary_exporter(out, options));
  run(state, *exporter, trace, state.range(1) != 0);
  state.counters["missing_groups"] = static_cast<double>(exporter->summary().missing.size());
}

void BM_Table(benchmark::State& state) {
  const RecordedTrace& trace = stream(static_cast<int>(state.range(0)));
  NullBuffer null;
  std::ostream out(&null);
  TableOptions options;
  options.group_by_stack_n = static_cast<std::size_t>(state.range(1));
  auto exporter = std::dynamic_pointer_cast<TableExporter>(table_exporter(out, options));
  run(state, *exporter, trace, state.range(2) != 0);
  state.counters["groups"] = static_cast<double>(exporter->table().groups);
}

// Arguments: distinct names, [stack frames in the table's key,] steady state.
BENCHMARK(BM_ZoneTrackerBaseline)->ArgsProduct({{64, 4096}, {0, 1}})->Unit(benchmark::kMillisecond);
BENCHMARK(BM_OpsSummary)->ArgsProduct({{64, 4096}, {0, 1}})->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Table)->ArgsProduct({{64, 4096}, {0, 3}, {0, 1}})->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
