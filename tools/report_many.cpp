// ringtrace report DIR_OR_FILES...: one key-averages table over many recordings (a fleet's,
// a sweep's) without merging them: each file replayed in turn into one table that adds
// every run to the ones before (TableOptions::accumulate_runs), whose rows are those of
// the files merged (`ringtrace merge`) and reported. The files are read on `jobs` threads,
// each into a table of its own, added together at the end (TableExporter::add); memory:
// the tables' groups, and one file's reading per thread.
#include <algorithm>
#include <atomic>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <functional>  // std::ref
#include <iostream>
#include <memory>
#include <set>
#include <span>
#include <streambuf>
#include <string>
#include <thread>
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

// One thread's share of the files, read in turn into its own table (accumulate_runs).
struct Part {
  explicit Part(const TableOptions& options) : discarded(&null_buffer), table(table_exporter(discarded, options)) {}
  NullBuffer null_buffer;
  std::ostream discarded;
  std::shared_ptr<Exporter> table;
  ProcessCounter counter;
  std::uint64_t processes = 0;
  std::vector<std::string> problems;
  std::exception_ptr failure;  // the first exception (an unreadable file), rethrown in order
};

void read_part(Part& part, std::span<const std::string> files, bool rings, const std::function<void()>& progress,
               std::atomic<std::uint64_t>& bytes_done) {
  Exporter* const both[] = {part.table.get(), &part.counter};
  try {
    for (const std::string& file : files) {
      ReplayOptions replay;
      if (progress) replay.progress = [&](std::uint64_t, std::uint64_t) { progress(); };
      replay.recover_rings = rings;
      if (rings) replay.rings = ring_file_of(file);
      const ReplayResult result = replay_file(file, both, replay);
      if (!result.problem.empty()) part.problems.push_back(file + ": " + result.problem);
      part.processes += result.processes.size();
      bytes_done += result.bytes;
    }
  } catch (...) {
    part.failure = std::current_exception();
  }
}

}  // namespace

int report_many(const std::vector<std::string>& arguments, TableOptions options, bool rings, std::size_t jobs) {
  const std::vector<std::string> files = every_file(arguments);
  std::uint64_t total_bytes = 0;
  for (const std::string& file : files) {
    check_input(file, rings);
    std::error_code ignored;
    total_bytes += std::filesystem::file_size(file, ignored);
  }
  options.accumulate_runs = true;
  // Contiguous shares, one a thread, added in order: the table does not depend on `jobs`
  // (but for first_seen's order, which is the files' order either way).
  jobs = std::max<std::size_t>(1, std::min(jobs, files.size()));
  std::vector<std::unique_ptr<Part>> parts;
  for (std::size_t j = 0; j < jobs; ++j) parts.push_back(std::make_unique<Part>(options));
  ProgressBar bar("ringtrace report");
  std::atomic<std::uint64_t> bytes_done{0};
  const std::function<void()> draw = [&] { bar(bytes_done.load(std::memory_order_relaxed), total_bytes); };
  std::vector<std::thread> threads;
  const std::span<const std::string> all(files);
  for (std::size_t j = 0; j < jobs; ++j) {
    const std::size_t from = files.size() * j / jobs, to = files.size() * (j + 1) / jobs;
    const auto share = all.subspan(from, to - from);
    if (j + 1 == jobs) {
      read_part(*parts[j], share, rings, draw, bytes_done);  // the last share on this thread, drawing the bar
    } else {
      threads.emplace_back([&, j, share] { read_part(*parts[j], share, rings, nullptr, bytes_done); });
    }
  }
  for (std::thread& t : threads) t.join();
  bar(total_bytes, total_bytes);
  for (const auto& part : parts) {
    if (part->failure) std::rethrow_exception(part->failure);
  }
  auto& table = dynamic_cast<TableExporter&>(*parts.front()->table);
  std::uint64_t processes = 0, events = 0;
  std::vector<std::string> problems;
  for (std::size_t j = 0; j < jobs; ++j) {
    if (j != 0) table.add(dynamic_cast<const TableExporter&>(*parts[j]->table));
    processes += parts[j]->processes;
    events += parts[j]->counter.events;
    problems.insert(problems.end(), parts[j]->problems.begin(), parts[j]->problems.end());
  }
  std::cout << format_table(table.table(), options);
  std::cout << "Files: " << thousands(files.size()) << " (" << thousands(processes)
            << (processes == 1 ? " process, " : " processes, ") << thousands(events) << " events)\n";
  std::cout.flush();
  for (const std::string& problem : problems) error("report", problem);
  return problems.empty() ? 0 : 1;
}

}  // namespace ringtrace::tool
