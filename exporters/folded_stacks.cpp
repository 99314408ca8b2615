// Folded stacks exporter: aggregates zones by call stack, writes one line per stack.
//
// Stacks live in a trie: node = (parent node, frame), found through one open-addressing
// hash table keyed by both, so memory grows with the number of distinct stacks and
// never with the number of events. Each thread keeps a cursor (the trie node of every
// zone it has open, parallel to ZoneTracker's stack); ZoneTracker gives each closed
// zone's total and self time. At on_finish every node is rendered as its line of frame
// names, lines are sorted by their text and lines whose text is equal are merged (two
// sites with the same name are the same frame), then written in one pass.
#include "ringtrace/exporters/folded_stacks.hpp"

#include <algorithm>  // stable_sort, reverse
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "output.hpp"        // append_valid_utf8, append_uint, OutputSink
#include "thread_book.hpp"   // thread names after their rows were folded
#include "zone_tracker.hpp"  // self and total time of each closed zone

namespace ringtrace {
namespace {

using detail::OutputSink;

// A frame name every folded-stack reader parses: valid UTF-8, no ';' (frame separator),
// no control characters (newline ends a line), and never ending in whitespace followed
// by a number or by spaces (flamegraph.pl would read "name 12 34" as a differential line).
std::string sanitize_frame(std::string_view raw) {
  std::string valid;
  detail::append_valid_utf8(valid, raw);
  std::string out;
  out.reserve(valid.size());
  for (const char c : valid) {
    const auto u = static_cast<unsigned char>(c);
    out.push_back(c == ';' || u < 0x20 || u == 0x7f ? '_' : c);
  }
  if (out.empty()) return "(empty)";
  // flamegraph.pl reads "stack N1 N2" as a differential line, with any whitespace
  // around N1: a name may end neither in spaces nor in a space and a number.
  for (std::size_t k = out.size(); k > 0 && out[k - 1] == ' '; --k) out[k - 1] = '_';
  std::size_t k = out.size();
  while (k > 0 && ((out[k - 1] >= '0' && out[k - 1] <= '9') || out[k - 1] == '.')) --k;
  if (k < out.size() && k > 0 && out[k - 1] == ' ') out[k - 1] = '_';
  return out;
}

// Open-addressing map (parent node, frame) -> child node.
class ChildTable {
 public:
  ChildTable() { rehash(1024); }

  // The child of `parent` for `frame`, or `fresh` after inserting it.
  std::uint32_t find_or_insert(std::uint32_t parent, std::uint32_t frame, std::uint32_t fresh, bool& inserted) {
    const std::uint64_t key = (static_cast<std::uint64_t>(parent) << 32) | frame;
    std::size_t i = slot(key);
    while (true) {
      if (keys_[i] == key) {
        inserted = false;
        return values_[i];
      }
      if (keys_[i] == kEmpty) break;
      i = (i + 1) & mask_;
    }
    inserted = true;
    keys_[i] = key;
    values_[i] = fresh;
    if (++count_ * 2 > keys_.size()) rehash(keys_.size() * 2);
    return fresh;
  }

 private:
  static constexpr std::uint64_t kEmpty = ~std::uint64_t{0};

  std::size_t slot(std::uint64_t key) const {
    key *= 0x9E3779B97F4A7C15ull;
    return static_cast<std::size_t>(key >> 32 ^ key) & mask_;
  }

  void rehash(std::size_t size) {
    std::vector<std::uint64_t> keys(size, kEmpty);
    std::vector<std::uint32_t> values(size, 0);
    mask_ = size - 1;
    for (std::size_t j = 0; j < keys_.size(); ++j) {
      if (keys_[j] == kEmpty) continue;
      std::size_t i = slot(keys_[j]);
      while (keys[i] != kEmpty) i = (i + 1) & mask_;
      keys[i] = keys_[j];
      values[i] = values_[j];
    }
    keys_ = std::move(keys);
    values_ = std::move(values);
  }

  std::vector<std::uint64_t> keys_;
  std::vector<std::uint32_t> values_;
  std::size_t mask_ = 0;
  std::size_t count_ = 0;
};

class FoldedStacksExporter final : public Exporter {
 public:
  FoldedStacksExporter(std::string path, FoldedStacksOptions options)
      : path_(std::move(path)), options_(options), sink_(OutputSink::open_file(path_)) {}

