// The `ringtrace` tool's subcommands, one file each, sharing these helpers (common.cpp).
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "ringtrace/exporters/table.hpp"  // TableOptions::SortBy
#include "ringtrace/stream_filter.hpp"    // FilterOptions

namespace ringtrace {
struct ReplayProcess;
}

namespace ringtrace::tool {

int convert(const std::vector<std::string>& args);
int report(const std::vector<std::string>& args);
int info(const std::vector<std::string>& args);
int merge(const std::vector<std::string>& args);
int dump(const std::vector<std::string>& args);
int record(const std::vector<std::string>& args);
int diff(const std::vector<std::string>& args);
// report of several files or a directory (report_many.cpp): one table over them all.
int report_many(const std::vector<std::string>& arguments, TableOptions options, bool rings, std::size_t jobs);
// A running process, through its control channel (docs/control.md): `record --pid`
// (attach.cpp, from record), `snapshot`, `top`.
int record_pid(const std::vector<std::string>& args);
int snapshot(const std::vector<std::string>& args);
int top(const std::vector<std::string>& args);

// One line on standard error, "ringtrace <command>: <message>"; returns `status`. The
// library's exception texts start with "ringtrace: " themselves: that prefix is left
// out, so every line has exactly one.
int error(std::string_view command, std::string_view message, int status = 1);
// `message` without its leading "ringtrace: " prefixes.
std::string_view without_prefix(std::string_view message);

// Thrown for a command line the command cannot take (a missing value, a number that is
// none): main() prints it as an error with status 2, as the commands' own usage errors.
struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};
// The value after args[i] (the option's name), advancing i; UsageError if there is none.
const std::string& option_value(const std::vector<std::string>& args, std::size_t& i);
// A count given on the command line: decimal digits only (std::stoul takes "-1" and
// " 12x" and fails with the text "stoul"); UsageError naming the option otherwise.
std::size_t parse_count(std::string_view option, const std::string& text);

// The key-averages table's sort keys on the command line (--sort-by KEY), one per
// TableOptions::SortBy: "calls", "self", "on-cpu-total", ... ('_' may stand for '-').
// UsageError listing every key for any other word.
TableOptions::SortBy parse_sort_key(std::string_view option, const std::string& text);
// The key of a column, as parse_sort_key() reads it.
std::string_view sort_key_name(TableOptions::SortBy key);
// The keys, comma-separated, in the table's column order (for help texts and errors).
std::string sort_keys();
// Whether a key sorts by an on-CPU column (empty without context switches).
bool on_cpu_key(TableOptions::SortBy key);

// The filters convert and report share (filter_options.cpp): their help lines, and
// args[i] read into `options` if it is one of them (and its value; UsageError for a
// value they cannot take).
extern const char* const kFilterHelp;
bool filter_option(const std::vector<std::string>& args, std::size_t& i, FilterOptions& options);
// --split SIZE: 200MB, 1GB (1000-based, as sizes are printed), 500M, 1G, 512MiB
// (1024-based), or bytes; at least 1 MB. UsageError otherwise.
std::uint64_t split_size(const std::string& text);
// Piece `index` of a split output: ".NNN" (three digits at least) before the name's
// extension (its last, or last two when the last is .gz): trace.json -> trace.001.json,
// trace.json.gz -> trace.001.json.gz, out -> out.001.
std::string piece_path(const std::string& output, std::size_t index);
// A command line as one could type it: `command`, then each argument, quoted for the
// shell when it holds anything but letters, digits and _./,:=+-@%.
std::string shell_words(std::string_view command, const std::vector<std::string>& args);

bool wants_help(const std::vector<std::string>& args);
// A subcommand's usage text: on standard output with status 0 when asked for (--help),
// else (a usage error) on standard error with status 2.
int usage(const std::vector<std::string>& args, const char* text);

