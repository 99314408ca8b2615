// ringtrace record: runs a program that links ringtrace with a session the runtime starts
// from the environment (RINGTRACE_OUTPUT and the variables beside it; runtime/launch/),
// stopped at the program's exit. No change to the program's code.
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "commands.hpp"

namespace ringtrace::tool {

namespace {

constexpr const char* kHelp =
    "usage: ringtrace record [outputs] [options] -- PROGRAM [ARGS...]\n"
    "\n"
    "Runs PROGRAM, which links ringtrace (and, for every function without a macro,\n"
    "ringtrace::functions with code built with -finstrument-functions), recording the\n"
    "whole run: the runtime starts a session when the program starts and stops it at its\n"
    "exit (or at SIGINT/SIGTERM). It sets the environment variables below for PROGRAM;\n"
    "they work the same set by hand. Exits with PROGRAM's status.\n"
    "\n"
    "outputs (any subset; none: -o run.rtrace)      RINGTRACE_OUTPUT=format:path,...\n"
    "  -o, --output OUT  binary trace file (ringtrace convert, report, info)\n"
    "  --chrome OUT      Chrome trace JSON (.gz: compressed)\n"
    "  --perfetto OUT    Perfetto's protobuf trace\n"
    "  --pstats OUT      Python profile (python3 -m pstats)\n"
    "  --folded OUT      folded stacks\n"
    "  --table OUT       key-averages table (text)\n"
    "  --summary OUT     captured-ops summary (text)\n"
    "  (\"%p\" in OUT becomes the process id)\n"
    "options:\n"
    "  --min-duration D  leave out instrumented calls shorter than D (100ns, 2us, 1ms),\n"
    "                    counted per function             RINGTRACE_MIN_DURATION\n"
    "  --max-depth N     record instrumented calls at most N deep  RINGTRACE_MAX_DEPTH\n"
    "  --include RE      only functions whose qualified name matches RE (ECMAScript)\n"
    "                                                     RINGTRACE_INCLUDE\n"
    "  --exclude RE      leave out functions whose name matches RE  RINGTRACE_EXCLUDE\n"
    "  --buffer N        records per thread ring (default 65536)  RINGTRACE_BUFFER\n"
    "  --policy P        drop (default) or block: what a thread does when its ring is\n"
    "                    full                                RINGTRACE_POLICY\n"
    "\n"
    "The filters apply to the events the session decodes (every output but the binary\n"
    "file, which keeps every call; convert does not filter). A program that starts a\n"
    "Session of its own is told so on standard error and keeps this one.\n";

struct Output {
  const char* format;
  std::string path;
};

std::string exit_text(int status) {
  if (WIFEXITED(status)) return "exit status " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return std::string("killed by signal ") + std::to_string(WTERMSIG(status)) + " (" +
                                 strsignal(WTERMSIG(status)) + ")";
  return "status " + std::to_string(status);
}

}  // namespace

int record(const std::vector<std::string>& args) {
  // --help before the program's command line (after it, it is the program's).
  const auto program_at = std::find(args.begin(), args.end(), std::string("--"));
  if (wants_help(std::vector<std::string>(args.begin(), program_at))) {
    std::fputs(kHelp, stdout);
    return 0;
  }
  std::vector<Output> outputs;
  std::vector<std::pair<const char*, std::string>> settings;
  std::size_t i = 0;
  for (; i < args.size() && args[i] != "--"; ++i) {
    const std::string& a = args[i];
    if (a == "-o" || a == "--output") {
      outputs.push_back({"rtrace", option_value(args, i)});
    } else if (a == "--chrome" || a == "--perfetto" || a == "--pstats" || a == "--folded" || a == "--table" ||
               a == "--summary") {
      outputs.push_back({a.c_str() + 2, option_value(args, i)});
    } else if (a == "--min-duration") {
      settings.emplace_back("RINGTRACE_MIN_DURATION", option_value(args, i));
    } else if (a == "--max-depth") {
      settings.emplace_back("RINGTRACE_MAX_DEPTH", std::to_string(parse_count(a, option_value(args, i))));
    } else if (a == "--include") {
      settings.emplace_back("RINGTRACE_INCLUDE", option_value(args, i));
    } else if (a == "--exclude") {
      settings.emplace_back("RINGTRACE_EXCLUDE", option_value(args, i));
    } else if (a == "--buffer") {
      settings.emplace_back("RINGTRACE_BUFFER", std::to_string(parse_count(a, option_value(args, i))));
    } else if (a == "--policy") {
      settings.emplace_back("RINGTRACE_POLICY", option_value(args, i));
    } else {
      throw UsageError("unknown option '" + a + "' (see ringtrace record --help); the program comes after --");
    }
  }
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
    if (o.path.find(',') != std::string::npos) throw UsageError("'" + o.path + "': an output path with a ',' cannot be passed on");
    add_to(list, ",", std::string(o.format) + ":" + o.path);
  }
  // Outputs that exist before the run: a file still there afterwards with the same time
  // was not written by it.
  std::vector<std::filesystem::file_time_type> before;
  for (const Output& o : outputs) {
    std::error_code ec;
    before.push_back(std::filesystem::last_write_time(o.path, ec));
    if (ec) before.back() = std::filesystem::file_time_type::min();
  }
  const auto start = std::chrono::steady_clock::now();
  std::fflush(nullptr);
  const pid_t child = ::fork();
  if (child < 0) throw std::runtime_error(std::string("fork: ") + std::strerror(errno));
  if (child == 0) {
    ::setenv("RINGTRACE_OUTPUT", list.c_str(), 1);
    for (const auto& [name, value] : settings) ::setenv(name, value.c_str(), 1);
    std::vector<char*> argv;
    for (const std::string& a : program) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    ::execvp(argv[0], argv.data());
    std::fprintf(stderr, "ringtrace record: cannot run '%s': %s\n", argv[0], std::strerror(errno));
    ::_exit(127);
  }
  // The terminal's Ctrl-C goes to the whole group: the program stops its session and
  // ends; the tool waits for it and reports.
  struct sigaction ignore {}, old_int {}, old_term {};
  ignore.sa_handler = SIG_IGN;
  ::sigaction(SIGINT, &ignore, &old_int);
  ::sigaction(SIGTERM, &ignore, &old_term);
  int status = 0;
  while (::waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  ::sigaction(SIGINT, &old_int, nullptr);
  ::sigaction(SIGTERM, &old_term, nullptr);
  const auto took = std::chrono::steady_clock::now() - start;
  if (WIFEXITED(status) && WEXITSTATUS(status) == 127) return 127;  // it did not run (said above)
  std::string written, missing;
  for (std::size_t k = 0; k < outputs.size(); ++k) {
    const Output& o = outputs[k];
    std::error_code ec;
    const auto when = std::filesystem::last_write_time(o.path, ec);
    if (ec || when == before[k]) {
      add_to(missing, ", ", o.path);
      continue;
    }
    const std::uintmax_t bytes = std::filesystem::file_size(o.path, ec);
    add_to(written, ", ", o.path + " (" + (ec ? std::string("size unknown") : byte_size(bytes)) + ")");
  }
  const int program_status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
  if (!missing.empty()) {
    error("record", program[0] + " (" + exit_text(status) + ") did not write " + missing +
                        ": it does not link ringtrace, or it ended without exit() (a crash, _exit, SIGKILL; "
                        "a temporary " + missing + ".partial.* may hold what it recorded)");
    return program_status != 0 ? program_status : 1;
  }
  std::fprintf(stderr, "ringtrace record: wrote %s in %s from %s (%s)\n", written.c_str(), elapsed(took).c_str(),
               program[0].c_str(), exit_text(status).c_str());
  return program_status;
}

}  // namespace ringtrace::tool
