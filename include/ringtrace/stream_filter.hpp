// Stages between a stream and its exporters: a filter (what `ringtrace convert` and
// `report` leave out with --time-range, --min-duration, --max-depth, --thread, --zone and
// --exclude) and a split (--split: one output cut into a sequence of files, each complete
// on its own). Each is an Exporter that hands a transformed stream to the exporters given
// to it, so it works on a live session (Session::add_exporter) and on a file
// (replay_file) alike. What each filter does to every kind of event, and how a split's
// pieces are cut: docs/guide.md, "Filtered and split outputs".
#pragma once

#include <cstdint>     // times, counts
#include <functional>  // the split's piece factory
#include <memory>      // exporters are shared
#include <optional>    // bounds given or not
#include <string>      // thread names, patterns
#include <utility>     // name and count pairs
#include <vector>      // downstream exporters, patterns

#include "ringtrace/detail/platform.hpp"  // RINGTRACE_API
#include "ringtrace/exporter.hpp"         // Exporter

namespace ringtrace {

// A time on the trace's timeline: nanoseconds after the session's start (the stream's
// ClockInfo::start_ns), or absolute (CLOCK_MONOTONIC nanoseconds, as `ringtrace dump`
// prints them and the Chrome trace's "ts" in microseconds).
struct TimeBound {
  bool from_start = true;
  std::uint64_t ns = 0;
};

struct FilterOptions {
  // Only [from, to] (both included); none: from the start, to the end. A zone that
  // crosses a bound is cut there: a begin made up at `from` (EventFlags::
  // opened_at_window_start), an end made up at `to` (closed_at_window_end).
  std::optional<TimeBound> from, to;
  // Zones shorter than this (after the time range cut them) left out; 0: none.
  std::uint64_t min_duration_ns = 0;
  // Zones nested deeper than this in the output left out (1: top-level zones only); 0:
  // no bound.
  std::uint32_t max_depth = 0;
  // Only these threads: an OS thread id ("1234", or "pid/tid" as `ringtrace info` lists
  // a merged file's), or a thread's name, exactly; empty: every thread.
  std::vector<std::string> threads;
  // Only zones whose name a pattern finds (ECMAScript regular expressions, searched
  // anywhere in the name: "^parse$" for the name alone), with everything inside them.
  std::vector<std::string> zones;
  // Zones whose name a pattern finds left out, with everything inside them.
  std::vector<std::string> excludes;
  // Whether any filter is asked for.
  bool any() const {
    return from || to || min_duration_ns != 0 || max_depth != 0 || !threads.empty() || !zones.empty() ||
           !excludes.empty();
  }
};

// What a filter left out, counted as it went (complete when on_finish returns). A zone
// left out for several reasons counts once, under the first of: thread, time range,
// exclude, zone, max depth, min duration.
struct FilterCounts {
  std::uint64_t zones_in = 0;      // zones of the stream (begins)
  std::uint64_t zones_out = 0;     // zones handed on (begins), the made-up ones at `from` included
  std::uint64_t events_in = 0;     // every event of the stream
  std::uint64_t events_out = 0;    // events handed on, made-up ones included
  std::uint64_t by_thread = 0;     // zones of threads not selected
  std::uint64_t by_time = 0;       // zones wholly outside the time range
  std::uint64_t by_exclude = 0;    // zones excluded, or inside an excluded one
  std::uint64_t by_zone = 0;       // zones outside every zone the patterns select
  std::uint64_t by_depth = 0;      // zones nested past max_depth
  std::uint64_t by_duration = 0;   // zones shorter than min_duration_ns
  std::uint64_t past_bound = 0;    // zones nested past what the filter tracks (65,536 per thread)
  std::uint64_t other_events = 0;  // events other than zone begins and ends left out
  std::uint64_t cut_at_start = 0;  // zones begun before `from`, cut there
  std::uint64_t cut_at_end = 0;    // zones still open at `to`, cut there
  std::uint64_t held_lost = 0;     // values and flows of zones cut at `from` beyond what it keeps (64 MiB)
  std::uint64_t forced = 0;        // zones handed on undecided: the min-duration hold was full
  // min_duration_ns: the zones left out by name, most first.
  std::vector<std::pair<std::string, std::uint64_t>> short_by_name;
  std::uint64_t zones_left_out() const {
    return by_thread + by_time + by_exclude + by_zone + by_depth + by_duration + past_bound;
  }
};

class RINGTRACE_API StreamFilter final : public Exporter {
 public:
  struct Impl;
  explicit StreamFilter(std::unique_ptr<Impl> impl);
  ~StreamFilter() override;
  void on_start(const TraceContext& context) override;
  void on_events(std::span<const Event> events, const TraceContext& context) override;
  void on_flush(const TraceContext& context) override;
  void on_finish(const TraceContext& context, const SessionStats& stats) override;
  std::vector<std::filesystem::path> output_paths() const override;
  const FilterCounts& counts() const;
  // One line on what the filters are and what they left out, as the outputs say it.
  std::string summary() const;

