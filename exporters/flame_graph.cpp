// Flame graph exporter: a folded table (the folded stacks exporter's lines, or the
// session's leaks) drawn as one self-contained, interactive SVG.
//
// The table becomes a tree of frames (equal names under one parent are one frame); a
// frame's value is its stack's own value plus its children's, so widths add up exactly;
// children are laid out left to right in name order from their parent's left edge. Frames
// below FlameGraphOptions::merge_below of the whole are not drawn (their value stays in
// their parent): the SVG's size follows the number of frames worth seeing, never the
// number of stacks. Each frame carries its exact offset and value (data-o, data-v) for
// the script (flame_graph_script.hpp).
#include "ringtrace/exporters/flame_graph.hpp"

#include <algorithm>
#include <cstdio>
#include <sstream>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <utility>

#include "flame_graph_script.hpp"
#include "output.hpp"  // ReportOutput, append_valid_utf8, append_uint
#include "ringtrace/exporters/folded_stacks.hpp"

namespace ringtrace {
namespace {

using detail::ReportOutput;

constexpr int kWidth = 1200, kPad = 10, kFrameHeight = 16, kTop = 84, kBottom = 34;

// Text for XML content: valid UTF-8, markup escaped, characters XML 1.0 forbids as '?'.
void append_xml(std::string& out, std::string_view raw) {
  std::string valid;
  detail::append_valid_utf8(valid, raw);
  for (std::size_t i = 0; i < valid.size(); ++i) {
    const auto u = static_cast<unsigned char>(valid[i]);
    if (valid[i] == '&') {
      out.append("&amp;");
    } else if (valid[i] == '<') {
      out.append("&lt;");
    } else if (valid[i] == '>') {
      out.append("&gt;");
    } else if (u < 0x20 || u == 0x7f) {
      out.push_back('?');
    } else if (u == 0xEF && i + 2 < valid.size() && valid[i + 1] == '\xBF' &&
               (valid[i + 2] == '\xBE' || valid[i + 2] == '\xBF')) {
      out.push_back('?');  // U+FFFE, U+FFFF
      i += 2;
    } else {
      out.push_back(valid[i]);
    }
  }
}

std::string thousands(std::uint64_t n) {
  std::string digits = std::to_string(n), out;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out.push_back(',');
    out.push_back(digits[i]);
  }
  return out;
}

// A value with its unit, four significant digits: 12.35 ms, 1.235 MB.
std::string amount(std::uint64_t v, bool bytes) {
  static constexpr const char* kTime[] = {"ns", "us", "ms", "s"};
  static constexpr const char* kBytes[] = {"bytes", "kB", "MB", "GB", "TB"};
  double x = static_cast<double>(v);
  std::size_t step = 0;
  while (x >= 1000 && step < (bytes ? 4u : 3u)) {
    x /= 1000;
    ++step;
  }
  char text[48];
  if (step == 0) return std::to_string(v) + " " + (bytes ? kBytes[0] : kTime[0]);
  std::snprintf(text, sizeof text, "%.*f %s", x >= 100 ? 1 : x >= 10 ? 2 : 3, x, bytes ? kBytes[step] : kTime[step]);
  return text;
}

// The tree of frames. Node 0 is the root ("all").
struct FrameTree {
  struct Node {
    std::string name;
    std::uint32_t parent = 0;
    std::uint64_t own = 0;    // the stack's own value
    std::uint64_t total = 0;  // own + children's totals
    std::vector<std::uint32_t> children;
  };
  std::vector<Node> nodes{Node{"all", 0, 0, 0, {}}};
  std::unordered_map<std::string, std::uint32_t> index;  // parent id '\0' name -> node

  void add(const FlameStack& stack) {
    std::uint32_t at = 0;
    std::string key;
    for (const std::string& frame : stack.frames) {
      key = std::to_string(at);
      key.push_back('\0');
      key.append(frame);
      const auto [it, fresh] = index.emplace(key, static_cast<std::uint32_t>(nodes.size()));
      if (fresh) {
        nodes.push_back(Node{frame, at, 0, 0, {}});
        nodes[at].children.push_back(it->second);
      }
      at = it->second;
    }
    nodes[at].own += stack.value;
  }

