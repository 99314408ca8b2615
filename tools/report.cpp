// ringtrace report: what users read first, in the terminal: the key-averages table and,
// when the recording has capture regions, the captured-ops summary of a binary trace file.
#include <algorithm>  // std::any_of
#include <cstdint>    // SIZE_MAX
#include <cstdio>
#include <functional>  // std::ref
#include <iostream>
#include <span>
#include <sstream>
#include <string>
#include <vector>

#include "commands.hpp"
#include "ringtrace/exporter.hpp"
#include "ringtrace/exporters/binary_trace.hpp"
#include "ringtrace/exporters/ops_summary.hpp"
#include "ringtrace/exporters/stragglers.hpp"
#include "ringtrace/exporters/table.hpp"

namespace ringtrace::tool {
namespace {

// The recording's counts, as on_finish gives them.
class StatsKeeper final : public Exporter {
 public:
  void on_events(std::span<const Event>, const TraceContext&) override {}
  void on_finish(const TraceContext& context, const SessionStats& s) override {
    stats = s;
    start_ns = context.clock().start_ns;
  }
  SessionStats stats;
  std::uint64_t start_ns = 0;
};

// report --stragglers: the steps of every process side by side.
int report_stragglers(const std::string& input, bool rings, std::size_t rows) {
  auto view = straggler_exporter(std::cout, StragglerOptions{rows});
  ProgressBar bar("ringtrace report");
  ReplayOptions options;
  options.progress = std::ref(bar);
  options.recover_rings = rings;
  if (rings) options.rings = ring_file_of(input);
  Exporter* const one[] = {view.get()};
  const ReplayResult result = replay_file(input, one, options);
  if (view->steps().steps.empty()) {
    error("report", input + " has no completed step (Session::step(), ringtrace::frame_mark()): no straggler view");
  }
  if (!result.problem.empty()) return error("report", input + ": " + result.problem);
  return 0;
}

// What report prints for a recording without zones, in place of a table with nothing in
// it but its headers and "Self time total: 0ns" (an unmodified program under record
// --memory): that there are none, and what makes them.
std::string no_zones_text(const KeyAverages& table) {
  std::string text =
      "No zones in this recording, so no key-averages table. Zones come from RINGTRACE_ZONE and\n"
      "the other macros in a program that links ringtrace, and from the calls of code built with\n"
      "-finstrument-functions (linked with ringtrace::functions, or run under record --memory).\n";
  if (table.dropped != 0)
    text += "Dropped events: " + thousands(table.dropped) + " (ringtrace info lists them by thread)\n";
  return text;
}

// --sort-by a column the recording left empty: the rows stay in name order (every row
// ties at 0), which is said rather than passed off as an order.
void say_unsorted(const std::string& input, TableOptions::SortBy key, const KeyAverages& table) {
  const std::string by = "--sort-by " + std::string(sort_key_name(key)) + " left the rows in name order";
  if (on_cpu_key(key) && !table.on_cpu) {
    error("report", input + " has no context switches (no on-CPU columns): " + by +
                        " (record with ringtrace record --context-switches)");
  }
  if (memory_key(key) && !table.memory) {
    error("report",
          input + " has no allocations (no memory columns): " + by + " (record with ringtrace record --memory)");
  }
  // The Total FLOPs column is shown when a row shown has FLOPs (sorted by them, the first).
  const bool flops = std::any_of(table.rows.begin(), table.rows.end(), [](const TableRow& r) { return r.flops != 0; });
  if (key == TableOptions::SortBy::flops && !flops) {
    error("report", input + " has no FLOPs (no Total FLOPs column): " + by +
                        " (a zone gets its FLOPs with RINGTRACE_ZONE_FLOPS(n) or a \"flops\" argument)");
  }
}

}  // namespace

int report(const std::vector<std::string>& args) {
  if (wants_help(args)) {
    const std::string help =
        "usage: ringtrace report FILE [--rows N] [--sort-by KEY] [--transparent NAME]... [--estimate-sampled]\n"
        "                             [--fold-steps] [--by-input-shapes | --by-arg KEY] [--by-node]\n"
        "                             [--source-locations] [--no-rings] [--leaks]\n"
        "       ringtrace report FILE --stragglers [--rows N] [--no-rings]\n"
        "\n"
        "Prints the key-averages table (the N most expensive zones by self time, default 20)\n"
        "and, when the recording has capture regions (RINGTRACE_REGION), the captured-ops\n"
        "summary of a binary trace file; a recording without zones (an unmodified program under\n"
        "ringtrace record --memory) says so in place of the table. --sort-by orders the table\n"
        "by another column, largest first (name: A to Z; first-seen: the order zones first\n"
        "ended); KEY is one of\n"
        "  " +
        sort_keys() +
        "\n"
        "(the on-cpu keys need a recording with context switches: ringtrace record\n"
        "--context-switches). --transparent names a zone that wraps ops without being one (a\n"
        "step), as in the summary exporter. --estimate-sampled counts zones of sampled sites as\n"
        "many times as their rate (and says so); --fold-steps puts Session::step()'s zones in\n"
        "one row \"step #*\". --by-input-shapes groups the rows by name and the zones'\n"
        "input_shapes argument (RINGTRACE_ZONE_TEXT(\"input_shapes\", ...)), --by-arg KEY by\n"
        "name and argument KEY, --by-node by name and node (the processes of a merged file;\n"
        "a Node ID column when there are several); --source-locations adds each row's call\n"
        "site (file:line). Zones with a \"flops\" argument add a Total FLOPs column (sort by\n"
        "it with --sort-by flops). A recording with allocations (ringtrace record --memory)\n"
        "adds the table's CPU Mem columns (keys cpu-mem, self-cpu-mem) and a memory summary;\n"
        "--leaks prints, instead of the table, the blocks still live at the end grouped by the\n"
        "zones and the function that allocated them, largest first (--rows of them). --memory\n"
        "prints instead where the memory went: the functions that allocated most, by bytes,\n"
        "calls, part of the heap's peak and leaked bytes (exact: each allocation's caller), and\n"
        "with --memory-stacks recordings the sampled call stacks of most bytes allocated and\n"
        "leaked (estimates, said so). --stragglers prints, for a\n"
        "merged file of stepped processes, each step's time per process and the slowest.\n"
        "A file cut short is read up to its last complete chunk,\n"
        "then from its ring file if the recording kept one (see ringtrace convert --help;\n"
        "--no-rings: never), and report exits 1 saying so. FILE is a regular file (a FIFO,\n"
        "'-' or a device is refused).\n"
        "\n"
        "--stragglers prints instead, for a stepped program (Session::step()) of several\n"
        "processes merged into one file (ringtrace merge), per step each process's step time,\n"
        "the slowest process, the spread (slowest minus fastest) and how far apart the steps\n"
        "ended on the merged timeline, then how often each process was the slowest;\n"
        "--rows N keeps the N steps of largest spread (default: every step).\n";
    std::fputs(help.c_str(), stdout);
    return 0;
  }
  std::string input;
  TableOptions table_options;
  table_options.row_limit = 20;
  OpsSummaryOptions summary_options;
  bool rings = true;
  bool stragglers = false;
  bool rows_given = false;
  bool leaks = false;
  bool memory_sites = false;
  for (std::size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--rows") {
      table_options.row_limit = parse_count("--rows", option_value(args, i));
      rows_given = true;
    } else if (args[i] == "--stragglers") {
      stragglers = true;
    } else if (args[i] == "--sort-by") {
      table_options.sort_by = parse_sort_key("--sort-by", option_value(args, i));
    } else if (args[i] == "--transparent") {
      summary_options.transparent_names.push_back(option_value(args, i));
    } else if (args[i] == "--fold-steps") {
      table_options.fold_steps = true;
    } else if (args[i] == "--by-input-shapes") {
      table_options.group_by_input_shapes = true;
    } else if (args[i] == "--by-arg") {
      table_options.group_by_arg = option_value(args, i);
      if (table_options.group_by_arg.empty()) return error("report", "--by-arg: an empty key", 2);
    } else if (args[i] == "--by-node") {
      table_options.group_by_node = true;
    } else if (args[i] == "--source-locations") {
      table_options.source_locations = true;
    } else if (args[i] == "--estimate-sampled") {
      table_options.estimate_sampled = summary_options.estimate_sampled = true;
    } else if (args[i] == "--no-rings") {
      rings = false;
    } else if (args[i] == "--leaks") {
      leaks = true;
    } else if (args[i] == "--memory") {
      memory_sites = true;
    } else if (args[i].size() > 1 && args[i][0] == '-') {  // '-' alone: an input, refused as one
      return error("report", "unknown option '" + args[i] + "' (see ringtrace report --help)", 2);
    } else if (input.empty()) {
      input = args[i];
    } else {
      return error("report", "one input file only", 2);
    }
  }
  if (input.empty()) return error("report", "no input file (see ringtrace report --help)", 2);
  if (table_options.group_by_input_shapes && !table_options.group_by_arg.empty() &&
      table_options.group_by_arg != "input_shapes") {
    return error("report", "--by-input-shapes and --by-arg " + table_options.group_by_arg + ": one argument only", 2);
  }
  check_input(input, rings);
  if (stragglers) return report_stragglers(input, rings, rows_given ? table_options.row_limit : 0);
  // The table is printed once the recording is read (a recording without zones gets a
  // note instead); --leaks and --memory compute it and leave it out: one code path.
  std::ostringstream table_text;
  auto table = table_exporter(table_text, table_options);
  // The summary is held until the end: a recording without capture regions has nothing
  // to say there (every op outside every region), so it is left out.
  std::ostringstream summary_text;
  auto summary = ops_summary_exporter(summary_text, summary_options);
  ProgressBar bar("ringtrace report");
  ReplayOptions options;
  options.progress = std::ref(bar);
  options.recover_rings = rings;
  if (rings) options.rings = ring_file_of(input);
  StatsKeeper kept;
  Exporter* const all[] = {table.get(), summary.get(), &kept};
  const ReplayResult result = replay_file(input, all, options);
  const CaptureCounts& regions = dynamic_cast<const OpsSummaryExporter&>(*summary).summary().total;
  if (memory_sites) {
    std::cout << memory_report(kept.stats.memory, kept.start_ns, result.processes.size(), table_options.row_limit);
    std::cout.flush();
    if (!result.problem.empty()) return error("report", input + ": " + result.problem);
    return 0;
  }
  if (leaks) {
    std::cout << memory_summary(kept.stats.memory, kept.start_ns, result.processes.size())
              << leaks_table(kept.stats.memory, table_options.row_limit);
    std::cout.flush();
    if (!result.problem.empty()) return error("report", input + ": " + result.problem);
    return 0;
  }
  const KeyAverages& averages = dynamic_cast<const TableExporter&>(*table).table();
  std::cout << (averages.groups != 0 ? table_text.str() : no_zones_text(averages));
  if (regions.graph_calls != 0 || regions.unique_graphs != 0) std::cout << summary_text.str();
  // Allocations (a recording with Config::memory): one line, or two.
  const std::string memory = memory_summary(kept.stats.memory, kept.start_ns, result.processes.size());
  if (!memory.empty()) std::cout << "\n" << memory;
  // What the table does not show: calls of instrumented functions left out, by function.
  const std::string left_out =
      functions_left_out(kept.stats.functions, table_options.row_limit == 0 ? SIZE_MAX : table_options.row_limit);
  if (!left_out.empty()) std::cout << "\n" << left_out;
  std::cout.flush();
  if (averages.groups != 0) say_unsorted(input, table_options.sort_by, averages);
  if (!result.problem.empty()) return error("report", input + ": " + result.problem);
  return 0;
}

}  // namespace ringtrace::tool
