// ringtrace report DIR_OR_FILES...: one key-averages table over many recordings (a fleet's,
// a sweep's) without merging them: each file replayed in turn into one table that adds
// every run to the ones before (TableOptions::accumulate_runs), whose rows are those of
// the files merged (`ringtrace merge`) and reported; memory: the table's groups, and one
// file's reading at a time.
#include <cstdio>
#include <filesystem>
#include <functional>  // std::ref
#include <iostream>
#include <set>
#include <streambuf>
#include <string>
#include <vector>

#include "commands.hpp"
#include "ringtrace/exporters/binary_trace.hpp"
#include "ringtrace/exporters/table.hpp"
#include "ringtrace/files.hpp"

namespace ringtrace::tool {
namespace {

// The exporter writes the table after each run; only the last one is printed.
class NullBuffer final : public std::streambuf {
 protected:
  int_type overflow(int_type c) override { return traits_type::not_eof(c); }
  std::streamsize xsputn(const char*, std::streamsize n) override { return n; }
};

// Every file the arguments name, each once (a file named twice would be counted twice).
std::vector<std::string> every_file(const std::vector<std::string>& arguments) {
  std::vector<std::string> files;
  std::set<std::filesystem::path> seen;
  for (const std::string& argument : arguments) {
    for (std::string& file : trace_files(argument)) {
      if (!seen.insert(output_path_key(file)).second) {
        throw UsageError("'" + file + "' is given twice: give each recording once");
      }
      files.push_back(std::move(file));
    }
  }
  return files;
}

// The counts under the table: files, processes, events.
class ProcessCounter final : public Exporter {
 public:
  void on_events(std::span<const Event> events, const TraceContext&) override { this->events += events.size(); }
  std::uint64_t events = 0;
};

}  // namespace

int report_many(const std::vector<std::string>& arguments, TableOptions options, bool rings) {
  const std::vector<std::string> files = every_file(arguments);
  std::uint64_t total_bytes = 0;
  for (const std::string& file : files) {
    check_input(file, rings);
    std::error_code ignored;
    total_bytes += std::filesystem::file_size(file, ignored);
  }
  options.accumulate_runs = true;
  NullBuffer null_buffer;
  std::ostream discarded(&null_buffer);
  const std::shared_ptr<Exporter> table = table_exporter(discarded, options);
  ProcessCounter counter;
  Exporter* const both[] = {table.get(), &counter};
  ProgressBar bar("ringtrace report");
  std::uint64_t bytes_before = 0, processes = 0;
  std::vector<std::string> problems;
  for (const std::string& file : files) {
    ReplayOptions replay;
    replay.progress = [&](std::uint64_t done, std::uint64_t) { bar(bytes_before + done, total_bytes); };
    replay.recover_rings = rings;
    if (rings) replay.rings = ring_file_of(file);
    const ReplayResult result = replay_file(file, both, replay);
    if (!result.problem.empty()) problems.push_back(file + ": " + result.problem);
    processes += result.processes.size();
    std::error_code ignored;
    bytes_before += std::filesystem::file_size(file, ignored);
  }
  bar(total_bytes, total_bytes);
  const KeyAverages& averages = dynamic_cast<const TableExporter&>(*table).table();
  std::cout << format_table(averages, options);
  std::cout << "Files: " << thousands(files.size()) << " (" << thousands(processes)
            << (processes == 1 ? " process, " : " processes, ") << thousands(counter.events) << " events)\n";
  std::cout.flush();
  for (const std::string& problem : problems) error("report", problem);
  return problems.empty() ? 0 : 1;
}

}  // namespace ringtrace::tool
