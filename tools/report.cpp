// ringtrace report: what users read first, in the terminal: the key-averages table and
// the captured-ops summary of a binary trace file.
#include <cstdio>
#include <functional>  // std::ref
#include <iostream>
#include <string>
#include <vector>

#include "commands.hpp"
#include "ringtrace/exporters/binary_trace.hpp"
#include "ringtrace/exporters/ops_summary.hpp"
#include "ringtrace/exporters/table.hpp"

namespace ringtrace::tool {

int report(const std::vector<std::string>& args) {
  if (wants_help(args)) {
    std::fputs(
        "usage: ringtrace report FILE [--rows N] [--transparent NAME]... [--estimate-sampled] [--fold-steps]\n"
        "                             [--no-rings]\n"
        "\n"
        "Prints the key-averages table (the N most expensive zones by self time, default 20)\n"
        "and the captured-ops summary of a binary trace file. --transparent names a zone that\n"
        "wraps ops without being one (a step), as in the summary exporter. --estimate-sampled\n"
        "counts zones of sampled sites as many times as their rate (and says so); --fold-steps\n"
        "puts Session::step()'s zones in one row \"step #*\". A file cut short is read up to\n"
        "its last complete chunk, then from its ring file if the recording kept one (see\n"
        "ringtrace convert --help; --no-rings: never), and report exits 1 saying so. FILE is\n"
        "a regular file (a FIFO, '-' or a device is refused).\n",
        stdout);
    return 0;
  }
  std::string input;
  TableOptions table_options;
  table_options.row_limit = 20;
  OpsSummaryOptions summary_options;
  bool rings = true;
  for (std::size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--rows") {
      table_options.row_limit = parse_count("--rows", option_value(args, i));
    } else if (args[i] == "--transparent") {
      summary_options.transparent_names.push_back(option_value(args, i));
    } else if (args[i] == "--fold-steps") {
      table_options.fold_steps = true;
    } else if (args[i] == "--estimate-sampled") {
      table_options.estimate_sampled = summary_options.estimate_sampled = true;
    } else if (args[i] == "--no-rings") {
      rings = false;
    } else if (!args[i].empty() && args[i][0] == '-') {
      return error("report", "unknown option '" + args[i] + "' (see ringtrace report --help)", 2);
    } else if (input.empty()) {
      input = args[i];
    } else {
      return error("report", "one input file only", 2);
    }
  }
  if (input.empty()) return error("report", "no input file (see ringtrace report --help)", 2);
  check_input(input, rings);
  auto table = table_exporter(std::cout, table_options);
  auto summary = ops_summary_exporter(std::cout, summary_options);
  Exporter* const both[] = {table.get(), summary.get()};
  ProgressBar bar("ringtrace report");
  ReplayOptions options;
  options.progress = std::ref(bar);
  options.recover_rings = rings;
  if (rings) options.rings = ring_file_of(input);
  const ReplayResult result = replay_file(input, both, options);
  std::cout.flush();
  if (!result.problem.empty()) return error("report", input + ": " + result.problem);
  return 0;
}

}  // namespace ringtrace::tool
