// Google Benchmark support (include/ringtrace/benchmark.hpp): a session per benchmark
// run, started in Setup and stopped in Teardown, whose first events (up to the bound)
// are kept in memory; the reporters Google Benchmark would use, wrapped, write the
// reported run's trace named after the benchmark and add ringtrace's counters.
//
// How a trace is bounded: every run records to its end, and an exporter keeps the first
// --ringtrace_max_ms of the run's stream (from its first event) and at most
// --ringtrace_max_events events, every zone it keeps whole (written at its real end),
// and counts what it leaves out. The rest is recorded only to be counted, so the counts
// of what the trace lacks are exact (zones, and iterations from zones per iteration),
// and every iteration of the reported run pays the same recording cost, so its time per
// iteration is one measurement. Ending the session at the bound (from a timer thread, or
// pausing it with a schedule) would stop that cost but leave the counts unknown, make
// the reported time a mix of traced and untraced iterations in proportions set by
// --benchmark_min_time, cut the zones open at that moment (closed_at_stop), and race
// the benchmark's threads on a loaded machine; the cut here is decided on the merged
// stream by event time, the same on every machine. Nothing is written until the run is
// reported: trial runs cost no file, and the reported run's file is written once, with
// its name, its iterations and the bound in the trace itself.
#include "ringtrace/benchmark.hpp"

#include <unistd.h>  // gettid

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <cstdio>
#include <cstdlib>  // getenv
#include <cstring>
#include <deque>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "bounded_recorder.hpp"  // what a trace keeps of a run
#include "ringtrace/exporter.hpp"
#include "ringtrace/exporters/binary_trace.hpp"
#include "ringtrace/exporters/chrome_trace.hpp"
#include "ringtrace/exporters/perfetto.hpp"
#include "ringtrace/recorded_trace.hpp"

namespace ringtrace::bench {
namespace {

enum class Format { chrome, perfetto, rtrace };

struct Options {
  std::filesystem::path dir;  // empty: tracing off
  Format format = Format::chrome;
  std::uint64_t max_ms = 100;          // 0: no time bound
  std::uint64_t max_events = 250'000;  // 0: no count bound
};

// A recorded trace's context, plus what the trace says about itself.
class MetadataContext final : public TraceContext {
 public:
  MetadataContext(const RecordedTrace& trace, std::vector<TraceMetadata> metadata)
      : base_(trace), metadata_(std::move(metadata)) {}
  const SiteInfo& site(SiteId id) const override { return base_.site(id); }
  std::uint32_t site_count() const override { return base_.site_count(); }
  const ThreadInfo& thread(ThreadId id) const override { return base_.thread(id); }
  std::uint32_t thread_count() const override { return base_.thread_count(); }
  const ClockInfo& clock() const override { return base_.clock(); }
  const std::string& process_name() const override { return base_.process_name(); }
  std::string_view text(const Event& e) const override { return base_.text(e); }
  std::uint32_t process_id() const override { return pid_; }
  std::string_view node_id_of(std::uint32_t pid) const override { return base_.node_id_of(pid); }
  std::span<const TraceMetadata> metadata() const override { return metadata_; }

