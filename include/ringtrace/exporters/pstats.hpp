// Python profile (pstats) files: what `python3 -m pstats`, pstats.Stats, snakeviz,
// gprof2dot and pyprof2calltree open. Written in C++ at stop(); no Python at run time.
//
//   auto prof = ringtrace::pstats_exporter("trace.prof");
//   session.add_exporter(prof);
//   ... session.start(); ... session.stop();
//   auto& typed = dynamic_cast<ringtrace::PstatsExporter&>(*prof);  // in-process results
//   std::fputs(ringtrace::format_pstats_report(typed.table()).c_str(), stdout);
//
// The numbers mean what cProfile's mean (docs/formats/pstats.md): per thread stack,
// then summed over threads,
//   ncalls   every call; pcalls: calls of a function not already on that thread's stack,
//   tottime  the zone's time minus its direct children's, summed over every call,
//   cumtime  the zone's inclusive time, summed over primitive calls only,
// and for each (caller, callee) edge the same four numbers, where an edge call is
// primitive when the same caller-to-callee edge is not already active on the stack.
//
// A function is a distinct key (file, line, name): the zone's source file and line and
// its name. Sites without a file (ringtrace::intern) use cProfile's convention for
// built-ins: file "~", their line (0 for interned names).
#pragma once

#include <cstddef>     // report limits
#include <cstdint>     // counts and nanoseconds
#include <filesystem>  // output paths
#include <memory>      // the aggregator's state, the factory's result
#include <mutex>       // table() is read from other threads
#include <span>        // batches of events
#include <string>      // keys, paths, reports
#include <vector>      // functions and edges

#include "ringtrace/detail/platform.hpp"  // RINGTRACE_API
#include "ringtrace/exporter.hpp"         // Exporter, TraceContext
#include "ringtrace/recorded_trace.hpp"   // RecordedTrace

namespace ringtrace {

// One function: every zone site with the same (file, line, name) key.
struct PstatsFunction {
  std::string file;  // the site's source file, "~" when it has none
  std::uint32_t line = 0;
  std::string name;                   // the zone's name (valid UTF-8: invalid bytes become U+FFFD)
  std::uint64_t calls = 0;            // ncalls: every call
  std::uint64_t primitive_calls = 0;  // pcalls: calls with the function not already on the stack
  std::uint64_t self_ns = 0;          // tottime: time minus direct children's, over every call
  std::uint64_t cumulative_ns = 0;    // cumtime: inclusive time over primitive calls
};

// Calls of `callee` made directly by `caller` (indexes into PstatsTable::functions).
struct PstatsEdge {
  std::uint32_t caller = 0;
  std::uint32_t callee = 0;
  std::uint64_t calls = 0;            // every such call
  std::uint64_t primitive_calls = 0;  // calls with this edge not already active on the stack
  std::uint64_t self_ns = 0;          // the callee's self time over every such call
  std::uint64_t cumulative_ns = 0;    // the callee's inclusive time over primitive edge calls
};

// The aggregate of a stream: per function and per edge, in nanoseconds.
struct PstatsTable {
  std::vector<PstatsFunction> functions;  // in order of first call
  std::vector<PstatsEdge> edges;          // in order of first call
  std::uint64_t dropped_events = 0;       // events lost by the session (not in the numbers)
  std::uint64_t closed_at_stop = 0;       // calls still open at stop(), ended at the stop time
  // Sampled sites were scaled by their rates (PstatsOptions::estimate_sampled): the
  // numbers are estimates. The pstats file itself has no room to say so; the report does.
  bool estimated = false;
  // tottime and cumtime are on-CPU times (PstatsOptions::on_cpu). The file says so with
  // an entry of no calls, ('~', 0, '<ringtrace: times are on-CPU>'); the report too.
  bool on_cpu = false;
  // Config::memory, an allocation profile (PstatsOptions::alloc_bytes): self_ns and
  // cumulative_ns hold bytes allocated (in the zone itself; with its children), and the
  // file and the reports write them as megabytes (10^6 bytes) where seconds go. The file
  // says so with an entry of no calls, ('~', 0, '<ringtrace: times are MB allocated>').
  bool alloc_bytes = false;

  std::uint64_t total_calls() const;
  std::uint64_t total_primitive_calls() const;
  // Sum of tottime: the time covered by top-level zones, summed over threads.
  std::uint64_t total_self_ns() const;
  // Index of the function with this key, or -1.
  std::int64_t find(const std::string& file, std::uint32_t line, const std::string& name) const;
};

// Streaming aggregation: feed ordered batches, read the table at any point (calls still
// open are not counted until they end). Memory: one row per function and per edge, plus
// per thread a 4-byte active count per function and per edge and its open zones; never
// per event. Not thread-safe: one thread feeds it (an exporter's drainer thread).
class RINGTRACE_API PstatsAggregator {
 public:
  PstatsAggregator();
  ~PstatsAggregator();
  PstatsAggregator(PstatsAggregator&&) noexcept;
  PstatsAggregator& operator=(PstatsAggregator&&) noexcept;

