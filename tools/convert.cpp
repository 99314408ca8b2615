// ringtrace convert: a binary trace file into any of the exporters' formats, in one
// pass, through the same exporters a live session uses.
#include <array>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <functional>  // std::ref
#include <iostream>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "commands.hpp"
#include "ringtrace/exporters/binary_trace.hpp"
#include "ringtrace/exporters/call_graph.hpp"
#include "ringtrace/exporters/chrome_trace.hpp"
#include "ringtrace/exporters/flame_graph.hpp"
#include "ringtrace/exporters/folded_stacks.hpp"
#include "ringtrace/exporters/ops_summary.hpp"
#include "ringtrace/exporters/perfetto.hpp"
#include "ringtrace/exporters/pstats.hpp"
#include "ringtrace/exporters/table.hpp"
#include "ringtrace/files.hpp"

namespace ringtrace::tool {

namespace {

constexpr const char* kHelp =
    "usage: ringtrace convert FILE [outputs and options]\n"
    "\n"
    "Converts a binary trace file (or the temporary a killed process left) into the\n"
    "formats below, any subset, in one pass. OUT '-' is standard output (not for --pstats,\n"
    "and for one output at most); any other OUT is a regular file or a new one (a FIFO,\n"
    "a device or a directory is refused). FILE is a regular file, not '-' or a FIFO.\n"
    "Every output is opened before any work: a path that cannot be written fails at once,\n"
    "and so do an output on FILE itself (or its ring file) and two outputs on one file.\n"
    "Each output is written to OUT.partial.XXXXXXXX and renamed to OUT at the end.\n"
    "A file cut short converts up to its last complete chunk, then the command exits 1\n"
    "with one line saying where the file ends. If the recording kept its rings in a file\n"
    "(BinaryTraceOptions::rings_in_file), the ring file beside it (run.rtrace.rings for\n"
    "run.rtrace or its temporary run.rtrace.partial.XXXXXXXX) gives what the process had\n"
    "recorded after that, and the line says how many events came from it.\n"
    "\n"
    "outputs:\n"
    "  --chrome OUT      Chrome trace JSON (.gz: compressed) for Perfetto UI, chrome://tracing\n"
    "  --perfetto OUT    Perfetto's protobuf trace for Perfetto UI and trace_processor\n"
    "  --pstats OUT      Python profile for python3 -m pstats, snakeviz, pyprof2calltree\n"
    "  --folded OUT      folded stacks for speedscope, flamegraph.pl\n"
    "  --summary OUT     captured-ops summary (text)\n"
    "  --table OUT       key-averages table (text)\n"
    "  --callgraph OUT   call graph, as gprof2dot draws a pstats file: OUT.svg is drawn by\n"
    "                    Graphviz's dot (apt install graphviz) from OUT.dot, written beside\n"
    "                    it; any other OUT gets the DOT text only\n"
    "  --flamegraph OUT  interactive flame graph, one SVG for any browser (click to zoom,\n"
    "                    Search, tooltips); widths are the --folded file's numbers\n"
    "options:\n"
    "  --source-locations     Chrome: file and line of each zone in its args\n"
    "  --per-thread-counters  Chrome: one counter track per thread\n"
    "  --folded-value V       folded: self (default), total, calls, alloc-bytes or allocs\n"
    "  --thread-roots         folded, flamegraph: one root frame per thread\n"
    "  --transparent NAME     summary: a zone that wraps ops without being one (repeatable)\n"
    "  --rows N               table: rows kept (default 100, 0: all)\n"
    "  --fold-steps           table: Session::step()'s zones in one row \"step #*\"\n"
    "  --estimate-sampled     pstats, folded, summary, table, callgraph, flamegraph: zones\n"
    "                         of sampled sites count as many times as their rate\n"
    "                         (estimates of the whole run)\n"
    "  --on-cpu               pstats, folded, callgraph, flamegraph: each zone's on-CPU\n"
    "                         time instead of its wall time (needs a recording with\n"
    "                         context switches; the files say so)\n"
    "  --alloc-bytes          pstats, folded: bytes allocated in each zone instead of its time\n"
    "                         (an allocation profile and flame graph; needs a recording with\n"
    "                         memory: ringtrace record --memory; pstats writes MB where\n"
    "                         seconds go and says so)\n"
    "  --node-threshold P     callgraph: leave out boxes under P% of the total time\n"
    "                         (default 0.5, as gprof2dot), with their arrows\n"
    "  --edge-threshold P     callgraph: leave out arrows under P% (default 0.1)\n"
    "  --per-thread           callgraph: one graph per thread instead of threads merged\n"
    "  --icicle               flamegraph: top-down, roots at the top\n"
    "  --memory               flamegraph: bytes allocated by stack instead of self time\n"
    "                         (a recording with memory: ringtrace record --memory)\n"
    "  --leaks                flamegraph: bytes still live at the end, by the zones that\n"
    "                         allocated them\n"
    "  --no-rings             never read a ring file beside FILE\n"
    "  --symbols-path DIR     instrumented functions the recording left unnamed (or named\n"
    "                         module+0x... only) are named from the recorded modules'\n"
    "                         files; also look for them (same build id: the binaries, or\n"
    "                         their .debug files) in DIR, as DIR/.build-id/xx/yyyy[.debug],\n"
    "                         DIR/<file name> or DIR/<recorded path> (repeatable)\n"
    "\n"
    "On success, one line on standard error says what was written, how big, how long\n"
    "it took and how many events were read.\n";

struct Output {
  const char* flag;
  const std::string& path;
};

// Why the outputs cannot be written as asked, or "": an output on the input itself (or
// the ring file read beside it) would replace the recording before it is read, two
// outputs on one file (or both on standard output) would mix into one broken file.
// Paths are compared after normalising (dir/../dir/x is dir/x) and, for files that
// exist, by inode (a link, a hard link).
std::string refused(const std::string& input, bool rings, std::span<const Output> outputs) {
  const std::filesystem::path ring_file = ring_file_of(input);
  std::error_code ec;
  const bool ring_file_exists = rings && std::filesystem::exists(ring_file, ec);
  for (std::size_t i = 0; i < outputs.size(); ++i) {
    const Output& o = outputs[i];
    if (o.path.empty()) continue;
    for (std::size_t j = 0; j < i; ++j) {
      const Output& other = outputs[j];
      if (other.path.empty() || (other.path == "-") != (o.path == "-")) continue;
      if (o.path == "-")
        return std::string(other.flag) + " and " + o.flag + " both write to standard output: one output there";
      if (same_file(other.path, o.path)) {
        return std::string(other.flag) + " and " + o.flag + " both write '" + o.path + "': one file per output";
      }
    }
    if (o.path == "-") continue;
    if (same_file(input, o.path)) {
      return std::string(o.flag) + " '" + o.path + "' is the input file: writing it would replace the recording";
    }
    if (ring_file_exists && same_file(ring_file, o.path)) {
      return std::string(o.flag) + " '" + o.path + "' is the ring file read beside the input";
    }
  }
  return {};
}

// What the command line asks for.
struct Request {
  std::string input;
  std::string chrome, perfetto, pstats, folded, summary, table, flamegraph, callgraph;
  // --callgraph OUT.svg: the DOT text written beside it (OUT.dot); empty for any other OUT.
  std::string callgraph_dot;
  bool callgraph_undrawn = false;  // OUT.svg asked for and no Graphviz: OUT.dot only
  ChromeTraceOptions chrome_options;
  FoldedStacksOptions folded_options;
  OpsSummaryOptions summary_options;
  TableOptions table_options;
  CallGraphOptions callgraph_options;
  FlameGraphOptions flamegraph_options;
  bool estimate = false;
  bool on_cpu = false;       // --on-cpu: pstats (folded_options carries its own)
  bool alloc_bytes = false;  // --alloc-bytes: pstats (folded_options carries its own)
  bool rings = true;
  std::vector<std::filesystem::path> symbol_paths;

