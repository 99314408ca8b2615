// The pstats exporter: cProfile's aggregation over the ordered stream (per thread stack,
// then summed over threads) and the marshal-encoded dict that pstats.Stats loads.
#include "ringtrace/exporters/pstats.hpp"

#include <algorithm>
#include <limits>
#include <stdexcept>
#include <string_view>
#include <unordered_map>

#include "marshal_writer.hpp"
#include "output.hpp"
#include "u64_map.hpp"
#include "zone_tracker.hpp"

namespace ringtrace {
namespace {

constexpr std::uint32_t kUnresolved = std::numeric_limits<std::uint32_t>::max();
constexpr double kNsPerSecond = 1e9;

bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

void reject_gzip(const std::string& path) {
  if (ends_with(path, ".gz")) {
    throw std::invalid_argument("ringtrace: pstats file '" + path +
                                "' cannot be gzip-compressed (pstats reads plain marshal data); drop the .gz suffix");
  }
}

constexpr double kBytesPerMB = 1e6;

}  // namespace

// ---------------------------------------------------------------------------------------
// PstatsTable

std::uint64_t PstatsTable::total_calls() const {
  std::uint64_t n = 0;
  for (const PstatsFunction& f : functions) n += f.calls;
  return n;
}

std::uint64_t PstatsTable::total_primitive_calls() const {
  std::uint64_t n = 0;
  for (const PstatsFunction& f : functions) n += f.primitive_calls;
  return n;
}

std::uint64_t PstatsTable::total_self_ns() const {
  std::uint64_t n = 0;
  for (const PstatsFunction& f : functions) n += f.self_ns;
  return n;
}

std::int64_t PstatsTable::find(const std::string& file, std::uint32_t line, const std::string& name) const {
  for (std::size_t i = 0; i < functions.size(); ++i) {
    const PstatsFunction& f = functions[i];
    if (f.line == line && f.name == name && f.file == file) return static_cast<std::int64_t>(i);
  }
  return -1;
}

// ---------------------------------------------------------------------------------------
// PstatsAggregator

struct PstatsAggregator::State {
  struct Counts {
    std::uint64_t calls = 0;
    std::uint64_t primitive_calls = 0;
    std::uint64_t self_ns = 0;
    std::uint64_t cumulative_ns = 0;
  };
  struct Edge {
    std::uint32_t caller;
    std::uint32_t callee;
    Counts counts;
  };
  struct Key {
    std::string file;
    std::uint32_t line;
    std::string name;
  };
  // Per thread: how many times each function and each edge is open on its stack now.
  struct ThreadCounts {
    std::vector<std::uint32_t> function_active;  // index: function id
    std::vector<std::uint32_t> edge_active;      // index: edge id
  };

  detail::ZoneTracker tracker;
  std::vector<std::uint32_t> site_function;                       // index: SiteId; kUnresolved until first begin
  std::vector<Key> keys;                                          // index: function id
  std::vector<Counts> functions;                                  // index: function id
  std::unordered_map<std::string, std::uint32_t> function_index;  // key text -> function id (cold)
  std::vector<Edge> edges;                                        // index: edge id
  detail::U64Map edge_index;                                      // (caller, callee) -> edge
  std::vector<ThreadCounts> threads;                              // index: ThreadId
  detail::SampleRates rates;
  bool estimate = false;
  bool on_cpu = false;
  bool alloc_bytes = false;
  bool zones_by_name = false;
  std::uint64_t dropped_events = 0;
  std::uint64_t closed_at_stop = 0;
  std::string key_text;  // scratch for resolve()

  std::uint32_t function_of(SiteId site, const TraceContext& context) {
    if (site < site_function.size()) [[likely]] {
      const std::uint32_t id = site_function[site];
      if (id != kUnresolved) [[likely]]
        return id;
    }
    return resolve(site, context);
  }