  FoldedStacksExporter(std::ostream& stream, FoldedStacksOptions options)
      : stream_(&stream), options_(options), sink_(OutputSink::to_stream(stream, "folded stacks stream")) {}

  // A run that never finished leaves the previous file in place (the sink keeps its
  // .partial); folded stacks are written whole at on_finish, so there is nothing to keep.
  ~FoldedStacksExporter() override = default;

  std::vector<std::filesystem::path> output_paths() const override {
    if (stream_ != nullptr) return {};
    return {path_};
  }

  void on_start(const TraceContext&) override {
    if (runs_ > 0 && stream_ == nullptr) {
      sink_.reset();
      sink_ = OutputSink::open_file(path_);
    }
    ++runs_;
    run_ = Run{};
  }

  void on_events(std::span<const Event> events, const TraceContext& context) override {
    for (const Event& e : events) {
      if (e.kind == EventKind::zone_begin) {
        if (options_.thread_root) run_.book.see(e.thread, context);  // named at on_finish
        begin(e, options_.estimate_sampled ? run_.rates.of(e.site, context) : 1);
      } else if (e.kind == EventKind::zone_end) {
        end(e);
      } else if (detail::is_switch(e.kind)) [[unlikely]] {
        run_.tracker.feed(e, [](const detail::ClosedZone&, std::span<const detail::OpenZone>) {});
      } else if (detail::is_memory(e.kind)) [[unlikely]] {
        allocated(e, context);
      }
    }
  }

  void on_finish(const TraceContext& context, const SessionStats&) override {
    close_open_zones(context);
    write(context);
  }

 private:
  // Thread-root frames are told apart from sites by the top bit; the frame of allocations
  // outside every zone is the one frame above every site id.
  static constexpr std::uint32_t kThreadFrame = 0x80000000u;
  static constexpr std::uint32_t kNoZoneFrame = kThreadFrame - 1;

  struct Node {
    std::uint32_t parent;
    std::uint32_t frame;    // SiteId, or kThreadFrame | ThreadId
    std::uint64_t self_ns;  // wall, or on-CPU (FoldedStacksOptions::on_cpu)
    std::uint64_t total_ns;
    std::uint64_t calls;
    std::uint64_t alloc_bytes = 0;  // allocated in the leaf zone itself (Config::memory)
    std::uint64_t allocs = 0;
  };

  std::uint32_t child(std::uint32_t parent, std::uint32_t frame) {
    bool inserted = false;
    const auto fresh = static_cast<std::uint32_t>(run_.nodes.size());
    const std::uint32_t node = run_.children.find_or_insert(parent, frame, fresh, inserted);
    if (inserted) run_.nodes.push_back(Node{parent, frame, 0, 0, 0, 0, 0});
    return node;
  }

  std::vector<std::uint32_t>& cursor(ThreadId thread) {
    if (thread >= run_.cursors.size()) [[unlikely]]
      add_threads(thread);
    return run_.cursors[thread];
  }

  RINGTRACE_NOINLINE void add_threads(ThreadId thread) {
    run_.cursors.resize(thread + 1);
    run_.thread_roots.resize(thread + 1, 0);
    if (options_.thread_root) {
      for (ThreadId t = 0; t <= thread; ++t) {
        if (run_.thread_roots[t] == 0) run_.thread_roots[t] = child(0, kThreadFrame | t);
      }
    }
  }

  void begin(const Event& e, std::uint32_t factor) {
    std::vector<std::uint32_t>& stack = cursor(e.thread);
    const std::uint32_t parent = stack.empty() ? run_.thread_roots[e.thread] : stack.back();
    stack.push_back(child(parent, e.site));
    run_.tracker.feed(
        e, [](const detail::ClosedZone&, std::span<const detail::OpenZone>) {}, 0, factor);
  }

  void end(const Event& e) {
    run_.tracker.feed(e, [&](const detail::ClosedZone& zone, std::span<const detail::OpenZone>) { closed(zone); });
  }

