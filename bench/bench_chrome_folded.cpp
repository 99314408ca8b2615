// Throughput of the Chrome trace and folded stacks exporters on a synthetic stream of
// 10M events (one core: the exporters run on the calling thread, as on the drainer).
//
// The stream: 8 threads interleaved, zones nested up to 5 deep over 21 zone sites that
// form a fixed call graph (each site calls one of 3 others: about 500 distinct stacks,
// as a real program has a bounded call tree), 1 in 16 events an instant or a counter. A balanced block of 1M events is generated once and
// fed 10 times with its times shifted, in batches of 16384 events (the drainer's
// default), so the exporters see 10M distinct, ordered events while the benchmark's own
// memory stays at the block (32 MB).
//
// Reported: items_per_second (events/s), peak_rss_mb (the process's peak resident set
// after the run) and exporter_rss_mb (how much the peak grew during the benchmark: the
// exporter's own memory, since the stream is allocated before). The peak only rises, so
// exporter_rss_mb is meaningful for one benchmark per process:
//
//   for b in BM_ChromeTrace/ BM_ChromeTraceWithSourceLocations BM_FoldedStacks/ BM_FoldedStacksThreadRoots; do
//     build/<dir>/bench/bench_chrome_folded --benchmark_counters_tabular=true --benchmark_filter=$b; done
#include <benchmark/benchmark.h>
#include <sys/resource.h>

#include <algorithm>
#include <cstdint>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "ringtrace/exporters/chrome_trace.hpp"
#include "ringtrace/exporters/folded_stacks.hpp"

namespace {

using namespace ringtrace;

constexpr std::size_t kBlockEvents = 1'000'000;
constexpr int kBlocks = 10;
constexpr std::size_t kBatch = 16384;

class SyntheticContext final : public TraceContext {
 public:
  SyntheticContext() {
    names_.push_back("ringtrace: dropped events");
    for (int i = 0; i < 24; ++i) names_.push_back("op::kernel_" + std::to_string(i));
    for (std::size_t i = 0; i < names_.size(); ++i) {
      const SiteKind kind = i == 0    ? SiteKind::instant
                            : i == 22 ? SiteKind::instant
                            : i == 23 ? SiteKind::counter
                                      : SiteKind::zone;
      sites_.push_back(SiteInfo{names_[i].c_str(), "bench", "bench/bench_chrome_folded.cpp",
                                static_cast<std::uint32_t>(100 + i), kind, 0, ""});
    }
    for (ThreadId t = 0; t < 8; ++t) {
      threads_.push_back(ThreadInfo{t, 40000 + t, "worker-" + std::to_string(t), t});
    }
    clock_.start_ns = 1'000'000;
  }
  const SiteInfo& site(SiteId id) const override { return sites_[id]; }
  std::uint32_t site_count() const override { return static_cast<std::uint32_t>(sites_.size()); }
  const ThreadInfo& thread(ThreadId id) const override { return threads_[id]; }
  std::uint32_t thread_count() const override { return static_cast<std::uint32_t>(threads_.size()); }
  const ClockInfo& clock() const override { return clock_; }
  const std::string& process_name() const override { return process_; }