  // First begin of a site: its key, merged with every other site of the same key.
  [[gnu::noinline]] std::uint32_t resolve(SiteId site, const TraceContext& context) {
    if (site >= site_function.size()) {
      site_function.resize(std::max<std::size_t>(site + 1, context.site_count()), kUnresolved);
    }
    const SiteInfo& info = context.site(site);
    Key key;
    const bool by_name = zones_by_name && (info.options & SiteOptions::function) == 0;
    const std::string_view file = info.file != nullptr && !by_name ? info.file : "";
    if (file.empty()) {
      key.file = "~";  // cProfile's file for built-ins: pstats prints just the name
    } else {
      detail::append_valid_utf8(key.file, file);
    }
    key.line = by_name ? 0 : info.line;
    detail::append_valid_utf8(key.name, info.name != nullptr ? info.name : "");
    key_text.clear();
    key_text.append(key.file).push_back('\0');
    detail::append_uint(key_text, key.line);
    key_text.push_back('\0');
    key_text.append(key.name);
    const auto [it, inserted] = function_index.emplace(key_text, static_cast<std::uint32_t>(keys.size()));
    if (inserted) {
      if (keys.size() >= kUnresolved - 1) throw std::length_error("ringtrace: too many pstats functions");
      keys.push_back(std::move(key));
      functions.emplace_back();
    }
    site_function[site] = it->second;
    return it->second;
  }

  ThreadCounts& counts_of(ThreadId thread) {
    if (thread >= threads.size()) [[unlikely]]
      threads.resize(thread + 1);
    return threads[thread];
  }

  static std::uint32_t& slot(std::vector<std::uint32_t>& v, std::uint32_t id, std::size_t size) {
    if (id >= v.size()) [[unlikely]]
      v.resize(size);
    return v[id];
  }

  std::uint32_t edge_of(std::uint32_t caller, std::uint32_t callee) {
    const std::uint32_t fresh = static_cast<std::uint32_t>(edges.size());
    const std::uint32_t id = edge_index.find_or_insert(detail::U64Map::key(caller, callee), fresh);
    if (id == fresh) [[unlikely]]
      edges.push_back(Edge{caller, callee, {}});
    return id;
  }

  void begin(const Event& e, const TraceContext& context) {
    const std::uint32_t callee = function_of(e.site, context);
    ThreadCounts& thread = counts_of(e.thread);
    ++slot(thread.function_active, callee, functions.size());
    const std::span<const detail::OpenZone> open = tracker.open(e.thread);
    if (!open.empty()) {
      const std::uint32_t caller = site_function[open.back().site];  // resolved at its begin
      const std::uint32_t edge = edge_of(caller, callee);
      ++slot(thread.edge_active, edge, edges.size());
    }
  }