 private:
  RecordedTraceContext base_;
  std::uint32_t pid_ = static_cast<std::uint32_t>(::getpid());
  std::vector<TraceMetadata> metadata_;
};

// A run between Setup and Teardown.
struct Finished {
  RecordedTrace trace;
  Counts counts;
  std::uint64_t dropped = 0;   // events the run lost (none: block policy)
  std::uint64_t main_tid = 0;  // the benchmark's thread 0 (Setup's)
};

// A reported run and its trace (one per repetition of the benchmark being reported).
struct Claimed {
  std::string name;  // Run::benchmark_name() of its iteration run
  std::int64_t repetition = 0;
  std::int64_t iterations = -1;  // -1: not reported yet (aggregates only so far)
  Finished run;
  bool written = false;
  bool error = false;        // its iteration run reported an error (left out of aggregates)
  bool trace_error = false;  // its trace could not be written (said on standard error)
};

struct State {
  Options options;
  std::unique_ptr<Session> session;
  std::shared_ptr<BoundedRecorder> recorder;
  std::uint64_t main_tid = 0;
  std::deque<Finished> pending;  // runs since the last report (trial runs first)
  std::vector<Claimed> claimed;  // the runs of the last report
};

State& state() {
  static State s;
  return s;
}

// The trace file of a benchmark run, distinct for distinct names and bounded in length:
// the name itself when it is made of letters, digits, '.', '-' and '_', starts with
// neither '.' (a hidden file, or a temporary) nor '-' (read as an option by the
// commands it is typed to) and is at most kKeptChars long; else its first kKeptChars
// characters with the others replaced by '_' (a first '.' or '-' too), then '~' (which
// no kept name holds) and 12 hex digits of the name's 64-bit FNV-1a hash:
// "BM_collide/x" -> "BM_collide_x~9f4c...json" beside "BM_collide_x.json",
// "-rf/iterations:1000" -> "_rf_iterations_1000~...json".
std::string file_name(const std::string& run) {
  constexpr std::size_t kKeptChars = 96;
  std::string out;
  bool changed = run.empty() || run.size() > kKeptChars;
  for (const char c : run.substr(0, kKeptChars)) {
    const bool keep = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
                      (!out.empty() && (c == '.' || c == '-'));
    out.push_back(keep ? c : '_');
    changed = changed || !keep;
  }
  if (changed) {
    std::uint64_t hash = 0xcbf29ce484222325u;
    for (const char c : run) hash = (hash ^ static_cast<unsigned char>(c)) * 0x100000001b3u;
    char hex[17];
    std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(hash));
    out.append("~").append(hex, 12);
  }
  return out + ".json";
}

const char* extension(Format format) {
  switch (format) {
    case Format::perfetto:
      return ".perfetto-trace";
    case Format::rtrace:
      return ".rtrace";
    case Format::chrome:
      break;
  }
  return ".json";
}

// Iterations of a claimed run whose zones (or, without zones, events) are in its trace:
// exact when every iteration records the same zones.
std::uint64_t traced_iterations(const Claimed& c) {
  const Counts& n = c.run.counts;
  const auto iterations = static_cast<std::uint64_t>(c.iterations);
  std::uint64_t kept = n.zones, all = n.zones + n.untraced_zones;
  if (all == 0) kept = n.events, all = n.events + n.untraced_events;
  if (all == 0 || kept == all) return iterations;
  return static_cast<std::uint64_t>(static_cast<long double>(iterations) * kept / all);
}

// Writes a claimed run's trace: the process and the benchmark's thread 0 named after
// the benchmark, the bound and what it left out in the trace's metadata.
void write(Claimed& c) {
  State& s = state();
  c.written = true;
  RecordedTrace& trace = c.run.trace;
  trace.process_name = c.name;
  for (ThreadInfo& t : trace.threads) {
    if (t.os_tid == c.run.main_tid) t.name = c.name;
  }
  for (ThreadStats& t : trace.stats.threads) {
    if (t.os_tid == c.run.main_tid) t.name = c.name;
  }
  const Counts& n = c.run.counts;
  std::vector<TraceMetadata> metadata = {
      {"benchmark", c.name},
      {"max_ms", static_cast<std::int64_t>(s.options.max_ms)},
      {"max_events", static_cast<std::int64_t>(s.options.max_events)},
      {"cut_by", std::string(n.cut_by)},
      {"cut_after_ns", static_cast<std::int64_t>(n.cut_ns == 0 ? 0 : n.cut_ns - n.first_ns)},
      {"traced_zones", static_cast<std::int64_t>(n.zones)},
      {"untraced_zones", static_cast<std::int64_t>(n.untraced_zones)},
      {"traced_events", static_cast<std::int64_t>(n.events)},
      {"untraced_events", static_cast<std::int64_t>(n.untraced_events)},
  };
  if (c.iterations >= 0) {
    const std::uint64_t traced = traced_iterations(c);
    metadata.push_back({"iterations", c.iterations});
    metadata.push_back({"traced_iterations", static_cast<std::int64_t>(traced)});
    metadata.push_back({"untraced_iterations", c.iterations - static_cast<std::int64_t>(traced)});
  }
  std::filesystem::path path = s.options.dir / file_name(c.name);
  path.replace_extension(extension(s.options.format));
  try {
    std::shared_ptr<Exporter> exporter;
    switch (s.options.format) {
      case Format::chrome:
        exporter = chrome_trace_exporter(path);
        break;
      case Format::perfetto:
        exporter = perfetto_exporter(path);
        break;
      case Format::rtrace:
        exporter = binary_trace_exporter(path);
        break;
    }
    const MetadataContext context(trace, std::move(metadata));
    exporter->on_start(context);
    constexpr std::size_t kBatch = 16384;
    for (std::size_t i = 0; i < trace.events.size(); i += kBatch) {
      const std::size_t count = std::min(kBatch, trace.events.size() - i);
      exporter->on_events(std::span<const Event>(trace.events.data() + i, count), context);
    }
    exporter->on_finish(context, trace.stats);
  } catch (const std::exception& error) {
    // Said on standard error and in the report (ringtrace_trace_error 1).
    std::fprintf(stderr, "ringtrace: %s: %s\n", path.c_str(), error.what());
    c.trace_error = true;
  }
  trace = RecordedTrace{};  // written: its memory goes
}

void write_claimed() {
  for (Claimed& c : state().claimed) {
    if (!c.written) write(c);
  }
}

// ringtrace's counters of a claimed run whose iterations are known.
constexpr const char* kCounters[] = {"ringtrace_zones_per_iter", "ringtrace_dropped", "ringtrace_untraced_iters",
                                     "ringtrace_untraced_zones"};
std::array<double, 4> counters(const Claimed& c) {
  const Counts& n = c.run.counts;
  const double iterations = c.iterations > 0 ? static_cast<double>(c.iterations) : 1.0;
  return {static_cast<double>(n.zones + n.untraced_zones) / iterations, static_cast<double>(c.run.dropped),
          static_cast<double>(c.iterations - static_cast<std::int64_t>(traced_iterations(c))),
          static_cast<double>(n.untraced_zones)};
}

// The runs of one report: the last runs finished are the reported ones (one per
// repetition; earlier ones were trial runs), claimed by the first reporter to see the
// report. Each reporter's iteration runs then gain ringtrace's counters, every one of
// them (0 without a trace) so that a CSV report's columns, fixed by its first rows, hold
// for every row; and its aggregate runs (mean, median, ...) the same statistics of them
// as Google Benchmark computes of the suite's own counters (when the reporter saw the
// iteration runs first: without them, as with --benchmark_display_aggregates_only on
// the console, none), so that a tabular console report keeps one header.
std::vector<::benchmark::BenchmarkReporter::Run> report(const std::vector<::benchmark::BenchmarkReporter::Run>& runs) {
  using Run = ::benchmark::BenchmarkReporter::Run;
  State& s = state();
  std::vector<Run> out = runs;
  if (runs.empty()) return out;
  if (!s.pending.empty()) {
    write_claimed();
    s.claimed.clear();
    const auto repetitions = static_cast<std::size_t>(std::max<std::int64_t>(1, runs.front().repetitions));
    while (s.pending.size() > repetitions) s.pending.pop_front();
    const std::string name = runs.front().run_name.str();  // an iteration run's benchmark_name()
    for (std::size_t i = 0; i < s.pending.size(); ++i) {
      s.claimed.push_back(
          Claimed{name, static_cast<std::int64_t>(i), -1, std::move(s.pending[i]), false, false, false});
    }
    s.pending.clear();
  }
  for (Run& r : out) {
    if (r.run_type == Run::RT_Aggregate) {
      if (r.statistics == nullptr) continue;
      const ::benchmark::internal::Statistics* statistic = nullptr;
      for (const auto& st : *r.statistics) {
        if (st.name_ == r.aggregate_name) statistic = &st;
      }
      std::array<std::vector<double>, 4> values;
      for (const Claimed& c : s.claimed) {
        if (c.name != r.run_name.str() || c.iterations < 0 || c.error) continue;
        const std::array<double, 4> v = counters(c);
        for (std::size_t i = 0; i < v.size(); ++i) values[i].push_back(v[i]);
      }
      if (statistic == nullptr || values[0].size() < 2) continue;  // not one of its statistics (BigO, RMS)
      for (std::size_t i = 0; i < values.size(); ++i) r.counters[kCounters[i]] = statistic->compute_(values[i]);
      continue;
    }
    Claimed* claimed = nullptr;
    for (Claimed& c : s.claimed) {
      if (c.name == r.benchmark_name() && c.repetition == std::max<std::int64_t>(0, r.repetition_index)) claimed = &c;
    }
    std::array<double, 4> values = {0, 0, 0, 0};
    if (claimed != nullptr) {
      if (claimed->iterations < 0) {
        claimed->iterations = static_cast<std::int64_t>(r.iterations);
        claimed->error = r.error_occurred;
      }
      values = counters(*claimed);
      if (!claimed->written) write(*claimed);
    }
    for (std::size_t i = 0; i < values.size(); ++i) r.counters[kCounters[i]] = ::benchmark::Counter(values[i]);
    if (claimed != nullptr && claimed->trace_error) r.counters["ringtrace_trace_error"] = ::benchmark::Counter(1);
  }
  return out;
}

// One of the reporters Google Benchmark would use, with ringtrace's counters added to
// the runs it reports. The library sets the file reporter's streams on this object
// (SetOutputStream is not virtual): they are handed on before every call.
class Reporter final : public ::benchmark::BenchmarkReporter {
 public:
  explicit Reporter(::benchmark::BenchmarkReporter* inner) : inner_(inner) {}
  bool ReportContext(const Context& context) override {
    streams();
    return inner_->ReportContext(context);
  }
  void ReportRuns(const std::vector<Run>& runs) override {
    streams();
    inner_->ReportRuns(report(runs));
  }
  void Finalize() override {
    streams();
    inner_->Finalize();
  }

