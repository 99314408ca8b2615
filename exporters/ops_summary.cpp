// Captured-ops summary. Per thread, a ZoneTracker gives each closed zone; two counters
// per thread (ops open, regions open) decide at each close whether the zone is a
// top-level op and whether a region encloses it. Memory: per thread, per site, per
// distinct (region name, id) and per distinct (op, stack) outside regions.
#include "ringtrace/exporters/ops_summary.hpp"

#include <algorithm>
#include <array>
#include <optional>
#include <ostream>
#include <stdexcept>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

#include "numbers_only.hpp"
#include "output.hpp"
#include "report_text.hpp"
#include "thread_book.hpp"
#include "zone_tracker.hpp"

namespace ringtrace {
namespace {

constexpr std::size_t kMaxFrames = 8;  // frames kept per op outside regions

enum class SiteClass : std::uint8_t { unresolved, op, region, transparent, other };

struct GraphKey {
  std::uint32_t name;
  std::int64_t id;
  bool operator==(const GraphKey&) const = default;
};
struct GraphKeyHash {
  std::size_t operator()(const GraphKey& k) const noexcept {
    return std::hash<std::uint64_t>()(static_cast<std::uint64_t>(k.id) * 0x9E3779B97F4A7C15ull ^ k.name);
  }
};

struct MissingKey {
  std::uint32_t name = 0;
  std::uint32_t depth = 0;                         // frames used
  std::array<std::uint32_t, kMaxFrames> frames{};  // outermost first
  bool operator==(const MissingKey&) const = default;
};
struct MissingKeyHash {
  std::size_t operator()(const MissingKey& k) const noexcept {
    std::uint64_t h = 0xcbf29ce484222325ull ^ k.name;
    h = (h ^ k.depth) * 0x100000001b3ull;
    for (std::uint32_t i = 0; i < k.depth; ++i) h = (h ^ k.frames[i]) * 0x100000001b3ull;
    return static_cast<std::size_t>(h ^ (h >> 29));
  }
};
struct MissingTotals {
  std::uint64_t calls = 0;
  std::uint64_t total_ns = 0;
  std::uint64_t max_ns = 0;
};

struct ThreadState {
  std::uint32_t open_ops = 0;
  std::uint32_t open_regions = 0;
  bool active = false;  // ran an op or a region
  CaptureCounts counts;
  std::unordered_set<GraphKey, GraphKeyHash> graphs;
};

void append_counts_json(std::string& out, const CaptureCounts& c) {
  using detail::append_uint;
  out.append("\"unique_graphs\":");
  append_uint(out, c.unique_graphs);
  out.append(",\"graph_calls\":");
  append_uint(out, c.graph_calls);
  out.append(",\"captured_ops\":");
  append_uint(out, c.captured_ops);
  out.append(",\"total_ops\":");
  append_uint(out, c.total_ops);
  out.append(",\"ops_percent\":");
  detail::append_double(out, c.ops_percent());
  out.append(",\"captured_ns\":");
  append_uint(out, c.captured_ns);
  out.append(",\"total_ns\":");
  append_uint(out, c.total_ns);
  out.append(",\"time_percent\":");
  detail::append_double(out, c.time_percent());
  if (c.on_cpu) {
    out.append(",\"captured_on_cpu_ns\":");
    append_uint(out, c.captured_on_cpu_ns);
    out.append(",\"total_on_cpu_ns\":");
    append_uint(out, c.total_on_cpu_ns);
    out.append(",\"on_cpu_time_percent\":");
    detail::append_double(out, c.on_cpu_time_percent());
  }
}

void append_counts_csv(std::string& out, const CaptureCounts& c) {
  using detail::append_uint;
  append_uint(out, c.unique_graphs);
  out.push_back(',');
  append_uint(out, c.graph_calls);
  out.push_back(',');
  append_uint(out, c.captured_ops);
  out.push_back(',');
  append_uint(out, c.total_ops);
  out.push_back(',');
  detail::report::append_percent_number(out, c.captured_ops, c.total_ops);  // two decimals, as in the text
  out.push_back(',');
  append_uint(out, c.captured_ns);
  out.push_back(',');
  append_uint(out, c.total_ns);
  out.push_back(',');
  detail::report::append_percent_number(out, c.captured_ns, c.total_ns);
  if (c.on_cpu) {
    out.push_back(',');
    append_uint(out, c.captured_on_cpu_ns);
    out.push_back(',');
    append_uint(out, c.total_on_cpu_ns);
    out.push_back(',');
    detail::report::append_percent_number(out, c.captured_on_cpu_ns, c.total_on_cpu_ns);
  }
  out.append("\r\n");
}

std::string thread_label(const OpsSummaryThread& t) {
  std::string label = detail::report::terminal_text(t.name);
  if (!label.empty()) label.append(" ");
  label.append(t.name.empty() ? "tid " : "(tid ");
  detail::append_uint(label, t.os_tid);
  if (!t.name.empty()) label.append(")");
  return label;
}

std::string stack_text(const std::vector<std::string>& stack) {
  std::string s;
  for (const std::string& frame : stack) {
    if (!s.empty()) s.append(" >> ");
    s.append(detail::report::terminal_text(frame));
  }
  return s.empty() ? std::string("-") : s;
}

std::string format_text(const OpsSummary& summary, const OpsSummaryOptions& options) {
  using detail::report::format_percent;
  using detail::report::format_time;
  using detail::report::Unit;
  std::string out = "Captured ops: " + one_line(summary.total) + "\n";
  if (summary.estimated) out.append("Estimates: zones of sampled sites counted as many times as their sampling rate\n");
  if (!summary.filtered.empty()) {
    std::string line = summary.filtered;
    if (line[0] >= 'a' && line[0] <= 'z') line[0] = static_cast<char>(line[0] - 'a' + 'A');
    out.append(line + "\n");
  }
  if (!summary.threads.empty()) {
    std::vector<std::vector<std::string>> rows;
    const bool on_cpu = summary.total.on_cpu;
    auto row_of = [on_cpu](std::string label, const CaptureCounts& c) {
      std::vector<std::string> row{std::move(label),
                                   std::to_string(c.unique_graphs),
                                   std::to_string(c.graph_calls),
                                   std::to_string(c.captured_ops),
                                   std::to_string(c.total_ops),
                                   format_percent(c.captured_ops, c.total_ops),
                                   format_time(c.captured_ns, Unit::automatic),
                                   format_time(c.total_ns, Unit::automatic),
                                   format_percent(c.captured_ns, c.total_ns)};
      if (on_cpu) {
        row.push_back(format_time(c.captured_on_cpu_ns, Unit::automatic));
        row.push_back(format_time(c.total_on_cpu_ns, Unit::automatic));
        row.push_back(format_percent(c.captured_on_cpu_ns, c.total_on_cpu_ns));
      }
      return row;
    };
    for (const OpsSummaryThread& t : summary.threads) rows.push_back(row_of(thread_label(t), t.counts));
    rows.push_back(row_of("total", summary.total));
    std::vector<detail::report::TextColumn> columns = {{"Thread", true},  {"Graphs"},     {"Graph calls"},
                                                       {"Captured ops"},  {"Total ops"},  {"Ops %"},
                                                       {"Captured time"}, {"Total time"}, {"Time %"}};
    if (on_cpu) {
      columns.push_back({"Captured on-CPU"});
      columns.push_back({"Total on-CPU"});
      columns.push_back({"On-CPU time %"});
    }
    out.append(detail::report::render_table(columns, rows));
  }
  if (summary.missing.empty()) {
    out.append(summary.total.total_ops == 0 ? "No ops.\n" : "Every op ran inside a region.\n");
  } else {
    const std::size_t shown =
        options.missing_limit == 0 ? summary.missing.size() : std::min(options.missing_limit, summary.missing.size());
    out.append("Ops outside any region, most expensive first");
    if (shown < summary.missing.size()) {
      out.append(" (" + std::to_string(shown) + " of " + std::to_string(summary.missing.size()) + ")");
    }
    out.append(":\n");
    std::vector<std::vector<std::string>> rows;
    for (std::size_t i = 0; i < shown; ++i) {
      const MissingOp& m = summary.missing[i];
      rows.push_back({format_time(m.total_ns, Unit::automatic), std::to_string(m.calls),
                      format_time(m.calls == 0 ? 0 : m.total_ns / m.calls, Unit::automatic),
                      format_time(m.max_ns, Unit::automatic), detail::report::terminal_text(m.name),
                      stack_text(m.stack)});
    }
    out.append(detail::report::render_table(
        {{"Total"}, {"Calls"}, {"Avg"}, {"Max"}, {"Op", true}, {"Stack (innermost frames)", true}}, rows));
  }
  if (summary.dropped > 0) {
    out.append("Dropped events: " + std::to_string(summary.dropped) + " (the counts above are a lower bound)\n");
  }
  if (summary.closed_at_stop > 0) {
    out.append("Zones still open at stop, closed at the stop time: " + std::to_string(summary.closed_at_stop) + "\n");
  }
  return out;
}

std::string format_csv(const OpsSummary& summary) {
  std::string out =
      "scope,thread,os_tid,thread_name,unique_graphs,graph_calls,captured_ops,total_ops,ops_percent,"
      "captured_ns,total_ns,time_percent";
  if (summary.total.on_cpu) out.append(",captured_on_cpu_ns,total_on_cpu_ns,on_cpu_time_percent");
  out.append("\r\n");
  for (const OpsSummaryThread& t : summary.threads) {
    out.append("thread,");
    detail::append_uint(out, t.thread);
    out.push_back(',');
    detail::append_uint(out, t.os_tid);
    out.push_back(',');
    detail::append_csv_field(out, t.name);
    out.push_back(',');
    append_counts_csv(out, t.counts);
  }
  out.append("total,,,,");
  append_counts_csv(out, summary.total);
  return out;
}

std::string format_json(const OpsSummary& summary) {
  std::string out = "{\"format\":\"ringtrace-ops-summary\",\"version\":1,";
  if (summary.estimated) out.append("\"estimated\":true,");
  if (!summary.filtered.empty()) {
    out.append("\"filtered\":");
    detail::append_json_string(out, summary.filtered);
    out.push_back(',');
  }
  out.append("\"total\":{");
  append_counts_json(out, summary.total);
  out.append("},\"threads\":[");
  for (std::size_t i = 0; i < summary.threads.size(); ++i) {
    const OpsSummaryThread& t = summary.threads[i];
    out.append(i ? ",{" : "{");
    out.append("\"thread\":");
    detail::append_uint(out, t.thread);
    out.append(",\"os_tid\":");
    detail::append_uint(out, t.os_tid);
    out.append(",\"name\":");
    detail::append_json_string(out, t.name);
    out.push_back(',');
    append_counts_json(out, t.counts);
    out.push_back('}');
  }
  out.append("],\"missing\":[");
  for (std::size_t i = 0; i < summary.missing.size(); ++i) {
    const MissingOp& m = summary.missing[i];
    out.append(i ? ",{" : "{");
    out.append("\"name\":");
    detail::append_json_string(out, m.name);
    out.append(",\"stack\":[");
    for (std::size_t f = 0; f < m.stack.size(); ++f) {
      if (f) out.push_back(',');
      detail::append_json_string(out, m.stack[f]);
    }
    out.append("],\"calls\":");
    detail::append_uint(out, m.calls);
    out.append(",\"total_ns\":");
    detail::append_uint(out, m.total_ns);
    out.append(",\"max_ns\":");
    detail::append_uint(out, m.max_ns);
    out.push_back('}');
  }
  out.append("],\"dropped\":");
  detail::append_uint(out, summary.dropped);
  out.append(",\"closed_at_stop\":");
  detail::append_uint(out, summary.closed_at_stop);
  out.append("}\n");
  return out;
}

}  // namespace

double CaptureCounts::ops_percent() const { return detail::report::percent(captured_ops, total_ops); }
double CaptureCounts::time_percent() const { return detail::report::percent(captured_ns, total_ns); }
double CaptureCounts::on_cpu_time_percent() const {
  return detail::report::percent(captured_on_cpu_ns, total_on_cpu_ns);
}

std::string one_line(const CaptureCounts& c) {
  std::string s;
  detail::append_uint(s, c.unique_graphs);
  s.append(" graphs ");
  detail::append_uint(s, c.graph_calls);
  s.append(" graph calls ");
  detail::append_uint(s, c.captured_ops);
  s.push_back('/');
  detail::append_uint(s, c.total_ops);
  s.append(" = ");
  detail::append_uint(s, detail::report::whole_percent(c.captured_ops, c.total_ops));
  s.append("% ops ");
  detail::append_uint(s, detail::report::whole_percent(c.captured_ns, c.total_ns));
  s.append("% time");
  if (c.on_cpu) {
    s.push_back(' ');
    detail::append_uint(s, detail::report::whole_percent(c.captured_on_cpu_ns, c.total_on_cpu_ns));
    s.append("% on-CPU time");
  }
  return s;
}

std::string format_ops_summary(const OpsSummary& summary, const OpsSummaryOptions& options) {
  switch (options.format) {
    case OpsSummaryOptions::Format::csv:
      return format_csv(summary);
    case OpsSummaryOptions::Format::json:
      return format_json(summary);
    case OpsSummaryOptions::Format::text:
      break;
  }
  return format_text(summary, options);
}

namespace detail {

// One run's aggregation: everything a run adds to, made afresh by one assignment at
// on_start (and after on_finish, to free it) from the exporter's options: nothing of a
// run reaches the next. Not in the anonymous namespace: there, g++ 12 inlines its calls
// otherwise and the feed took 30% longer (bench_summary_table).
struct OpsSummaryRun {
  OpsSummaryRun() = default;
  explicit OpsSummaryRun(const OpsSummaryOptions& exporter_options)
      : options(exporter_options), stack_frames(std::min(exporter_options.stack_frames, kMaxFrames)) {}

