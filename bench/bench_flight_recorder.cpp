// The flight recorder's cost per event on the drainer, in steady state: a stream of 4M
// events 1 us apart (4 s of run) fed in drainer-sized batches, keeping the last 100 ms
// (100,000 events), against the same batches fed to an exporter that only counts them.
// The first fill of the ring (page faults of fresh memory) is not in this figure;
// bench_core's "drain merge + flight recorder" shows it: a burst merged at stop()
// fills the ring from nothing.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <sstream>
#include <vector>

#include "flight_recorder.hpp"
#include "ringtrace/exporters/chrome_trace.hpp"
#include "ringtrace/recorded_trace.hpp"

namespace {

struct Null final : ringtrace::Exporter {
  std::uint64_t n = 0;
  // Reads every event once (what the cheapest real exporter does), so that the compiler
  // cannot drop the feeding loop: BM_FeedNull measured 0 ms when this only counted.
  void on_events(std::span<const ringtrace::Event> events, const ringtrace::TraceContext&) override {
    for (const ringtrace::Event& e : events) n += e.time_ns;
    benchmark::DoNotOptimize(n);
  }
};

ringtrace::RecordedTrace stream() {
  ringtrace::TraceBuilder b;
  const ringtrace::ThreadId t0 = b.thread("a"), t1 = b.thread("b");
  const ringtrace::SiteId outer = b.site("outer"), inner = b.site("inner");
  std::uint64_t time = 1000;
  for (int i = 0; i < 500'000; ++i) {
    for (const ringtrace::ThreadId t : {t0, t1}) {
      b.begin(t, outer, time).begin(t, inner, time + 1).end(t, time + 2).end(t, time + 3);
    }
    time += 8;  // 8 events every 8 ns... spread to 1 us apart below
  }
  ringtrace::RecordedTrace trace = b.build(time + 1);
  for (std::size_t i = 0; i < trace.events.size(); ++i) trace.events[i].time_ns = 1000 + i * 1000;
  return trace;
}

void feed(benchmark::State& state, bool recorder, const char* trigger = "") {
  static const ringtrace::RecordedTrace trace = stream();
  const ringtrace::RecordedTraceContext context(trace);
  for (auto _ : state) {
    std::shared_ptr<ringtrace::Exporter> x;
    if (recorder) {
      ringtrace::Config config;
      config.flight_recorder.keep = std::chrono::milliseconds(100);
      config.trigger = {.zone = trigger, .longer_than = std::chrono::seconds(1)};  // checked, never fires
      x = ringtrace::detail::as_exporter(ringtrace::detail::make_flight_recorder(
          config, {[](const ringtrace::WindowInfo&) { return std::make_shared<Null>(); }}));
    } else {
      x = std::make_shared<Null>();
    }
    x->on_start(context);
    const std::size_t batch = 16384;
    for (std::size_t i = 0; i < trace.events.size(); i += batch) {
      const std::size_t n = std::min(batch, trace.events.size() - i);
      x->on_events(std::span<const ringtrace::Event>(trace.events.data() + i, n), context);
    }
    benchmark::DoNotOptimize(x.get());
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * trace.events.size()));
}

void BM_FeedNull(benchmark::State& state) { feed(state, false); }
void BM_FeedFlightRecorder(benchmark::State& state) { feed(state, true); }
// The worst case of a trigger: every other zone is the trigger's.
void BM_FeedFlightRecorderTriggerOnHalf(benchmark::State& state) { feed(state, true, "inner"); }
// A snapshot's own cost: what the recorder holds (100 ms: 100,000 events) written to a
// Chrome trace in memory, timed from the request to the snapshot's on_finish.
void BM_SnapshotToChrome(benchmark::State& state) {
  static const ringtrace::RecordedTrace trace = stream();
  const ringtrace::RecordedTraceContext context(trace);
  std::uint64_t events = 0;
  for (auto _ : state) {
    state.PauseTiming();
    auto out = std::make_shared<std::ostringstream>();
    ringtrace::Config config;
    config.flight_recorder.keep = std::chrono::milliseconds(100);
    ringtrace::detail::FlightRecorderHandle handle = ringtrace::detail::make_flight_recorder(
        config, {[out](const ringtrace::WindowInfo&) { return ringtrace::chrome_trace_exporter(*out); }});
    const std::shared_ptr<ringtrace::Exporter> x = ringtrace::detail::as_exporter(handle);
    x->on_start(context);
    const std::size_t half = trace.events.size() / 2;
    x->on_events(std::span<const ringtrace::Event>(trace.events.data(), half), context);
    handle.request("bench");
    state.ResumeTiming();
    x->on_finish(context, trace.stats);  // serves it (the request's clock is not this stream's)
    state.PauseTiming();
    if (handle.snapshots() != 1) state.SkipWithError("no snapshot");
    const std::string text = out->str();
    events += static_cast<std::uint64_t>(std::count(text.begin(), text.end(), '\n'));
    state.ResumeTiming();
  }
  state.counters["lines"] = benchmark::Counter(static_cast<double>(events) / static_cast<double>(state.iterations()));
}

BENCHMARK(BM_FeedNull)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_SnapshotToChrome)->Unit(benchmark::kMillisecond)->Iterations(5);
BENCHMARK(BM_FeedFlightRecorder)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_FeedFlightRecorderTriggerOnHalf)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
