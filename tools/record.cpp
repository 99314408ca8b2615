// ringtrace record: runs a program with a session the runtime starts from the environment
// (RINGTRACE_OUTPUT and the variables beside it; runtime/launch/), stopped at the
// program's exit: the runtime the program links, or with --memory the one preloaded into a
// program that links none. No change to the program's code.
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <regex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "commands.hpp"
#include "record_run.hpp"
#include "ringtrace/files.hpp"
#include "switch_stream.hpp"  // runtime/switches: the probe of --context-switches

namespace ringtrace::tool {

namespace {

constexpr const char* kHelp =
    "usage: ringtrace record [outputs] [options] -- PROGRAM [ARGS...]\n"
    "\n"
    "Runs PROGRAM and records the whole run: the zones of a PROGRAM that links ringtrace\n"
    "(RINGTRACE_ZONE and the other macros), the calls of code built with\n"
    "-finstrument-functions (linked with ringtrace::functions), and with --memory every\n"
    "allocation, in any dynamically linked PROGRAM: one that does not link ringtrace is\n"
    "recorded through a preload, which records its -finstrument-functions calls too. The\n"
    "runtime starts a session when the program starts and stops it at its exit (or at\n"
    "SIGINT/SIGTERM). It sets the environment variables below for PROGRAM; they work the\n"
    "same set by hand. Exits with PROGRAM's status (128 + N when signal N ended it), or 1\n"
    "when PROGRAM exited 0 but an output was not written whole.\n"
    "\n"
    "outputs (any subset; none: -o run.rtrace)      RINGTRACE_OUTPUT=format:path,...\n"
    "  -o, --output OUT  binary trace file (ringtrace convert, report, info)\n"
    "  --chrome OUT      Chrome trace JSON (.gz: compressed)\n"
    "  --perfetto OUT    Perfetto's protobuf trace\n"
    "  --pstats OUT      Python profile (python3 -m pstats)\n"
    "  --folded OUT      folded stacks\n"
    "  --table OUT       key-averages table (text)\n"
    "  --summary OUT     captured-ops summary (text)\n"
    "  --callgraph OUT   call graph: OUT.svg drawn by Graphviz's dot from OUT.dot beside it\n"
    "                    (without dot, the .dot only); any other OUT: the DOT text\n"
    "  (\"%p\" in OUT's file name becomes the process id: each process started with\n"
    "  these variables, PROGRAM or those a script runs, writes a file of its own)\n"
    "options:\n"
    "  --min-duration D  leave out instrumented calls shorter than D (100ns, 2us, 1ms),\n"
    "                    counted per function             RINGTRACE_MIN_DURATION\n"
    "  --max-depth N     record instrumented calls at most N deep  RINGTRACE_MAX_DEPTH\n"
    "  --inlined         also record the calls of functions g++ inlined (their hooks run\n"
    "                    in the frame they were inlined into; by default they are left\n"
    "                    out and counted, as clang's -finstrument-functions-after-\n"
    "                    inlining leaves them out)             RINGTRACE_INLINED=1\n"
    "  --include RE      only functions whose qualified name matches RE (ECMAScript)\n"
    "                                                     RINGTRACE_INCLUDE\n"
    "  --exclude RE      leave out functions whose name matches RE  RINGTRACE_EXCLUDE\n"
    "  --buffer N        records (16 bytes) per thread ring (default 524288: 8 MiB)\n"
    "                                                     RINGTRACE_BUFFER\n"
    "  --policy P        block (default: a whole recording; a thread waits for room)\n"
    "                    or drop (a thread never waits; what its full ring could\n"
    "                    not take is counted)                RINGTRACE_POLICY\n"
    "  --context-switches  record each thread's context switches: report and the other\n"
    "                    outputs gain on-CPU times (a zone that waited shows its wait as\n"
    "                    off-CPU)                            RINGTRACE_CONTEXT_SWITCHES=1\n"
    "                    Where the kernel refuses them (perf_event_paranoid 3, a seccomp\n"
    "                    filter), this is said once and PROGRAM is recorded without them.\n"
    "  --memory          record every allocation and free (malloc, operator new, ...),\n"
    "                    each allocation with its caller: report gains each zone's\n"
    "                    bytes, the heap's peak, --leaks and --memory (where it went).\n"
    "                    A dynamically linked PROGRAM that does not link ringtrace is\n"
    "                    recorded through libringtrace_preload.so (LD_PRELOAD); one\n"
    "                    that links ringtrace links ringtrace::memory     RINGTRACE_MEMORY=1\n"
    "  --memory-stacks[=SIZE]  --memory, and the whole call stack of one allocation in\n"
    "                    every SIZE bytes allocated on average (default 512K; byte\n"
    "                    sampling, weighed back in report --memory: unbiased estimates)\n"
    "                                                     RINGTRACE_MEMORY_STACKS\n"
    "  --node-id ID      the node the program's processes run on, as report --by-node\n"
    "                    and merged files name it (default: host:pid)  RINGTRACE_NODE_ID\n"
    "\n"
    "The filters apply to the events the session decodes (every output but the binary\n"
    "file, which keeps every call; convert does not filter). A program that starts a\n"
    "Session of its own is told so on standard error and keeps this one.\n"
    "\n"
    "An output that cannot be written (its directory is missing, it is a directory) is\n"
    "refused before PROGRAM runs. Afterwards one line names every file written, a\n"
    "process killed before its end leaves its output's temporary OUT.partial.XXXXXXXX\n"
    "(named; convert, report and info read it as a file cut short), and an output no\n"
    "process wrote is said once. Option values the runtime would refuse are refused here.\n"
    "\n"
    "ringtrace record --pid PID records a running program from outside instead (ringtrace\n"
    "record --pid --help).\n";

// libringtrace_preload.so for --memory: RINGTRACE_PRELOAD if set, else beside the tool as
// the build tree has it (one folder up) or where it is installed.
std::string preload_library() {
  if (const char* given = std::getenv("RINGTRACE_PRELOAD"); given != nullptr && *given != '\0') {
    if (!std::filesystem::is_regular_file(given))
      throw std::runtime_error(std::string("RINGTRACE_PRELOAD: no file '") + given + "'");
    return std::filesystem::absolute(given).string();
  }
  std::error_code ec;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    const std::filesystem::path dir = self.parent_path();
    for (const std::filesystem::path& p : {dir.parent_path() / "libringtrace_preload.so",
                                           dir / RINGTRACE_PRELOAD_INSTALLED / "libringtrace_preload.so"}) {
      if (std::filesystem::is_regular_file(p, ec)) return p.lexically_normal().string();
    }
  }
  throw std::runtime_error(
      "--memory: libringtrace_preload.so not found beside this tool (set RINGTRACE_PRELOAD to its path)");
}

// The runtime's rule for RINGTRACE_OUTPUT's paths (runtime/launch/): "%p" is the
// process id.
std::string with_pid(std::string path, long pid) {
  const std::string id = std::to_string(pid);
  for (std::size_t at = path.find("%p"); at != std::string::npos; at = path.find("%p", at + id.size())) {
    path.replace(at, 2, id);
  }
  return path;
}

// The options' values are checked here as the runtime checks the variables
// (runtime/launch/): a value it refuses would only be said as the program starts, and
// the run lost.
std::size_t count_in(std::string_view option, const std::string& text, std::size_t low, std::size_t high) {
  const std::size_t n = parse_count(option, text);
  if (n < low || n > high) {
    throw UsageError(std::string(option) + " takes a count from " + std::to_string(low) +
                     (high == SIZE_MAX ? " up" : " to " + std::to_string(high)) + ", not " + text);
  }
  return n;
}

const std::string& duration_value(std::string_view option, const std::string& text) {
  std::size_t used = 0;
  double value = -1;
  try {
    value = std::stod(text, &used);
  } catch (const std::exception&) {}
  const std::string unit = text.substr(used);
  const double scale = unit.empty() || unit == "ns" ? 1
                       : unit == "us"               ? 1e3
                       : unit == "ms"               ? 1e6
                       : unit == "s"                ? 1e9
                                                    : -1;
  const double ns = value * scale;
  if (scale < 0 || !(ns >= 0) || ns > 1e18) {
    throw UsageError(std::string(option) + " takes a duration (100ns, 2us, 1ms), not '" + text + "'");
  }
  return text;
}

// A size of bytes: digits with an optional K, M or G (1024-based).
std::uint64_t byte_count(std::string_view option, const std::string& text) {
  const std::size_t digits = text.find_first_not_of("0123456789");
  const std::string unit = digits == std::string::npos ? "" : text.substr(digits);
  const std::uint64_t scale = unit.empty()  ? 1
                              : unit == "K" ? 1024
                              : unit == "M" ? 1024 * 1024
                              : unit == "G" ? 1u << 30
                                            : 0;
  if (digits == 0 || scale == 0 || (digits != std::string::npos && digits > 12) || text.size() > 13) {
    throw UsageError(std::string(option) + " takes a size in bytes (512K, 1M, 4096), not '" + text + "'");
  }
  return std::stoull(text.substr(0, digits)) * scale;
}

const std::string& regex_value(std::string_view option, const std::string& text) {
  try {
    std::regex check(text);
  } catch (const std::regex_error& e) {
    throw UsageError(std::string(option) + ": '" + text + "' is no regular expression: " + e.what());
  }
  return text;
}

// Two outputs on one file would mix into one broken file: the runtime would refuse the
// second exporter as the program starts and record nothing, so it is refused here.
void check_distinct(const std::vector<RecordOutput>& outputs) {
  for (std::size_t i = 0; i < outputs.size(); ++i) {
    for (std::size_t j = 0; j < i; ++j) {
      const std::string a = with_pid(outputs[j].path, ::getpid()), b = with_pid(outputs[i].path, ::getpid());
      if (ringtrace::same_file(a, b)) {
        throw UsageError("--" + std::string(outputs[j].format) + " and --" + outputs[i].format + " both write '" +
                         outputs[i].path + "': one file per output");
      }
    }
  }
}

RecordPlan parse_plan(const std::vector<std::string>& args) {
  RecordPlan plan;
  std::size_t i = 0;
  for (; i < args.size() && args[i] != "--"; ++i) {
    const std::string& a = args[i];
    if (a == "-o" || a == "--output") {
      plan.outputs.push_back({"rtrace", option_value(args, i)});
    } else if (a == "--chrome" || a == "--perfetto" || a == "--pstats" || a == "--folded" || a == "--table" ||
               a == "--summary" || a == "--callgraph") {
      plan.outputs.push_back({a.c_str() + 2, option_value(args, i)});
    } else if (a == "--min-duration") {
      plan.settings.emplace_back("RINGTRACE_MIN_DURATION", duration_value(a, option_value(args, i)));
    } else if (a == "--max-depth") {
      plan.settings.emplace_back("RINGTRACE_MAX_DEPTH",
                                 std::to_string(count_in(a, option_value(args, i), 1, 1u << 20)));
    } else if (a == "--include" || a == "--exclude") {
      plan.settings.emplace_back(a == "--include" ? "RINGTRACE_INCLUDE" : "RINGTRACE_EXCLUDE",
                                 regex_value(a, option_value(args, i)));
    } else if (a == "--buffer") {
      plan.settings.emplace_back("RINGTRACE_BUFFER", std::to_string(count_in(a, option_value(args, i), 1, SIZE_MAX)));
    } else if (a == "--inlined") {
      plan.settings.emplace_back("RINGTRACE_INLINED", "1");
    } else if (a == "--context-switches") {
      plan.settings.emplace_back("RINGTRACE_CONTEXT_SWITCHES", "1");
      plan.switches = true;
    } else if (a == "--memory") {
      plan.settings.emplace_back("RINGTRACE_MEMORY", "1");
      plan.memory = true;
    } else if (a == "--memory-stacks" || a.starts_with("--memory-stacks=")) {
      const std::string value = a.size() > 15 ? a.substr(16) : "512K";
      plan.settings.emplace_back("RINGTRACE_MEMORY", "1");
      plan.settings.emplace_back("RINGTRACE_MEMORY_STACKS", std::to_string(byte_count(a, value)));
      plan.memory = true;
    } else if (a == "--node-id") {
      const std::string& id = option_value(args, i);
      if (id.empty() || id.size() > 256) throw UsageError("--node-id: '" + id + "' is not 1 to 256 bytes");
      plan.settings.emplace_back("RINGTRACE_NODE_ID", id);
    } else if (a == "--policy") {
      const std::string& policy = option_value(args, i);
      if (policy != "drop" && policy != "block") throw UsageError("--policy takes drop or block, not '" + policy + "'");
      plan.settings.emplace_back("RINGTRACE_POLICY", policy);
    } else {
      throw UsageError("unknown option '" + a + "' (see ringtrace record --help); the program comes after --");
    }
  }
  // A recording of a whole program is wanted whole, as uftrace's is: a thread waits for
  // room rather than drop (db_bench under g++: 2 to 8% of its calls dropped in drop mode on
  // 2 cores, for no time saved). A program that must never wait asks for drop.
  const bool policy_given = std::any_of(plan.settings.begin(), plan.settings.end(),
                                        [](const auto& s) { return std::string_view(s.first) == "RINGTRACE_POLICY"; });
  if (!policy_given) plan.settings.emplace_back("RINGTRACE_POLICY", "block");
  if (i + 1 >= args.size()) throw UsageError("no program to run: ringtrace record [options] -- PROGRAM [ARGS...]");
  plan.program.assign(args.begin() + static_cast<std::ptrdiff_t>(i) + 1, args.end());
  if (plan.outputs.empty()) plan.outputs.push_back({"rtrace", "run.rtrace"});
  for (const RecordOutput& o : plan.outputs) {
    if (o.path.find(',') != std::string::npos)
      throw UsageError("'" + o.path + "': an output path with a ',' cannot be passed on");
  }
  check_distinct(plan.outputs);
  return plan;
}

// What can be known before the program runs is checked then: the run would be lost.
void check_before_run(RecordPlan& plan) {
  // An output that cannot be written. "%p" as this process's id: the check is of the
  // directory and of the name's kind, not of one process's file.
  for (const RecordOutput& o : plan.outputs) ringtrace::check_output_file(with_pid(o.path, ::getpid()));
  // Context switches: the kernel's answer here is the program's (the same user, the same
  // perf_event_paranoid, a seccomp filter inherited), so a refusal is said once, here,
  // rather than found out from the files afterwards; the program runs with the variable
  // all the same, so each file says why it has no switches (ringtrace info).
  if (plan.switches) {
    const switches::SwitchStream probe = switches::SwitchStream::open(static_cast<pid_t>(::gettid()));
    if (!probe.ok()) {
      error("record", "--context-switches: the kernel refuses context switch records here (" + probe.error() +
                          "); recording without on-CPU times");
    }
  }
  // --memory: the allocation functions and a runtime, preloaded (before anything the
  // program's own LD_PRELOAD names, so that its allocator, if it brings one, comes next).
  if (plan.memory) {
    plan.preload = preload_library();
    if (const char* more = std::getenv("LD_PRELOAD"); more != nullptr && *more != '\0')
      plan.preload += std::string(":") + more;
  }
}

}  // namespace