  OpsSummaryOptions options;  // the exporter's
  detail::ZoneTracker tracker;
  detail::ThreadBook book;
  detail::SampleRates rates;
  std::vector<SiteClass> site_class;     // by SiteId
  std::vector<std::uint32_t> site_name;  // by SiteId: index into names
  std::vector<std::string> names;
  std::unordered_map<std::string, std::uint32_t> name_index;
  std::vector<ThreadState> threads;  // by ThreadId
  std::unordered_set<GraphKey, GraphKeyHash> graphs;
  std::unordered_map<MissingKey, MissingTotals, MissingKeyHash> missing;
  std::size_t stack_frames = 3;

  [[gnu::noinline]] void resolve_sites(SiteId up_to, const TraceContext& context) {
    const std::size_t first = site_class.size();
    site_class.resize(std::max<std::size_t>(up_to + 1, context.site_count()), SiteClass::unresolved);
    site_name.resize(site_class.size(), 0);
    for (std::size_t id = first; id < site_class.size() && id < context.site_count(); ++id) {
      const SiteInfo& info = context.site(static_cast<SiteId>(id));
      const std::string_view name = info.name;
      auto [it, inserted] = name_index.try_emplace(std::string(name), static_cast<std::uint32_t>(names.size()));
      if (inserted) names.emplace_back(name);
      site_name[id] = it->second;
      auto listed = [&](const std::vector<std::string>& list) {
        return std::find(list.begin(), list.end(), name) != list.end();
      };
      if (info.kind == SiteKind::region || (info.kind == SiteKind::zone && listed(options.region_names))) {
        site_class[id] = SiteClass::region;
      } else if (info.kind == SiteKind::zone && listed(options.transparent_names)) {
        site_class[id] = SiteClass::transparent;
      } else if (info.kind == SiteKind::zone) {
        site_class[id] = SiteClass::op;
      } else {
        site_class[id] = SiteClass::other;
      }
    }
  }

