// Text views of a PstatsTable (pstats' print_stats layout and the raw aggregate table)
// and the optional call-graph SVG through gprof2dot and Graphviz.
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string_view>

#include "common/output.hpp"
#include "ringtrace/exporters/pstats.hpp"

extern char** environ;

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
      return "{" + f.name.substr(1, f.name.size() - 2) + "}";
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

double seconds(std::uint64_t ns) { return static_cast<double>(ns) / 1e9; }

std::string find_on_path(const std::string& name) {
  const char* path = std::getenv("PATH");
  if (path == nullptr) return {};
  std::string_view rest = path;
  while (true) {
    const std::size_t colon = rest.find(':');
    const std::string_view dir = rest.substr(0, colon);
    // Built piecewise: GCC 12 warns falsely (-Wrestrict) about dir + "/" + name.
    std::string candidate;
    candidate.reserve(dir.size() + name.size() + 2);
    if (dir.empty()) {
      candidate.push_back('.');  // an empty PATH entry is the current directory
    } else {
      candidate.append(dir.data(), dir.size());
    }
    candidate.push_back('/');
    candidate.append(name);
    struct stat st {};
    if (::stat(candidate.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(candidate.c_str(), X_OK) == 0) {
      return candidate;
    }
    if (colon == std::string_view::npos) return {};
    rest.remove_prefix(colon + 1);
  }
}

// Starts `argv` with stdin/stdout redirected to the given descriptors (-1: inherit).
// Returns the pid or -1 (errno set).
pid_t spawn(const std::vector<std::string>& args, int in_fd, int out_fd, int close_fd) {
  std::vector<char*> argv;
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  if (in_fd >= 0) posix_spawn_file_actions_adddup2(&actions, in_fd, STDIN_FILENO);
  if (out_fd >= 0) posix_spawn_file_actions_adddup2(&actions, out_fd, STDOUT_FILENO);
  if (close_fd >= 0) posix_spawn_file_actions_addclose(&actions, close_fd);
  pid_t pid = -1;
  const int rc = posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) {
    errno = rc;
    return -1;
  }
  return pid;
}

int wait_exit(pid_t pid) {
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return -1;
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
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
  double total_tt = 0;  // summed as pstats sums it: in seconds, in the file's order
  for (const PstatsFunction& f : table.functions) total_tt += seconds(f.self_ns);
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
    const double tt = seconds(f.self_ns);
    const double ct = seconds(f.cumulative_ns);
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

PstatsSvgResult write_pstats_svg(const std::string& prof_path, const std::string& svg_path) {
  PstatsSvgResult result;
  const std::string gprof2dot = find_on_path("gprof2dot");
  const std::string dot = find_on_path("dot");
  if (gprof2dot.empty() || dot.empty()) {
    result.message = "call-graph SVG skipped:";
    if (gprof2dot.empty()) result.message += " gprof2dot not found on PATH (pip install gprof2dot);";
    if (dot.empty()) result.message += " Graphviz 'dot' not found on PATH (apt install graphviz);";
    result.message += " then run: gprof2dot -f pstats " + prof_path + " | dot -Tsvg -o " + svg_path;
    return result;
  }
  int pipe_fds[2];
  if (::pipe(pipe_fds) != 0) {
    result.message = std::string("call-graph SVG failed: pipe: ") + std::strerror(errno);
    return result;
  }
  const pid_t producer = spawn({gprof2dot, "-f", "pstats", prof_path}, -1, pipe_fds[1], pipe_fds[0]);
  const int producer_errno = errno;
  ::close(pipe_fds[1]);
  pid_t consumer = -1;
  int consumer_errno = 0;
  if (producer > 0) {
    consumer = spawn({dot, "-Tsvg", "-o", svg_path}, pipe_fds[0], -1, -1);
    consumer_errno = errno;
  }
  ::close(pipe_fds[0]);
  if (producer < 0) {
    result.message = "call-graph SVG failed: cannot run " + gprof2dot + ": " + std::strerror(producer_errno);
    return result;
  }
  const int producer_status = wait_exit(producer);
  if (consumer < 0) {
    result.message = "call-graph SVG failed: cannot run " + dot + ": " + std::strerror(consumer_errno);
    return result;
  }
  const int consumer_status = wait_exit(consumer);
  if (producer_status != 0) {
    result.message = "call-graph SVG failed: gprof2dot exited with status " + std::to_string(producer_status);
  } else if (consumer_status != 0) {
    result.message = "call-graph SVG failed: dot exited with status " + std::to_string(consumer_status);
  } else {
    result.written = true;
    result.message = "call graph written to " + svg_path;
  }
  return result;
}

}  // namespace ringtrace