  // Every output, in the order they are written and named in the summary line.
  std::array<Output, 9> outputs() const {
    return {{{"--chrome", chrome},
             {"--perfetto", perfetto},
             {"--pstats", pstats},
             {"--folded", folded},
             {"--summary", summary},
             {"--table", table},
             {"--flamegraph", flamegraph},
             {"--callgraph", callgraph_dot},
             {"--callgraph", callgraph}}};
  }
};

// A percentage on the command line (0 to 100) as a share (0 to 1), or UsageError.
double parse_percent(std::string_view option, const std::string& text) {
  std::size_t used = 0;
  double value = -1;
  try {
    value = std::stod(text, &used);
  } catch (const std::exception&) {}
  if (used != text.size() || !(value >= 0 && value <= 100)) {
    throw UsageError(std::string(option) + " takes a percentage from 0 to 100, not '" + text + "'");
  }
  return value / 100.0;
}

// The pictures' options given without their picture are a mistake worth saying.
void check_picture_options(const std::vector<std::string>& args, const Request& r) {
  for (const std::string& a : args) {
    const bool graph = a == "--node-threshold" || a == "--edge-threshold" || a == "--per-thread";
    const bool flame = a == "--icicle" || a == "--memory" || a == "--leaks";
    if (graph && r.callgraph.empty()) throw UsageError(a + " is an option of --callgraph, which is not asked for");
    if (flame && r.flamegraph.empty()) throw UsageError(a + " is an option of --flamegraph, which is not asked for");
  }
}

// args[i] if it is the call graph's or the flame graph's (and its value), into `r`.
bool picture_option(const std::vector<std::string>& args, std::size_t& i, Request& r) {
  const std::string& a = args[i];
  if (a == "--callgraph") {
    r.callgraph = option_value(args, i);
  } else if (a == "--flamegraph") {
    r.flamegraph = option_value(args, i);
  } else if (a == "--node-threshold" || a == "--edge-threshold") {
    (a == "--node-threshold" ? r.callgraph_options.node_threshold : r.callgraph_options.edge_threshold) =
        parse_percent(a, option_value(args, i));
  } else if (a == "--per-thread") {
    r.callgraph_options.per_thread = true;
  } else if (a == "--icicle") {
    r.flamegraph_options.icicle = true;
  } else if (a == "--memory" || a == "--leaks") {
    const FlameValue v = a == "--memory" ? FlameValue::alloc_bytes : FlameValue::leaked_bytes;
    if (r.flamegraph_options.value != FlameValue::self_ns && r.flamegraph_options.value != v)
      throw UsageError("--memory and --leaks: one flame graph value only");
    r.flamegraph_options.value = v;
  } else {
    return false;
  }
  return true;
}

// The command line, or UsageError.
Request parse(const std::vector<std::string>& args) {
  Request r;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--chrome") {
      r.chrome = option_value(args, i);
    } else if (a == "--perfetto") {
      r.perfetto = option_value(args, i);
    } else if (a == "--pstats") {
      r.pstats = option_value(args, i);
    } else if (a == "--folded") {
      r.folded = option_value(args, i);
    } else if (a == "--summary") {
      r.summary = option_value(args, i);
    } else if (a == "--table") {
      r.table = option_value(args, i);
    } else if (picture_option(args, i, r)) {
      // --callgraph, --flamegraph and their options: read there
    } else if (a == "--source-locations") {
      r.chrome_options.source_locations = true;
    } else if (a == "--per-thread-counters") {
      r.chrome_options.per_thread_counters = true;
    } else if (a == "--folded-value") {
      const std::string& v = option_value(args, i);
      if (v == "self") {
        r.folded_options.value = FoldedValue::self_ns;
      } else if (v == "total") {
        r.folded_options.value = FoldedValue::total_ns;
      } else if (v == "calls") {
        r.folded_options.value = FoldedValue::calls;
      } else if (v == "alloc-bytes" || v == "alloc_bytes") {
        r.folded_options.value = FoldedValue::alloc_bytes;
      } else if (v == "allocs") {
        r.folded_options.value = FoldedValue::allocs;
      } else {
        throw UsageError("--folded-value takes self, total, calls, alloc-bytes or allocs, not '" + v + "'");
      }
    } else if (a == "--thread-roots") {
      r.folded_options.thread_root = true;
    } else if (a == "--transparent") {
      r.summary_options.transparent_names.push_back(option_value(args, i));
    } else if (a == "--rows") {
      r.table_options.row_limit = parse_count(a, option_value(args, i));
    } else if (a == "--fold-steps") {
      r.table_options.fold_steps = true;
    } else if (a == "--estimate-sampled") {
      r.estimate = true;
    } else if (a == "--on-cpu") {
      r.folded_options.on_cpu = r.on_cpu = true;
    } else if (a == "--alloc-bytes") {
      r.folded_options.value = FoldedValue::alloc_bytes;
      r.alloc_bytes = true;
    } else if (a == "--no-rings") {
      r.rings = false;
    } else if (a == "--symbols-path") {
      r.symbol_paths.emplace_back(option_value(args, i));
    } else if (a.size() > 1 && a[0] == '-') {  // '-' alone is an input: refused as one (check_input)
      throw UsageError("unknown option '" + a + "' (see ringtrace convert --help)");
    } else if (r.input.empty()) {
      r.input = a;
    } else {
      throw UsageError("one input file only ('" + r.input + "', then '" + a + "')");
    }
  }
  if (r.input.empty()) throw UsageError("no input file (see ringtrace convert --help)");
  if (r.chrome.empty() && r.perfetto.empty() && r.pstats.empty() && r.folded.empty() && r.summary.empty() &&
      r.table.empty() && r.flamegraph.empty() && r.callgraph.empty()) {
    throw UsageError(
        "no output asked for: --chrome, --perfetto, --pstats, --folded, --summary, --table, --flamegraph or "
        "--callgraph");
  }
  if (r.pstats == "-") throw UsageError("--pstats writes a binary file, not to standard output");
  check_picture_options(args, r);
  if (r.callgraph.ends_with(".svg")) r.callgraph_dot = r.callgraph.substr(0, r.callgraph.size() - 4) + ".dot";
  r.callgraph_options.estimate_sampled = r.flamegraph_options.estimate_sampled = r.estimate;
  r.callgraph_options.on_cpu = r.flamegraph_options.on_cpu = r.on_cpu;
  r.flamegraph_options.thread_root = r.folded_options.thread_root;
  r.folded_options.estimate_sampled = r.summary_options.estimate_sampled = r.table_options.estimate_sampled =
      r.estimate;
  return r;
}

