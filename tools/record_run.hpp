// `ringtrace record`'s parts (record.cpp the command): running the program with the
// variables set while listening to what its processes report (record_run.cpp), and
// saying what became of each output (record_outcome.cpp).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <filesystem>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "record_report.hpp"  // runtime/launch: the reports' format

namespace ringtrace::tool {

struct RecordOutput {
  const char* format;  // rtrace, chrome, ... (RINGTRACE_OUTPUT's names)
  std::string path;    // as given, "%p" kept
};

struct RecordPlan {
  std::vector<RecordOutput> outputs;
  std::vector<std::pair<const char*, std::string>> settings;  // variable, value
  std::vector<std::string> program;                           // PROGRAM ARGS...
  bool memory = false;
  bool switches = false;
  std::string preload;  // LD_PRELOAD's value with --memory
};

// The files in an output's directory a run may have written for it (the output itself,
// each name "%p" makes, their temporaries), with their times.
using FileTimes = std::map<std::filesystem::path, std::filesystem::file_time_type>;
FileTimes files_of(const std::string& output);

// The datagram socket the recorded processes report to (RINGTRACE_REPORT), in a
// directory of its own (mode 0700) that the destructor removes with it.
class ReportInbox {
 public:
  ReportInbox();  // throws std::runtime_error when no socket can be made
  ~ReportInbox();
  ReportInbox(const ReportInbox&) = delete;
  ReportInbox& operator=(const ReportInbox&) = delete;
  const std::string& path() const { return path_; }
  int fd() const { return fd_; }
  // Takes every report waiting (malformed ones ignored).
  void take_waiting();
  const std::vector<detail::RecordReport>& reports() const { return reports_; }

 private:
  std::string directory_;
  std::string path_;
  int fd_ = -1;
  std::vector<detail::RecordReport> reports_;
};

struct RunResult {
  int status = 0;  // waitpid's
  std::chrono::steady_clock::duration took{};
};

// Runs the plan's program with the variables set, RINGTRACE_REPORT naming `inbox`,
// taking its reports until the program ends (and those already sent then). Ctrl-C goes
// to the program, which stops its session; the tool waits. Exits 127 in the child when
// the program cannot be run (said there).
RunResult run_recorded(const RecordPlan& plan, const std::string& outputs, ReportInbox& inbox);

// What became of each output, said on standard error; the tool's exit status: the
// program's when it failed, else 1 when an output was not written whole, else 0.
int say_outcome(const RecordPlan& plan, const std::vector<FileTimes>& before, const RunResult& run,
                const std::vector<detail::RecordReport>& reports);

}  // namespace ringtrace::tool