int record(const std::vector<std::string>& args) {
  // --help before the program's command line (after it, it is the program's).
  const auto program_at = std::find(args.begin(), args.end(), std::string("--"));
  // A running process instead of a program to run: attach.cpp.
  if (std::find(args.begin(), program_at, std::string("--pid")) != program_at) return record_pid(args);
  if (wants_help(std::vector<std::string>(args.begin(), program_at))) {
    std::fputs(kHelp, stdout);
    return 0;
  }
  RecordPlan plan = parse_plan(args);
  check_before_run(plan);
  std::string outputs;
  for (const RecordOutput& o : plan.outputs) {  // append, not operator+: g++ 12 warns wrongly there
    if (!outputs.empty()) outputs.append(",");
    outputs.append(o.format).append(":").append(o.path);
  }
  // The files of each output that exist before the run: one still there afterwards with
  // the same time was not written by it.
  std::vector<FileTimes> before;
  for (const RecordOutput& o : plan.outputs) before.push_back(files_of(o.path));
  ReportInbox inbox;
  const RunResult run = run_recorded(plan, outputs, inbox);
  if (WIFEXITED(run.status) && WEXITSTATUS(run.status) == 127 && inbox.reports().empty()) return 127;  // did not run
  return say_outcome(plan, before, run, inbox.reports());
}

}  // namespace ringtrace::tool