  // cProfile's Stop(): tottime to every call, cumtime to the call (and the edge call)
  // that leaves the function (the edge) inactive on this thread's stack.
  void end(const detail::ClosedZone& zone, std::span<const detail::OpenZone> outer) {
    const std::uint32_t callee = site_function[zone.site];
    ThreadCounts& thread = threads[zone.thread];
    Counts& f = functions[callee];
    const std::uint64_t w = zone.weight;  // 1 unless estimating sampled sites
    std::uint64_t self_ns = on_cpu ? zone.self_on_cpu_ns() : zone.self_ns;
    std::uint64_t total_ns = on_cpu ? zone.on_cpu_ns() : zone.total_ns;
    if (alloc_bytes) {  // PstatsOptions::alloc_bytes: bytes allocated in place of times
      self_ns = zone.self_memory.allocated_bytes;
      total_ns = zone.memory.allocated_bytes;
    }
    f.calls += w;
    f.self_ns += self_ns * w;
    if (--thread.function_active[callee] == 0) {
      f.primitive_calls += w;
      f.cumulative_ns += total_ns * w;
    }
    if ((zone.flags & EventFlags::closed_at_stop) != 0) ++closed_at_stop;
    if (!outer.empty()) {
      const std::uint32_t caller = site_function[outer.back().site];
      const std::uint32_t edge = edge_of(caller, callee);
      Counts& c = edges[edge].counts;
      c.calls += w;
      c.self_ns += self_ns * w;
      if (--thread.edge_active[edge] == 0) {
        c.primitive_calls += w;
        c.cumulative_ns += total_ns * w;
      }
    }
  }
};

PstatsAggregator::PstatsAggregator() : state_(std::make_unique<State>()) {}
PstatsAggregator::~PstatsAggregator() = default;
PstatsAggregator::PstatsAggregator(PstatsAggregator&&) noexcept = default;
PstatsAggregator& PstatsAggregator::operator=(PstatsAggregator&&) noexcept = default;

void PstatsAggregator::reset() {
  const bool estimate = state_->estimate, on_cpu = state_->on_cpu, alloc_bytes = state_->alloc_bytes,
             by_name = state_->zones_by_name;
  state_ = std::make_unique<State>();
  state_->estimate = estimate;
  state_->on_cpu = on_cpu;
  state_->alloc_bytes = alloc_bytes;
  state_->zones_by_name = by_name;
}

void PstatsAggregator::set_estimate_sampled(bool on) { state_->estimate = on; }
void PstatsAggregator::set_on_cpu(bool on) { state_->on_cpu = on; }
void PstatsAggregator::set_alloc_bytes(bool on) { state_->alloc_bytes = on; }
void PstatsAggregator::set_zones_by_name(bool on) { state_->zones_by_name = on; }

void PstatsAggregator::add(std::span<const Event> events, const TraceContext& context) {
  State& s = *state_;
  const auto on_close = [&s](const detail::ClosedZone& zone, std::span<const detail::OpenZone> outer) {
    s.end(zone, outer);
  };
  for (const Event& e : events) {
    switch (e.kind) {
      case EventKind::zone_begin:
        s.begin(e, context);
        s.tracker.feed(e, on_close, 0, s.estimate ? s.rates.of(e.site, context) : 1);
        break;
      case EventKind::zone_end:
        s.tracker.feed(e, on_close);
        break;
      case EventKind::dropped:
        s.dropped_events += e.value.u;
        break;
      case EventKind::switch_out:
      case EventKind::switch_in:
        s.tracker.feed(e, on_close);  // the thread's CPU state, for on-CPU times
        break;
      case EventKind::alloc:
      case EventKind::free:
        if (s.alloc_bytes) s.tracker.feed(e, on_close);  // the zones' bytes
        break;
      default:
        break;
    }
  }
}

void PstatsAggregator::finish(std::uint64_t stop_ns) {
  State& s = *state_;
  s.tracker.close_open(
      stop_ns, [&s](const detail::ClosedZone& zone, std::span<const detail::OpenZone> outer) { s.end(zone, outer); });
}

PstatsTable PstatsAggregator::table() const {
  const State& s = *state_;
  PstatsTable table;
  table.estimated = s.estimate && s.rates.any_sampled();
  table.on_cpu = s.on_cpu;
  table.alloc_bytes = s.alloc_bytes;
  table.functions.reserve(s.keys.size());
  for (std::size_t i = 0; i < s.keys.size(); ++i) {
    const State::Counts& c = s.functions[i];
    table.functions.push_back(PstatsFunction{s.keys[i].file, s.keys[i].line, s.keys[i].name, c.calls, c.primitive_calls,
                                             c.self_ns, c.cumulative_ns});
  }
  table.edges.reserve(s.edges.size());
  for (const State::Edge& e : s.edges) {
    table.edges.push_back(PstatsEdge{e.caller, e.callee, e.counts.calls, e.counts.primitive_calls, e.counts.self_ns,
                                     e.counts.cumulative_ns});
  }
  table.dropped_events = s.dropped_events;
  table.closed_at_stop = s.closed_at_stop;
  return table;
}

// ---------------------------------------------------------------------------------------
// Encoding

std::string encode_pstats(const PstatsTable& table) {
  std::string out;
  detail::MarshalWriter w(out);
  const auto write_key = [&w](const std::string& file, std::uint32_t line, const std::string& name) {
    w.begin_tuple(3);
    w.string(file);
    w.integer(static_cast<std::uint64_t>(line));
    w.string(name);
  };
  // An entry of no calls, for what the dict has no other room to say.
  const auto write_note = [&](const char* name) {
    write_key("~", 0, name);
    w.begin_tuple(5);
    w.integer(std::uint64_t{0});
    w.integer(std::uint64_t{0});
    w.float64(0.0);
    w.float64(0.0);
    w.begin_dict();
    w.end_dict();
  };
  w.begin_dict();
  if (table.functions.empty()) write_note("<ringtrace: no zones recorded>");
  if (table.on_cpu && !table.alloc_bytes) write_note("<ringtrace: times are on-CPU>");
  if (table.alloc_bytes) write_note("<ringtrace: times are MB allocated>");
  // Seconds, or with alloc_bytes megabytes where seconds go.
  const auto seconds_of = [&table](std::uint64_t v) {
    return table.alloc_bytes ? static_cast<double>(v) / kBytesPerMB : static_cast<double>(v) / kNsPerSecond;
  };
  // Edges grouped by callee, each group in order of first call.
  std::vector<std::uint32_t> order(table.edges.size());
  for (std::uint32_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](std::uint32_t a, std::uint32_t b) { return table.edges[a].callee < table.edges[b].callee; });
  std::size_t next = 0;
  for (std::uint32_t id = 0; id < table.functions.size(); ++id) {
    const PstatsFunction& f = table.functions[id];
    write_key(f.file, f.line, f.name);
    w.begin_tuple(5);
    w.integer(f.primitive_calls);  // cc
    w.integer(f.calls);            // nc
    w.float64(seconds_of(f.self_ns));
    w.float64(seconds_of(f.cumulative_ns));
    w.begin_dict();
    while (next < order.size() && table.edges[order[next]].callee < id) ++next;  // malformed ids
    for (; next < order.size() && table.edges[order[next]].callee == id; ++next) {
      const PstatsEdge& e = table.edges[order[next]];
      if (e.caller >= table.functions.size()) continue;
      const PstatsFunction& caller = table.functions[e.caller];
      write_key(caller.file, caller.line, caller.name);
      w.begin_tuple(4);
      w.integer(e.calls);            // nc first in an edge, as cProfile stores it
      w.integer(e.primitive_calls);  // cc
      w.float64(seconds_of(e.self_ns));
      w.float64(seconds_of(e.cumulative_ns));
    }
    w.end_dict();
  }
  w.end_dict();
  return out;
}