  void closed(const detail::ClosedZone& zone) {
    std::vector<std::uint32_t>& stack = cursor(zone.thread);
    Node& node = run_.nodes[stack.back()];
    stack.pop_back();
    node.self_ns += (options_.on_cpu ? zone.self_on_cpu_ns() : zone.self_ns) * zone.weight;
    node.total_ns += (options_.on_cpu ? zone.on_cpu_ns() : zone.total_ns) * zone.weight;
    node.calls += zone.weight;
    node.alloc_bytes += zone.self_memory.allocated_bytes * zone.weight;
    node.allocs += zone.self_memory.allocations * zone.weight;
  }

  // An alloc or free: the zone's bytes (ZoneTracker, at its close); outside every zone,
  // an allocation counts in the frame "(no zone)" (under the thread's root frame).
  RINGTRACE_NOINLINE void allocated(const Event& e, const TraceContext& context) {
    run_.tracker.feed(e, [](const detail::ClosedZone&, std::span<const detail::OpenZone>) {});
    if (e.kind != EventKind::alloc || (e.flags & EventFlags::restored) != 0 || !cursor(e.thread).empty()) return;
    if (options_.thread_root) run_.book.see(e.thread, context);
    Node& node = run_.nodes[child(run_.thread_roots[e.thread], kNoZoneFrame)];
    node.alloc_bytes += e.value.u;
    node.allocs += 1;
  }

  // Zones a stream left open (a live session closes them itself at stop()) end at the
  // stop time, as in the other exporters.
  void close_open_zones(const TraceContext& context) {
    run_.tracker.close_open(context.clock().stop_ns,
                            [&](const detail::ClosedZone& zone, std::span<const detail::OpenZone>) { closed(zone); });
  }

  std::uint64_t value_of(const Node& node) const {
    switch (options_.value) {
      case FoldedValue::total_ns:
        return node.total_ns;
      case FoldedValue::calls:
        return node.calls;
      case FoldedValue::alloc_bytes:
        return node.alloc_bytes;
      case FoldedValue::allocs:
        return node.allocs;
      case FoldedValue::self_ns:
        break;
    }
    return node.self_ns;
  }

