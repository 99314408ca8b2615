// Captured-ops summary: how much of the work ran inside capture regions (compiled
// graphs), per thread and in total, and which ops ran outside any region, most
// expensive first. See docs/formats/ops_summary.md.
//
//   3 graphs 12 graph calls 45/60 = 75% ops 82% time
//
// With Config::context_switches, an on-CPU "% time" too: the same share counting each
// op's on-CPU time (its time less what its thread spent switched out inside it).
#pragma once

#include <cstddef>     // limits
#include <cstdint>     // counts and nanoseconds
#include <filesystem>  // output paths
#include <iosfwd>      // the stream overloads
#include <memory>      // the exporter is shared with the session
#include <string>      // names, paths
#include <vector>      // rows

#include "ringtrace/detail/platform.hpp"  // RINGTRACE_API
#include "ringtrace/exporter.hpp"         // Exporter, ThreadId
#include "ringtrace/recorded_trace.hpp"   // RecordedTrace

namespace ringtrace {

struct OpsSummaryOptions {
  enum class Format : std::uint8_t {
    text,  // the one-line form, a per-thread table and the list of ops outside regions
    csv,   // one row per thread and a total row (the numbers of the one-line form)
    json,  // everything: per thread, total and the ops outside regions
  };
  Format format = Format::text;
  // Zones with one of these names are capture regions too (besides RINGTRACE_REGION
  // zones); their region id is 0, so each such name counts as one graph.
  std::vector<std::string> region_names;
  // Zones with one of these names are neither ops nor regions: like regions they are
  // transparent (ops inside them are still top-level ops) but they capture nothing.
  // For wrappers such as a training step or a request.
  std::vector<std::string> transparent_names;
  // Frames of the enclosing stack kept for each op outside regions (innermost ones).
  std::size_t stack_frames = 3;
  // Ops outside regions listed by the text form (most expensive first); 0: all.
  // summary() and the JSON form keep every distinct (op, stack).
  std::size_t missing_limit = 20;
  // Estimates for sampled sites (RINGTRACE_ZONE_SAMPLED): a recorded zone of a site
  // sampled one in N counts N times (calls, ops, graph calls, times), with everything
  // inside it. The text form says so after the first line, JSON in "estimated".
  bool estimate_sampled = false;
};

// One scope's numbers (a thread, or the whole session).
struct CaptureCounts {
  std::uint64_t unique_graphs = 0;  // distinct (region name, region id) pairs
  std::uint64_t graph_calls = 0;    // region zones closed
  std::uint64_t captured_ops = 0;   // top-level ops whose whole interval lies inside a region
  std::uint64_t total_ops = 0;      // top-level ops
  std::uint64_t captured_ns = 0;    // inclusive time of the captured ops
  std::uint64_t total_ns = 0;       // inclusive time of all top-level ops
  // With context switches in the stream (Config::context_switches; on_cpu true): the same
  // two times counting only the ops' on-CPU time (docs/context-switches.md), so that ops
  // whose thread waited weigh what they ran.
  bool on_cpu = false;
  std::uint64_t captured_on_cpu_ns = 0;
  std::uint64_t total_on_cpu_ns = 0;
  double ops_percent() const;          // captured_ops / total_ops * 100, 0 without ops
  double time_percent() const;         // captured_ns / total_ns * 100, 0 without op time
  double on_cpu_time_percent() const;  // captured_on_cpu_ns / total_on_cpu_ns * 100, 0 without
};

struct OpsSummaryThread {
  ThreadId thread = 0;
  std::uint64_t os_tid = 0;
  std::string name;
  CaptureCounts counts;
};

// Top-level ops that ran outside every region, grouped by name and stack.
struct MissingOp {
  std::string name;
  std::vector<std::string> stack;  // enclosing zones, outermost first, at most stack_frames
  std::uint64_t calls = 0;
  std::uint64_t total_ns = 0;  // inclusive
  std::uint64_t max_ns = 0;
};

struct OpsSummary {
  std::vector<OpsSummaryThread> threads;  // threads that ran ops or regions, by their first event
  CaptureCounts total;                    // unique_graphs is distinct over all threads
  std::vector<MissingOp> missing;         // most expensive (total_ns) first, then by name
  std::uint64_t dropped = 0;              // events the session lost (counts are then a lower bound)
  std::uint64_t closed_at_stop = 0;       // zones still open at stop(), closed at the stop time
  bool estimated = false;                 // estimate_sampled was on and some site was sampled
  std::string filtered;                   // what a filter in front left out (its "filter" metadata), or ""
};

// "3 graphs 12 graph calls 45/60 = 75% ops 82% time", and with on-CPU numbers
// "... 82% time 91% on-CPU time". The percentages are rounded to whole numbers but never
// show 100% unless everything was captured, nor 0% unless nothing was.
RINGTRACE_API std::string one_line(const CaptureCounts& counts);

// The summary of a recorded stream (what the exporter computes live).
RINGTRACE_API OpsSummary ops_summary(const RecordedTrace& trace, const OpsSummaryOptions& options = {});

// Formats a summary as options.format does.
RINGTRACE_API std::string format_ops_summary(const OpsSummary& summary, const OpsSummaryOptions& options = {});

class RINGTRACE_API OpsSummaryExporter final : public Exporter {
 public:
  struct Impl;
  explicit OpsSummaryExporter(std::unique_ptr<Impl> impl);
  ~OpsSummaryExporter() override;
  void on_start(const TraceContext& context) override;
  void on_events(std::span<const Event> events, const TraceContext& context) override;
  void on_finish(const TraceContext& context, const SessionStats& stats) override;
  std::vector<std::filesystem::path> output_paths() const override;
  // The last completed run's summary (valid once Session::stop() has returned).
  const OpsSummary& summary() const;

 private:
  std::unique_ptr<Impl> impl_;
};

// Computes the summary while the session runs and writes it at stop(). The file is
// created here: a path that cannot be opened throws std::runtime_error naming the path
// and the reason. Each later run of the session rewrites the file. Like every factory it
// returns a plain std::shared_ptr<Exporter>; the object is a OpsSummaryExporter (dynamic_cast to
// read summary() in process).
RINGTRACE_API std::shared_ptr<Exporter> ops_summary_exporter(const std::filesystem::path& path,
                                                             OpsSummaryOptions options = {});
// Writes to a stream that the caller keeps alive for the exporter's lifetime.
RINGTRACE_API std::shared_ptr<Exporter> ops_summary_exporter(std::ostream& stream, OpsSummaryOptions options = {});

}  // namespace ringtrace
