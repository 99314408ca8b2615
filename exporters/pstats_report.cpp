// Text views of a PstatsTable (pstats' print_stats layout and the raw aggregate table).

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string_view>

#include "output.hpp"
#include "ringtrace/exporters/pstats.hpp"

namespace ringtrace {
namespace {

void append_format(std::string& out, const char* format, double value) {
  char buffer[64];
  const int n = std::snprintf(buffer, sizeof buffer, format, value);
  if (n > 0) out.append(buffer, std::min<std::size_t>(static_cast<std::size_t>(n), sizeof buffer - 1));
}

void append_padded(std::string& out, const std::string& text, std::size_t width) {
  if (text.size() < width) out.append(width - text.size(), ' ');
  out.append(text);
}

// pstats' func_std_string: "file:line(name)", or for cProfile's built-ins ("~", 0) the
// bare name, with <...> shown as {...}.
std::string std_name(const PstatsFunction& f) {
  if (f.file == "~" && f.line == 0) {
    if (f.name.size() >= 2 && f.name.front() == '<' && f.name.back() == '>') {
      // Built piecewise: GCC 12 warns falsely (-Wrestrict) about "{" + std::string.
      std::string braced = "{";
      braced.append(f.name, 1, f.name.size() - 2);
      braced.push_back('}');
      return braced;
    }
    return f.name;
  }
  std::string s = f.file;
  s.push_back(':');
  detail::append_uint(s, f.line);
  s.push_back('(');
  s.append(f.name);
  s.push_back(')');
  return s;
}

// Indexes sorted by cumulative time, descending; ties keep the table's order (the order
// pstats sees in the file, and its sort is stable).
std::vector<std::size_t> by_cumulative(const PstatsTable& table) {
  std::vector<std::size_t> order(table.functions.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return table.functions[a].cumulative_ns > table.functions[b].cumulative_ns;
  });
  return order;
}

// Seconds, or with PstatsTable::alloc_bytes megabytes where seconds go (as in the file).
double seconds(const PstatsTable& table, std::uint64_t v) {
  return static_cast<double>(v) / (table.alloc_bytes ? 1e6 : 1e9);
}

}  // namespace

std::string format_pstats_report(const PstatsTable& input, const PstatsReportOptions& options) {
  // An empty table is written with a placeholder row (pstats refuses an empty dict);
  // the report shows the file as pstats does.
  PstatsTable placeholder;
  if (input.functions.empty()) placeholder.functions.push_back({"~", 0, "<ringtrace: no zones recorded>", 0, 0, 0, 0});
  const PstatsTable& table = input.functions.empty() ? placeholder : input;
  std::string out;
  if (!options.title.empty()) {
    out.append(options.title).append("\n\n");
  }
  if (input.estimated) {
    out.append("   Estimates: zones of sampled sites counted as many times as their sampling rate\n\n");
  }
  if (input.alloc_bytes) {
    out.append(
        "   Times are megabytes allocated (10^6 bytes): tottime in the function itself, cumtime with its callees\n\n");
  } else if (input.on_cpu) {
    out.append("   Times are on-CPU: each zone's time less the time its thread was switched out inside it\n\n");
  }
  double total_tt = 0;  // summed as pstats sums it: in seconds, in the file's order
  for (const PstatsFunction& f : table.functions) total_tt += seconds(input, f.self_ns);
  out.append("         ");
  detail::append_uint(out, table.total_calls());
  out.append(" function calls ");
  if (table.total_calls() != table.total_primitive_calls()) {
    out.append("(");
    detail::append_uint(out, table.total_primitive_calls());
    out.append(" primitive calls) ");
  }
  append_format(out, "in %.3f seconds\n\n", total_tt);
  out.append("   Ordered by: cumulative time\n");
  const std::vector<std::size_t> order = by_cumulative(table);
  std::size_t rows = order.size();
  if (options.limit != 0 && options.limit < rows) {
    out.append("   List reduced from ");
    detail::append_uint(out, rows);
    out.append(" to ");
    detail::append_uint(out, options.limit);
    out.append(" due to restriction <");
    detail::append_uint(out, options.limit);
    out.append(">\n");
    rows = options.limit;
  }
  out.append("\n   ncalls  tottime  percall  cumtime  percall filename:lineno(function)\n");
  for (std::size_t r = 0; r < rows; ++r) {
    const PstatsFunction& f = table.functions[order[r]];
    std::string calls;
    detail::append_uint(calls, f.calls);
    if (f.calls != f.primitive_calls) {
      calls.push_back('/');
      detail::append_uint(calls, f.primitive_calls);
    }
    append_padded(out, calls, 9);
    const double tt = seconds(input, f.self_ns);
    const double ct = seconds(input, f.cumulative_ns);
    append_format(out, " %8.3f", tt);
    if (f.calls == 0) {
      out.append(9, ' ');
    } else {
      append_format(out, " %8.3f", tt / static_cast<double>(f.calls));
    }
    append_format(out, " %8.3f", ct);
    if (f.primitive_calls == 0) {
      out.append(9, ' ');
    } else {
      append_format(out, " %8.3f", ct / static_cast<double>(f.primitive_calls));
    }
    out.push_back(' ');
    out.append(std_name(f));
    out.push_back('\n');
  }
  out.append("\n\n");
  return out;
}

std::string format_pstats_raw_table(const PstatsTable& table) {
  std::string out = "=== Aggregate Timings (raw) ===\n";
  append_padded(out, "ncalls", 12);
  append_padded(out, "pcalls", 12);
  append_padded(out, "tottime", 16);
  append_padded(out, "cumtime", 16);
  out.append("  function\n");
  out.append(100, '-').push_back('\n');
  std::uint64_t sum_self = 0;
  std::uint64_t sum_cumulative = 0;
  for (const std::size_t i : by_cumulative(table)) {
    const PstatsFunction& f = table.functions[i];
    sum_self += f.self_ns;
    sum_cumulative += f.cumulative_ns;
    std::string cell;
    detail::append_uint(cell, f.calls);
    append_padded(out, cell, 12);
    cell.clear();
    detail::append_uint(cell, f.primitive_calls);
    append_padded(out, cell, 12);
    append_format(out, " %13.3fms", static_cast<double>(f.self_ns) / 1e6);
    append_format(out, " %13.3fms", static_cast<double>(f.cumulative_ns) / 1e6);
    out.append("  ").append(f.name);
    const std::size_t slash = f.file.find_last_of('/');
    out.append(" (").append(slash == std::string::npos ? f.file : f.file.substr(slash + 1)).push_back(':');
    detail::append_uint(out, f.line);
    out.append(")\n");
  }
  out.append(100, '-').push_back('\n');
  out.append("Total calls: ");
  detail::append_uint(out, table.total_calls());
  out.append(" (");
  detail::append_uint(out, table.total_primitive_calls());
  out.append(" primitive), unique functions: ");
  detail::append_uint(out, table.functions.size());
  out.append(", caller edges: ");
  detail::append_uint(out, table.edges.size());
  out.push_back('\n');
  append_format(out, "Sum tottime: %.3fms", static_cast<double>(sum_self) / 1e6);
  append_format(out, ", sum cumtime: %.3fms\n", static_cast<double>(sum_cumulative) / 1e6);
  if (table.dropped_events != 0 || table.closed_at_stop != 0) {
    out.append("Dropped events (not counted): ");
    detail::append_uint(out, table.dropped_events);
    out.append(", calls closed at stop: ");
    detail::append_uint(out, table.closed_at_stop);
    out.push_back('\n');
  }
  return out;
}

}  // namespace ringtrace
