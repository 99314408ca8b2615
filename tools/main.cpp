// ringtrace: records programs, and converts, reports on and inspects binary trace files
// (.rtrace).
//   ringtrace convert FILE --chrome OUT.json --pstats OUT.prof --folded OUT.folded ...
//   ringtrace report FILE (or DIR_OR_FILES...)
//   ringtrace info FILE
//   ringtrace merge FILE... -o OUT.rtrace
//   ringtrace dump FILE
//   ringtrace diff BASE NEW
//   ringtrace record [-o run.rtrace | --chrome t.json ...] -- ./program args
//   ringtrace record --pid PID [-o run.rtrace ...] [--for 10s]
//   ringtrace snapshot PID [-o snap.rtrace]
//   ringtrace top PID
//   ringtrace --version
#include <algorithm>
#include <cstdio>
#include <exception>
#include <string>
#include <string_view>
#include <vector>

#include "commands.hpp"

#ifndef RINGTRACE_TOOL_VERSION
#error "RINGTRACE_TOOL_VERSION (the project's version) comes from tools/CMakeLists.txt"
#endif

namespace {

int version(const std::vector<std::string>& args) {
  if (!args.empty()) {
    return ringtrace::tool::usage(args,
                                  "usage: ringtrace version (or ringtrace --version, ringtrace -V)\n"
                                  "\n"
                                  "Prints \"ringtrace <version>\", the version of the project it was built from.\n");
  }
  std::printf("ringtrace %s\n", RINGTRACE_TOOL_VERSION);
  return 0;
}

// The commands, one line each: its name, its function (a file of its own in tools/)
// and its line in the usage text.
struct Command {
  std::string_view name;
  int (*run)(const std::vector<std::string>& args);
  std::string_view arguments;
  std::string_view what;
};
constexpr Command kCommands[] = {
    {"convert", ringtrace::tool::convert, "FILE --chrome OUT ...",
     "other formats, any subset in one pass ('-': standard output)"},
    {"report", ringtrace::tool::report, "FILE...",
     "the key-averages table, and the captured-ops summary when there are regions; one table over several files"},
    {"info", ringtrace::tool::info, "FILE", "process, host, duration, threads, call sites, drops, complete or cut"},
    {"merge", ringtrace::tool::merge, "FILE... -o OUT", "several processes' files into one, on one timeline"},
    {"dump", ringtrace::tool::dump, "FILE", "every event as text, one a line, in the order exporters get them"},
    {"diff", ringtrace::tool::diff, "BASE NEW",
     "which zones got slower or faster, and whether that is significant (files or folders of runs)"},
    {"record", ringtrace::tool::record, "[-o OUT] -- PROGRAM ARGS",
     "runs PROGRAM and records it whole: its zones and -finstrument-functions calls, and with --memory "
     "the allocations of any dynamically linked program"},
    {"record", ringtrace::tool::record, "--pid PID [--for D]",
     "records a running program that links ringtrace, from outside, for a while"},
    {"snapshot", ringtrace::tool::snapshot, "PID [-o OUT]", "a running program's flight recorder, written now"},
    {"top", ringtrace::tool::top, "PID", "a running program's key-averages table, refreshed every second"},
    {"version", version, "", "the tool's version (also --version, -V)"},
};

void print_usage(std::FILE* out) {
  std::fputs(
      "usage: ringtrace <command> [arguments]\n"
      "\n"
      "Records programs (unmodified ones too: record --memory) and reads the binary trace files\n"
      "(.rtrace) of their recordings.\n"
      "\n"
      "commands:\n",
      out);
  std::size_t width = 0;
  for (const Command& c : kCommands) width = std::max(width, c.name.size() + 1 + c.arguments.size());
  for (const Command& c : kCommands) {
    const std::string synopsis = std::string(c.name) + " " + std::string(c.arguments);
    std::fprintf(out, "  %-*s  %.*s\n", static_cast<int>(width), synopsis.c_str(), static_cast<int>(c.what.size()),
                 c.what.data());
  }
  std::fputs("\n'ringtrace <command> --help' describes a command.\n", out);
}

const Command* find_command(std::string_view name) {
  if (name == "--version" || name == "-V") name = "version";
  for (const Command& c : kCommands) {
    if (c.name == name) return &c;
  }
  return nullptr;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    print_usage(stderr);
    return 2;
  }
  const std::string_view name = argv[1];
  if (name == "--help" || name == "-h") {
    print_usage(stdout);
    return 0;
  }
  const Command* command = find_command(name);
  if (command == nullptr) {
    std::fprintf(stderr, "ringtrace: unknown command '%s'\n", argv[1]);
    print_usage(stderr);
    return 2;
  }
  const std::vector<std::string> args(argv + 2, argv + argc);
  try {
    return command->run(args);
  } catch (const ringtrace::tool::UsageError& e) {
    return ringtrace::tool::error(command->name, e.what(), 2);
  } catch (const std::exception& e) {
    return ringtrace::tool::error(command->name, e.what());
  }
}
