// Key-averages table. Each zone begin is mapped to its group (by site, or by the pair
// (parent group, site) when grouping by stack), which rides on the ZoneTracker's open
// zone as its tag, marked when an outer activation of the same group is already open
// on that thread (found by scanning the thread's open zones, which are in L1; a
// per-group count covers stacks deeper than the scan), so that recursion is counted
// once in Total. The ZoneTracker gives total and self times. A zone's arguments come
// after its begin: the one rows are grouped by (input shapes, TableOptions::group_by_arg)
// moves the open zone to the group of its value (its tag changed in place), and its
// `flops` are kept per thread and depth until it closes. Memory: per site, per group (a
// bounded histogram each) and per thread; nothing per event.
#include "ringtrace/exporters/table.hpp"

#include <algorithm>
#include <map>
#include <optional>
#include <ostream>
#include <stdexcept>
#include <string_view>
#include <unordered_map>
#include <utility>  // std::exchange
#include <variant>

#include "latency_histogram.hpp"
#include "numbers_only.hpp"
#include "output.hpp"
#include "report_text.hpp"
#include "step_zones.hpp"
#include "u64_map.hpp"
#include "zone_tracker.hpp"

namespace ringtrace {
namespace {

constexpr std::size_t kMaxStackFrames = 8;
constexpr std::uint32_t kNoGroup = 0xFFFFFFFFu;

// What a zone close updates, in one cache line (kept apart from the key so that a
// close touches as few lines as possible when there are many groups). Calls, min and
// max are the histogram's.
struct alignas(64) Group {
  std::uint64_t self_ns = 0;
  std::uint64_t total_ns = 0;          // outermost activations only
  std::uint64_t inclusive_ns = 0;      // every call (for the mean)
  detail::LatencyHistogram histogram;  // inclusive time per call
};
static_assert(sizeof(Group) == 64);

// With thousands of groups, a close's histogram bucket is a cache miss (the buckets of
// all groups are megabytes). The close prefetches the bucket and leaves the increment
// in this queue; it is done kDepth closes later, when the line has arrived.
class DeferredIncrements {
 public:
  static constexpr std::size_t kDepth = 16;
  void push(std::vector<Group>& groups, std::uint32_t group, std::uint32_t bucket) {
    __builtin_prefetch(groups[group].histogram.slot(bucket), 1);
    Entry& e = entries_[next_ % kDepth];
    if (next_ >= kDepth) groups[e.group].histogram.increment(e.bucket);
    e = Entry{group, bucket};
    ++next_;
  }
  void flush(std::vector<Group>& groups) {
    for (std::size_t i = next_ > kDepth ? next_ - kDepth : 0; i < next_; ++i) {
      const Entry& e = entries_[i % kDepth];
      groups[e.group].histogram.increment(e.bucket);
    }
    next_ = 0;
  }

