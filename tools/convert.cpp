// ringtrace convert: a binary trace file into any of the exporters' formats, in one
// pass, through the same exporters a live session uses.
#include <cstdio>
#include <functional>  // std::ref
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "commands.hpp"
#include "ringtrace/exporters/binary_trace.hpp"
#include "ringtrace/exporters/chrome_trace.hpp"
#include "ringtrace/exporters/folded_stacks.hpp"
#include "ringtrace/exporters/ops_summary.hpp"
#include "ringtrace/exporters/perfetto.hpp"
#include "ringtrace/exporters/pstats.hpp"
#include "ringtrace/exporters/table.hpp"

namespace ringtrace::tool {

namespace {

constexpr const char* kHelp =
    "usage: ringtrace convert FILE [outputs and options]\n"
    "\n"
    "Converts a binary trace file (or the .partial file a killed process left) into the\n"
    "formats below, any subset, in one pass. OUT '-' is standard output (not for --pstats).\n"
    "Every output is opened before any work: a path that cannot be written fails at once.\n"
    "A file cut short converts up to its last complete chunk, then the command exits 1\n"
    "with one line saying where the file ends. If the recording kept its rings in a file\n"
    "(BinaryTraceOptions::rings_in_file), the ring file beside it (run.rtrace.rings for\n"
    "run.rtrace or run.rtrace.partial) gives what the process had recorded after that,\n"
    "and the line says how many events came from it.\n"
    "\n"
    "outputs:\n"
    "  --chrome OUT      Chrome trace JSON (.gz: compressed) for Perfetto UI, chrome://tracing\n"
    "  --perfetto OUT    Perfetto's protobuf trace for Perfetto UI and trace_processor\n"
    "  --pstats OUT      Python profile for python3 -m pstats, snakeviz, pyprof2calltree\n"
    "  --folded OUT      folded stacks for speedscope, flamegraph.pl\n"
    "  --summary OUT     captured-ops summary (text)\n"
    "  --table OUT       key-averages table (text)\n"
    "options:\n"
    "  --source-locations     Chrome: file and line of each zone in its args\n"
    "  --per-thread-counters  Chrome: one counter track per thread\n"
    "  --folded-value V       folded: self (default), total or calls\n"
    "  --thread-roots         folded: one root frame per thread\n"
    "  --transparent NAME     summary: a zone that wraps ops without being one (repeatable)\n"
    "  --rows N               table: rows kept (default 100, 0: all)\n"
    "  --fold-steps           table: Session::step()'s zones in one row \"step #*\"\n"
    "  --estimate-sampled     pstats, folded, summary, table: zones of sampled sites count\n"
    "                         as many times as their rate (estimates of the whole run)\n"
    "  --no-rings             never read a ring file beside FILE\n";

}  // namespace

int convert(const std::vector<std::string>& args) {
  if (wants_help(args)) {
    std::fputs(kHelp, stdout);
    return 0;
  }
  std::string input;
  std::string chrome, perfetto, pstats, folded, summary, table;
  ChromeTraceOptions chrome_options;
  FoldedStacksOptions folded_options;
  OpsSummaryOptions summary_options;
  TableOptions table_options;
  bool estimate = false;
  bool rings = true;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    const auto value = [&]() -> const std::string& {
      if (i + 1 >= args.size()) throw std::runtime_error(a + " needs a value");
      return args[++i];
    };
    if (a == "--chrome") {
      chrome = value();
    } else if (a == "--perfetto") {
      perfetto = value();
    } else if (a == "--pstats") {
      pstats = value();
    } else if (a == "--folded") {
      folded = value();
    } else if (a == "--summary") {
      summary = value();
    } else if (a == "--table") {
      table = value();
    } else if (a == "--source-locations") {
      chrome_options.source_locations = true;
    } else if (a == "--per-thread-counters") {
      chrome_options.per_thread_counters = true;
    } else if (a == "--folded-value") {
      const std::string& v = value();
      if (v == "self") {
        folded_options.value = FoldedValue::self_ns;
      } else if (v == "total") {
        folded_options.value = FoldedValue::total_ns;
      } else if (v == "calls") {
        folded_options.value = FoldedValue::calls;
      } else {
        return error("convert", "--folded-value takes self, total or calls, not '" + v + "'", 2);
      }
    } else if (a == "--thread-roots") {
      folded_options.thread_root = true;
    } else if (a == "--transparent") {
      summary_options.transparent_names.push_back(value());
    } else if (a == "--rows") {
      table_options.row_limit = std::stoul(value());
    } else if (a == "--fold-steps") {
      table_options.fold_steps = true;
    } else if (a == "--estimate-sampled") {
      estimate = true;
    } else if (a == "--no-rings") {
      rings = false;
    } else if (!a.empty() && a[0] == '-') {
      return error("convert", "unknown option '" + a + "' (see ringtrace convert --help)", 2);
    } else if (input.empty()) {
      input = a;
    } else {
      return error("convert", "one input file only ('" + input + "', then '" + a + "')", 2);
    }
  }
  if (input.empty()) return error("convert", "no input file (see ringtrace convert --help)", 2);
  if (chrome.empty() && perfetto.empty() && pstats.empty() && folded.empty() && summary.empty() && table.empty()) {
    return error("convert", "no output asked for: --chrome, --perfetto, --pstats, --folded, --summary or --table", 2);
  }
  if (pstats == "-") return error("convert", "--pstats writes a binary file, not to standard output", 2);
  folded_options.estimate_sampled = summary_options.estimate_sampled = table_options.estimate_sampled = estimate;
  PstatsOptions pstats_options;
  pstats_options.estimate_sampled = estimate;
  // Every output opened (and so checked) before reading anything.
  std::vector<std::shared_ptr<Exporter>> exporters;
  if (!chrome.empty()) {
    exporters.push_back(chrome == "-" ? chrome_trace_exporter(std::cout, chrome_options)
                                     : chrome_trace_exporter(chrome, chrome_options));
  }
  if (!perfetto.empty()) {
    PerfettoOptions perfetto_options;
    perfetto_options.per_thread_counters = chrome_options.per_thread_counters;
    exporters.push_back(perfetto == "-" ? perfetto_exporter(std::cout, perfetto_options)
                                        : perfetto_exporter(perfetto, perfetto_options));
  }
  if (!pstats.empty()) exporters.push_back(pstats_exporter(pstats, pstats_options));
  if (!folded.empty()) {
    exporters.push_back(folded == "-" ? folded_stacks_exporter(std::cout, folded_options)
                                      : folded_stacks_exporter(folded, folded_options));
  }
  if (!summary.empty()) {
    exporters.push_back(summary == "-" ? ops_summary_exporter(std::cout, summary_options)
                                       : ops_summary_exporter(summary, summary_options));
  }
  if (!table.empty()) {
    exporters.push_back(table == "-" ? table_exporter(std::cout, table_options) : table_exporter(table, table_options));
  }
  std::vector<Exporter*> raw;
  for (const auto& x : exporters) raw.push_back(x.get());
  ProgressBar bar("ringtrace convert");
  ReplayOptions options;
  options.progress = std::ref(bar);
  options.recover_rings = rings;
  const ReplayResult result = replay_file(input, raw, options);
  std::cout.flush();
  if (!result.problem.empty()) return error("convert", input + ": " + result.problem);
  return 0;
}

}  // namespace ringtrace::tool
