// ringtrace record: runs a program that links ringtrace with a session the runtime starts
// from the environment (RINGTRACE_OUTPUT and the variables beside it; runtime/launch/),
// stopped at the program's exit. No change to the program's code.
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
#include "ringtrace/files.hpp"
#include "switch_stream.hpp"  // runtime/switches: the probe of --context-switches

namespace ringtrace::tool {

namespace {

constexpr const char* kHelp =
    "usage: ringtrace record [outputs] [options] -- PROGRAM [ARGS...]\n"
    "\n"
    "Runs PROGRAM, which links ringtrace (and, for every function without a macro,\n"
    "ringtrace::functions with code built with -finstrument-functions), recording the\n"
    "whole run: the runtime starts a session when the program starts and stops it at its\n"
    "exit (or at SIGINT/SIGTERM). It sets the environment variables below for PROGRAM;\n"
    "they work the same set by hand. Exits with PROGRAM's status (128 + N when signal N\n"
    "ended it), or 1 when PROGRAM exited 0 but an output was not written whole.\n"
    "\n"
    "outputs (any subset; none: -o run.rtrace)      RINGTRACE_OUTPUT=format:path,...\n"
    "  -o, --output OUT  binary trace file (ringtrace convert, report, info)\n"
    "  --chrome OUT      Chrome trace JSON (.gz: compressed)\n"
    "  --perfetto OUT    Perfetto's protobuf trace\n"
    "  --pstats OUT      Python profile (python3 -m pstats)\n"
    "  --folded OUT      folded stacks\n"
    "  --table OUT       key-averages table (text)\n"
    "  --summary OUT     captured-ops summary (text)\n"
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
    "  --memory          record every allocation and free (malloc, operator new, ...):\n"
    "                    report gains each zone's bytes, the heap's peak and --leaks.\n"
    "                    A dynamically linked PROGRAM that does not link ringtrace is\n"
    "                    recorded through libringtrace_preload.so (LD_PRELOAD); one\n"
    "                    that links ringtrace links ringtrace::memory     RINGTRACE_MEMORY=1\n"
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
    "process wrote is said once. Option values the runtime would refuse are refused here.\n";

struct Output {
  const char* format;
  std::string path;
};

std::string exit_text(int status) {
  if (WIFEXITED(status)) return "exit status " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status))
    return std::string("killed by signal ") + std::to_string(WTERMSIG(status)) + " (" + strsignal(WTERMSIG(status)) +
           ")";
  return "status " + std::to_string(status);
}

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

const std::string& regex_value(std::string_view option, const std::string& text) {
  try {
    std::regex check(text);
  } catch (const std::regex_error& e) {
    throw UsageError(std::string(option) + ": '" + text + "' is no regular expression: " + e.what());
  }
  return text;
}

using FileTimes = std::map<std::filesystem::path, std::filesystem::file_time_type>;