  ThreadState& thread(ThreadId id) {
    if (id >= threads.size()) [[unlikely]]
      threads.resize(id + 1);
    return threads[id];
  }

  void on_close(const detail::ClosedZone& z, std::span<const detail::OpenZone> outer) {
    ThreadState& t = threads[z.thread];
    switch (site_class[z.site]) {
      case SiteClass::region: {
        t.open_regions -= 1;
        t.counts.graph_calls += z.weight;  // weight: 1 unless estimating sampled sites
        const GraphKey key{site_name[z.site], z.value};
        if (t.graphs.insert(key).second) graphs.insert(key);
        break;
      }
      case SiteClass::op:
        t.open_ops -= 1;
        if (t.open_ops == 0) {  // not nested inside another op
          t.counts.total_ops += z.weight;
          t.counts.total_ns += z.total_ns * z.weight;
          t.counts.total_on_cpu_ns += z.on_cpu_ns() * z.weight;  // total_ns without switches
          if (t.open_regions > 0) {
            t.counts.captured_ops += z.weight;
            t.counts.captured_ns += z.total_ns * z.weight;
            t.counts.captured_on_cpu_ns += z.on_cpu_ns() * z.weight;
          } else {
            add_missing(z, outer);
          }
        }
        break;
      default:
        break;
    }
  }

