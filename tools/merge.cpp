// ringtrace merge: several processes' recordings into one file and one timeline.
#include <sys/stat.h>  // lstat, stat

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <functional>  // std::ref
#include <string>
#include <vector>

#include "commands.hpp"
#include "ringtrace/exporters/binary_trace.hpp"
#include "ringtrace/files.hpp"

namespace ringtrace::tool {

namespace {

// Why the inputs cannot be merged as given, or "": one file given twice (the same path,
// another path to it, a link) would be merged twice, its second copy under a new pid as
// if it were another process. Compared by device and inode; every input exists (its
// check_input() passed).
std::string given_twice(const std::vector<std::filesystem::path>& inputs) {
  std::vector<struct stat> seen(inputs.size());
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    if (::stat(inputs[i].c_str(), &seen[i]) != 0) continue;
    for (std::size_t j = 0; j < i; ++j) {
      if (seen[j].st_dev != seen[i].st_dev || seen[j].st_ino != seen[i].st_ino) continue;
      // Built by appending: g++ 12 warns falsely (-Wrestrict) on "'" + string + ... here.
      std::string why = "'";
      why.append(inputs[j].string());
      if (inputs[i] == inputs[j]) {
        why.append("' is given twice");
      } else {
        why.append("' and '").append(inputs[i].string()).append("' are the same file");
      }
      return why.append(": give each recording once");
    }
  }
  return {};
}

void print_processes(const std::string& output, const std::vector<ReplayProcess>& processes) {
  std::printf("%s: %zu processes\n", output.c_str(), processes.size());
  Columns rows({{}, {Columns::Align::left, kNameCap}, {Columns::Align::left, kNameCap}, {}});
  for (std::size_t i = 0; i < processes.size(); ++i) {
    const ReplayProcess& p = processes[i];
    rows.add({"pid " + std::to_string(p.pid), p.name, "host " + p.host, describe_clock(p) + pid_note(processes, i)});
  }
  rows.print(stdout, "  ");
}

// The flows that measured the clocks: every receive after its send, or the contradiction.
void print_flows(const MergeResult& r) {
  if (r.messages == 0) return;
  if (r.clock_problem.empty()) {
    std::printf("  flows between hosts: %llu messages, every receive after its send (%llu before)\n",
                static_cast<unsigned long long>(r.messages), static_cast<unsigned long long>(r.receives_before_sends));
  } else {
    std::printf("  flows between hosts: %llu messages, %llu receives before their sends: contradictory\n",
                static_cast<unsigned long long>(r.messages), static_cast<unsigned long long>(r.receives_before_sends));
  }
}

// What a successful merge wrote, on standard error as convert's line:
//   ringtrace merge: wrote both.rtrace (12.3 MB) in 85 ms from 2 files (2 processes)
void print_summary(const std::string& output, std::size_t files, std::size_t processes,
                   std::chrono::steady_clock::duration took) {
  std::error_code ec;
  const std::uintmax_t bytes = std::filesystem::file_size(output, ec);
  std::fprintf(stderr, "ringtrace merge: wrote %s (%s) in %s from %zu files (%zu processes)\n", output.c_str(),
               ec ? "size unknown" : byte_size(bytes).c_str(), elapsed(took).c_str(), files, processes);
}

}  // namespace

int merge(const std::vector<std::string>& args) {
  std::vector<std::filesystem::path> inputs;
  std::string output;
  for (std::size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "-o" || args[i] == "--output") {
      if (i + 1 == args.size()) return error("merge", "-o needs a file name", 2);
      output = args[++i];
    } else if (args[i] == "--help" || args[i] == "-h") {
    } else if (args[i].size() > 1 && args[i][0] == '-') {  // '-' alone: an input, refused as one
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
                 "session recorded beside its CLOCK_MONOTONIC one, as exact as the hosts' clocks\n"
                 "agree (NTP usually keeps it near a millisecond). When flows link processes of\n"
                 "different hosts (RINGTRACE_FLOW_OUT(id) at a send, RINGTRACE_FLOW_IN(id) at its\n"
                 "receive), merge reads them and bounds each host's offset (a receive is never\n"
                 "before its send; round trips bound it from both sides): it keeps CLOCK_REALTIME's\n"
                 "offset when it lies within the bounds, else takes the middle of the interval (or\n"
                 "its one bound), and prints per process the offset used, its uncertainty and\n"
                 "whether CLOCK_REALTIME agreed. Flows that contradict every offset (a receive\n"
                 "before its send whatever the offsets) are reported: OUT is written with\n"
                 "CLOCK_REALTIME's offsets and merge exits 1.\n"
                 "\n"
                 "A file cut short (a killed process) gives what it holds up to its last complete\n"
                 "frame; merge then still writes OUT, names the file on standard error and exits 1.\n"
                 "\n"
                 "Every FILE is a regular file (a FIFO, '-' or a device is refused), each given once\n"
                 "(a file given twice, under any path, is refused); OUT is a regular file or a new\n"
                 "one, written as OUT.partial and renamed at the end. On success, one line on\n"
                 "standard error says what was written, how big and how long it took.\n");
  }
  // Before anything is read: inputs are regular files (a FIFO would block the reader),
  // OUT is a regular file or a new one. merge_files() writes OUT.partial (a name anyone
  // can predict) and opens it following links: a link or anything but a regular file
  // there is refused rather than written through.
  const auto start = std::chrono::steady_clock::now();
  for (const std::filesystem::path& input : inputs) check_input(input.string(), false);
  if (const std::string twice = given_twice(inputs); !twice.empty()) return error("merge", twice, 2);
  ringtrace::check_output_file(output);
  struct stat st {};
  const std::string partial = output + ".partial";
  if (::lstat(partial.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) {
    return error("merge",
                 "'" + partial + "' exists and is not a regular file (a link?): not written through; remove it", 1);
  }
  ProgressBar bar("ringtrace merge");
  const MergeResult r = merge_files(inputs, output, std::ref(bar));
  print_processes(output, r.processes);
  print_flows(r);
  for (const std::string& problem : r.problems) error("merge", problem);
  if (!r.clock_problem.empty()) error("merge", output + ": " + r.clock_problem);
  if (!r.problems.empty() || !r.clock_problem.empty()) return 1;
  print_summary(output, inputs.size(), r.processes.size(), std::chrono::steady_clock::now() - start);
  return 0;
}

}  // namespace ringtrace::tool
