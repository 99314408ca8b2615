// Google Benchmark support (include/ringtrace/benchmark.hpp): a session per benchmark
// run, started in Setup and stopped in Teardown; the reporters, wrapped, name the
// reported run's trace after the benchmark and add ringtrace's counters.
#include "ringtrace/benchmark.hpp"

#include <cstring>
#include <deque>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "ringtrace/exporter.hpp"
#include "ringtrace/exporters/chrome_trace.hpp"

namespace ringtrace::bench {
namespace {

// Counts zones of one run.
class ZoneCounter final : public Exporter {
 public:
  void on_events(std::span<const Event> events, const TraceContext&) override {
    for (const Event& e : events) zones += e.kind == EventKind::zone_begin;
  }
  std::uint64_t zones = 0;
};

struct Finished {
  std::filesystem::path trace;  // the run's Chrome trace, not yet named
  std::uint64_t zones = 0;
  std::uint64_t dropped = 0;
};

struct State {
  std::filesystem::path dir;  // empty: tracing off
  std::unique_ptr<Session> session;
  std::shared_ptr<ZoneCounter> counter;
  std::filesystem::path pending;
  std::uint64_t runs = 0;
  std::deque<Finished> finished;  // runs since the last report (trial runs first)
  std::map<std::string, Finished> reported;  // by run name: what the file reporter adds too
};

State& state() {
  static State s;
  return s;
}

std::string file_name(const std::string& run) {
  std::string out;
  for (const char c : run) {
    const bool keep = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
                      c == '-' || c == '_';
    out.push_back(keep ? c : '_');
  }
  return out + ".json";
}

// Adds the counters to the runs of one report, naming their traces (display reporter:
// the first to see a report) or reusing what the display reporter found (file reporter).
std::vector<::benchmark::BenchmarkReporter::Run> with_counters(
    const std::vector<::benchmark::BenchmarkReporter::Run>& runs, bool first) {
  State& s = state();
  std::vector<::benchmark::BenchmarkReporter::Run> out = runs;
  if (s.dir.empty()) return out;
  if (first) {
    // The last runs executed are the reported ones (earlier ones were trial runs).
    std::size_t measured = 0;
    for (const auto& r : runs) measured += r.run_type == ::benchmark::BenchmarkReporter::Run::RT_Iteration;
    while (s.finished.size() > measured) {
      std::error_code ignored;
      std::filesystem::remove(s.finished.front().trace, ignored);
      s.finished.pop_front();
    }
    for (const auto& r : runs) {
      if (r.run_type != ::benchmark::BenchmarkReporter::Run::RT_Iteration || s.finished.empty()) continue;
      Finished f = s.finished.front();
      s.finished.pop_front();
      const std::filesystem::path named = s.dir / file_name(r.benchmark_name());
      std::error_code ignored;
      std::filesystem::rename(f.trace, named, ignored);
      f.trace = named;
      s.reported[r.benchmark_name()] = f;
    }
  }
  for (auto& r : out) {
    const auto it = s.reported.find(r.benchmark_name());
    if (it == s.reported.end() || r.run_type != ::benchmark::BenchmarkReporter::Run::RT_Iteration) continue;
    const double iterations = r.iterations > 0 ? static_cast<double>(r.iterations) : 1.0;
    r.counters["ringtrace_zones_per_iter"] = ::benchmark::Counter(static_cast<double>(it->second.zones) / iterations);
    r.counters["ringtrace_dropped"] = ::benchmark::Counter(static_cast<double>(it->second.dropped));
  }
  return out;
}

class Display final : public ::benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override { ConsoleReporter::ReportRuns(with_counters(runs, true)); }
};

class File final : public ::benchmark::JSONReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override { JSONReporter::ReportRuns(with_counters(runs, false)); }
};

}  // namespace

void setup(const ::benchmark::State& st) {
  State& s = state();
  if (s.dir.empty() || st.thread_index() != 0) return;
  Config config;
  config.overflow = OverflowPolicy::block;  // a benchmark's trace loses nothing
  config.buffer_records = std::size_t{1} << 20;  // 16 MB per thread: rarely waits for the drainer
  config.process_name = "benchmark";
  s.session = std::make_unique<Session>(config);
  s.counter = std::make_shared<ZoneCounter>();
  s.pending = s.dir / (".run-" + std::to_string(s.runs++) + ".json");
  s.session->add_exporter(s.counter);
  s.session->add_exporter(chrome_trace_exporter(s.pending));
  s.session->start();
}

void teardown(const ::benchmark::State& st) {
  State& s = state();
  if (!s.session || st.thread_index() != 0) return;
  s.session->stop();
  s.finished.push_back(Finished{s.pending, s.counter->zones, s.session->stats().dropped});
  s.session.reset();
  s.counter.reset();
}

int main(int argc, char** argv) {
  State& s = state();
  // Our flag out of argv before Google Benchmark reads it.
  std::vector<char*> args;
  bool file_out = false;
  for (int i = 0; i < argc; ++i) {
    if (std::strncmp(argv[i], "--ringtrace_out=", 16) == 0) {
      s.dir = argv[i] + 16;
      continue;
    }
    if (std::strncmp(argv[i], "--benchmark_out=", 16) == 0) file_out = true;
    args.push_back(argv[i]);
  }
  int n = static_cast<int>(args.size());
  ::benchmark::Initialize(&n, args.data());
  if (::benchmark::ReportUnrecognizedArguments(n, args.data())) return 1;
  if (!s.dir.empty()) {
    std::error_code error;
    std::filesystem::create_directories(s.dir, error);
    if (error) {
      std::fprintf(stderr, "ringtrace: --ringtrace_out=%s: %s\n", s.dir.c_str(), error.message().c_str());
      return 1;
    }
  }
  Display display;
  File file;
  ::benchmark::RunSpecifiedBenchmarks(&display, file_out ? &file : nullptr);
  ::benchmark::Shutdown();
  for (const Finished& f : s.finished) {  // runs never reported (errors, skipped)
    std::error_code ignored;
    std::filesystem::remove(f.trace, ignored);
  }
  return 0;
}

}  // namespace ringtrace::bench