// Every output's exporter, opened (and so checked) before anything is read.
std::vector<std::shared_ptr<Exporter>> open_outputs(const Request& r) {
  std::vector<std::shared_ptr<Exporter>> exporters;
  if (!r.chrome.empty()) {
    exporters.push_back(r.chrome == "-" ? chrome_trace_exporter(std::cout, r.chrome_options)
                                        : chrome_trace_exporter(r.chrome, r.chrome_options));
  }
  if (!r.perfetto.empty()) {
    PerfettoOptions perfetto_options;
    perfetto_options.per_thread_counters = r.chrome_options.per_thread_counters;
    exporters.push_back(r.perfetto == "-" ? perfetto_exporter(std::cout, perfetto_options)
                                          : perfetto_exporter(r.perfetto, perfetto_options));
  }
  if (!r.pstats.empty()) {
    PstatsOptions pstats_options;
    pstats_options.estimate_sampled = r.estimate;
    pstats_options.on_cpu = r.on_cpu;
    pstats_options.alloc_bytes = r.alloc_bytes;
    exporters.push_back(pstats_exporter(r.pstats, pstats_options));
  }
  if (!r.folded.empty()) {
    exporters.push_back(r.folded == "-" ? folded_stacks_exporter(std::cout, r.folded_options)
                                        : folded_stacks_exporter(r.folded, r.folded_options));
  }
  if (!r.summary.empty()) {
    exporters.push_back(r.summary == "-" ? ops_summary_exporter(std::cout, r.summary_options)
                                         : ops_summary_exporter(r.summary, r.summary_options));
  }
  if (!r.table.empty()) {
    exporters.push_back(r.table == "-" ? table_exporter(std::cout, r.table_options)
                                       : table_exporter(r.table, r.table_options));
  }
  if (!r.flamegraph.empty()) {
    exporters.push_back(r.flamegraph == "-" ? flame_graph_exporter(std::cout, r.flamegraph_options)
                                            : flame_graph_exporter(r.flamegraph, r.flamegraph_options));
  }
  // Last: drawing the SVG may fail (dot fails) after its .dot is written, and what it
  // throws ends the replay; every other output is finished by then.
  if (!r.callgraph.empty()) {
    exporters.push_back(r.callgraph == "-" ? call_graph_exporter(std::cout, r.callgraph_options)
                                           : call_graph_exporter(r.callgraph, r.callgraph_options));
  }
  return exporters;
}

