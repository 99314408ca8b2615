// Flame graph exporter: an interactive flame graph (or icicle graph) as one SVG file that
// a browser opens with nothing else, as flamegraph.pl draws one: click a frame to zoom,
// search with a regular expression (matched frames highlighted, their share said), a
// tooltip with each frame's value and share. Drawn by ringtrace from folded stacks, the
// same table the folded stacks exporter writes, so the two always agree. See
// docs/formats/flame_graph.md.
//
//   session.add_exporter(ringtrace::flame_graph_exporter("flame.svg"));
#pragma once

#include <cstdint>     // values
#include <filesystem>  // output paths
#include <iosfwd>      // the stream overload
#include <memory>      // the exporter is shared with the session
#include <span>        // the table drawn
#include <string>      // frames, titles
#include <string_view>
#include <vector>

#include "ringtrace/detail/platform.hpp"  // RINGTRACE_API
#include "ringtrace/exporter.hpp"         // Exporter

namespace ringtrace {

// What a frame's width counts.
enum class FlameValue {
  self_ns,       // time: each stack's self time (FoldedValue::self_ns), nanoseconds
  alloc_bytes,   // Config::memory: bytes allocated in each stack's leaf zone itself (FoldedValue::alloc_bytes)
  leaked_bytes,  // Config::memory: bytes of the blocks still live at the end, by the zones that
                 // allocated them (SessionStats::memory.leaks)
};

struct FlameGraphOptions {
  FlameValue value = FlameValue::self_ns;
  // Top-down (roots at the top, an icicle graph) instead of bottom-up.
  bool icicle = false;
  // Frames whose value (with everything above them) is below this share of the whole
  // are not drawn: their value stays in their parent's width, and the picture says how
  // many frames were merged so and how much of the whole they hold. Keeps the file small
  // enough to open whatever the number of stacks. 0: draw every frame.
  double merge_below = 0.001;
  // As FoldedStacksOptions (time and alloc_bytes): a root frame per thread, sampled zones
  // estimated, on-CPU time. The picture says so.
  bool thread_root = false;
  bool estimate_sampled = false;
  bool on_cpu = false;
  // The picture's first line ("": "Flame graph: self time" or the like).
  std::string title;
};

// One row of a folded table: a stack's frames, outermost first, and its own value.
struct FlameStack {
  std::vector<std::string> frames;
  std::uint64_t value = 0;
};

// The SVG of a folded table from any source: frames of equal names under one parent are
// one frame (values added); siblings in name order; `subtitle` is the picture's second
// line (what was recorded, or why there is nothing to draw). Values add up exactly: a
// frame's width is its value with everything above it, over the sum of every value.
RINGTRACE_API std::string flame_graph_svg(std::span<const FlameStack> stacks, const FlameGraphOptions& options,
                                          std::string_view subtitle = {});

// The stacks of folded text (`frame;frame;frame value` per line, what the folded stacks
// exporter writes). Throws std::runtime_error naming `source` and the line number on a
// line that is not one.
RINGTRACE_API std::vector<FlameStack> parse_folded_stacks(std::string_view text, const std::string& source);

// Aggregates the stream as the folded stacks exporter does and writes the SVG at stop().
// The file is created here: a path that cannot be written throws std::runtime_error naming
// it. A recording without what `value` needs (no zones; no allocations for alloc_bytes
// and leaked_bytes) gives a picture that says so. A session started again rewrites it.
RINGTRACE_API std::shared_ptr<Exporter> flame_graph_exporter(const std::filesystem::path& path,
                                                             FlameGraphOptions options = {});

// Writes to a stream that the caller keeps alive for the exporter's lifetime.
RINGTRACE_API std::shared_ptr<Exporter> flame_graph_exporter(std::ostream& stream, FlameGraphOptions options = {});

}  // namespace ringtrace
