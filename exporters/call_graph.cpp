// Call graph exporter: PstatsAggregator's table (cProfile's rules, one aggregate for the
// run or one per thread) written as Graphviz DOT with gprof2dot's labels, pruning and
// colors, and drawn as SVG by `dot` when the path ends in ".svg" (graphviz_dot.cpp).
//
// gprof2dot's rules, as it applies them to a pstats file (docs/formats/call_graph.md):
// the whole is max(sum of tottime, largest cumtime); a box's total share is its cumtime
// over the whole, its self share its tottime over the sum of tottimes; an arrow's share
// is the edge's cumtime over the whole; each share is clamped to [0, 1] (0/0 is 1). A box
// below the node threshold goes with its arrows; an arrow below the edge threshold goes.
// Colors: hue, saturation and lightness from (2/3, 0.8, 0.25) (dark blue) at share 0 to
// (0, 1, 0.5) (red) at share 1, linearly; arrows max(4 * share, 0.5) wide.
#include "ringtrace/exporters/call_graph.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "graphviz_dot.hpp"  // the SVG
#include "output.hpp"        // ReportOutput, append_valid_utf8
#include "ringtrace/exporters/pstats.hpp"
#include "thread_book.hpp"  // thread names at on_finish

namespace ringtrace {
namespace {

using detail::ReportOutput;

// One graph: a title and the aggregate of its calls.
struct GraphPart {
  std::string title;
  PstatsTable table;
};

// gprof2dot's ratio: clamped to [0, 1], 1 for 0/0.
double share(std::uint64_t part, std::uint64_t whole) {
  if (whole == 0) return 1.0;
  return std::min(1.0, static_cast<double>(part) / static_cast<double>(whole));
}

// A duration with four significant digits: 845 ns, 1.235 us, 12.35 ms, 123.4 s.
std::string duration_text(std::uint64_t ns) {
  if (ns < 1000) return std::to_string(ns) + " ns";
  const char* unit = ns < 1000000 ? "us" : ns < 1000000000 ? "ms" : "s";
  const double scale = ns < 1000000 ? 1e3 : ns < 1000000000 ? 1e6 : 1e9;
  const double v = static_cast<double>(ns) / scale;
  char text[48];
  std::snprintf(text, sizeof text, "%.*f %s", v >= 100 ? 1 : v >= 10 ? 2 : 3, v, unit);
  return text;
}

std::string percent_text(double ratio) {
  char text[32];
  std::snprintf(text, sizeof text, "%.2f%%", ratio * 100.0);
  return text;
}

// The color of a share on gprof2dot's temperature scale, as "#rrggbb".
std::string temperature_color(double weight) {
  const double w = std::clamp(weight, 0.0, 1.0);
  const double h = 2.0 / 3.0 * (1.0 - w), s = 0.8 + 0.2 * w, l = 0.25 + 0.25 * w;
  // HSL to RGB (CSS Color 3, section 4.2.4).
  const double m2 = l <= 0.5 ? l * (s + 1.0) : l + s - l * s, m1 = 2.0 * l - m2;
  const auto channel = [&](double hue) {
    if (hue < 0) hue += 1.0;
    if (hue > 1) hue -= 1.0;
    if (hue * 6.0 < 1.0) return m1 + (m2 - m1) * hue * 6.0;
    if (hue * 2.0 < 1.0) return m2;
    if (hue * 3.0 < 2.0) return m1 + (m2 - m1) * (2.0 / 3.0 - hue) * 6.0;
    return m1;
  };
  const auto byte = [](double c) { return static_cast<int>(std::lround(std::clamp(c, 0.0, 1.0) * 255.0)); };
  char text[16];
  std::snprintf(text, sizeof text, "#%02x%02x%02x", byte(channel(h + 1.0 / 3.0)), byte(channel(h)),
                byte(channel(h - 1.0 / 3.0)));
  return text;
}

// Text inside a DOT double-quoted string: valid UTF-8, '"' and '\' escaped, control
// characters as spaces, at most 4096 bytes (gprof2dot's limit on names).
void append_dot_text(std::string& out, std::string_view raw) {
  std::string valid;
  detail::append_valid_utf8(valid, raw.substr(0, 4096));
  for (const char c : valid) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') out.push_back('\\');
    out.push_back(u < 0x20 || u == 0x7f ? ' ' : c);
  }
}

// `key="line1\nline2..."`, each line escaped.
void append_lines(std::string& out, std::string_view key, const std::vector<std::string>& lines) {
  out.append(key).append("=\"");
  for (std::size_t i = 0; i < lines.size(); ++i) {
    if (i > 0) out.append("\\n");
    append_dot_text(out, lines[i]);
  }
  out.push_back('"');
}

std::string base_name(const std::string& file) {
  const std::size_t slash = file.rfind('/');
  return slash == std::string::npos ? file : file.substr(slash + 1);
}

// The whole of a graph: what 100% is.
std::uint64_t whole_of(const PstatsTable& t) {
  std::uint64_t whole = t.total_self_ns();
  for (const PstatsFunction& f : t.functions) whole = std::max(whole, f.cumulative_ns);
  return whole;
}

struct Pruned {
  std::uint64_t nodes = 0, edges = 0;
};

// One graph's boxes and arrows, ids prefixed with `prefix`; what was left out added to `pruned`.
void append_graph(std::string& out, const PstatsTable& t, const CallGraphOptions& options, const std::string& prefix,
                  Pruned& pruned) {
  const std::uint64_t self_sum = t.total_self_ns(), whole = whole_of(t);
  std::vector<bool> kept(t.functions.size(), false);
  for (std::size_t i = 0; i < t.functions.size(); ++i) {
    const PstatsFunction& f = t.functions[i];
    if (f.calls == 0) continue;  // a note of the file's, never a call
    const double total = share(f.cumulative_ns, whole);
    if (total < options.node_threshold) {
      ++pruned.nodes;
      continue;
    }
    kept[i] = true;
    std::vector<std::string> label{f.name};
    if (f.file != "~") label.push_back(base_name(f.file) + ":" + std::to_string(f.line));
    label.push_back(percent_text(total));
    label.push_back(std::string("(").append(percent_text(share(f.self_ns, self_sum))).append(")"));
    label.push_back(duration_text(f.cumulative_ns));
    label.push_back(std::to_string(f.calls) + "\u00d7");
    out.append("  ").append(prefix).append(std::to_string(i)).append(" [color=\"");
    out.append(temperature_color(total)).append("\", fontcolor=\"#ffffff\", fontsize=\"10.00\", ");
    append_lines(out, "label", label);
    std::vector<std::string> tip{f.name + (f.file != "~" ? " (" + f.file + ":" + std::to_string(f.line) + ")" : "") +
                                 ": " + std::to_string(f.calls) + " calls (" + std::to_string(f.primitive_calls) +
                                 " primitive), self " + duration_text(f.self_ns) + ", total " +
                                 duration_text(f.cumulative_ns)};
    out.append(", ");
    append_lines(out, "tooltip", tip);
    out.append("];\n");
  }
  for (const PstatsEdge& e : t.edges) {
    const double weight = share(e.cumulative_ns, whole);
    if (e.caller >= kept.size() || e.callee >= kept.size() || !kept[e.caller] || !kept[e.callee] ||
        weight < options.edge_threshold) {
      ++pruned.edges;
      continue;
    }
    const double pen = std::max(weight * 4.0, 0.5);
    char widths[160];
    std::snprintf(widths, sizeof widths,
                  "arrowsize=\"%.2f\", fontsize=\"10.00\", labeldistance=\"%.2f\", penwidth=\"%.2f\", ",
                  0.5 * std::sqrt(pen), pen, pen);
    const std::string color = temperature_color(weight);
    out.append("  ").append(prefix).append(std::to_string(e.caller)).append(" -> ");
    out.append(prefix).append(std::to_string(e.callee)).append(" [").append(widths);
    out.append("color=\"").append(color).append("\", fontcolor=\"").append(color).append("\", ");
    append_lines(out, "label", {percent_text(weight), std::to_string(e.calls) + "\u00d7"});
    out.append("];\n");
  }
}

// The DOT text: gprof2dot's graph, node and edge defaults, the parts (one, or a cluster
// per thread), and a caption that says what the graph holds and what it leaves out.
std::string dot_text(const std::vector<GraphPart>& parts, const CallGraphOptions& options, const std::string& process,
                     bool clusters) {
  std::string out = "digraph {\n";
  out.append("  graph [fontname=Arial, nodesep=0.125, ranksep=0.25];\n");
  out.append("  node [fontcolor=white, fontname=Arial, height=0, shape=box, style=filled, width=0];\n");
  out.append("  edge [fontname=Arial];\n");
  Pruned pruned;
  bool any = false, estimated = false;
  for (std::size_t k = 0; k < parts.size(); ++k) {
    const PstatsTable& t = parts[k].table;
    any = any || !t.functions.empty();
    estimated = estimated || t.estimated;
    if (!clusters) {
      append_graph(out, t, options, "n", pruned);
      continue;
    }
    out.append("  subgraph cluster_").append(std::to_string(k)).append(" {\n  ");
    append_lines(out, "label", {parts[k].title + ": " + duration_text(whole_of(t))});
    out.append(";\n");
    append_graph(out, t, options, std::string("t").append(std::to_string(k)).append("n"), pruned);
    out.append("  }\n");
  }
  std::string what = options.on_cpu ? "on-CPU time" : "wall time";
  if (estimated) what += ", sampled zones estimated";
  std::vector<std::string> caption{"ringtrace call graph of " + process + " (" + what + ")"};
  if (!any) {
    caption.push_back("no zones recorded");
  } else {
    caption.push_back("box: name, total time share, (self time share), total time, calls; arrow: share, calls");
    if (!clusters) caption.back() += "; whole: " + duration_text(whole_of(parts.front().table));
    char left_out[200];
    std::snprintf(left_out, sizeof left_out, "left out: %llu boxes under %s and %llu arrows under %s of the whole",
                  static_cast<unsigned long long>(pruned.nodes), percent_text(options.node_threshold).c_str(),
                  static_cast<unsigned long long>(pruned.edges), percent_text(options.edge_threshold).c_str());
    caption.emplace_back(left_out);
  }
  out.append("  labelloc=t;\n  ");
  append_lines(out, "label", caption);
  out.append(";\n}\n");
  return out;
}

PstatsAggregator make_aggregator(const CallGraphOptions& options) {
  PstatsAggregator a;
  a.set_zones_by_name(true);
  a.set_estimate_sampled(options.estimate_sampled);
  a.set_on_cpu(options.on_cpu);
  return a;
}

class CallGraphExporter final : public Exporter {
 public:
  CallGraphExporter(const std::string& path, CallGraphOptions options) : options_(options) {
    if (path.ends_with(".svg")) {
      svg_path_ = path;
      dot_path_ = path.substr(0, path.size() - 4) + ".dot";
      svg_ = std::make_unique<ReportOutput>(svg_path_);
    } else {
      dot_path_ = path;
    }
    dot_ = std::make_unique<ReportOutput>(dot_path_);
  }