// The files in the directory of `output` that a run may have written for it, with their
// times: `output` itself, or for a file name with "%p" every name the runtime makes of
// it (digits for each %p), and the temporaries of each (<name>.partial.XXXXXXXX, what a
// process that did not finish leaves).
FileTimes files_of(const std::string& output) {
  const std::filesystem::path path = output;
  const std::string name = path.filename().string();
  std::string pattern;
  for (std::size_t from = 0;;) {
    const std::size_t at = name.find("%p", from);
    for (const char c : name.substr(from, at == std::string::npos ? std::string::npos : at - from)) {
      if (std::strchr("\\^$.|?*+()[]{}", c) != nullptr) pattern += '\\';
      pattern += c;
    }
    if (at == std::string::npos) break;
    pattern += "[0-9]+";
    from = at + 2;
  }
  const std::regex named(pattern);
  FileTimes files;
  std::error_code ec;
  const std::filesystem::path directory = path.parent_path();
  for (const auto& entry : std::filesystem::directory_iterator(directory.empty() ? "." : directory, ec)) {
    const std::filesystem::path file = directory / entry.path().filename();  // as the user wrote the directory
    const std::filesystem::path finished = ringtrace::output_of_partial(file);
    if (!std::regex_match((finished.empty() ? file : finished).filename().string(), named)) continue;
    std::error_code time_ec;
    const auto when = std::filesystem::last_write_time(file, time_ec);
    if (!time_ec) files.emplace(file, when);
  }
  return files;
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
  std::vector<Output> outputs;
  std::vector<std::pair<const char*, std::string>> settings;
  bool switches = false;
  bool memory = false;
  std::size_t i = 0;
  for (; i < args.size() && args[i] != "--"; ++i) {
    const std::string& a = args[i];
    if (a == "-o" || a == "--output") {
      outputs.push_back({"rtrace", option_value(args, i)});
    } else if (a == "--chrome" || a == "--perfetto" || a == "--pstats" || a == "--folded" || a == "--table" ||
               a == "--summary") {
      outputs.push_back({a.c_str() + 2, option_value(args, i)});
    } else if (a == "--min-duration") {
      settings.emplace_back("RINGTRACE_MIN_DURATION", duration_value(a, option_value(args, i)));
    } else if (a == "--max-depth") {
      settings.emplace_back("RINGTRACE_MAX_DEPTH", std::to_string(count_in(a, option_value(args, i), 1, 1u << 20)));
    } else if (a == "--include" || a == "--exclude") {
      settings.emplace_back(a == "--include" ? "RINGTRACE_INCLUDE" : "RINGTRACE_EXCLUDE",
                            regex_value(a, option_value(args, i)));
    } else if (a == "--buffer") {
      settings.emplace_back("RINGTRACE_BUFFER", std::to_string(count_in(a, option_value(args, i), 1, SIZE_MAX)));
    } else if (a == "--inlined") {
      settings.emplace_back("RINGTRACE_INLINED", "1");
    } else if (a == "--context-switches") {
      settings.emplace_back("RINGTRACE_CONTEXT_SWITCHES", "1");
      switches = true;
    } else if (a == "--memory") {
      settings.emplace_back("RINGTRACE_MEMORY", "1");
      memory = true;
    } else if (a == "--node-id") {
      const std::string& id = option_value(args, i);
      if (id.empty() || id.size() > 256) throw UsageError("--node-id: '" + id + "' is not 1 to 256 bytes");
      settings.emplace_back("RINGTRACE_NODE_ID", id);
    } else if (a == "--policy") {
      const std::string& policy = option_value(args, i);
      if (policy != "drop" && policy != "block") throw UsageError("--policy takes drop or block, not '" + policy + "'");
      settings.emplace_back("RINGTRACE_POLICY", policy);
    } else {
      throw UsageError("unknown option '" + a + "' (see ringtrace record --help); the program comes after --");
    }
  }
  // A recording of a whole program is wanted whole, as uftrace's is: a thread waits for
  // room rather than drop (db_bench under g++: 2 to 8% of its calls dropped in drop mode on
  // 2 cores, for no time saved). A program that must never wait asks for drop.
  const bool policy_given = std::any_of(settings.begin(), settings.end(),
                                        [](const auto& s) { return std::string_view(s.first) == "RINGTRACE_POLICY"; });
  if (!policy_given) settings.emplace_back("RINGTRACE_POLICY", "block");
  if (i + 1 >= args.size()) throw UsageError("no program to run: ringtrace record [options] -- PROGRAM [ARGS...]");
  const std::vector<std::string> program(args.begin() + static_cast<std::ptrdiff_t>(i) + 1, args.end());
  if (outputs.empty()) outputs.push_back({"rtrace", "run.rtrace"});
  // A list with ", " between its items (append, not operator+: g++ 12 warns wrongly there).
  const auto add_to = [](std::string& list, std::string_view separator, std::string_view item) {
    if (!list.empty()) list.append(separator);
    list.append(item);
  };
  std::string list;
  for (const Output& o : outputs) {
    if (o.path.find(',') != std::string::npos)
      throw UsageError("'" + o.path + "': an output path with a ',' cannot be passed on");
    add_to(list, ",", std::string(o.format) + ":" + o.path);
  }
  // An output that cannot be written is refused before the program runs (the runtime
  // would only say so on its way, and the run would be lost). "%p" as this process's id:
  // the check is of the directory and of the name's kind, not of one process's file.
  for (const Output& o : outputs) ringtrace::check_output_file(with_pid(o.path, ::getpid()));
  // Context switches: the kernel's answer here is the program's (the same user, the same
  // perf_event_paranoid, a seccomp filter inherited), so a refusal is said once, here,
  // rather than found out from the files afterwards; the program runs with the variable
  // all the same, so each file says why it has no switches (ringtrace info).
  if (switches) {
    const switches::SwitchStream probe = switches::SwitchStream::open(static_cast<pid_t>(::gettid()));
    if (!probe.ok()) {
      error("record", "--context-switches: the kernel refuses context switch records here (" + probe.error() +
                          "); recording without on-CPU times");
    }
  }
  // --memory: the allocation functions and a runtime, preloaded (before anything the
  // program's own LD_PRELOAD names, so that its allocator, if it brings one, comes next).
  std::string preload;
  if (memory) {
    preload = preload_library();
    if (const char* more = std::getenv("LD_PRELOAD"); more != nullptr && *more != '\0')
      preload += std::string(":") + more;
  }
  // The files of each output that exist before the run: one still there afterwards with
  // the same time was not written by it.
  std::vector<FileTimes> before;
  for (const Output& o : outputs) before.push_back(files_of(o.path));
  const auto start = std::chrono::steady_clock::now();
  std::fflush(nullptr);
  const pid_t child = ::fork();
  if (child < 0) throw std::runtime_error(std::string("fork: ") + std::strerror(errno));
  if (child == 0) {
    ::setenv("RINGTRACE_OUTPUT", list.c_str(), 1);
    for (const auto& [name, value] : settings) ::setenv(name, value.c_str(), 1);
    if (!preload.empty()) ::setenv("LD_PRELOAD", preload.c_str(), 1);
    std::vector<char*> argv;
    for (const std::string& a : program) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    ::execvp(argv[0], argv.data());
    std::fprintf(stderr, "ringtrace record: cannot run '%s': %s\n", argv[0], std::strerror(errno));
    ::_exit(127);
  }
  // The terminal's Ctrl-C goes to the whole group: the program stops its session and
  // ends; the tool waits for it and reports.
  struct sigaction ignore {
  }, old_int{}, old_term{};
  ignore.sa_handler = SIG_IGN;
  ::sigaction(SIGINT, &ignore, &old_int);
  ::sigaction(SIGTERM, &ignore, &old_term);
  int status = 0;
  while (::waitpid(child, &status, 0) < 0 && errno == EINTR) {}
  ::sigaction(SIGINT, &old_int, nullptr);
  ::sigaction(SIGTERM, &old_term, nullptr);
  const auto took = std::chrono::steady_clock::now() - start;
  if (WIFEXITED(status) && WEXITSTATUS(status) == 127) return 127;  // it did not run (said above)
  // What each output became: files written whole (several for a "%p" output whose
  // program started processes that record), temporaries left by processes that did not
  // finish (SIGKILL, a crash), or nothing.
  std::string written, partial, missing;
  bool all_whole = true, partial_trace = false;
  for (std::size_t k = 0; k < outputs.size(); ++k) {
    bool whole = false, any = false;
    for (const auto& [path, when] : files_of(outputs[k].path)) {
      const auto earlier = before[k].find(path);
      if (earlier != before[k].end() && earlier->second == when) continue;
      std::error_code ec;
      const std::uintmax_t bytes = std::filesystem::file_size(path, ec);
      const std::string described = path.string() + " (" + (ec ? std::string("size unknown") : byte_size(bytes)) + ")";
      const bool temporary = !ringtrace::output_of_partial(path).empty();
      add_to(temporary ? partial : written, ", ", described);
      whole = whole || !temporary;
      partial_trace = partial_trace || (temporary && std::string_view(outputs[k].format) == "rtrace");
      any = true;
    }
    if (!any) add_to(missing, ", ", outputs[k].path);
    all_whole = all_whole && whole;
  }
  const int program_status =
      WIFEXITED(status) ? WEXITSTATUS(status) : 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
  const std::string ran = program[0] + " (" + exit_text(status) + ")";
  if (!written.empty()) {
    std::fprintf(stderr, "ringtrace record: wrote %s in %s from %s\n", written.c_str(), elapsed(took).c_str(),
                 ran.c_str());
  }
  if (!partial.empty()) {
    // The binary file's temporary is a recording cut short, which the tool reads
    // (docs/file-format.md); the other formats' hold what their exporters had written.
    error("record", ran + ": a process killed or crashed before its end left what it recorded up to its last " +
                        "drainer pass in " + partial +
                        (partial_trace ? "; ringtrace convert, report and info read a binary file's temporary as a "
                                         "file cut short"
                                       : ""));
  }
  if (!missing.empty()) {
    // The outputs and settings were checked before the run, so a session started in a
    // program that links ringtrace; it writes its temporary at its first drainer pass.
    error("record", ran + " did not write " + missing +
                        ": it does not link ringtrace, or it ended before its session's first write (_exit or a "
                        "crash within milliseconds of its start)");
  }
  // The program's failure first; a program that succeeded without being recorded whole
  // is the tool's failure.
  return program_status != 0 ? program_status : all_whole ? 0 : 1;
}

}  // namespace ringtrace::tool