 private:
  std::unique_ptr<Impl> impl_;
};

// Feeds `downstream` the stream less what `options` leave out. Events stay in time
// order, zones nested per thread (depths recomputed), texts valid as usual. The filters'
// settings and counts reach the exporters as trace metadata (TraceContext::metadata,
// keys "filter" (one line) and "filter.<count>"); the context's clock starts and stops
// at the time range's bounds; threads not selected are left out of its listing (their
// ThreadInfo is the folded placeholder, kFoldedThread). Throws std::invalid_argument for
// a pattern that is no regular expression, naming it. Memory: per thread the open zones
// (at most 65,536 deep), what --min-duration holds back (the events of the last
// min_duration_ns of the stream), never the number of events.
RINGTRACE_API std::shared_ptr<StreamFilter> stream_filter(FilterOptions options,
                                                          std::vector<std::shared_ptr<Exporter>> downstream);

// A split output's pieces, as they were written.
struct SplitPiece {
  std::vector<std::filesystem::path> paths;  // the piece exporter's output_paths()
  std::uint64_t bytes = 0;                   // its output_bytes() when it finished
  std::uint64_t begin_ns = 0, end_ns = 0;    // the span of the stream it holds
  std::uint64_t events = 0;                  // events it got (made-up ones included)
};

class RINGTRACE_API SplitOutput final : public Exporter {
 public:
  struct Impl;
  explicit SplitOutput(std::unique_ptr<Impl> impl);
  ~SplitOutput() override;
  void on_start(const TraceContext& context) override;
  void on_events(std::span<const Event> events, const TraceContext& context) override;
  void on_flush(const TraceContext& context) override;
  void on_finish(const TraceContext& context, const SessionStats& stats) override;
  std::vector<std::filesystem::path> output_paths() const override;
  std::uint64_t output_bytes() const override;
  const std::vector<SplitPiece>& pieces() const;

 private:
  std::unique_ptr<Impl> impl_;
};

// Makes the exporter of piece `index` (1, 2, ...): one that counts its output_bytes()
// (the Chrome trace and Perfetto exporters do).
using PieceFactory = std::function<std::shared_ptr<Exporter>(std::size_t index)>;

// One output as a sequence of pieces, each at most `max_bytes` as its exporter counts
// them (the Chrome trace's JSON before any compression). Piece 1 is made now (a path
// that cannot be written throws now); a piece ends before the event that would bring it
// within a margin of `max_bytes` (what closing it adds: its open zones' ends, its
// threads' names, the session's counts): zones open there end in it (marked
// closed_at_window_end) and begin again at that time in the next piece (marked
// opened_at_window_start), async spans too; the next piece also starts with each
// counter's last value and with each thread that is off the CPU switched out. Each piece
// names its process and threads, and its on_finish gets the piece's counts (ClockInfo
// from its first time to its last; events, drops, late events) with the metadata
// "split.piece" (1, 2, ...), "split.begin_ns" and "split.end_ns". Throws
// std::invalid_argument for `max_bytes` under 1 MB (1,000,000).
RINGTRACE_API std::shared_ptr<SplitOutput> split_output(std::uint64_t max_bytes, PieceFactory make_piece);

}  // namespace ringtrace