// Chrome JSON spends most of its bytes on keys repeated in every event and on decimal
// times; Perfetto's protobuf holds the same trace in about a third of that (docs/guide.md,
// "Perfetto trace"; measured on the demo's trace too). Worth a line once the JSON is
// large enough to be slow to load; not for .gz, whose ratio is another.
constexpr std::uintmax_t kLargeJsonBytes = 256'000'000;

// The line that says what a successful conversion wrote, on standard error (standard
// output may be one of the outputs):
//   ringtrace convert: wrote trace.json (1.88 GB) in 12.3 s from run.rtrace (45,123,456 events)
void print_summary(const Request& r, const ReplayResult& result, std::chrono::steady_clock::duration took) {
  std::string written;
  std::uintmax_t chrome_bytes = 0;
  for (const Output& o : r.outputs()) {
    if (o.path.empty()) continue;
    if (!written.empty()) written += ", ";
    if (o.path == "-") {
      written += std::string("standard output (") + o.flag + ")";
      continue;
    }
    std::error_code ec;
    const std::uintmax_t bytes = std::filesystem::file_size(o.path, ec);
    written += o.path + " (" + (ec ? std::string("size unknown") : byte_size(bytes)) + ")";
    if (std::string_view(o.flag) == "--chrome" && !ec) chrome_bytes = bytes;
  }
  std::fprintf(stderr, "ringtrace convert: wrote %s in %s from %s (%s events)\n", written.c_str(),
               elapsed(took).c_str(), r.input.c_str(), thousands(result.events).c_str());
  if (chrome_bytes >= kLargeJsonBytes && r.perfetto.empty() && !r.chrome.ends_with(".gz")) {
    std::fprintf(stderr,
                 "ringtrace convert: --perfetto OUT writes this trace in about a third of the size "
                 "(for Perfetto UI and trace_processor)\n");
  }
}

}  // namespace