void write_pstats(const PstatsTable& table, const std::string& path) {
  reject_gzip(path);
  const std::string bytes = encode_pstats(table);
  const std::unique_ptr<detail::OutputSink> sink = detail::OutputSink::open_file(path);
  sink->write(bytes);
  sink->close();
}

// ---------------------------------------------------------------------------------------
// PstatsExporter

struct PstatsExporter::Sink {
  explicit Sink(const std::string& path) : output(path) {}
  detail::ReportOutput output;  // opened now: a bad path fails at construction, not at stop()
};

PstatsExporter::PstatsExporter(std::string path, PstatsOptions options)
    : path_(std::move(path)), options_(std::move(options)) {
  reject_gzip(path_);
  if (!options_.report_path.empty()) reject_gzip(options_.report_path);
  sink_ = std::make_unique<Sink>(path_);
  aggregator_.set_estimate_sampled(options_.estimate_sampled);
  aggregator_.set_on_cpu(options_.on_cpu);
  aggregator_.set_alloc_bytes(options_.alloc_bytes);
}

PstatsExporter::~PstatsExporter() = default;

void PstatsExporter::on_start(const TraceContext&) {
  aggregator_.reset();
  sink_->output.start_run();  // a later run creates the file again
}

void PstatsExporter::on_events(std::span<const Event> events, const TraceContext& context) {
  aggregator_.add(events, context);
}

void PstatsExporter::on_finish(const TraceContext& context, const SessionStats&) {
  aggregator_.finish(context.clock().stop_ns);
  PstatsTable table = aggregator_.table();
  sink_->output.write_run(encode_pstats(table));
  if (!options_.report_path.empty()) {
    PstatsReportOptions report;
    report.limit = options_.report_limit;
    report.title = path_;
    const std::unique_ptr<detail::OutputSink> text = detail::OutputSink::open_file(options_.report_path);
    text->write(format_pstats_report(table, report));
    text->close();
  }
  aggregator_.reset();  // free the rows; the table is kept below
  std::lock_guard<std::mutex> lock(mutex_);
  last_table_ = std::move(table);
}

PstatsTable PstatsExporter::table() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return last_table_;
}

std::vector<std::filesystem::path> PstatsExporter::output_paths() const {
  std::vector<std::filesystem::path> paths{path_};
  if (!options_.report_path.empty()) paths.emplace_back(options_.report_path);
  return paths;
}

std::shared_ptr<Exporter> pstats_exporter(const std::filesystem::path& path, PstatsOptions options) {
  return std::make_shared<PstatsExporter>(path.string(), std::move(options));
}

}  // namespace ringtrace