// Inputs. The reader seeks through a file, so an input is a regular file (or a link to
// one), never '-' or a FIFO: check_input() throws naming the file before anything opens
// it (a FIFO would block the reader), and also checks the ring file that would be read
// beside it. ring_file_of() is that ring file: run.rtrace.rings for run.rtrace, for the
// .partial of older versions and for a killed run's temporary run.rtrace.partial.XXXXXXXX.
void check_input(const std::string& path, bool with_rings);
std::filesystem::path ring_file_of(const std::string& input);
// The recordings an argument names (diff's BASE and NEW, report's DIR_OR_FILES): the file
// itself, or a directory's files whose names end in ".rtrace", found recursively (links
// to directories not followed), in name order. Throws naming the directory when it holds
// none, or cannot be read.
std::vector<std::string> trace_files(const std::string& argument);

// Duration in readable units: 1.234 s, 12.345 ms, 123.456 us, 789 ns.
std::string duration(std::uint64_t ns);
// How long a command took, for its summary line: 840 ms, 3.25 s, 12.3 s.
std::string elapsed(std::chrono::steady_clock::duration time);
// A file size in decimal units with three significant digits: 999 bytes, 1.00 kB,
// 12.3 MB, 1.88 GB (the tests recompute it from the file's size).
std::string byte_size(std::uint64_t bytes);
// 45123456 -> "45,123,456".
std::string thousands(std::uint64_t n);
// The calls of instrumented functions the recording left out (SessionStats::functions):
// one line of counts ("" when none) and, with `rows` > 0, the functions left out most
// (inlined, then short calls), at most `rows` of each.
std::string functions_left_out(const FunctionStats& f, std::size_t rows);

// A recording's allocations (MemoryStats, memory_text.cpp): one or two lines, counts,
// bytes, the peak and when (after `start_ns`, the clock's start), what is still live,
// what the live heap leaves out ("" without memory); and the blocks still live at the
// end by the zones that allocated them, largest first (at most `rows`, 0: all).
// `processes`: the file's (a merged file's peak is theirs together).
std::string memory_summary(const MemoryStats& m, std::uint64_t start_ns, std::size_t processes = 1);
std::string leaks_table(const MemoryStats& m, std::size_t rows);
// report --memory: the summary, then where the memory went, heaptrack's way: the
// functions that allocated most (bytes, calls, part of the peak, leaked; exact, from each
// allocation's caller) and the sampled stacks of most bytes allocated and leaked
// (estimates), at most `rows` of each (0: all).
std::string memory_report(const MemoryStats& m, std::uint64_t start_ns, std::size_t processes, std::size_t rows);
// Whether a key sorts by a memory column (empty without allocations).
bool memory_key(TableOptions::SortBy key);

// For processes[i] of a merged file whose pid an earlier process has too: a note for the
// end of its row, since the reader gives it an unused pid (docs/guide.md, "Several
// processes"); "" for the others.
std::string pid_note(const std::vector<ReplayProcess>& processes, std::size_t i);

// The cap of name columns (threads, call sites, processes): one long name does not push
// every other row's columns off the screen.
constexpr std::size_t kNameCap = 40;

// Rows printed in aligned columns: each column as wide as its widest cell (counted in
// code points) up to its cap, a longer cell cut to the cap and ending in "...", control
// characters shown as '?' (a name with a tab or a newline would break the rows). Columns
// are two spaces apart; the last one is not padded.
class Columns {
 public:
  enum class Align { left, right };
  struct Column {
    Align align = Align::left;
    std::size_t cap = 0;  // 0: no cap
  };
  explicit Columns(std::vector<Column> columns) : columns_(std::move(columns)) {}
  void add(std::vector<std::string> cells);         // as many cells as columns
  std::string text(std::string_view indent) const;  // every row, each ending in a newline
  void print(std::FILE* out, std::string_view indent) const;

 private:
  std::vector<Column> columns_;
  std::vector<std::vector<std::string>> rows_;
};

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
