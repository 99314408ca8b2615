// pstats aggregation throughput: events per second through PstatsAggregator::add on one
// core (the drainer's cost), over a synthetic stream shaped like the demo's (nested ops,
// a recursive function, several threads interleaved in time), and the cost of encoding
// the table at stop().
//
//   build/<dir>/bench/bench_pstats --benchmark_min_time=1
#include <benchmark/benchmark.h>

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "ringtrace/exporters/pstats.hpp"
#include "ringtrace/recorded_trace.hpp"

namespace {

class BenchContext final : public ringtrace::TraceContext {
 public:
  explicit BenchContext(const ringtrace::RecordedTrace& trace) : trace_(trace) {
    for (const auto& s : trace.sites) {
      sites_.push_back(ringtrace::SiteInfo{s.name.c_str(), s.function.c_str(), s.file.c_str(), s.line, s.kind, 0, ""});
    }
  }
  const ringtrace::SiteInfo& site(ringtrace::SiteId id) const override { return sites_[id]; }
  std::uint32_t site_count() const override { return static_cast<std::uint32_t>(sites_.size()); }
  const ringtrace::ThreadInfo& thread(ringtrace::ThreadId id) const override { return trace_.threads[id]; }
  std::uint32_t thread_count() const override { return static_cast<std::uint32_t>(trace_.threads.size()); }
  const ringtrace::ClockInfo& clock() const override { return trace_.clock; }
  const std::string& process_name() const override { return trace_.process_name; }

 private:
  const ringtrace::RecordedTrace& trace_;
  std::vector<ringtrace::SiteInfo> sites_;
};

// `threads` threads, each running steps of: step > {matmul, relu, layer_norm > {mean,
// variance}, fib(6) recursion, allreduce}; `distinct_ops` extra leaf ops spread the
// (caller, callee) pairs.
ringtrace::RecordedTrace make_stream(int threads, int steps, int distinct_ops) {
  ringtrace::TraceBuilder b("bench");
  const char* file = "bench/bench_pstats.cpp";
  const auto step = b.site("step", ringtrace::SiteKind::zone, file, 1);
  const auto matmul = b.site("matmul", ringtrace::SiteKind::zone, file, 2);
  const auto relu = b.site("relu", ringtrace::SiteKind::zone, file, 3);
  const auto norm = b.site("layer_norm", ringtrace::SiteKind::zone, file, 4);
  const auto mean = b.site("mean", ringtrace::SiteKind::zone, file, 5);
  const auto variance = b.site("variance", ringtrace::SiteKind::zone, file, 6);
  const auto fib = b.site("fib", ringtrace::SiteKind::zone, file, 7);
  const auto allreduce = b.site("allreduce", ringtrace::SiteKind::zone, file, 8);
  std::vector<ringtrace::SiteId> ops;
  for (int i = 0; i < distinct_ops; ++i) {
    ops.push_back(b.site("op" + std::to_string(i), ringtrace::SiteKind::zone, file, 100 + i));
  }
  for (int t = 0; t < threads; ++t) b.thread("worker");
  for (int t = 0; t < threads; ++t) {
    std::uint64_t now = static_cast<std::uint64_t>(t) * 7;
    const auto th = static_cast<ringtrace::ThreadId>(t);
    auto leaf = [&](ringtrace::SiteId s, std::uint64_t ns) {
      b.begin(th, s, now);
      now += ns;
      b.end(th, now);
    };
    for (int s = 0; s < steps; ++s) {
      b.begin(th, step, now++);
      leaf(matmul, 50);
      leaf(relu, 10);
      b.begin(th, norm, now++);
      leaf(mean, 5);
      leaf(variance, 6);
      b.end(th, now++);
      for (int d = 0; d < 6; ++d) b.begin(th, fib, now++);
      for (int d = 0; d < 6; ++d) b.end(th, now++);
      if (!ops.empty()) leaf(ops[static_cast<std::size_t>(s + t) % ops.size()], 3);
      leaf(allreduce, 40);
      b.end(th, now++);
    }
  }
  return b.build();
}

void BM_PstatsAggregate(benchmark::State& state) {
  const ringtrace::RecordedTrace trace =
      make_stream(static_cast<int>(state.range(0)), 20000, static_cast<int>(state.range(1)));
  const BenchContext context(trace);
  constexpr std::size_t kBatch = std::size_t{1} << 14;  // Config::batch_events
  const std::span<const ringtrace::Event> all(trace.events);
  for (auto _ : state) {
    ringtrace::PstatsAggregator aggregator;
    for (std::size_t i = 0; i < all.size(); i += kBatch) {
      aggregator.add(all.subspan(i, std::min(kBatch, all.size() - i)), context);
    }
    benchmark::DoNotOptimize(aggregator);
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * trace.events.size()));
  state.counters["events"] = static_cast<double>(trace.events.size());
}
// (threads, distinct extra ops)
BENCHMARK(BM_PstatsAggregate)
    ->Args({1, 0})
    ->Args({4, 0})
    ->Args({16, 64})
    ->Args({64, 4096})
    ->Unit(benchmark::kMillisecond);

void BM_PstatsEncode(benchmark::State& state) {
  const ringtrace::RecordedTrace trace = make_stream(4, 100, static_cast<int>(state.range(0)));
  const ringtrace::PstatsTable table = ringtrace::pstats_table(trace);
  for (auto _ : state) {
    std::string bytes = ringtrace::encode_pstats(table);
    benchmark::DoNotOptimize(bytes);
  }
  state.counters["functions"] = static_cast<double>(table.functions.size());
}
BENCHMARK(BM_PstatsEncode)->Arg(0)->Arg(4096)->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