  void add_missing(const detail::ClosedZone& z, std::span<const detail::OpenZone> outer) {
    MissingKey key;
    key.name = site_name[z.site];
    const std::size_t n = std::min(stack_frames, outer.size());
    key.depth = static_cast<std::uint32_t>(n);
    for (std::size_t i = 0; i < n; ++i) key.frames[i] = site_name[outer[outer.size() - n + i].site];
    MissingTotals& m = missing[key];
    m.calls += z.weight;
    m.total_ns += z.total_ns * z.weight;
    m.max_ns = std::max(m.max_ns, z.total_ns);
  }

  void feed(std::span<const Event> events, const TraceContext& context) {
    for (const Event& e : events) {
      if (e.kind == EventKind::zone_begin) {
        if (e.site >= site_class.size()) [[unlikely]]
          resolve_sites(e.site, context);
        ThreadState& t = thread(e.thread);
        book.see(e.thread, context);  // named at finish, perhaps after its row was folded
        const SiteClass c = site_class[e.site];
        t.open_ops += c == SiteClass::op ? 1 : 0;
        t.open_regions += c == SiteClass::region ? 1 : 0;
        t.active |= c == SiteClass::op || c == SiteClass::region;
        tracker.feed(
            e, [](const detail::ClosedZone&, std::span<const detail::OpenZone>) {}, 0,
            options.estimate_sampled ? rates.of(e.site, context) : 1);
      } else if (e.kind == EventKind::zone_end) {
        tracker.feed(
            e, [this](const detail::ClosedZone& z, std::span<const detail::OpenZone> outer) { on_close(z, outer); });
      } else if (detail::is_switch(e.kind)) [[unlikely]] {
        tracker.feed(e, [](const detail::ClosedZone&, std::span<const detail::OpenZone>) {});
      }
    }
  }