 private:
  struct Entry {
    std::uint32_t group;
    std::uint32_t bucket;
  };
  Entry entries_[kDepth] = {};
  std::size_t next_ = 0;
};

// A group's on-CPU numbers, kept apart (a table without context switches never touches
// them): as Group's, of each zone's on-CPU time.
struct CpuGroup {
  std::uint64_t self_ns = 0;
  std::uint64_t total_ns = 0;
  std::uint64_t inclusive_ns = 0;
  detail::LatencyHistogram histogram;
};

// A group's bytes allocated less freed (Config::memory), kept apart as CpuGroup's.
struct MemoryGroup {
  std::int64_t total_bytes = 0;  // outermost activations only, children included
  std::int64_t self_bytes = 0;   // every call, children excluded
};

// A group's key and order, read when the table is made. Its key as a vector (group_index):
// name, node, arg, frames...
struct GroupKey {
  std::uint32_t name = 0;                        // index into names
  std::uint32_t node = 0;                        // index into node_names (group_by_node), else 0
  std::uint32_t arg = 0;                         // index into arg_values (0: "", no argument)
  std::vector<std::uint32_t> frames;             // enclosing names, outermost first (stack grouping)
  std::uint64_t first_seen = ~std::uint64_t{0};  // order of the group's first counted call
};
constexpr std::size_t kKeyFrames = 3;  // a key vector's frames start after name, node, arg

// Tag of an open zone in the tracker: its group, and kNested when an outer activation of
// the same group is open on the same thread. (2^31 groups would take over 128 GB.)
constexpr std::uint32_t kNested = 0x80000000u;
constexpr std::size_t kScanDepth = 32;  // open zones scanned for an outer activation

struct ThreadState {
  std::vector<std::uint32_t> deep;   // by group: open activations at depth >= kScanDepth
  std::vector<std::uint64_t> flops;  // by depth: the open zone's `flops` so far
};

// What an arg event's key is to the table (TableRun::arg_role, by site).
constexpr std::uint8_t kArgSeen = 1;   // looked up
constexpr std::uint8_t kArgFlops = 2;  // "flops": summed per row
constexpr std::uint8_t kArgKey = 4;    // the key rows are grouped by

// The FLOP units of PyTorch's table: the unit of the smallest positive count shown.
constexpr const char* kFlopUnits[] = {"FLOPs", "KFLOPs", "MFLOPs", "GFLOPs", "TFLOPs", "PFLOPs"};
constexpr std::size_t kFlopUnitCount = sizeof kFlopUnits / sizeof kFlopUnits[0];

// The index into kFlopUnits for the smallest positive count (PyTorch's auto_scale_flops:
// floor(log10(n) / 3), at most PFLOPs), computed on integers.
std::size_t flop_unit(std::uint64_t smallest) {
  std::size_t digits = 0;
  for (std::uint64_t n = smallest; n >= 10; n /= 10) ++digits;  // floor(log10(n))
  return std::min(digits / 3, kFlopUnitCount - 1);
}

// n in units of 10^(3 * unit) with three decimals, rounded half up: 1234567 in KFLOPs is
// "1234.567", in MFLOPs "1.235".
std::string scaled_flops(std::uint64_t n, std::size_t unit) {
  std::uint64_t divisor = 1;
  for (std::size_t i = 0; i < unit; ++i) divisor *= 1000;
  std::uint64_t whole = n / divisor;
  const std::uint64_t rest = n % divisor;  // < 10^15: rest * 1000 fits
  std::uint64_t thousandths = divisor == 1 ? 0 : (rest * 1000 + divisor / 2) / divisor;
  if (thousandths == 1000) {
    ++whole;
    thousandths = 0;
  }
  std::string out = std::to_string(whole);
  const std::string fraction = std::to_string(thousandths);
  out.push_back('.');
  out.append(3 - fraction.size(), '0');
  out.append(fraction);
  return out;
}

// The smallest positive flops among the rows; 0 when no row has any.
std::uint64_t smallest_flops(const KeyAverages& table) {
  std::uint64_t smallest = 0;
  for (const TableRow& r : table.rows) {
    if (r.flops != 0 && (smallest == 0 || r.flops < smallest)) smallest = r.flops;
  }
  return smallest;
}

// A node column when rows are grouped by node and the stream came from several.
bool shows_nodes(const KeyAverages& table) { return table.nodes > 1; }

// The text column of the grouping argument: PyTorch's name for the input shapes.
std::string arg_header(const std::string& key) { return key == "input_shapes" ? "Input Shapes" : key; }

// PyTorch's widths: input shapes cut at 80 code points, source locations at 75 (keeping
// their end, the file's name and line).
constexpr std::size_t kArgWidth = 80;
constexpr std::size_t kSourceWidth = 75;

// `s` (valid UTF-8) cut to its last `width` code points, the first three of which become
// "..." when it is longer.
std::string keep_end(const std::string& s, std::size_t width) {
  const std::size_t points = detail::report::display_width(s);
  if (points <= width) return s;
  std::size_t skip = points - width + 3;  // code points to drop, then "..."
  std::size_t at = 0;
  while (at < s.size() && skip > 0) {
    ++at;
    while (at < s.size() && (static_cast<unsigned char>(s[at]) & 0xC0) == 0x80) ++at;
    --skip;
  }
  return "..." + s.substr(at);
}

std::string source_text(const TableRow& r) {
  if (r.source_file.empty()) return {};
  std::string s = detail::report::terminal_text(r.source_file) + ":" + std::to_string(r.source_line);
  s = keep_end(s, kSourceWidth);
  if (r.source_locations > 1) s += " and " + std::to_string(r.source_locations - 1) + " more";
  return s;
}

detail::report::Unit unit_of(TableOptions::TimeUnit u) {
  switch (u) {
    case TableOptions::TimeUnit::s:
      return detail::report::Unit::s;
    case TableOptions::TimeUnit::ms:
      return detail::report::Unit::ms;
    case TableOptions::TimeUnit::us:
      return detail::report::Unit::us;
    case TableOptions::TimeUnit::ns:
      return detail::report::Unit::ns;
    case TableOptions::TimeUnit::automatic:
      break;
  }
  return detail::report::Unit::automatic;
}

std::string join_stack(const std::vector<std::string>& stack, bool terminal) {
  std::string s;
  for (const std::string& frame : stack) {
    if (!s.empty()) s.append(" >> ");
    s.append(terminal ? detail::report::terminal_text(frame) : frame);
  }
  return s;
}

std::string thread_label(const ThreadDrops& t) {
  std::string label = detail::report::terminal_text(t.name);
  if (label.empty()) label = "tid " + std::to_string(t.os_tid);
  return label;
}

std::string format_text(const KeyAverages& table, const TableOptions& options) {
  using detail::report::format_percent;
  using detail::report::format_time;
  const detail::report::Unit unit = unit_of(options.time_unit);
  const bool with_stack = options.group_by_stack_n > 0;
  const bool with_nodes = shows_nodes(table);
  const bool with_arg = !table.arg_key.empty();
  const std::uint64_t smallest = smallest_flops(table);
  const std::size_t flops_unit = flop_unit(smallest);
  std::vector<detail::report::TextColumn> columns = {{"Name", true}, {"Self %"}, {"Self"}, {"Total %"},
                                                     {"Total"},      {"Avg"},    {"Min"},  {"Max"},
                                                     {"p50"},        {"p99"},    {"Calls"}};
  if (table.on_cpu) {
    for (const char* c : {"On-CPU Self", "On-CPU Total", "On-CPU Avg", "On-CPU p50", "On-CPU p99"}) {
      columns.push_back(detail::report::TextColumn{c});
    }
  }
  if (table.memory) {  // PyTorch's profile_memory columns
    for (const char* c : {"CPU Mem", "Self CPU Mem"}) {
      columns.push_back(detail::report::TextColumn{c});
    }
  }
  if (with_nodes) columns.push_back({table.processes ? "Process" : "Node ID", true});
  if (with_arg) columns.push_back({detail::report::terminal_text(arg_header(table.arg_key)), true});
  if (smallest != 0) columns.push_back({std::string("Total ") + kFlopUnits[flops_unit]});
  if (with_stack) columns.push_back({"Stack", true});
  if (table.source_locations) columns.push_back({"Source Location", true});
  std::vector<std::vector<std::string>> rows;
  rows.reserve(table.rows.size());
  for (const TableRow& r : table.rows) {
    std::vector<std::string> row = {
        detail::report::truncate_to_width(detail::report::terminal_text(r.name), options.name_width),
        format_percent(r.self_ns, table.self_total_ns),
        format_time(r.self_ns, unit),
        format_percent(r.total_ns, table.self_total_ns),
        format_time(r.total_ns, unit),
        format_time(r.avg_ns, unit),
        format_time(r.min_ns, unit),
        format_time(r.max_ns, unit),
        format_time(r.p50_ns, unit),
        format_time(r.p99_ns, unit),
        std::to_string(r.calls)};
    if (table.on_cpu) {
      for (const std::uint64_t v :
           {r.on_cpu_self_ns, r.on_cpu_total_ns, r.on_cpu_avg_ns, r.on_cpu_p50_ns, r.on_cpu_p99_ns}) {
        row.push_back(format_time(v, unit));
      }
    }
    if (table.memory) {
      row.push_back(detail::report::format_memory(r.cpu_memory_usage));
      row.push_back(detail::report::format_memory(r.self_cpu_memory_usage));
    }
    if (with_nodes) row.push_back(detail::report::terminal_text(r.node_id));
    if (with_arg) row.push_back(detail::report::truncate_to_width(detail::report::terminal_text(r.arg), kArgWidth));
    if (smallest != 0) row.push_back(r.flops == 0 ? "--" : scaled_flops(r.flops, flops_unit));
    if (with_stack) row.push_back(join_stack(r.stack, true));
    if (table.source_locations) row.push_back(source_text(r));
    rows.push_back(std::move(row));
  }
  std::string out;
  if (table.estimated) out.append("Estimates: zones of sampled sites counted as many times as their sampling rate\n");
  if (options.top_level_only) out.append("Top-level zones only\n");
  if (table.on_cpu) {
    out.append("On-CPU columns: each zone's time less the time its thread was switched out inside it\n");
  }
  out.append(detail::report::render_table(columns, rows));
  if (table.rows.size() < table.groups) {
    out.append("Rows shown: " + std::to_string(table.rows.size()) + " of " + std::to_string(table.groups) + "\n");
  }
  out.append("Self time total: " + format_time(table.self_total_ns, unit) + "\n");
  if (table.memory && table.frees_size_unknown != 0) {
    out.append("Memory: " + std::to_string(table.frees_size_unknown) +
               (table.frees_size_unknown == 1 ? " free" : " frees") +
               " in zones of blocks of unknown size (allocated before the recording, or past "
               "Config::memory_max_blocks): not in the CPU Mem columns\n");
  }
  out.append("Dropped events: " + std::to_string(table.dropped));
  if (!table.dropped_by_thread.empty()) {
    out.append(" (");
    for (std::size_t i = 0; i < table.dropped_by_thread.size(); ++i) {
      if (i) out.append(", ");
      out.append(thread_label(table.dropped_by_thread[i]) + ": " + std::to_string(table.dropped_by_thread[i].dropped));
    }
    out.append(")");
  }
  out.push_back('\n');
  if (table.closed_at_stop > 0) {
    out.append("Zones still open at stop, closed at the stop time: " + std::to_string(table.closed_at_stop) + "\n");
  }
  if (!table.filtered.empty()) {
    std::string line = table.filtered;
    if (line[0] >= 'a' && line[0] <= 'z') line[0] = static_cast<char>(line[0] - 'a' + 'A');
    out.append(line + "\n");
  }
  return out;
}

// Percentages with two decimals (as in the text table), times in whole nanoseconds; the
// stack column only when rows are grouped by stack, and the other optional columns when
// the text form has them (flops as the raw count).
std::string format_csv(const KeyAverages& table, const TableOptions& options) {
  const bool stacks = options.group_by_stack_n > 0;
  const bool nodes = shows_nodes(table);
  const bool arg = !table.arg_key.empty();
  const bool flops = smallest_flops(table) != 0;
  std::string out = stacks ? "name,stack," : "name,";
  if (nodes) out.append(table.processes ? "process," : "node_id,");
  if (arg) {
    detail::append_csv_field(out, "arg:" + table.arg_key);
    out.push_back(',');
  }
  out.append("self_percent,self_ns,total_percent,total_ns,avg_ns,min_ns,max_ns,p50_ns,p99_ns,calls");
  if (table.on_cpu) out.append(",on_cpu_self_ns,on_cpu_total_ns,on_cpu_avg_ns,on_cpu_p50_ns,on_cpu_p99_ns");
  if (table.memory) out.append(",cpu_memory_bytes,self_cpu_memory_bytes");
  if (flops) out.append(",flops");
  if (table.source_locations) out.append(",source_file,source_line,source_locations");
  out.append("\r\n");
  for (const TableRow& r : table.rows) {
    detail::append_csv_field(out, r.name);
    out.push_back(',');
    if (stacks) {
      detail::append_csv_field(out, join_stack(r.stack, false));
      out.push_back(',');
    }
    if (nodes) {
      detail::append_csv_field(out, r.node_id);
      out.push_back(',');
    }
    if (arg) {
      detail::append_csv_field(out, r.arg);
      out.push_back(',');
    }
    detail::report::append_percent_number(out, r.self_ns, table.self_total_ns);
    out.push_back(',');
    detail::append_uint(out, r.self_ns);
    out.push_back(',');
    detail::report::append_percent_number(out, r.total_ns, table.self_total_ns);
    for (const std::uint64_t v : {r.total_ns, r.avg_ns, r.min_ns, r.max_ns, r.p50_ns, r.p99_ns, r.calls}) {
      out.push_back(',');
      detail::append_uint(out, v);
    }
    if (table.on_cpu) {
      for (const std::uint64_t v :
           {r.on_cpu_self_ns, r.on_cpu_total_ns, r.on_cpu_avg_ns, r.on_cpu_p50_ns, r.on_cpu_p99_ns}) {
        out.push_back(',');
        detail::append_uint(out, v);
      }
    }
    if (table.memory) {
      for (const std::int64_t v : {r.cpu_memory_usage, r.self_cpu_memory_usage}) {
        out.push_back(',');
        detail::append_int(out, v);
      }
    }
    if (flops) {
      out.push_back(',');
      detail::append_uint(out, r.flops);
    }
    if (table.source_locations) {
      out.push_back(',');
      detail::append_csv_field(out, r.source_file);
      out.push_back(',');
      detail::append_uint(out, r.source_line);
      out.push_back(',');
      detail::append_uint(out, r.source_locations);
    }
    out.append("\r\n");
  }
  return out;
}

std::string format_json(const KeyAverages& table) {
  using detail::append_uint;
  std::string out = "{\"format\":\"ringtrace-key-averages\",\"version\":1,\"self_total_ns\":";
  append_uint(out, table.self_total_ns);
  out.append(",\"groups\":");
  append_uint(out, table.groups);
  out.append(",\"dropped\":");
  append_uint(out, table.dropped);
  if (table.memory) {
    out.append(",\"frees_size_unknown\":");
    append_uint(out, table.frees_size_unknown);
  }
  if (table.estimated) out.append(",\"estimated\":true");
  if (table.on_cpu) out.append(",\"on_cpu\":true");
  if (table.memory) out.append(",\"memory\":true");
  const bool nodes = shows_nodes(table);
  const bool flops = smallest_flops(table) != 0;
  if (nodes) {
    out.append(table.processes ? ",\"processes\":" : ",\"nodes\":");
    append_uint(out, table.nodes);
  }
  if (!table.arg_key.empty()) {
    out.append(",\"arg_key\":");
    detail::append_json_string(out, table.arg_key);
  }
  out.append(",\"dropped_by_thread\":[");
  for (std::size_t i = 0; i < table.dropped_by_thread.size(); ++i) {
    const ThreadDrops& t = table.dropped_by_thread[i];
    out.append(i ? ",{\"thread\":" : "{\"thread\":");
    append_uint(out, t.thread);
    out.append(",\"os_tid\":");
    append_uint(out, t.os_tid);
    out.append(",\"name\":");
    detail::append_json_string(out, t.name);
    out.append(",\"dropped\":");
    append_uint(out, t.dropped);
    out.push_back('}');
  }
  out.append("],\"closed_at_stop\":");
  append_uint(out, table.closed_at_stop);
  if (!table.filtered.empty()) {
    out.append(",\"filtered\":");
    detail::append_json_string(out, table.filtered);
  }
  out.append(",\"rows\":[");
  for (std::size_t i = 0; i < table.rows.size(); ++i) {
    const TableRow& r = table.rows[i];
    out.append(i ? ",{\"name\":" : "{\"name\":");
    detail::append_json_string(out, r.name);
    out.append(",\"stack\":[");
    for (std::size_t f = 0; f < r.stack.size(); ++f) {
      if (f) out.push_back(',');
      detail::append_json_string(out, r.stack[f]);
    }
    out.append("],\"self_percent\":");
    detail::append_double(out, r.self_percent);
    out.append(",\"self_ns\":");
    append_uint(out, r.self_ns);
    out.append(",\"total_percent\":");
    detail::append_double(out, r.total_percent);
    const std::pair<const char*, std::uint64_t> fields[] = {
        {"total_ns", r.total_ns}, {"avg_ns", r.avg_ns}, {"min_ns", r.min_ns}, {"max_ns", r.max_ns},
        {"p50_ns", r.p50_ns},     {"p99_ns", r.p99_ns}, {"calls", r.calls}};
    for (const auto& [key, value] : fields) {
      out.append(",\"");
      out.append(key);
      out.append("\":");
      append_uint(out, value);
    }
    if (table.on_cpu) {
      const std::pair<const char*, std::uint64_t> cpu[] = {{"on_cpu_self_ns", r.on_cpu_self_ns},
                                                           {"on_cpu_total_ns", r.on_cpu_total_ns},
                                                           {"on_cpu_avg_ns", r.on_cpu_avg_ns},
                                                           {"on_cpu_p50_ns", r.on_cpu_p50_ns},
                                                           {"on_cpu_p99_ns", r.on_cpu_p99_ns}};
      for (const auto& [key, value] : cpu) {
        out.append(",\"");
        out.append(key);
        out.append("\":");
        append_uint(out, value);
      }
    }
    if (table.memory) {
      out.append(",\"cpu_memory_bytes\":");
      detail::append_int(out, r.cpu_memory_usage);
      out.append(",\"self_cpu_memory_bytes\":");
      detail::append_int(out, r.self_cpu_memory_usage);
    }
    if (nodes) {
      out.append(table.processes ? ",\"process\":" : ",\"node_id\":");
      detail::append_json_string(out, r.node_id);
    }
    if (!table.arg_key.empty()) {
      out.append(",\"arg\":");
      detail::append_json_string(out, r.arg);
    }
    if (flops) {
      out.append(",\"flops\":");
      append_uint(out, r.flops);
    }
    if (table.source_locations) {
      out.append(",\"source_file\":");
      detail::append_json_string(out, r.source_file);
      out.append(",\"source_line\":");
      append_uint(out, r.source_line);
      out.append(",\"source_locations\":");
      append_uint(out, r.source_locations);
    }
    out.push_back('}');
  }
  out.append("]}\n");
  return out;
}

// The number a row is sorted by (larger first); 0 for name and first_seen.
std::uint64_t sort_number(const TableRow& r, TableOptions::SortBy by) {
  using S = TableOptions::SortBy;
  switch (by) {
    case S::self_percent:
    case S::self:
      return r.self_ns;
    case S::total_percent:
    case S::total:
      return r.total_ns;
    case S::avg:
      return r.avg_ns;
    case S::min:
      return r.min_ns;
    case S::max:
      return r.max_ns;
    case S::p50:
      return r.p50_ns;
    case S::p99:
      return r.p99_ns;
    case S::calls:
      return r.calls;
    case S::on_cpu_self:
      return r.on_cpu_self_ns;
    case S::on_cpu_total:
      return r.on_cpu_total_ns;
    case S::on_cpu_avg:
      return r.on_cpu_avg_ns;
    case S::on_cpu_p50:
      return r.on_cpu_p50_ns;
    case S::on_cpu_p99:
      return r.on_cpu_p99_ns;
    case S::cpu_memory:  // signed: the sign bit flipped keeps the order
      return static_cast<std::uint64_t>(r.cpu_memory_usage) ^ (std::uint64_t{1} << 63);
    case S::self_cpu_memory:
      return static_cast<std::uint64_t>(r.self_cpu_memory_usage) ^ (std::uint64_t{1} << 63);
    case S::flops:
      return r.flops;
    case S::name:
    case S::first_seen:
      break;
  }
  return 0;
}

}  // namespace

std::string format_table(const KeyAverages& table, const TableOptions& options) {
  switch (options.format) {
    case TableOptions::Format::csv:
      return format_csv(table, options);
    case TableOptions::Format::json:
      return format_json(table);
    case TableOptions::Format::text:
      break;
  }
  return format_text(table, options);
}

namespace detail {

std::string table_arg_key(const TableOptions& options);

// One run's aggregation: everything a run adds to, made afresh by one assignment at
// on_start (and after on_finish, to free it) from the exporter's options: nothing of a
// run reaches the next. Not in the anonymous namespace, where g++ 12 inlines its calls
// otherwise (the ops summary's feed took 30% longer there).
struct TableRun {
  TableRun() = default;
  explicit TableRun(const TableOptions& exporter_options)
      : options(exporter_options),
        stack_n(std::min(exporter_options.group_by_stack_n, kMaxStackFrames)),
        keyed(stack_n > 0 || exporter_options.group_by_node || exporter_options.group_by_process),
        arg_key(table_arg_key(exporter_options)),
        extras(exporter_options.source_locations) {}