 private:
  std::vector<std::string> names_;
  std::vector<SiteInfo> sites_;
  std::vector<ThreadInfo> threads_;
  ClockInfo clock_;
  std::string process_ = "bench";
};

// A balanced block: every zone opened in it is closed in it. Times start at 0.
struct Block {
  std::vector<Event> events;
  std::uint64_t span_ns = 0;
};

const Block& block() {
  static const Block b = [] {
    Block out;
    out.events.reserve(kBlockEvents);
    std::mt19937 rng(1234);
    std::vector<std::vector<SiteId>> open(8);
    std::uint64_t now = 0;
    auto push = [&](ThreadId t, EventKind kind, SiteId site, std::uint8_t flags, std::uint64_t value) {
      Event e{now, site, t, kind, flags, 0, static_cast<std::uint32_t>(open[t].size()), {}};
      e.value.u = value;
      out.events.push_back(e);
      now += 1 + rng() % 40;
    };
    while (out.events.size() < kBlockEvents - 64) {
      const ThreadId t = rng() % 8;
      auto& stack = open[t];
      const unsigned r = rng() % 16;
      if (r == 0) {
        push(t, EventKind::instant, 22, 0, 0);
      } else if (r == 1) {
        push(t, EventKind::counter, 23, 0, rng() % 1000);
      } else if (stack.size() < 5 && (stack.empty() || r < 9)) {
        // A fixed call graph, as in a real program: each site calls one of 3 others.
        const SiteId site = stack.empty() ? 1 + rng() % 4 : 1 + (stack.back() * 3 + rng() % 3) % 21;
        stack.push_back(site);
        push(t, EventKind::zone_begin, site, 0, 0);
        out.events.back().depth = static_cast<std::uint32_t>(stack.size() - 1);
      } else {
        const SiteId site = stack.back();
        stack.pop_back();
        push(t, EventKind::zone_end, site, 0, 0);
      }
    }
    for (ThreadId t = 0; t < 8; ++t) {
      while (!open[t].empty()) {
        const SiteId site = open[t].back();
        open[t].pop_back();
        push(t, EventKind::zone_end, site, 0, 0);
      }
    }
    out.span_ns = now;
    return out;
  }();
  return b;
}

double peak_rss_mb() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_maxrss) / 1024.0;  // Linux: kilobytes
}

void feed(Exporter& exporter, const SyntheticContext& context) {
  const Block& b = block();
  std::vector<Event> batch(kBatch);
  exporter.on_start(context);
  for (int k = 0; k < kBlocks; ++k) {
    const std::uint64_t offset = 1'000'000 + static_cast<std::uint64_t>(k) * (b.span_ns + 1);
    for (std::size_t i = 0; i < b.events.size(); i += kBatch) {
      const std::size_t n = std::min(kBatch, b.events.size() - i);
      for (std::size_t j = 0; j < n; ++j) {
        batch[j] = b.events[i + j];
        batch[j].time_ns += offset;
      }
      exporter.on_events(std::span<const Event>(batch.data(), n), context);
    }
  }
  SessionStats stats;
  exporter.on_finish(context, stats);
}

template <typename MakeExporter>
void run(benchmark::State& state, MakeExporter make) {
  const SyntheticContext context;
  block();  // generated outside the timed region
  const double rss_before = peak_rss_mb();
  for (auto _ : state) {
    auto exporter = make();
    feed(*exporter, context);
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()) * kBlocks *
                          static_cast<std::int64_t>(block().events.size()));
  state.counters["peak_rss_mb"] = peak_rss_mb();
  state.counters["exporter_rss_mb"] = peak_rss_mb() - rss_before;
}

// Output paths must be regular files (a device is refused): the exporters write to
// /dev/null through their std::ostream overloads, one write call per buffer as to a file.
std::ofstream& dev_null() {
  static std::ofstream null("/dev/null", std::ios::binary);
  return null;
}

void BM_ChromeTrace(benchmark::State& state) {
  run(state, [] { return chrome_trace_exporter(dev_null()); });
}

void BM_ChromeTraceWithSourceLocations(benchmark::State& state) {
  run(state, [] {
    ChromeTraceOptions options;
    options.source_locations = true;
    return chrome_trace_exporter(dev_null(), options);
  });
}

void BM_FoldedStacks(benchmark::State& state) {
  run(state, [] { return folded_stacks_exporter(dev_null()); });
}

void BM_FoldedStacksThreadRoots(benchmark::State& state) {
  run(state, [] {
    FoldedStacksOptions options;
    options.thread_root = true;
    return folded_stacks_exporter(dev_null(), options);
  });
}

BENCHMARK(BM_ChromeTrace)->Unit(benchmark::kMillisecond)->Iterations(3);
BENCHMARK(BM_ChromeTraceWithSourceLocations)->Unit(benchmark::kMillisecond)->Iterations(3);
BENCHMARK(BM_FoldedStacks)->Unit(benchmark::kMillisecond)->Iterations(3);
BENCHMARK(BM_FoldedStacksThreadRoots)->Unit(benchmark::kMillisecond)->Iterations(3);

}  // namespace

BENCHMARK_MAIN();
