// The `ringtrace` tool's subcommands, one file each, sharing these helpers.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

namespace ringtrace::tool {

int convert(const std::vector<std::string>& args);
int report(const std::vector<std::string>& args);
int info(const std::vector<std::string>& args);
int merge(const std::vector<std::string>& args);

// One line on standard error, "ringtrace <command>: <message>"; returns 1 or 2.
int error(std::string_view command, std::string_view message, int status = 1);
bool wants_help(const std::vector<std::string>& args);
// A subcommand's usage text: on standard output with status 0 when asked for (--help),
// else (a usage error) on standard error with status 2.
int usage(const std::vector<std::string>& args, const char* text);

// Duration in readable units: 1.234 s, 12.345 ms, 123.456 us, 789 ns.
std::string duration(std::uint64_t ns);

// A progress bar on standard error for work that has lasted a second, only when standard
// error is a terminal; erased when the work is done (done == total) or the bar destroyed.
// Called as a ringtrace::ProgressFunction.
class ProgressBar {
 public:
  explicit ProgressBar(std::string label);
  ~ProgressBar() { erase(); }
  ProgressBar(const ProgressBar&) = delete;
  ProgressBar& operator=(const ProgressBar&) = delete;
  void operator()(std::uint64_t done, std::uint64_t total);

 private:
  void erase();
  std::string label_;
  bool terminal_;
  bool shown_ = false;
  std::chrono::steady_clock::time_point start_, drawn_;
};

}  // namespace ringtrace::tool