  TableOptions options;  // the exporter's
  detail::ZoneTracker tracker;
  detail::SampleRates rates;
  std::size_t stack_n = 0;
  std::vector<std::uint32_t> site_name;   // by SiteId: index into names (kNoGroup: unresolved)
  std::vector<std::uint32_t> site_group;  // by SiteId (stack_n == 0)
  detail::StepSites steps;                // Session::step()'s zones: a row per step unless fold_steps
  std::vector<std::string> names;
  std::unordered_map<std::string, std::uint32_t> name_index;
  std::vector<Group> groups;
  DeferredIncrements deferred;  // histogram increments not yet done
  std::vector<GroupKey> keys;   // by group
  detail::U64Map transitions;   // (parent group + 1, site) -> group (stack grouping)
  std::map<std::vector<std::uint32_t>, std::uint32_t> group_index;  // (name, frames...) -> group
  std::vector<ThreadState> threads;
  std::uint64_t self_total_ns = 0;
  std::uint64_t next_seen = 0;
  // Groups found through `transitions` (the stack's, or a node's, with the site), not by
  // the site alone. A top-level zone's transition has kTopLevel | node for its parent.
  bool keyed = false;
  static constexpr std::uint32_t kTopLevel = 0x80000000u;
  // Nodes (group_by_node): each thread's, looked up at its first zone.
  std::vector<std::string> node_names;
  std::unordered_map<std::string, std::uint32_t> node_index;
  std::vector<std::uint32_t> thread_node;  // by ThreadId (kNoGroup: not looked up)
  // Arguments: the grouping key's values (0: "", a zone without it), each arg site's role,
  // the groups a zone moves to when its value arrives, the flops per group.
  std::string arg_key;
  std::vector<std::string> arg_values{std::string()};
  std::unordered_map<std::string, std::uint32_t> arg_index{{std::string(), 0u}};
  std::vector<std::uint8_t> arg_role;  // by SiteId: kArg* bits, 0 not looked up
  detail::U64Map regroups;             // (group, arg value) -> group
  std::vector<std::uint64_t> group_flops;
  bool any_flops = false;
  bool extras = false;                           // a close has more to do: flops, source locations
  std::vector<std::vector<SiteId>> group_sites;  // source_locations: each group's sites, first closed first
  // On-CPU: from the first zone closed after a switch event on (the zones closed before
  // were on-CPU for their whole time: their numbers are copied).
  bool on_cpu = false;
  std::vector<CpuGroup> cpu_groups;
  std::vector<MemoryGroup> memory_groups;  // by group, once the stream had a memory event
  // What the streams ended so far had (end_stream): one, or several when accumulating.
  struct Streams {
    bool sampled = false, switches = false, memory = false;
    std::uint64_t frees_size_unknown = 0, dropped = 0, closed_at_stop = 0;
    std::vector<ThreadDrops> dropped_by_thread;
  } streams;