  // Totals (children come after their parents) and children in name order.
  void finish() {
    for (Node& n : nodes) n.total = n.own;
    for (std::size_t i = nodes.size() - 1; i > 0; --i) nodes[nodes[i].parent].total += nodes[i].total;
    for (Node& n : nodes) {
      std::sort(n.children.begin(), n.children.end(),
                [&](std::uint32_t a, std::uint32_t b) { return nodes[a].name < nodes[b].name; });
    }
  }
};

// A deterministic color per name: warm for time, green for memory.
std::string color_of(std::string_view name, bool memory) {
  std::uint64_t h = 1469598103934665603ull;  // FNV-1a
  for (const char c : name) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ull;
  const double a = static_cast<double>(h & 0xffff) / 65535.0, b = static_cast<double>((h >> 16) & 0xffff) / 65535.0;
  const int r = memory ? 50 + static_cast<int>(80 * b) : 215 + static_cast<int>(40 * a);
  const int g = memory ? 170 + static_cast<int>(60 * a) : 80 + static_cast<int>(150 * b);
  const int bl = memory ? 60 + static_cast<int>(70 * b) : 30 + static_cast<int>(40 * a);
  return "rgb(" + std::to_string(r) + "," + std::to_string(g) + "," + std::to_string(bl) + ")";
}

// The label a frame of `pixels` width shows (the script's fit() does the same on zoom).
std::string label_of(const std::string& name, double pixels) {
  const long chars = static_cast<long>((pixels - 6) / 7);
  if (chars < 3) return {};
  std::vector<std::size_t> starts;  // code point starts
  for (std::size_t i = 0; i < name.size(); ++i) {
    if ((static_cast<unsigned char>(name[i]) & 0xC0) != 0x80) starts.push_back(i);
  }
  if (static_cast<long>(starts.size()) <= chars) return name;
  return name.substr(0, starts[static_cast<std::size_t>(chars - 2)]) + "..";
}

struct Drawing {
  const FrameTree& tree;
  const FlameGraphOptions& options;
  std::uint64_t whole;
  bool bytes;
  std::string frames;  // the <g> elements
  std::uint32_t max_depth = 0;
  std::uint64_t merged_frames = 0, merged_value = 0;

  bool drawn(const FrameTree::Node& n) const {
    return n.total > 0 && static_cast<double>(n.total) >= options.merge_below * static_cast<double>(whole);
  }
  // Frames in the subtree of `id` (iterative: a table from any source may be deep).
  static std::uint64_t subtree_size(const FrameTree& tree, std::uint32_t id) {
    std::uint64_t size = 0;
    std::vector<std::uint32_t> pending{id};
    while (!pending.empty()) {
      const std::uint32_t n = pending.back();
      pending.pop_back();
      ++size;
      pending.insert(pending.end(), tree.nodes[n].children.begin(), tree.nodes[n].children.end());
    }
    return size;
  }
  // Frames with their depth and offset, depth-first; y is fixed later (it needs max_depth).
  struct Placed {
    std::uint32_t id, depth;
    std::uint64_t offset;
  };
  std::vector<Placed> place() {
    std::vector<Placed> out, pending{{0, 0, 0}};
    while (!pending.empty()) {
      const Placed p = pending.back();
      pending.pop_back();
      out.push_back(p);
      max_depth = std::max(max_depth, p.depth);
      std::uint64_t offset = p.offset;
      std::vector<Placed> kids;
      for (const std::uint32_t c : tree.nodes[p.id].children) {
        const FrameTree::Node& n = tree.nodes[c];
        if (drawn(n)) {
          kids.push_back(Placed{c, p.depth + 1, offset});
        } else if (n.total > 0) {
          merged_frames += subtree_size(tree, c);
          merged_value += n.total;
        }
        offset += n.total;
      }
      pending.insert(pending.end(), kids.rbegin(), kids.rend());
    }
    return out;
  }
  void draw(const Placed& p) {
    const FrameTree::Node& n = tree.nodes[p.id];
    const double inner = kWidth - 2 * kPad;
    const double x = kPad + static_cast<double>(p.offset) / static_cast<double>(whole) * inner;
    const double w = static_cast<double>(n.total) / static_cast<double>(whole) * inner;
    const int y = options.icicle ? kTop + static_cast<int>(p.depth) * kFrameHeight
                                 : kTop + static_cast<int>(max_depth - p.depth) * kFrameHeight;
    char share[32], geometry[160];
    std::snprintf(share, sizeof share, "%.2f%%", static_cast<double>(n.total) / static_cast<double>(whole) * 100.0);
    frames.append("<g class=\"f\" data-o=\"").append(std::to_string(p.offset));
    frames.append("\" data-v=\"").append(std::to_string(n.total)).append("\" data-d=\"");
    frames.append(std::to_string(p.depth)).append("\"><title>");
    append_xml(frames, n.name);
    frames.append(" (").append(amount(n.total, bytes)).append(", ").append(share).append("; ");
    frames.append(thousands(n.total)).append(bytes ? " bytes" : " ns").append(")</title>");
    std::snprintf(geometry, sizeof geometry,
                  "<rect x=\"%.2f\" y=\"%d\" width=\"%.2f\" height=\"%d\" rx=\"2\" ry=\"2\" fill=\"", x, y, w,
                  kFrameHeight - 1);
    frames.append(geometry).append(color_of(n.name, options.value != FlameValue::self_ns)).append("\"/>");
    std::snprintf(geometry, sizeof geometry, "<text x=\"%.2f\" y=\"%.1f\">", x + 3, y + 11.5);
    frames.append(geometry);
    append_xml(frames, label_of(n.name, w));
    frames.append("</text></g>\n");
  }
};

std::string default_title(const FlameGraphOptions& o) {
  std::string what = o.value == FlameValue::alloc_bytes    ? "bytes allocated"
                     : o.value == FlameValue::leaked_bytes ? "bytes still live at the end (leaks)"
                     : o.on_cpu                            ? "on-CPU self time"
                                                           : "self time";
  if (o.estimate_sampled && o.value == FlameValue::self_ns) what += " (sampled zones estimated)";
  return std::string(o.icicle ? "Icicle graph: " : "Flame graph: ") + what;
}

}  // namespace

