// The tail of a zone's cost (issue 36): threads time every zone with the TSC around it,
// flat out, per mode (drop, block) and output (a decoding exporter, the binary file,
// rings in a file), context switches off and on, one thread and two. Reported per run as
// counters: p50, p99, p99.9, p99.99 and max in ns, zones over 1 us and 10 us, drops, and
// the thread's first event (registration: its ring, and its switch stream when switches
// are on) measured apart. Run without a spare core with `taskset -c 0`:
//   build/release/bench/bench_tail --benchmark_counters_tabular=true
//   taskset -c 0 build/release/bench/bench_tail --benchmark_counters_tabular=true
// docs/performance.md ("The tail of a zone") has the table and the machine.
#include <benchmark/benchmark.h>
#include <x86intrin.h>

#include <unistd.h>
#include <algorithm>
#include <array>
#include <atomic>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "peers/tail_common.hpp"  // TickHistogram
#include "ringtrace/exporters/binary_trace.hpp"
#include "ringtrace/ringtrace.hpp"

namespace {

// Costs in ticks: exact below 4096, then 64 buckets per power of two (1.6% wide): the
// peers' harness's histogram (bench/peers/tail_common.hpp), so that both report alike.
using TickHistogram = peers::TickHistogram;

struct Counting final : ringtrace::Exporter {
  std::atomic<std::uint64_t> events{0};
  void on_events(std::span<const ringtrace::Event> e, const ringtrace::TraceContext&) override {
    events.fetch_add(e.size(), std::memory_order_relaxed);
  }
};

enum Output { decoding = 0, file = 1, rings_in_file = 2 };

// Args: policy (0 drop, 1 block), output, switches (0/1), threads.
void BM_ZoneTail(benchmark::State& state) {
  const bool block = state.range(0) == 1;
  const auto output = static_cast<Output>(state.range(1));
  const bool switches = state.range(2) == 1;
  const int threads = static_cast<int>(state.range(3));
  constexpr int kZones = 5'000'000;
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("ringtrace_bench_tail_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  for (auto _ : state) {
    ringtrace::Config config;
    config.overflow = block ? ringtrace::OverflowPolicy::block : ringtrace::OverflowPolicy::drop;
    config.context_switches = switches;
    ringtrace::Session session(config);
    if (output == decoding) {
      session.add_exporter(std::make_shared<Counting>());
    } else {
      ringtrace::BinaryTraceOptions options;
      options.rings_in_file = output == rings_in_file;
      session.add_exporter(ringtrace::binary_trace_exporter(dir / "tail.rtrace", options));
    }
    session.start();
    std::vector<TickHistogram> histograms(threads);
    std::vector<std::uint64_t> first(threads);
    std::vector<std::thread> workers;
    for (int t = 0; t < threads; ++t) {
      workers.emplace_back([&, t] {
        TickHistogram& h = histograms[t];
        std::uint64_t a = __rdtsc();
        { RINGTRACE_ZONE("first"); }
        first[t] = __rdtsc() - a;
        for (int i = 0; i < kZones; ++i) {
          a = __rdtsc();
          { RINGTRACE_ZONE("z"); }
          h.add(__rdtsc() - a);
        }
      });
    }
    for (std::thread& w : workers) w.join();
    session.stop();
    const ringtrace::SessionStats stats = session.stats();
    TickHistogram all;
    for (const TickHistogram& h : histograms) all.merge(h);
    const double ns = 1e9 / stats.clock.ticks_per_second;
    state.counters["p50_ns"] = static_cast<double>(all.quantile(0.5)) * ns;
    state.counters["p99_ns"] = static_cast<double>(all.quantile(0.99)) * ns;
    state.counters["p99.9_ns"] = static_cast<double>(all.quantile(0.999)) * ns;
    state.counters["p99.99_ns"] = static_cast<double>(all.quantile(0.9999)) * ns;
    state.counters["max_us"] = static_cast<double>(all.max()) * ns / 1000;
    state.counters["over_1us"] = static_cast<double>(all.above(static_cast<std::uint64_t>(1000 / ns)));
    state.counters["over_10us"] = static_cast<double>(all.above(static_cast<std::uint64_t>(10000 / ns)));
    state.counters["dropped"] = static_cast<double>(stats.dropped);
    state.counters["self_drained"] = static_cast<double>(stats.self_drained);
    state.counters["first_us"] = static_cast<double>(*std::max_element(first.begin(), first.end())) * ns / 1000;
  }
  std::filesystem::remove_all(dir);
  state.SetLabel(std::string(block ? "block" : "drop") +
                 (output == decoding ? " decoding"
                  : output == file   ? " file"
                                     : " rings-in-file") +
                 (switches ? " switches" : "") + " x" + std::to_string(threads));
}

void Args(benchmark::internal::Benchmark* b) {
  for (int policy : {0, 1}) {
    for (int output : {decoding, file, rings_in_file}) {
      for (int sw : {0, 1}) {
        for (int threads : {1, 2}) b->Args({policy, output, sw, threads});
      }
    }
  }
}

BENCHMARK(BM_ZoneTail)->Apply(Args)->Iterations(1)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