  // key: name, node, arg, frames...
  std::uint32_t group_for_key(std::vector<std::uint32_t> key) {
    auto [it, inserted] = group_index.try_emplace(key, static_cast<std::uint32_t>(groups.size()));
    if (inserted) {
      GroupKey k;
      k.name = key[0];
      k.node = key[1];
      k.arg = key[2];
      k.frames.assign(key.begin() + kKeyFrames, key.end());
      keys.push_back(std::move(k));
      groups.emplace_back();
      group_flops.push_back(0);
      if (options.source_locations) group_sites.emplace_back();
    }
    return it->second;
  }

  bool by_node() const { return options.group_by_node || options.group_by_process; }

  // "name (pid N)" of process `pid` (a ThreadInfo::pid; 0: the context's own).
  static std::string process_label(const TraceContext& context, std::uint32_t pid) {
    const std::uint32_t id = pid != 0 ? pid : context.process_id();
    return context.process_name_of(pid) + " (pid " + std::to_string(id) + ")";
  }

  // The node (or process) of a thread's zones (group_by_node, group_by_process).
  std::uint32_t node_of(ThreadId thread, const TraceContext& context) {
    if (thread >= thread_node.size()) thread_node.resize(thread + 1, kNoGroup);
    if (thread_node[thread] == kNoGroup) {
      const std::uint32_t pid = context.thread(thread).pid;
      const std::string node =
          options.group_by_process ? process_label(context, pid) : std::string(context.node_id_of(pid));
      auto [it, inserted] = node_index.try_emplace(node, static_cast<std::uint32_t>(node_names.size()));
      if (inserted) node_names.push_back(node);
      thread_node[thread] = it->second;
    }
    return thread_node[thread];
  }