 private:
  void streams() {
    inner_->SetOutputStream(&GetOutputStream());
    inner_->SetErrorStream(&GetErrorStream());
  }
  ::benchmark::BenchmarkReporter* inner_;
};

// The file reporter Google Benchmark makes for --benchmark_out_format (console without
// colour, json, csv).
BENCHMARK_DISABLE_DEPRECATED_WARNING
std::unique_ptr<::benchmark::BenchmarkReporter> file_reporter(const std::string& format) {
  if (format == "console") return std::make_unique<::benchmark::ConsoleReporter>(::benchmark::ConsoleReporter::OO_None);
  if (format == "csv") return std::make_unique<::benchmark::CSVReporter>();
  return std::make_unique<::benchmark::JSONReporter>();
}
BENCHMARK_RESTORE_DEPRECATED_WARNING

// A Google Benchmark flag's value as the library takes it: the last --name=value (or,
// for a boolean flag, a bare --name) in argv, else the environment variable NAME, else
// `fallback`.
std::string benchmark_flag(std::span<char* const> args, const char* name, const char* fallback, bool boolean = false) {
  const std::string bare = std::string("--") + name, prefix = bare + "=";
  std::optional<std::string> value;
  for (const char* arg : args.subspan(std::min<std::size_t>(1, args.size()))) {
    if (std::strncmp(arg, prefix.c_str(), prefix.size()) == 0) value = arg + prefix.size();
    if (boolean && bare == arg) value = "true";
  }
  if (value) return *value;
  std::string variable;
  for (const char* c = name; *c != '\0'; ++c) variable.push_back(static_cast<char>(std::toupper(*c)));
  const char* environment = std::getenv(variable.c_str());
  return environment != nullptr ? environment : fallback;
}
// As the library's IsTruthyFlagValue.
bool truthy(std::string value) {
  std::transform(value.begin(), value.end(), value.begin(), [](char c) { return static_cast<char>(std::tolower(c)); });
  if (value.size() == 1) {
    return std::isalnum(static_cast<unsigned char>(value[0])) != 0 && value != "0" && value != "f" && value != "n";
  }
  return value.empty() || !(value == "false" || value == "no" || value == "off");
}

bool parse_count(std::string_view text, std::uint64_t& out) {
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), out);
  return error == std::errc() && end == text.data() + text.size() && !text.empty();
}

