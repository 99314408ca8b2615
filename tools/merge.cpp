// ringtrace merge: several processes' recordings into one file and one timeline.
#include <cstdio>
#include <functional>  // std::ref
#include <filesystem>
#include <string>
#include <vector>

#include "commands.hpp"
#include "ringtrace/exporters/binary_trace.hpp"

namespace ringtrace::tool {

int merge(const std::vector<std::string>& args) {
  std::vector<std::filesystem::path> inputs;
  std::string output;
  for (std::size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "-o" || args[i] == "--output") {
      if (i + 1 == args.size()) return error("merge", "-o needs a file name", 2);
      output = args[++i];
    } else if (args[i] == "--help" || args[i] == "-h") {
    } else if (!args[i].empty() && args[i][0] == '-') {
      return error("merge", "unknown option '" + args[i] + "' (see ringtrace merge --help)", 2);
    } else {
      inputs.emplace_back(args[i]);
    }
  }
  if (wants_help(args) || inputs.empty() || output.empty()) {
    return usage(args,
        "usage: ringtrace merge FILE... -o OUT.rtrace\n"
        "\n"
        "Merges the binary trace files of several processes (or earlier merges) into one\n"
        "file with one timeline; convert, report and info read it like any other, each\n"
        "thread under its own process's pid (a pid seen twice gets a new one, and its\n"
        "process is named after its host and recorded pid).\n"
        "\n"
        "The timeline is the CLOCK_MONOTONIC of the process that started first. Processes\n"
        "recorded on the same host since the same boot share that clock: their times are\n"
        "exact. Processes of other hosts are placed through the CLOCK_REALTIME time each\n"
        "session recorded beside its CLOCK_MONOTONIC one, so they are as exact as the hosts'\n"
        "clocks agree (ringtrace cannot measure that; NTP usually keeps it near a millisecond).\n"
        "\n"
        "A file cut short (a killed process) gives what it holds up to its last complete\n"
        "frame; merge then still writes OUT, names the file on standard error and exits 1.\n");
  }
  ProgressBar bar("ringtrace merge");
  const MergeResult r = merge_files(inputs, output, std::ref(bar));
  std::printf("%s: %zu processes\n", output.c_str(), r.processes.size());
  for (const ReplayProcess& p : r.processes) {
    std::printf("  pid %-8u %-20s host %-16s %s\n", p.pid, p.name.c_str(), p.host.c_str(),
                p.realtime_aligned ? ("placed by CLOCK_REALTIME, offset " + std::to_string(p.offset_ns) +
                                      " ns (as exact as the hosts' clocks agree)")
                                         .c_str()
                                   : "same host and boot: exact");
  }
  for (const std::string& problem : r.problems) error("merge", problem);
  return r.problems.empty() ? 0 : 1;
}

}  // namespace ringtrace::tool