  [[gnu::noinline]] void resolve_site(SiteId site, const TraceContext& context) {
    if (site >= site_name.size()) {
      site_name.resize(std::max<std::size_t>(site + 1, context.site_count()), kNoGroup);
      site_group.resize(site_name.size(), kNoGroup);
    }
    const SiteInfo& info = context.site(site);
    // Session::step()'s zones "step #N" make one row "step #*" when asked, else a row
    // each (step_group).
    const std::string_view name = options.fold_steps && (info.options & SiteOptions::step) != 0
                                      ? std::string_view("step #*")
                                      : std::string_view(info.name);
    auto [it, inserted] = name_index.try_emplace(std::string(name), static_cast<std::uint32_t>(names.size()));
    if (inserted) names.emplace_back(name);
    site_name[site] = it->second;
    if (!keyed) site_group[site] = group_for_key({it->second, 0, 0});
  }

  // The group of a zone of `site` under `parent` (kNoGroup: at the top of its thread, of
  // node `node`), found by its transition once made. Only the frames' names count: a
  // parent regrouped by its argument gives its children the same frames.
  [[gnu::noinline]] std::uint32_t resolve_transition(std::uint32_t parent, SiteId site, std::uint32_t node) {
    std::vector<std::uint32_t> key{site_name[site], node, 0};
    if (parent != kNoGroup) {
      const GroupKey& p = keys[parent];
      key[1] = p.node;
      if (stack_n > 0) {
        std::vector<std::uint32_t> frames = p.frames;
        frames.push_back(p.name);
        const std::size_t keep = std::min(stack_n, frames.size());
        key.insert(key.end(), frames.end() - static_cast<std::ptrdiff_t>(keep), frames.end());
      }
    }
    const std::uint32_t g = group_for_key(std::move(key));
    transitions.find_or_insert(detail::U64Map::key(parent != kNoGroup ? parent + 1u : kTopLevel | node, site), g);
    return g;
  }

  void feed(std::span<const Event> events, const TraceContext& context) {
    for (const Event& e : events) {
      if (e.kind == EventKind::zone_begin) {
        if (e.site >= site_name.size() || site_name[e.site] == kNoGroup) [[unlikely]]
          resolve_site(e.site, context);
        const std::span<const detail::OpenZone> open = tracker.open(e.thread);
        std::uint32_t g;
        if (!options.fold_steps && steps.is_step(e.site, context)) [[unlikely]] {
          g = step_group(e.value.u, by_node() ? node_of(e.thread, context) : 0);
        } else if (!keyed) {
          g = site_group[e.site];
        } else {
          // A zone's node is its parent's; the stack counts only when grouping by it.
          const std::uint32_t parent = open.empty() || stack_n == 0 ? kNoGroup : open.back().tag & ~kNested;
          const std::uint32_t node = parent == kNoGroup && by_node() ? node_of(e.thread, context) : 0;
          g = transitions.find(detail::U64Map::key(parent != kNoGroup ? parent + 1u : kTopLevel | node, e.site),
                               kNoGroup);
          if (g == kNoGroup) [[unlikely]]
            g = resolve_transition(parent, e.site, node);
        }
        __builtin_prefetch(&groups[g], 1);  // for the close
        bool nested = false;
        const std::size_t scan = std::min(open.size(), kScanDepth);
        for (std::size_t i = 0; i < scan; ++i) nested |= (open[i].tag & ~kNested) == g;
        if (open.size() >= kScanDepth) [[unlikely]]
          nested |= push_deep(e.thread, g);
        tracker.feed(
            e, [](const detail::ClosedZone&, std::span<const detail::OpenZone>) {}, nested ? g | kNested : g,
            options.estimate_sampled ? rates.of(e.site, context) : 1);
      } else if (e.kind == EventKind::zone_end) {
        tracker.feed(e, [this](const detail::ClosedZone& z, std::span<const detail::OpenZone>) { on_close(z); });
      } else if (e.kind == EventKind::arg) {
        on_arg(e, context);
      } else if (detail::is_switch(e.kind) || detail::is_memory(e.kind)) [[unlikely]] {
        tracker.feed(e, [](const detail::ClosedZone&, std::span<const detail::OpenZone>) {});  // CPU state, bytes
      }
    }
  }

  // A value or text on the innermost open zone: its flops, or the value it is grouped by.
  [[gnu::noinline]] void on_arg(const Event& e, const TraceContext& context) {
    if (e.site >= arg_role.size()) arg_role.resize(std::max<std::size_t>(e.site + 1, context.site_count()), 0);
    std::uint8_t& role = arg_role[e.site];
    if (role == 0) {
      const std::string_view key = context.site(e.site).name;
      role = static_cast<std::uint8_t>(kArgSeen | (key == "flops" ? kArgFlops : 0) |
                                       (!arg_key.empty() && key == arg_key ? kArgKey : 0));
    }
    if (role == kArgSeen) return;
    detail::OpenZone* zone = tracker.innermost(e.thread);
    if (zone == nullptr) return;  // with no zone open it belongs to nothing
    const std::size_t depth = tracker.open(e.thread).size() - 1;
    if ((role & kArgFlops) != 0) add_flops(e, depth);
    if ((role & kArgKey) != 0) regroup(*zone, e.thread, depth, arg_value(e, context));
  }

  // A zone's `flops`: integers at or above 0, and finite numbers at or above 0 (rounded);
  // a zone given several has their sum. Texts are not counts.
  void add_flops(const Event& e, std::size_t depth) {
    std::uint64_t n = 0;
    if ((e.flags & EventFlags::text) != 0) return;
    if ((e.flags & EventFlags::value_double) != 0) {
      if (!(e.value.d >= 0) || !(e.value.d < 1.8e19)) return;  // NaN, negative, infinite or too large
      n = static_cast<std::uint64_t>(e.value.d + 0.5);
    } else {
      if (e.value.i < 0) return;
      n = static_cast<std::uint64_t>(e.value.i);
    }
    if (e.thread >= threads.size()) threads.resize(e.thread + 1);
    std::vector<std::uint64_t>& flops = threads[e.thread].flops;
    if (depth >= flops.size()) flops.resize(depth + 1, 0);
    flops[depth] += n;
    any_flops = extras = true;
  }

  // The grouping argument's value as text: the text, or the number as written.
  std::uint32_t arg_value(const Event& e, const TraceContext& context) {
    std::string value;
    if ((e.flags & EventFlags::text) != 0) {
      value = context.text(e);
    } else if ((e.flags & EventFlags::value_double) != 0) {
      detail::append_double(value, e.value.d);
    } else {
      detail::append_int(value, e.value.i);
    }
    auto [it, inserted] = arg_index.try_emplace(std::move(value), static_cast<std::uint32_t>(arg_values.size()));
    if (inserted) arg_values.push_back(it->first);
    return it->second;
  }