std::string flame_graph_svg(std::span<const FlameStack> stacks, const FlameGraphOptions& options,
                            std::string_view subtitle) {
  FrameTree tree;
  for (const FlameStack& s : stacks) tree.add(s);
  tree.finish();
  const bool bytes = options.value != FlameValue::self_ns;
  Drawing d{tree, options, tree.nodes[0].total, bytes, {}};
  if (d.whole > 0) {
    const std::vector<Drawing::Placed> placed = d.place();
    d.frames.reserve(placed.size() * 240);
    for (const Drawing::Placed& p : placed) d.draw(p);
  }
  const int height = kTop + static_cast<int>(d.whole > 0 ? d.max_depth + 1 : 0) * kFrameHeight + kBottom;
  std::string out = "<?xml version=\"1.0\" standalone=\"no\"?>\n";
  char head[400];
  std::snprintf(head, sizeof head,
                "<svg version=\"1.1\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" onload=\"init(evt)\" "
                "xmlns=\"http://www.w3.org/2000/svg\" data-width=\"%d\" data-pad=\"%d\" data-total=\"",
                kWidth, height, kWidth, height, kWidth, kPad);
  out.append(head).append(std::to_string(d.whole)).append("\" data-unit=\"").append(bytes ? "bytes" : "ns");
  out.append("\">\n<style type=\"text/css\"><![CDATA[").append(detail::kFlameGraphStyle).append("]]></style>\n");
  out.append("<script type=\"text/ecmascript\"><![CDATA[").append(detail::kFlameGraphScript).append("]]></script>\n");
  out.append("<rect x=\"0\" y=\"0\" width=\"100%\" height=\"100%\" fill=\"rgb(250,250,245)\"/>\n");
  out.append("<text id=\"title\" x=\"600\" y=\"24\">");
  append_xml(out, options.title.empty() ? default_title(options) : options.title);
  out.append("</text>\n<text id=\"subtitle\" x=\"600\" y=\"44\">");
  append_xml(out, subtitle);
  out.append("</text>\n<text id=\"merged\" x=\"600\" y=\"62\">");
  if (d.merged_frames > 0) {
    char note[200];
    std::snprintf(note, sizeof note,
                  "%s frames under %.2g%% of the whole (%.2f%% of it) merged into their parents: not drawn, not "
                  "searched",
                  thousands(d.merged_frames).c_str(), options.merge_below * 100.0,
                  static_cast<double>(d.merged_value) / static_cast<double>(d.whole) * 100.0);
    out.append(note);
  }
  out.append("</text>\n<text id=\"unzoom\" class=\"hide\" x=\"10\" y=\"24\">Reset Zoom</text>\n");
  out.append("<text id=\"search\" x=\"1190\" y=\"24\" style=\"text-anchor:end\">Search</text>\n");
  std::snprintf(head, sizeof head,
                "<text id=\"details\" x=\"10\" y=\"%d\"> </text>\n<text id=\"matched\" x=\"1190\" y=\"%d\"> </text>\n",
                height - 12, height - 12);
  out.append(head).append("<g id=\"frames\">\n").append(d.frames).append("</g>\n</svg>\n");
  return out;
}

std::vector<FlameStack> parse_folded_stacks(std::string_view text, const std::string& source) {
  std::vector<FlameStack> stacks;
  std::size_t number = 0;
  for (std::size_t from = 0; from < text.size();) {
    std::size_t end = text.find('\n', from);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view line = text.substr(from, end - from);
    from = end + 1;
    ++number;
    if (line.empty()) continue;
    const std::size_t space = line.rfind(' ');
    const std::string_view digits = space == std::string_view::npos ? std::string_view{} : line.substr(space + 1);
    FlameStack stack;
    bool ok = space != std::string_view::npos && space > 0 && !digits.empty() && digits.size() <= 19;
    for (const char c : digits) {
      ok = ok && c >= '0' && c <= '9';
      if (ok) stack.value = stack.value * 10 + static_cast<std::uint64_t>(c - '0');
    }
    if (!ok) {
      throw std::runtime_error("ringtrace: " + source + " line " + std::to_string(number) +
                               ": not `frame;frame value` folded stacks");
    }
    const std::string_view frames = line.substr(0, space);
    for (std::size_t f = 0; f <= frames.size();) {
      std::size_t semi = frames.find(';', f);
      if (semi == std::string_view::npos) semi = frames.size();
      stack.frames.emplace_back(frames.substr(f, semi - f));
      f = semi + 1;
    }
    stacks.push_back(std::move(stack));
  }
  return stacks;
}