int convert(const std::vector<std::string>& args) {
  if (wants_help(args)) {
    std::fputs(kHelp, stdout);
    return 0;
  }
  const auto start = std::chrono::steady_clock::now();
  Request r = parse(args);
  if (const std::string why = refused(r.input, r.rings, r.outputs()); !why.empty()) throw UsageError(why);
  check_input(r.input, r.rings);
  if (!r.callgraph_dot.empty() && !graphviz_dot_found()) {
    // Said now, not after a long conversion; the DOT text is written all the same.
    error("convert", "--callgraph " + r.callgraph + ": Graphviz's dot is not on PATH (Debian: apt install graphviz); " +
                         "writing " + r.callgraph_dot + " only (then: dot -Tsvg " + r.callgraph_dot + " -o " +
                         r.callgraph + ")");
    r.callgraph = r.callgraph_dot;
    r.callgraph_dot.clear();
    r.callgraph_undrawn = true;
  }
  const std::vector<std::shared_ptr<Exporter>> exporters = open_outputs(r);
  std::vector<Exporter*> raw;
  for (const auto& x : exporters) raw.push_back(x.get());
  ProgressBar bar("ringtrace convert");
  ReplayOptions options;
  options.progress = std::ref(bar);
  options.recover_rings = r.rings;
  options.symbol_paths = r.symbol_paths;
  if (r.rings) options.rings = ring_file_of(r.input);
  const ReplayResult result = replay_file(r.input, raw, options);
  std::cout.flush();
  if (!result.problem.empty()) return error("convert", r.input + ": " + result.problem);
  print_summary(r, result, std::chrono::steady_clock::now() - start);
  return r.callgraph_undrawn ? 1 : 0;
}

}  // namespace ringtrace::tool