  // Moves the open zone at `depth` of `thread` to the group of its name (node, frames)
  // with argument value `arg`; a second value of the key on one zone wins.
  void regroup(detail::OpenZone& zone, ThreadId thread, std::size_t depth, std::uint32_t arg) {
    const std::uint32_t from = zone.tag & ~kNested;
    if (keys[from].arg == arg) return;
    std::uint32_t to = regroups.find(detail::U64Map::key(from, arg), kNoGroup);
    if (to == kNoGroup) {
      const GroupKey k = keys[from];  // a copy: group_for_key grows keys
      std::vector<std::uint32_t> key{k.name, k.node, arg};
      key.insert(key.end(), k.frames.begin(), k.frames.end());
      to = group_for_key(std::move(key));
      regroups.find_or_insert(detail::U64Map::key(from, arg), to);
    }
    // Nested when an outer activation of its new group is open on the thread.
    const std::span<const detail::OpenZone> open = tracker.open(thread);
    bool nested = false;
    for (std::size_t i = 0; i < std::min(depth, kScanDepth); ++i) nested |= (open[i].tag & ~kNested) == to;
    if (depth >= kScanDepth) {
      --threads[thread].deep[from];
      nested |= push_deep(thread, to);
    }
    zone.tag = nested ? to | kNested : to;
  }

  // The row of Session::step()'s step N, "step #N" (steps are on a track of their own,
  // outside every other zone).
  [[gnu::noinline]] std::uint32_t step_group(std::uint64_t step, std::uint32_t node) {
    const std::string name = detail::step_zone_label(step);
    auto [it, inserted] = name_index.try_emplace(name, static_cast<std::uint32_t>(names.size()));
    if (inserted) names.push_back(name);
    return group_for_key({it->second, node, 0});
  }

  // The first close after a switch: every group's numbers so far are its on-CPU ones.
  [[gnu::noinline]] void start_on_cpu() {
    on_cpu = true;
    deferred.flush(groups);
    cpu_groups.resize(groups.size());
    for (std::size_t g = 0; g < groups.size(); ++g) {
      cpu_groups[g].self_ns = groups[g].self_ns;
      cpu_groups[g].total_ns = groups[g].total_ns;
      cpu_groups[g].inclusive_ns = groups[g].inclusive_ns;
      cpu_groups[g].histogram = groups[g].histogram.clone();
    }
  }
  [[gnu::noinline]] void on_close_cpu(const detail::ClosedZone& z, std::uint32_t g, bool outermost) {
    if (!on_cpu) start_on_cpu();
    if (g >= cpu_groups.size()) cpu_groups.resize(groups.size());
    const std::uint64_t w = z.weight;
    CpuGroup& c = cpu_groups[g];
    c.self_ns += z.self_on_cpu_ns() * w;
    c.inclusive_ns += z.on_cpu_ns() * w;
    if (outermost) c.total_ns += z.on_cpu_ns() * w;
    c.histogram.record(z.on_cpu_ns(), w);
  }

  // A zone closed in a stream with memory events: its bytes to its group (the zones closed
  // before the first such event had none).
  [[gnu::noinline]] void on_close_memory(const detail::ClosedZone& z, std::uint32_t g, bool outermost) {
    if (g >= memory_groups.size()) memory_groups.resize(groups.size());
    const auto w = static_cast<std::int64_t>(z.weight);
    MemoryGroup& m = memory_groups[g];
    m.self_bytes += z.self_cpu_memory_usage() * w;
    if (outermost) m.total_bytes += z.cpu_memory_usage() * w;
  }

  // A begin at depth >= kScanDepth: counts it; true when the group was already open there.
  [[gnu::noinline]] bool push_deep(ThreadId thread, std::uint32_t g) {
    if (thread >= threads.size()) threads.resize(thread + 1);
    std::vector<std::uint32_t>& deep = threads[thread].deep;
    if (g >= deep.size()) deep.resize(groups.size(), 0);
    return deep[g]++ != 0;
  }

  void on_close(const detail::ClosedZone& z) {
    const std::uint32_t g = z.tag & ~kNested;
    const bool outermost = (z.tag & kNested) == 0;
    if (extras) [[unlikely]]
      on_close_extras(z, g);
    if (z.depth >= kScanDepth) [[unlikely]]
      --threads[z.thread].deep[g];
    if (z.weight != 1) [[unlikely]] {
      on_close_estimated(z, g, outermost);
      return;
    }
    self_total_ns += z.self_ns;
    if (options.top_level_only && z.depth != 0) return;
    if (on_cpu || tracker.any_switches()) [[unlikely]]  // on_cpu: an earlier stream's switches
      on_close_cpu(z, g, outermost);
    if (tracker.any_memory()) [[unlikely]]
      on_close_memory(z, g, outermost);
    Group& group = groups[g];
    if (group.histogram.count() == 0) [[unlikely]]
      keys[g].first_seen = next_seen++;
    group.self_ns += z.self_ns;
    group.inclusive_ns += z.total_ns;
    if (outermost) group.total_ns += z.total_ns;
    deferred.push(groups, g, group.histogram.add(z.total_ns));
  }

  // The closed zone's flops (its thread's slot at its depth, emptied for the next zone
  // there) and call site, where the row counts the zone.
  [[gnu::noinline]] void on_close_extras(const detail::ClosedZone& z, std::uint32_t g) {
    std::uint64_t flops = 0;
    if (z.thread < threads.size() && z.depth < threads[z.thread].flops.size()) {
      flops = std::exchange(threads[z.thread].flops[z.depth], 0);
    }
    if (options.top_level_only && z.depth != 0) return;
    group_flops[g] += flops * z.weight;
    if (options.source_locations) {
      std::vector<SiteId>& sites = group_sites[g];
      if (std::find(sites.begin(), sites.end(), z.site) == sites.end()) sites.push_back(z.site);
    }
  }

  // A zone that stands for `weight` zones (estimate_sampled).
  [[gnu::noinline]] void on_close_estimated(const detail::ClosedZone& z, std::uint32_t g, bool outermost) {
    const std::uint64_t w = z.weight;
    self_total_ns += z.self_ns * w;
    if (options.top_level_only && z.depth != 0) return;
    if (on_cpu || tracker.any_switches()) on_close_cpu(z, g, outermost);
    if (tracker.any_memory()) on_close_memory(z, g, outermost);
    Group& group = groups[g];
    if (group.histogram.count() == 0) keys[g].first_seen = next_seen++;
    group.self_ns += z.self_ns * w;
    group.inclusive_ns += z.total_ns * w;
    if (outermost) group.total_ns += z.total_ns * w;
    group.histogram.record(z.total_ns, w);
  }

  // The end of a stream: its zones still open closed at its stop, its counts added to the
  // table's (the streams so far, TableOptions::accumulate_runs).
  void end_stream(const TraceContext& context, const SessionStats& stats) {
    tracker.close_open(context.clock().stop_ns,
                       [this](const detail::ClosedZone& z, std::span<const detail::OpenZone>) { on_close(z); });
    deferred.flush(groups);
    Streams& t = streams;
    t.sampled |= rates.any_sampled();
    t.switches |= tracker.any_switches();
    t.memory |= tracker.any_memory();
    t.frees_size_unknown += tracker.zone_frees_size_unknown();
    t.dropped += stats.dropped;
    for (const ThreadStats& thread : stats.threads) {
      if (thread.dropped == 0) continue;
      ThreadDrops d{thread.thread, thread.os_tid, thread.name, thread.dropped};
      if (thread.thread < context.thread_count() && !context.thread(thread.thread).name.empty()) {
        d.name = context.thread(thread.thread).name;
      }
      t.dropped_by_thread.push_back(std::move(d));
    }
    t.closed_at_stop += stats.closed_at_stop;
  }