  OpsSummary finish(const TraceContext& context, const SessionStats& stats) {
    tracker.close_open(
        context.clock().stop_ns,
        [this](const detail::ClosedZone& z, std::span<const detail::OpenZone> outer) { on_close(z, outer); });
    OpsSummary s;
    for (ThreadId id = 0; id < threads.size(); ++id) {
      const ThreadState& t = threads[id];
      if (!t.active) continue;
      OpsSummaryThread row;
      row.thread = id;
      if (id < context.thread_count()) {
        const ThreadInfo& info = book.info(id, context);
        row.os_tid = info.os_tid;
        row.name = info.name;
      }
      row.counts = t.counts;
      row.counts.unique_graphs = t.graphs.size();
      s.total.graph_calls += t.counts.graph_calls;
      s.total.captured_ops += t.counts.captured_ops;
      s.total.total_ops += t.counts.total_ops;
      s.total.captured_ns += t.counts.captured_ns;
      s.total.total_ns += t.counts.total_ns;
      s.total.captured_on_cpu_ns += t.counts.captured_on_cpu_ns;
      s.total.total_on_cpu_ns += t.counts.total_on_cpu_ns;
      s.threads.push_back(std::move(row));
    }
    // Threads in the order of their first event, as in every exporter and stats().
    std::stable_sort(s.threads.begin(), s.threads.end(), [&](const OpsSummaryThread& a, const OpsSummaryThread& b) {
      const auto index = [&](ThreadId id) {
        return id < context.thread_count() ? book.info(id, context).sort_index : id;
      };
      return index(a.thread) < index(b.thread);
    });
    s.total.unique_graphs = graphs.size();
    // On-CPU numbers when the stream had switches (else they are the wall times: left out).
    s.total.on_cpu = tracker.any_switches();
    for (OpsSummaryThread& t : s.threads) t.counts.on_cpu = s.total.on_cpu;
    s.estimated = options.estimate_sampled && rates.any_sampled();
    s.filtered = detail::report::filter_line(context);
    s.missing.reserve(missing.size());
    for (const auto& [key, totals] : missing) {
      MissingOp m;
      m.name = names[key.name];
      for (std::uint32_t i = 0; i < key.depth; ++i) m.stack.push_back(names[key.frames[i]]);
      m.calls = totals.calls;
      m.total_ns = totals.total_ns;
      m.max_ns = totals.max_ns;
      s.missing.push_back(std::move(m));
    }
    std::sort(s.missing.begin(), s.missing.end(), [](const MissingOp& a, const MissingOp& b) {
      if (a.total_ns != b.total_ns) return a.total_ns > b.total_ns;
      if (a.name != b.name) return a.name < b.name;
      return a.stack < b.stack;
    });
    s.dropped = stats.dropped;
    s.closed_at_stop = stats.closed_at_stop;
    return s;
  }
};

}  // namespace detail

struct OpsSummaryExporter::Impl {
  OpsSummaryOptions options;
  std::optional<detail::ReportOutput> output;  // none: numbers only (ops_summary(trace))
  OpsSummary result;
  detail::OpsSummaryRun run;  // the current run's aggregation
};

OpsSummaryExporter::OpsSummaryExporter(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
OpsSummaryExporter::~OpsSummaryExporter() = default;

void OpsSummaryExporter::on_start(const TraceContext&) {
  impl_->run = detail::OpsSummaryRun(impl_->options);
  if (impl_->output) impl_->output->start_run();
}

void OpsSummaryExporter::on_events(std::span<const Event> events, const TraceContext& context) {
  impl_->run.feed(events, context);
}

void OpsSummaryExporter::on_finish(const TraceContext& context, const SessionStats& stats) {
  impl_->result = impl_->run.finish(context, stats);
  if (impl_->output) impl_->output->write_run(format_ops_summary(impl_->result, impl_->options));
  impl_->run = detail::OpsSummaryRun(impl_->options);  // release the run's memory; the result stays
}

const OpsSummary& OpsSummaryExporter::summary() const { return impl_->result; }

std::unique_ptr<OpsSummaryExporter> detail::ops_summary_numbers(const OpsSummaryOptions& options) {
  auto impl = std::make_unique<OpsSummaryExporter::Impl>();
  impl->options = options;
  return std::make_unique<OpsSummaryExporter>(std::move(impl));
}

std::vector<std::filesystem::path> OpsSummaryExporter::output_paths() const {
  if (!impl_->output || impl_->output->path().empty()) return {};
  return {impl_->output->path()};
}

std::shared_ptr<Exporter> ops_summary_exporter(const std::filesystem::path& path, OpsSummaryOptions options) {
  auto impl = std::make_unique<OpsSummaryExporter::Impl>();
  impl->options = std::move(options);
  impl->output.emplace(path.string());  // fails now, naming the path
  return std::make_shared<OpsSummaryExporter>(std::move(impl));
}

std::shared_ptr<Exporter> ops_summary_exporter(std::ostream& stream, OpsSummaryOptions options) {
  auto impl = std::make_unique<OpsSummaryExporter::Impl>();
  impl->options = std::move(options);
  impl->output.emplace(stream, "ops summary stream");
  return std::make_shared<OpsSummaryExporter>(std::move(impl));
}

}  // namespace ringtrace
