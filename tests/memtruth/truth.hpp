// The ground truth's reader (issue 42): the counting preload's files (alloc_counter.c),
// and what the `ringtrace` tool prints of a recording's memory (dump, info, report,
// report --leaks), parsed from its text alone. Nothing here includes or links ringtrace:
// the memory tests and the matrix's checker compare the two sides with it.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace memtruth {

// --- The counter's files ---

struct Counts {
  std::uint64_t allocs = 0, alloc_bytes = 0, frees = 0, free_bytes = 0;
  std::uint64_t foreign_frees = 0, foreign_free_bytes = 0;  // of blocks allocated outside every window
  std::uint64_t unknown_frees = 0;                          // of blocks the counter never saw allocated
  std::uint64_t reallocs = 0, failed_reallocs = 0;
  std::uint64_t live_blocks = 0, live_bytes = 0;  // at the snapshot, by the allocating window
  Counts& operator+=(const Counts& o);
};

struct CallerCounts {
  std::string window, module, offset, function;  // module+offset as the counter wrote it
  std::uint64_t allocs = 0, bytes = 0, live_blocks = 0, live_bytes = 0;
};

struct Snapshot {
  std::string label;
  std::map<std::string, Counts> windows;                            // "-": outside every window
  std::map<std::pair<std::uint64_t, std::string>, Counts> threads;  // (tid, window)
  std::vector<CallerCounts> callers;
  std::map<std::string, std::uint64_t> errors, notes;
  bool ended = false;                            // its "end" line arrived
  Counts window(const std::string& name) const;  // zero when the window never opened
};

struct CounterFile {
  std::filesystem::path path;
  std::uint64_t pid = 0, ppid = 0;
  std::string exe;
  std::vector<Snapshot> snapshots;
  std::string problem;                                   // why the file cannot be trusted ("" when it can)
  const Snapshot* find(const std::string& label) const;  // the last one of that label
};

CounterFile read_counter_file(const std::filesystem::path& file);
// Every counter file in `dir` whose name starts with `prefix`.
std::vector<CounterFile> read_counter_files(const std::filesystem::path& dir, const std::string& prefix);
// What makes a snapshot inexact: its errors line not all zero, no "end" line. "" when exact.
std::string inexact(const Snapshot& s);

// --- Running programs ---

struct Run {
  int status = -1;  // exit status, or 128 + signal
  std::string out, err;
};
// Runs argv[0] (searched in PATH) with the environment changed by `set` (name, value) and
// `unset`, in `cwd` when given; stdout and stderr kept. Waits for it.
Run run(const std::vector<std::string>& argv, const std::vector<std::pair<std::string, std::string>>& set = {},
        const std::vector<std::string>& unset = {}, const std::filesystem::path& cwd = {});
std::string shell_words(const std::vector<std::string>& argv);  // for messages

// --- `ringtrace dump`: the alloc and free events, by zone ---

struct ZoneBytes {
  std::uint64_t allocs = 0, alloc_bytes = 0, frees = 0, free_bytes = 0, frees_size_unknown = 0;
  std::int64_t net() const { return static_cast<std::int64_t>(alloc_bytes) - static_cast<std::int64_t>(free_bytes); }
};
struct DumpMemory {
  std::map<std::string, ZoneBytes> self;    // by the innermost zone open on the thread ("" outside every zone)
  std::map<std::string, ZoneBytes> within;  // by every zone open (a zone and its children), once per name
  std::map<std::uint64_t, ZoneBytes> by_thread, by_process;
  std::map<std::uint64_t, std::uint64_t> alloc_sizes, free_sizes;  // size -> allocations (frees) of it
  ZoneBytes all;
  std::uint64_t dropped = 0;  // the dropped markers' counts (every kind of event)
  std::uint64_t events = 0;
};
// Parses dump's lines (TIME PID TID KIND "NAME" [FIELDS] [FLAGS]). Only the threads in
// `tids` when given.
DumpMemory memory_of_dump(const std::string& dump, const std::vector<std::uint64_t>& tids = {});

