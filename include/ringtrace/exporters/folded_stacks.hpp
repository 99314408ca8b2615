// Folded stacks exporter: one line per distinct stack, `root;child;leaf value`, the
// input of flamegraph.pl, inferno and speedscope. See docs/formats/folded_stacks.md.
#pragma once

#include <filesystem>  // output paths
#include <iosfwd>      // the stream overload
#include <memory>      // the exporter is shared with the session
#include <string>      // path

#include "ringtrace/detail/platform.hpp"  // RINGTRACE_API
#include "ringtrace/exporter.hpp"         // Exporter

namespace ringtrace {

// What the number at the end of each line counts.
enum class FoldedValue {
  self_ns,   // time in the leaf zone itself, children excluded (nanoseconds)
  total_ns,  // time in the leaf zone including its children (nanoseconds)
  calls,     // number of times the leaf zone was entered from this stack
  // Config::memory, an allocation flame graph: bytes allocated in the leaf zone itself,
  // children excluded (alloc_bytes), or its allocations (allocs). Allocations outside
  // every zone count in a frame "(no zone)" (under the thread's frame with thread_root).
  // Frees are not counted.
  alloc_bytes,
  allocs,
};

struct FoldedStacksOptions {
  FoldedValue value = FoldedValue::self_ns;
  // Starts every stack with a frame named after its thread ("thread <os tid>" when the
  // thread has no name), so a flame graph shows one tower per thread.
  bool thread_root = false;
  // Frames below this depth fold into one frame "[deeper frames folded]" whose value is
  // the sum of everything under it (0: no limit). A line spells its whole stack, so a
  // recursion N deep writes about N^2/2 frames; the limit keeps the file bounded (a
  // 100,000-deep recursion: about 2 MB instead of tens of GB). Memory is the distinct
  // stacks either way. Flame graph readers draw a few hundred frames at most.
  std::size_t max_depth = 512;
  // Estimates for sampled sites (RINGTRACE_ZONE_SAMPLED): a recorded zone of a site
  // sampled one in N counts N times, with everything inside it (rates multiply down the
  // stack), so values estimate the whole run. The folded format has no room for a
  // note: name the file so (e.g. "estimated.folded").
  bool estimate_sampled = false;
  // self_ns and total_ns count each zone's on-CPU time (its time less the time its thread
  // was switched out inside it; Config::context_switches, docs/context-switches.md)
  // instead of its wall time. The file says so: every stack starts with the frame
  // "[on-CPU time]". Zones of threads without switch events count their wall time.
  bool on_cpu = false;
};

// Aggregates zones by stack while the session runs and writes the file at stop()
// (gzip-compressed when `path` ends in ".gz"). The file is created here: a path that
// cannot be opened throws std::runtime_error naming the path and the reason. Each later
// run of the session starts from an empty aggregate and rewrites the file.
RINGTRACE_API std::shared_ptr<Exporter> folded_stacks_exporter(const std::filesystem::path& path,
                                                               FoldedStacksOptions options = {});

// Writes to a stream that the caller keeps alive for the exporter's lifetime.
RINGTRACE_API std::shared_ptr<Exporter> folded_stacks_exporter(std::ostream& stream, FoldedStacksOptions options = {});

}  // namespace ringtrace