namespace {

class FlameGraphExporter final : public Exporter {
 public:
  FlameGraphExporter(const std::string& path, FlameGraphOptions options)
      : options_(std::move(options)), output_(path) {}
  FlameGraphExporter(std::ostream& stream, FlameGraphOptions options)
      : options_(std::move(options)), output_(stream, "flame graph stream") {}

  std::vector<std::filesystem::path> output_paths() const override {
    if (output_.path().empty()) return {};
    return {output_.path()};
  }

  void on_start(const TraceContext& context) override {
    output_.start_run();
    folded_text_.str({});
    FoldedStacksOptions folded;
    folded.value = options_.value == FlameValue::alloc_bytes ? FoldedValue::alloc_bytes : FoldedValue::self_ns;
    folded.thread_root = options_.thread_root;
    folded.estimate_sampled = options_.estimate_sampled;
    folded.on_cpu = options_.on_cpu;
    folded_ = options_.value == FlameValue::leaked_bytes ? nullptr : folded_stacks_exporter(folded_text_, folded);
    if (folded_) folded_->on_start(context);
  }

  void on_events(std::span<const Event> events, const TraceContext& context) override {
    if (folded_) folded_->on_events(events, context);
  }

  void on_finish(const TraceContext& context, const SessionStats& stats) override {
    std::vector<FlameStack> stacks;
    if (folded_) {
      folded_->on_finish(context, stats);
      stacks = parse_folded_stacks(folded_text_.str(), "folded stacks");
      folded_.reset();
      folded_text_.str({});
    } else {
      for (const MemoryStats::Leak& leak : stats.memory.leaks) stacks.push_back(leak_stack(leak));
    }
    std::uint64_t total = 0;
    for (const FlameStack& s : stacks) total += s.value;
    output_.write_run(flame_graph_svg(stacks, options_, subtitle(context, stats, stacks.size(), total)));
  }

 private:
  static FlameStack leak_stack(const MemoryStats::Leak& leak) {
    FlameStack s;
    s.value = leak.bytes;
    const std::string_view stack = leak.stack;
    for (std::size_t from = 0; from <= stack.size();) {
      std::size_t sep = stack.find("; ", from);
      if (sep == std::string_view::npos) sep = stack.size();
      s.frames.emplace_back(stack.substr(from, sep - from));
      from = sep + 2;
    }
    return s;
  }

  // What was recorded, or why there is nothing to draw.
  std::string subtitle(const TraceContext& context, const SessionStats& stats, std::size_t stacks,
                       std::uint64_t total) const {
    const std::string process = context.process_name().empty() ? "the recording" : context.process_name();
    const bool memory = options_.value != FlameValue::self_ns;
    if (memory && !stats.memory.known) {
      return process + ": no allocations recorded (Config::memory, ringtrace record --memory)";
    }
    if (options_.value == FlameValue::leaked_bytes && !stats.memory.blocks_known) {
      return process + ": leaks unknown (this stream's allocations carry no addresses)";
    }
    if (total == 0) {
      return process + (options_.value == FlameValue::leaked_bytes ? ": no block was still live at the end"
                        : memory                                   ? ": no bytes allocated"
                                                                   : ": no zones recorded");
    }
    return process + ": " + amount(total, memory) + " in " + thousands(stacks) + " stacks" +
           (stats.dropped > 0 ? "; " + thousands(stats.dropped) + " events dropped (not in the picture)" : "");
  }

  FlameGraphOptions options_;
  ReportOutput output_;
  std::ostringstream folded_text_;
  std::shared_ptr<Exporter> folded_;  // the folded stacks exporter, writing into folded_text_
};

}  // namespace

std::shared_ptr<Exporter> flame_graph_exporter(const std::filesystem::path& path, FlameGraphOptions options) {
  return std::make_shared<FlameGraphExporter>(path.string(), std::move(options));
}

std::shared_ptr<Exporter> flame_graph_exporter(std::ostream& stream, FlameGraphOptions options) {
  return std::make_shared<FlameGraphExporter>(stream, std::move(options));
}

}  // namespace ringtrace
