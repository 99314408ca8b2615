// Graphviz's `dot`, run to draw a call graph's DOT text as SVG (call_graph.cpp). The one
// place ringtrace runs another program: only when an SVG call graph is asked for, at the
// end of a run (docs/formats/call_graph.md, "Drawing the SVG").
#pragma once

#include <string>
#include <string_view>

namespace ringtrace::detail {

// Whether an executable `dot` is on PATH (what drawing needs).
bool graphviz_dot_on_path();

// Runs `dot -Tsvg` with `dot_text` on its standard input and returns what it wrote on its
// standard output. Its input and outputs are anonymous memory files (no pipe to deadlock
// on, no file name to race for); it runs with the signal mask and dispositions reset and
// without LD_PRELOAD and the RINGTRACE_ variables (never recorded itself). Throws
// std::runtime_error naming `target` (the SVG it was for) when `dot` is not on PATH, when
// it fails (with the first line it wrote on standard error) or writes no SVG, or when it
// has not finished after `limit_seconds` (0: no limit; it is then killed): Graphviz's
// layout of a large graph with long cycles can take minutes.
std::string render_svg_with_dot(std::string_view dot_text, const std::string& target, double limit_seconds);

}  // namespace ringtrace::detail
