// Call graph exporter: the recording's functions (or zones) and who called whom, the
// picture gprof2dot draws from a pstats file (`gprof2dot -f pstats
// --node-label=total-time-percentage --node-label=self-time-percentage
// --node-label=total-time profile.prof | dot -Tsvg`), written by ringtrace itself: the
// graph in Graphviz's DOT language, and drawn as SVG by Graphviz's `dot`. See
// docs/formats/call_graph.md.
//
//   session.add_exporter(ringtrace::call_graph_exporter("calls.svg"));  // calls.dot and calls.svg
//
// Each box: the function's name, its total time as a share of the whole, its self time
// as a share of every self time (in parentheses), its total time, its calls; each arrow:
// the callee's total time in calls from that caller as a share of the whole, and those
// calls. The numbers are the pstats exporter's (PstatsAggregator: cProfile's rules for
// recursion), so the shares are what gprof2dot computes from the pstats file of the same
// run. Colors go from dark blue (little time) to red (most), as gprof2dot's.
#pragma once

#include <filesystem>  // output paths
#include <iosfwd>      // the stream overload
#include <memory>      // the exporter is shared with the session

#include "ringtrace/detail/platform.hpp"  // RINGTRACE_API
#include "ringtrace/exporter.hpp"         // Exporter

namespace ringtrace {

struct CallGraphOptions {
  // Boxes whose total time is below this share of the whole are left out, with their
  // arrows (gprof2dot's --node-thres, 0.5%); arrows below edge_threshold too (its
  // --edge-thres, 0.1%). The graph's caption says how many were left out. 0: keep all.
  double node_threshold = 0.005;
  double edge_threshold = 0.001;
  // One graph per thread (a Graphviz cluster each, shares of the thread's own time)
  // instead of every thread's calls in one graph.
  bool per_thread = false;
  // As PstatsOptions: sampled sites counted as many times as their rate (estimates), and
  // on-CPU times in place of wall times (Config::context_switches). The caption says so.
  bool estimate_sampled = false;
  bool on_cpu = false;
  // An ".svg" path: Graphviz's dot is stopped after this long (0: never), and the .dot
  // file is left to draw by hand. Its layout grows with the boxes and arrows drawn, not
  // with the events, but a graph of a few hundred boxes in long cycles can take minutes.
  double dot_seconds = 60;
};

// At stop(): a path ending in ".svg" gets the graph drawn by Graphviz's `dot -Tsvg`, and
// the DOT text beside it (the same path with ".dot" in place of ".svg"), which is written
// first: when `dot` is missing or fails, the .dot file is there and on_finish throws a
// std::runtime_error that says so (a session lists it in SessionStats::exporter_errors).
// Any other path gets the DOT text only. Files are created here: a path that cannot be
// written throws std::runtime_error naming it. A session started again rewrites them.
RINGTRACE_API std::shared_ptr<Exporter> call_graph_exporter(const std::filesystem::path& path,
                                                            CallGraphOptions options = {});

// The DOT text to a stream that the caller keeps alive for the exporter's lifetime.
RINGTRACE_API std::shared_ptr<Exporter> call_graph_exporter(std::ostream& stream, CallGraphOptions options = {});

// Whether Graphviz's `dot` is on PATH, which an ".svg" call graph needs (Debian package
// graphviz). For a tool that wants to say so before a long run.
RINGTRACE_API bool graphviz_dot_found();

}  // namespace ringtrace