  // The counts back to zero, the zones still open kept open (their calls count when they
  // close): the live table's next interval (table_so_far). Names and groups stay.
  void clear_counts() {
    deferred.flush(groups);
    for (Group& g : groups) g = Group{};
    for (CpuGroup& c : cpu_groups) c = CpuGroup{};
    for (MemoryGroup& m : memory_groups) m = MemoryGroup{};
    for (std::uint64_t& f : group_flops) f = 0;
    for (GroupKey& k : keys) k.first_seen = ~std::uint64_t{0};
    self_total_ns = 0;
    next_seen = 0;
  }

  // The table of the zones closed so far, the stream still running (table_so_far): the
  // stream's kinds (sampled, switches, memory) read as they are, nothing of it ended.
  KeyAverages table_so_far(const TraceContext& context) {
    deferred.flush(groups);
    const Streams ended = streams;
    streams.sampled |= rates.any_sampled();
    streams.switches |= tracker.any_switches();
    streams.memory |= tracker.any_memory();
    streams.frees_size_unknown += tracker.zone_frees_size_unknown();
    KeyAverages out = table(&context);
    streams = ended;
    return out;
  }

  // The next stream of an accumulating table: what belongs to a stream (its sites' and
  // threads' ids) starts afresh, the groups and their numbers stay.
  void next_stream() {
    tracker = detail::ZoneTracker{};
    rates = detail::SampleRates{};
    site_name.clear();
    site_group.clear();
    steps = detail::StepSites{};
    transitions = detail::U64Map{};
    threads.clear();
    thread_node.clear();
    arg_role.clear();
  }

  KeyAverages finish(const TraceContext& context, const SessionStats& stats) {
    end_stream(context, stats);
    return table(&context);
  }

  // The table of the streams so far.
  // Another run's groups (its streams ended) added to this one's, matched by their keys'
  // text: the table of both runs' streams, this one's first (accumulate_runs, read on
  // several threads). Not with source_locations (a run's sites are its own).
  void add(const TableRun& other) {
    const auto intern = [](std::vector<std::string>& texts, std::unordered_map<std::string, std::uint32_t>& index,
                           const std::string& text) {
      auto [it, inserted] = index.try_emplace(text, static_cast<std::uint32_t>(texts.size()));
      if (inserted) texts.push_back(text);
      return it->second;
    };
    const bool other_cpu = other.on_cpu;
    if (other_cpu && !on_cpu) start_on_cpu();  // this run's zones so far were on-CPU for their whole time
    for (std::size_t i = 0; i < other.groups.size(); ++i) {
      const Group& from = other.groups[i];
      if (from.histogram.count() == 0) continue;
      const GroupKey& k = other.keys[i];
      std::vector<std::uint32_t> key{
          intern(names, name_index, other.names[k.name]),
          k.node < other.node_names.size() ? intern(node_names, node_index, other.node_names[k.node]) : 0,
          intern(arg_values, arg_index, other.arg_values[k.arg])};
      for (const std::uint32_t f : k.frames) key.push_back(intern(names, name_index, other.names[f]));
      const std::uint32_t g = group_for_key(std::move(key));
      Group& to = groups[g];
      if (to.histogram.count() == 0) keys[g].first_seen = next_seen + k.first_seen;
      to.self_ns += from.self_ns;
      to.total_ns += from.total_ns;
      to.inclusive_ns += from.inclusive_ns;
      to.histogram.merge(from.histogram);
      group_flops[g] += other.group_flops[i];
      if (on_cpu) {
        cpu_groups.resize(groups.size());
        CpuGroup& c = cpu_groups[g];
        const bool has = other_cpu && i < other.cpu_groups.size();
        c.self_ns += has ? other.cpu_groups[i].self_ns : from.self_ns;
        c.total_ns += has ? other.cpu_groups[i].total_ns : from.total_ns;
        c.inclusive_ns += has ? other.cpu_groups[i].inclusive_ns : from.inclusive_ns;
        c.histogram.merge(has ? other.cpu_groups[i].histogram : from.histogram);
      }
      if (i < other.memory_groups.size()) {
        memory_groups.resize(groups.size());
        memory_groups[g].total_bytes += other.memory_groups[i].total_bytes;
        memory_groups[g].self_bytes += other.memory_groups[i].self_bytes;
      }
    }
    next_seen += other.next_seen;
    self_total_ns += other.self_total_ns;
    any_flops |= other.any_flops;
    streams.sampled |= other.streams.sampled;
    streams.switches |= other.streams.switches;
    streams.memory |= other.streams.memory;
    streams.frees_size_unknown += other.streams.frees_size_unknown;
    streams.dropped += other.streams.dropped;
    streams.closed_at_stop += other.streams.closed_at_stop;
    streams.dropped_by_thread.insert(streams.dropped_by_thread.end(), other.streams.dropped_by_thread.begin(),
                                     other.streams.dropped_by_thread.end());
  }