  void write(const TraceContext& context) {
    std::vector<std::string> site_frames(context.site_count());
    std::vector<bool> site_done(context.site_count(), false);
    std::vector<std::string> thread_frames(context.thread_count());
    for (ThreadId t = 0; t < context.thread_count(); ++t) {
      const ThreadInfo& info = run_.book.info(t, context);
      thread_frames[t] =
          sanitize_frame(info.name.empty() ? std::string("thread ") + std::to_string(info.os_tid) : info.name);
    }
    const std::string no_zone = "(no zone)";
    auto frame_name = [&](std::uint32_t frame) -> const std::string& {
      if ((frame & kThreadFrame) != 0) return thread_frames[frame & ~kThreadFrame];
      if (frame == kNoZoneFrame) return no_zone;
      if (!site_done[frame]) {
        site_frames[frame] = sanitize_frame(context.site(frame).name);
        site_done[frame] = true;
      }
      return site_frames[frame];
    };

    // Lines stream out of a depth-first walk of the stack tree, children in the order
    // of their frame names, so memory is the tree plus the current line (a deep
    // recursion's text is never held whole). Siblings whose names print the same (two
    // call sites named alike) are one line: the walk visits them as one group and
    // merges their children. Below max_depth frames, a stack's deeper frames fold into
    // one frame whose value is the sum of everything under it.
    const std::size_t n_nodes = run_.nodes.size();
    std::vector<std::uint32_t> first_child(n_nodes + 1, 0), children(n_nodes > 0 ? n_nodes - 1 : 0);
    for (std::uint32_t n = 1; n < n_nodes; ++n) ++first_child[run_.nodes[n].parent + 1];
    for (std::size_t i = 1; i <= n_nodes; ++i) first_child[i] += first_child[i - 1];
    {
      std::vector<std::uint32_t> fill(first_child.begin(), first_child.end() - 1);
      for (std::uint32_t n = 1; n < n_nodes; ++n) children[fill[run_.nodes[n].parent]++] = n;
    }
    // Values of everything below each node (children have higher indices than parents).
    std::vector<std::uint64_t> below(n_nodes, 0);
    for (std::uint32_t n = static_cast<std::uint32_t>(n_nodes) - 1; n >= 1; --n) {
      below[run_.nodes[n].parent] += below[n] + value_of(run_.nodes[n]);
    }
    const std::size_t max_depth = options_.max_depth == 0 ? ~std::size_t{0} : options_.max_depth;

    struct Group {
      std::vector<std::uint32_t> members;  // nodes whose lines print the same
      std::size_t depth;                   // frames in the line
      std::size_t parent_length;           // the parent line's length in `line`
    };
    std::vector<Group> pending;
    std::string line, out;
    out.reserve(1 << 16);
    const auto emit = [&](std::uint64_t value) {
      out.append(line);
      out.push_back(' ');
      detail::append_uint(out, value);
      out.push_back('\n');
      if (out.size() >= (1 << 16)) {
        sink_->write(out);
        out.clear();
      }
    };
    // Pushes the children of `members`, grouped by name, so that they pop in name order.
    std::vector<std::uint32_t> kids;
    const auto push_children = [&](const std::vector<std::uint32_t>& members, std::size_t depth) {
      kids.clear();
      for (const std::uint32_t m : members) {
        kids.insert(kids.end(), children.begin() + first_child[m], children.begin() + first_child[m + 1]);
      }
      std::stable_sort(kids.begin(), kids.end(), [&](std::uint32_t a, std::uint32_t b) {
        return frame_name(run_.nodes[a].frame) < frame_name(run_.nodes[b].frame);
      });
      const std::size_t first_pushed = pending.size();
      for (std::size_t i = 0; i < kids.size();) {
        std::size_t j = i + 1;
        while (j < kids.size() && frame_name(run_.nodes[kids[j]].frame) == frame_name(run_.nodes[kids[i]].frame)) ++j;
        pending.push_back(
            Group{std::vector<std::uint32_t>(kids.begin() + i, kids.begin() + j), depth + 1, line.size()});
        i = j;
      }
      std::reverse(pending.begin() + first_pushed, pending.end());
    };
    // On-CPU values: every stack starts with a frame that says so.
    if (options_.on_cpu) line = "[on-CPU time];";
    push_children({0}, 0);
    while (!pending.empty()) {
      Group group = std::move(pending.back());
      pending.pop_back();
      line.resize(group.parent_length);
      if (group.depth > 1) line.push_back(';');
      line.append(frame_name(run_.nodes[group.members.front()].frame));
      std::uint64_t value = 0, deeper = 0;
      for (const std::uint32_t m : group.members) {
        value += value_of(run_.nodes[m]);
        deeper += below[m];
      }
      if (value != 0) emit(value);
      if (group.depth < max_depth) {
        push_children(group.members, group.depth);
      } else if (deeper != 0) {
        const std::size_t length = line.size();
        line.append(";[deeper frames folded]");
        emit(deeper);
        line.resize(length);
      }
    }
    sink_->write(out);
    sink_->close();
  }

  std::string path_;
  std::ostream* stream_ = nullptr;
  FoldedStacksOptions options_;
  std::unique_ptr<OutputSink> sink_;
  std::uint64_t runs_ = 0;

  // Everything a run adds to, made afresh by one assignment at on_start: nothing of a run
  // reaches the next.
  struct Run {
    detail::ZoneTracker tracker;
    detail::ThreadBook book;
    detail::SampleRates rates;
    std::vector<std::vector<std::uint32_t>> cursors;  // per thread: trie node of each open zone
    std::vector<std::uint32_t> thread_roots;          // per thread: its root node (0 without thread_root)
    ChildTable children;
    std::vector<Node> nodes = {Node{0, 0, 0, 0, 0, 0, 0}};  // the root above every stack, then the stacks' nodes
  };
  Run run_;
};

}  // namespace

std::shared_ptr<Exporter> folded_stacks_exporter(const std::filesystem::path& path, FoldedStacksOptions options) {
  return std::make_shared<FoldedStacksExporter>(path.string(), options);
}

std::shared_ptr<Exporter> folded_stacks_exporter(std::ostream& stream, FoldedStacksOptions options) {
  return std::make_shared<FoldedStacksExporter>(stream, options);
}

}  // namespace ringtrace