void print_help() {
  ::benchmark::PrintDefaultHelp();
  std::fprintf(stdout,
               "ringtrace (RINGTRACE_BENCHMARK_MAIN):\n"
               "          [--ringtrace_out=<dir>]\n"
               "          [--ringtrace_format=chrome|perfetto|rtrace]\n"
               "          [--ringtrace_max_ms=<ms, 0: no limit>] (default 100)\n"
               "          [--ringtrace_max_events=<count, 0: no limit>] (default 250000)\n");
}

}  // namespace

void setup(const ::benchmark::State& st) {
  State& s = state();
  if (s.options.dir.empty() || st.thread_index() != 0) return;
  write_claimed();  // a report that never showed its iteration runs (aggregates only)
  Config config;
  config.overflow = OverflowPolicy::block;       // nothing lost: the counts are exact
  config.buffer_records = std::size_t{1} << 20;  // 16 MB per thread: rarely waits for the drainer
  config.process_name = "benchmark";             // named after the benchmark when its trace is written
  s.session = std::make_unique<Session>(config);
  s.recorder = std::make_shared<BoundedRecorder>(s.options.max_ms * 1'000'000, s.options.max_events);
  s.main_tid = static_cast<std::uint64_t>(::gettid());
  s.session->add_exporter(s.recorder);
  s.session->start();
}