  KeyAverages table(const TraceContext* context) {
    KeyAverages out;
    out.self_total_ns = self_total_ns;
    out.estimated = options.estimate_sampled && streams.sampled;
    out.arg_key = arg_key;
    out.nodes = node_names.size();
    out.processes = options.group_by_process;
    out.source_locations = options.source_locations;
    out.on_cpu = on_cpu || streams.switches;
    if (out.on_cpu && !on_cpu) start_on_cpu();  // switches, and no zone closed since
    cpu_groups.resize(groups.size());
    out.memory = streams.memory;
    out.frees_size_unknown = streams.frees_size_unknown;
    memory_groups.resize(groups.size());
    // Rows carry numbers only until sorted; names and stacks are filled in for the rows
    // kept (thousands of groups, a row limit of 100 by default).
    std::vector<TableRow> rows;
    std::vector<std::uint32_t> group_of;  // by row
    for (std::size_t i = 0; i < groups.size(); ++i) {
      const Group& g = groups[i];
      if (g.histogram.count() == 0) continue;
      TableRow r;
      r.calls = g.histogram.count();
      r.self_ns = g.self_ns;
      r.total_ns = g.total_ns;
      r.avg_ns = g.inclusive_ns / r.calls + (g.inclusive_ns % r.calls * 2 >= r.calls ? 1 : 0);
      r.min_ns = g.histogram.min();
      r.max_ns = g.histogram.max();
      r.p50_ns = g.histogram.percentile(50);
      r.p99_ns = g.histogram.percentile(99);
      r.self_percent = detail::report::percent(r.self_ns, self_total_ns);
      r.total_percent = detail::report::percent(r.total_ns, self_total_ns);
      r.flops = group_flops[i];
      if (out.on_cpu) {
        const CpuGroup& c = cpu_groups[i];
        const std::uint64_t n = c.histogram.count();
        r.on_cpu_self_ns = c.self_ns;
        r.on_cpu_total_ns = c.total_ns;
        r.on_cpu_avg_ns = n == 0 ? 0 : c.inclusive_ns / n + (c.inclusive_ns % n * 2 >= n ? 1 : 0);
        r.on_cpu_p50_ns = c.histogram.percentile(50);
        r.on_cpu_p99_ns = c.histogram.percentile(99);
        r.on_cpu_max_ns = c.histogram.max();
      }
      r.cpu_memory_usage = memory_groups[i].total_bytes;
      r.self_cpu_memory_usage = memory_groups[i].self_bytes;
      rows.push_back(r);
      group_of.push_back(static_cast<std::uint32_t>(i));
    }
    // Order: the sort column (larger first), then name, then stack (both as text), or
    // the order of first calls.
    const TableOptions::SortBy by = options.sort_by;
    const auto before = [&](std::uint32_t a, std::uint32_t b) {
      const GroupKey& ka = keys[group_of[a]];
      const GroupKey& kb = keys[group_of[b]];
      if (by == TableOptions::SortBy::first_seen) return ka.first_seen < kb.first_seen;
      const std::uint64_t x = sort_number(rows[a], by), y = sort_number(rows[b], by);
      if (x != y) return x > y;
      if (ka.name != kb.name) return names[ka.name] < names[kb.name];  // names are interned: index equal iff text equal
      if (ka.arg != kb.arg) return arg_values[ka.arg] < arg_values[kb.arg];
      if (ka.node != kb.node) return node_names[ka.node] < node_names[kb.node];
      return std::lexicographical_compare(ka.frames.begin(), ka.frames.end(), kb.frames.begin(), kb.frames.end(),
                                          [&](std::uint32_t f, std::uint32_t g) { return names[f] < names[g]; });
    };
    std::vector<std::uint32_t> order(rows.size());
    for (std::uint32_t i = 0; i < order.size(); ++i) order[i] = i;
    out.groups = rows.size();
    const std::size_t keep = options.row_limit == 0 ? rows.size() : std::min(options.row_limit, rows.size());
    std::partial_sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(keep), order.end(), before);
    out.rows.reserve(keep);
    for (std::size_t i = 0; i < keep; ++i) {
      TableRow& r = out.rows.emplace_back(rows[order[i]]);
      const GroupKey& k = keys[group_of[order[i]]];
      r.name = names[k.name];
      for (const std::uint32_t f : k.frames) r.stack.push_back(names[f]);
      r.arg = arg_values[k.arg];
      if (by_node()) r.node_id = node_names[k.node];
      if (options.source_locations && context != nullptr) source_of(r, group_sites[group_of[order[i]]], *context);
    }
    out.dropped = streams.dropped;
    out.dropped_by_thread = streams.dropped_by_thread;
    out.closed_at_stop = streams.closed_at_stop;
    if (context != nullptr) out.filtered = detail::report::filter_line(*context);  // a filter in front of the table
    return out;
  }

  // A row's source location: its first site's, and how many distinct ones its sites have.
  static void source_of(TableRow& r, const std::vector<SiteId>& sites, const TraceContext& context) {
    std::vector<std::pair<std::string_view, std::uint32_t>> seen;
    for (const SiteId site : sites) {
      const SiteInfo& info = context.site(site);
      const std::pair<std::string_view, std::uint32_t> at{info.file != nullptr ? info.file : "", info.line};
      if (std::find(seen.begin(), seen.end(), at) == seen.end()) seen.push_back(at);
    }
    if (seen.empty()) return;
    r.source_file = seen.front().first;
    r.source_line = seen.front().second;
    r.source_locations = static_cast<std::uint32_t>(seen.size());
  }
};

// The argument rows are grouped by; std::invalid_argument for two different ones.
std::string table_arg_key(const TableOptions& options) {
  if (options.group_by_node && options.group_by_process) {
    throw std::invalid_argument("ringtrace: table: group_by_node and group_by_process both set: one or the other");
  }
  if (options.accumulate_runs && options.source_locations) {
    throw std::invalid_argument(
        "ringtrace: table: accumulate_runs and source_locations both set: a run's call sites are its own");
  }
  if (options.group_by_arg.empty()) return options.group_by_input_shapes ? "input_shapes" : "";
  if (options.group_by_input_shapes && options.group_by_arg != "input_shapes") {
    throw std::invalid_argument("ringtrace: table: group_by_input_shapes and group_by_arg \"" + options.group_by_arg +
                                "\" both set: the table groups by one argument");
  }
  return options.group_by_arg;
}

}  // namespace detail

struct TableExporter::Impl {
  TableOptions options;
  std::optional<detail::ReportOutput> output;  // none: numbers only (key_averages(trace))
  KeyAverages result;
  detail::TableRun run;  // the current run's aggregation (accumulate_runs: every run's)
  std::uint64_t runs = 0;
};

TableExporter::TableExporter(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
TableExporter::~TableExporter() = default;

void TableExporter::on_start(const TraceContext&) {
  if (impl_->options.accumulate_runs && impl_->runs != 0) {
    impl_->run.next_stream();
  } else {
    impl_->run = detail::TableRun(impl_->options);
  }
  ++impl_->runs;
  if (impl_->output) impl_->output->start_run();
}

void TableExporter::on_events(std::span<const Event> events, const TraceContext& context) {
  impl_->run.feed(events, context);
}

void TableExporter::on_finish(const TraceContext& context, const SessionStats& stats) {
  impl_->result = impl_->run.finish(context, stats);
  if (impl_->output) impl_->output->write_run(format_table(impl_->result, impl_->options));
  // Release the run's memory (the result stays), unless the next run adds to it.
  if (!impl_->options.accumulate_runs) impl_->run = detail::TableRun(impl_->options);
}

const KeyAverages& TableExporter::table() const { return impl_->result; }

void TableExporter::add(const TableExporter& other) {
  if (!impl_->options.accumulate_runs) {
    throw std::logic_error("ringtrace: TableExporter::add: the table does not accumulate runs (accumulate_runs)");
  }
  impl_->run.add(other.impl_->run);
  impl_->result = impl_->run.table(nullptr);
}

KeyAverages detail::table_so_far(TableExporter& exporter, const TraceContext& context, bool restart) {
  KeyAverages out = exporter.impl_->run.table_so_far(context);
  if (restart) exporter.impl_->run.clear_counts();
  return out;
}

std::unique_ptr<TableExporter> detail::table_numbers(const TableOptions& options) {
  detail::table_arg_key(options);  // throws for two grouping arguments
  auto impl = std::make_unique<TableExporter::Impl>();
  impl->options = options;
  return std::make_unique<TableExporter>(std::move(impl));
}

std::vector<std::filesystem::path> TableExporter::output_paths() const {
  if (!impl_->output || impl_->output->path().empty()) return {};
  return {impl_->output->path()};
}

std::shared_ptr<Exporter> table_exporter(const std::filesystem::path& path, TableOptions options) {
  detail::table_arg_key(options);  // throws for two grouping arguments
  auto impl = std::make_unique<TableExporter::Impl>();
  impl->options = std::move(options);
  impl->output.emplace(path.string());  // fails now, naming the path
  return std::make_shared<TableExporter>(std::move(impl));
}

std::shared_ptr<Exporter> table_exporter(std::ostream& stream, TableOptions options) {
  detail::table_arg_key(options);  // throws for two grouping arguments
  auto impl = std::make_unique<TableExporter::Impl>();
  impl->options = std::move(options);
  impl->output.emplace(stream, "key-averages table stream");
  return std::make_shared<TableExporter>(std::move(impl));
}

}  // namespace ringtrace