// --- `ringtrace info` and `report`: the memory lines ---

// A count the recording says it left out (sampled out, nested in the runtime, past the
// limit, dropped, thread exit, ...): the clause's text and its numbers.
struct LeftOut {
  std::string clause;
  std::uint64_t count = 0;
  std::optional<std::uint64_t> bytes;
  bool frees = false;  // a count of frees (else of allocations or blocks)
};
struct MemorySummary {
  bool present = false;
  std::uint64_t allocations = 0, frees = 0;
  std::string allocated_text, freed_text, peak_text, live_text;  // as printed ("4.60 kB")
  std::uint64_t live_blocks = 0;
  std::uint64_t frees_before_recording = 0;  // "N frees of blocks allocated before the recording"
  std::uint64_t frees_unmatched = 0;         // the same, when other causes are named ("..., or ...")
  std::uint64_t untracked_blocks = 0;        // "N blocks past the accounting's limit"
  std::uint64_t lost_frees = 0;              // "N allocations at an address still live"
  std::vector<LeftOut> left_out;             // every other counted clause of the memory lines
  std::vector<std::string> lines;            // the memory lines themselves
  std::uint64_t left_out_allocations() const;
  std::uint64_t left_out_frees() const;
};
// From info's "memory:" line and the lines after it that start with spaces, or report's
// "Memory:" and "Memory, ..." lines.
MemorySummary memory_summary(const std::string& text);

// --- `ringtrace report --leaks` ---

struct LeakRow {
  std::uint64_t bytes = 0, blocks = 0;
  std::string rest;                // the zone stack column ("zones (outermost first)")
  std::string site;                // the "allocated by" column, when the file has sites
  std::string process;             // the "process" column (a merged file's pid)
  std::vector<std::string> zones;  // rest split at "; "
};
struct Leaks {
  bool present = false;
  bool unknown = false;                 // the header says the leaks are unknown (a file without addresses)
  std::uint64_t blocks = 0, bytes = 0;  // the header's blocks, the rows' bytes
  std::vector<LeakRow> rows;
  // The rows whose zone stack holds `zone` (as a whole zone name).
  std::pair<std::uint64_t, std::uint64_t> in_zone(const std::string& zone) const;  // bytes, blocks
};
Leaks leaks_of(const std::string& report_leaks);

// --- Tables (the key-averages table as text and CSV) ---

// The cell of the text table's row `row` (its Name) in the column whose header is
// `column`, cut at the header's column boundaries (cells are right-aligned); nullopt when
// the row or the column is missing.
std::optional<std::string> table_cell(const std::string& table, const std::string& row, const std::string& column);
// The CSV table's cell (header names as written: Name, cpu_memory_bytes, ...).
std::optional<std::string> csv_cell(const std::string& csv, const std::string& row, const std::string& column);

// --- What a test program counted itself ---

// Its "truth KEY=VALUE ..." lines, each as its pairs in order.
std::vector<std::vector<std::pair<std::string, std::string>>> truth_lines(const std::string& out);
// The value of `key` on the first truth line that has `key` (and `with`=`value` when given).
std::optional<std::string> truth_value(const std::string& out, const std::string& key, const std::string& with = {},
                                       const std::string& value = {});

// --- Sizes as text ---

// PyTorch's _format_memory, the seed table's convention (1024-based, two decimals): "512 B",
// "9.77 KB", "-2.00 MB".
std::string format_1024(std::int64_t bytes);
// Every size printed in `text` ("4.60 kB", "1.13 KB", "83.8 MB"): the unit words found.
std::vector<std::string> size_units(const std::string& text);
std::uint64_t number(const std::string& digits);  // "4,596" -> 4596
// A printed size ("2.86 MB", "11.2 kB", "500 B") as the bytes it may stand for: [low, high]
// given its rounding (two decimals: +-0.005 of the unit); KB/MB/GB 1024-based, kB 1000.
std::optional<std::pair<double, double>> size_range(const std::string& text);

}  // namespace memtruth