  CallGraphExporter(std::ostream& stream, CallGraphOptions options)
      : options_(options), dot_(std::make_unique<ReportOutput>(stream, "call graph stream")) {}

  std::vector<std::filesystem::path> output_paths() const override {
    std::vector<std::filesystem::path> paths;
    if (!dot_path_.empty()) paths.emplace_back(dot_path_);
    if (!svg_path_.empty()) paths.emplace_back(svg_path_);
    return paths;
  }

  void on_start(const TraceContext&) override {
    run_ = Run{};
    run_.all = make_aggregator(options_);
    dot_->start_run();
    if (svg_) svg_->start_run();
  }

  void on_events(std::span<const Event> events, const TraceContext& context) override {
    if (!options_.per_thread) {
      run_.all.add(events, context);
      return;
    }
    // Per thread: each run of one thread's events to that thread's aggregate.
    for (std::size_t from = 0; from < events.size();) {
      const ThreadId thread = events[from].thread;
      std::size_t to = from + 1;
      while (to < events.size() && events[to].thread == thread) ++to;
      run_.book.see(thread, context);
      thread_aggregate(thread).add(events.subspan(from, to - from), context);
      from = to;
    }
  }

  void on_finish(const TraceContext& context, const SessionStats&) override {
    std::vector<GraphPart> parts;
    if (!options_.per_thread) {
      run_.all.finish(context.clock().stop_ns);
      parts.push_back(GraphPart{context.process_name(), run_.all.table()});
    } else {
      for (ThreadId t = 0; t < run_.threads.size(); ++t) {
        if (!run_.threads[t]) continue;
        run_.threads[t]->finish(context.clock().stop_ns);
        const ThreadInfo& info = run_.book.info(t, context);
        const std::string tid = "tid " + std::to_string(info.os_tid);
        parts.push_back(
            GraphPart{info.name.empty() ? "thread " + tid : info.name + " (" + tid + ")", run_.threads[t]->table()});
      }
    }
    const std::string process = context.process_name().empty() ? "the recording" : context.process_name();
    const std::string text = dot_text(parts, options_, process, options_.per_thread);
    run_ = Run{};
    dot_->write_run(text);
    if (svg_) svg_->write_run(detail::render_svg_with_dot(text, svg_path_, options_.dot_seconds));
  }

 private:
  PstatsAggregator& thread_aggregate(ThreadId thread) {
    if (thread >= run_.threads.size()) run_.threads.resize(thread + 1);
    if (!run_.threads[thread]) run_.threads[thread] = std::make_unique<PstatsAggregator>(make_aggregator(options_));
    return *run_.threads[thread];
  }

  CallGraphOptions options_;
  std::string dot_path_, svg_path_;
  std::unique_ptr<ReportOutput> dot_, svg_;

  // One run's aggregates, made afresh at on_start.
  struct Run {
    PstatsAggregator all;                                    // threads merged
    std::vector<std::unique_ptr<PstatsAggregator>> threads;  // per_thread: by ThreadId
    detail::ThreadBook book;
  };
  Run run_;
};

}  // namespace

std::shared_ptr<Exporter> call_graph_exporter(const std::filesystem::path& path, CallGraphOptions options) {
  return std::make_shared<CallGraphExporter>(path.string(), options);
}

std::shared_ptr<Exporter> call_graph_exporter(std::ostream& stream, CallGraphOptions options) {
  return std::make_shared<CallGraphExporter>(stream, options);
}

bool graphviz_dot_found() { return detail::graphviz_dot_on_path(); }

}  // namespace ringtrace