void teardown(const ::benchmark::State& st) {
  State& s = state();
  if (!s.session || st.thread_index() != 0) return;
  s.session->stop();
  s.pending.push_back(Finished{s.recorder->trace(), s.recorder->counts(), s.session->stats().dropped, s.main_tid});
  s.session.reset();
  s.recorder.reset();
}

int main(int argc, char** argv) {
  char arg0_default[] = "benchmark";
  char* args_default = arg0_default;
  if (argv == nullptr) {  // as BENCHMARK_MAIN
    argc = 1;
    argv = &args_default;
  }
  Options& options = state().options;
  // Our flags out of argv before Google Benchmark reads it.
  std::vector<char*> args;
  for (int i = 0; i < argc; ++i) {
    const std::string_view arg = argv[i];
    const auto value = [&](std::string_view flag) -> std::optional<std::string_view> {
      if (i == 0 || !arg.starts_with(flag)) return std::nullopt;
      return arg.substr(flag.size());
    };
    if (const auto dir = value("--ringtrace_out=")) {
      options.dir = std::filesystem::path(*dir);
    } else if (const auto format = value("--ringtrace_format=")) {
      if (*format == "chrome")
        options.format = Format::chrome;
      else if (*format == "perfetto")
        options.format = Format::perfetto;
      else if (*format == "rtrace")
        options.format = Format::rtrace;
      else {
        std::fprintf(stderr, "ringtrace: %s: the format is chrome, perfetto or rtrace\n", argv[i]);
        return 1;
      }
    } else if (const auto ms = value("--ringtrace_max_ms=")) {
      if (!parse_count(*ms, options.max_ms) || options.max_ms > (std::uint64_t{1} << 40)) {
        std::fprintf(stderr, "ringtrace: %s: expected milliseconds (0: no limit)\n", argv[i]);
        return 1;
      }
    } else if (const auto events = value("--ringtrace_max_events=")) {
      if (!parse_count(*events, options.max_events)) {
        std::fprintf(stderr, "ringtrace: %s: expected a count of events (0: no limit)\n", argv[i]);
        return 1;
      }
    } else {
      args.push_back(argv[i]);
    }
  }
  // What Google Benchmark will read: its file report, and whether runs interleave.
  const std::string out = benchmark_flag(args, "benchmark_out", "");
  const std::string out_format = benchmark_flag(args, "benchmark_out_format", "json");
  const bool interleaved = truthy(benchmark_flag(args, "benchmark_enable_random_interleaving", "false", true));
  int n = static_cast<int>(args.size());
  args.push_back(nullptr);
  ::benchmark::Initialize(&n, args.data(), print_help);
  if (::benchmark::ReportUnrecognizedArguments(n, args.data())) return 1;
  if (options.dir.empty()) {  // plain Google Benchmark, as BENCHMARK_MAIN
    ::benchmark::RunSpecifiedBenchmarks();
    ::benchmark::Shutdown();
    return 0;
  }
  if (interleaved) {
    std::fprintf(stderr,
                 "ringtrace: --ringtrace_out cannot tell the runs of interleaved benchmarks apart: drop "
                 "--benchmark_enable_random_interleaving or --ringtrace_out\n");
    return 1;
  }
  std::error_code error;
  std::filesystem::create_directories(options.dir, error);
  if (error) {
    std::fprintf(stderr, "ringtrace: --ringtrace_out=%s: %s\n", options.dir.c_str(), error.message().c_str());
    return 1;
  }
  static constexpr const char* kFormats[] = {"chrome", "perfetto", "rtrace"};
  ::benchmark::AddCustomContext("ringtrace_out", options.dir.string());
  ::benchmark::AddCustomContext("ringtrace_format", kFormats[static_cast<int>(options.format)]);
  ::benchmark::AddCustomContext("ringtrace_max_ms", std::to_string(options.max_ms));
  ::benchmark::AddCustomContext("ringtrace_max_events", std::to_string(options.max_events));
  // The reporters Google Benchmark would make (--benchmark_format, --benchmark_color,
  // --benchmark_counters_tabular; --benchmark_out_format), wrapped.
  Reporter display(::benchmark::CreateDefaultDisplayReporter());
  std::unique_ptr<::benchmark::BenchmarkReporter> file_inner;
  std::optional<Reporter> file;
  if (!out.empty()) {
    file_inner = file_reporter(out_format);
    file.emplace(file_inner.get());
  }
  ::benchmark::RunSpecifiedBenchmarks(&display, file ? &*file : nullptr);
  ::benchmark::Shutdown();
  write_claimed();
  return 0;
}

}  // namespace ringtrace::bench