  void reset();
  // Estimates for sampled sites: a recorded zone of a site sampled one in N counts N
  // calls and N times its times, with everything inside it. Kept across reset().
  void set_estimate_sampled(bool on);
  // tottime and cumtime of each zone's on-CPU time (PstatsOptions::on_cpu). Kept across reset().
  void set_on_cpu(bool on);
  // tottime and cumtime of bytes allocated (PstatsOptions::alloc_bytes). Kept across reset().
  void set_alloc_bytes(bool on);
  // Zones keyed by their name alone, ('~', 0, name), so that two call sites of one name
  // are one function, as folded stacks and call graphs name them; the zones of
  // instrumented functions (SiteOptions::function) keep (file, line, name). Kept across
  // reset(). Off for the pstats file.
  void set_zones_by_name(bool on);
  void add(std::span<const Event> events, const TraceContext& context);
  // End of the stream: zones it left open end at `stop_ns` (or the last event's time),
  // flagged closed_at_stop, as a live session closes them at stop().
  void finish(std::uint64_t stop_ns);
  PstatsTable table() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

// Aggregates a recorded stream (what a PstatsExporter would compute for it).
RINGTRACE_API PstatsTable pstats_table(const RecordedTrace& trace);

// The marshal-encoded dict that pstats.Stats loads:
//   {(file, line, name): (pcalls, ncalls, tottime, cumtime, {caller key: (ncalls, pcalls, tottime, cumtime)})}
// with times in seconds (ns / 1e9, binary floats). A table with no functions gives one
// placeholder entry ('~', 0, '<ringtrace: no zones recorded>') with zero calls, because
// pstats.Stats refuses an empty dict.
RINGTRACE_API std::string encode_pstats(const PstatsTable& table);

// Writes encode_pstats(table) to `path`. Throws std::invalid_argument for a ".gz" path
// (pstats reads plain marshal data) and std::runtime_error naming the path on I/O errors.
RINGTRACE_API void write_pstats(const PstatsTable& table, const std::string& path);

struct PstatsReportOptions {
  std::size_t limit = 0;  // at most this many rows (0: all)
  std::string title;      // first line, e.g. the file name (empty: none)
};

// Like pstats' sort_stats("cumulative").print_stats(): totals line, then ncalls
// ("total/primitive" when they differ), tottime, percall, cumtime, percall, and
// file:line(function), with seconds to three decimals.
RINGTRACE_API std::string format_pstats_report(const PstatsTable& table, const PstatsReportOptions& options = {});

// The raw aggregate table: ncalls, pcalls, tottime and cumtime (milliseconds, three
// decimals) per function, sorted by cumtime, with sums and the dropped-event count.
RINGTRACE_API std::string format_pstats_raw_table(const PstatsTable& table);

struct PstatsOptions {
  // Also write format_pstats_report() to this path at stop() (empty: no report file).
  std::string report_path;
  std::size_t report_limit = 0;  // rows in that report (0: all)
  // Estimates for sampled sites (RINGTRACE_ZONE_SAMPLED): see
  // PstatsAggregator::set_estimate_sampled. The report's first line says so.
  bool estimate_sampled = false;
  // tottime and cumtime count each zone's on-CPU time (its time less the time its thread
  // was switched out inside it; Config::context_switches, docs/context-switches.md)
  // instead of its wall time; see PstatsTable::on_cpu for how the file says so.
  bool on_cpu = false;
  // With Config::memory, an allocation profile: tottime is the bytes a function's zones
  // allocated themselves (children excluded), cumtime with their children, as megabytes
  // (10^6 bytes) where seconds go; see PstatsTable::alloc_bytes. Calls are counted as ever.
  bool alloc_bytes = false;
};

// Aggregates the stream and writes the pstats file at stop() (on_finish). The file is
// created by the factory, so an unwritable path fails there; a session that is started
// again rewrites it.
class RINGTRACE_API PstatsExporter final : public Exporter {
 public:
  PstatsExporter(std::string path, PstatsOptions options);
  ~PstatsExporter() override;

  void on_start(const TraceContext& context) override;
  void on_events(std::span<const Event> events, const TraceContext& context) override;
  void on_finish(const TraceContext& context, const SessionStats& stats) override;
  std::vector<std::filesystem::path> output_paths() const override;

  // The table of the last completed run (empty before the first stop()).
  PstatsTable table() const;
  RINGTRACE_NO_INSTRUMENT const std::string& path() const { return path_; }

 private:
  struct Sink;
  std::string path_;
  PstatsOptions options_;
  std::unique_ptr<Sink> sink_;  // opened early so that a bad path fails at construction
  PstatsAggregator aggregator_;
  mutable std::mutex mutex_;
  PstatsTable last_table_;
};

// Throws std::invalid_argument for a ".gz" path and std::runtime_error (naming the path
// and the OS error) when the file cannot be created. Like every factory it returns a
// plain std::shared_ptr<Exporter>; the object is a PstatsExporter (dynamic_cast to read
// table() in process).
RINGTRACE_API std::shared_ptr<Exporter> pstats_exporter(const std::filesystem::path& path, PstatsOptions options = {});

}  // namespace ringtrace
