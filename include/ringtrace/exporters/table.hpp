// Key-averages table: zones grouped by name (optionally by name and the innermost N
// frames of their stack, an argument's value such as the input shapes, or the node),
// with self and total time, their shares, per-call average, min, max, p50, p99 and call
// counts, with Config::context_switches the same on-CPU (self, total, average, p50, p99),
// the FLOPs the zones said they did, and their source locations. PyTorch's
// key_averages().table(), with recursion counted once. See docs/formats/table.md.
#pragma once

#include <cstddef>     // limits
#include <cstdint>     // counts and nanoseconds
#include <filesystem>  // output paths
#include <iosfwd>      // the stream overloads
#include <memory>      // the exporter is shared with the session
#include <string>      // names, paths
#include <vector>      // rows

#include "ringtrace/detail/platform.hpp"  // RINGTRACE_API
#include "ringtrace/exporter.hpp"         // Exporter
#include "ringtrace/recorded_trace.hpp"   // RecordedTrace

namespace ringtrace {

struct TableOptions {
  enum class Format : std::uint8_t { text, csv, json };
  // Rows are sorted by this column: numbers largest first, names A to Z; ties by name,
  // then stack. first_seen keeps the order in which groups first closed.
  enum class SortBy : std::uint8_t {
    first_seen,
    name,
    self_percent,
    self,
    total_percent,
    total,
    avg,
    min,
    max,
    p50,
    p99,
    calls,
    on_cpu_self,
    on_cpu_total,
    on_cpu_avg,
    on_cpu_p50,
    on_cpu_p99,
    cpu_memory,       // KeyAverages::memory: CPU Mem (bytes allocated less freed, children included)
    self_cpu_memory,  // Self CPU Mem (children excluded)
    flops
  };
  // The unit of every time in the text form; automatic picks s, ms, us or ns per value.
  // (CSV and JSON always hold integer nanoseconds.)
  enum class TimeUnit : std::uint8_t { automatic, s, ms, us, ns };

  Format format = Format::text;
  SortBy sort_by = SortBy::self;
  std::size_t row_limit = 100;  // rows kept (text, CSV, JSON and rows()); 0: all
  // Only zones with no enclosing zone on their thread make rows. The percentages stay
  // shares of the whole session's self time.
  bool top_level_only = false;
  TimeUnit time_unit = TimeUnit::automatic;
  // Text form: the Name column is at most this wide (in code points); longer names are
  // cut and end in "...". CSV and JSON hold full names.
  std::size_t name_width = 55;
  // Group by name and the innermost N enclosing zones (0: by name only; at most 8).
  std::size_t group_by_stack_n = 0;
  // Estimates for sampled sites (RINGTRACE_ZONE_SAMPLED): a recorded zone of a site
  // sampled one in N counts N calls and N times its times (and its percentiles' weight),
  // with everything inside it. The text form says so in a line before the table, JSON
  // in "estimated"; CSV has no room for it.
  bool estimate_sampled = false;
  // Session::step()'s zones ("step #0", "step #1", ...) make one row named "step #*".
  bool fold_steps = false;
  // Group by name and the zone's `input_shapes` argument
  // (RINGTRACE_ZONE_TEXT("input_shapes", "[[64, 128], [128, 256]]")), shown in an "Input
  // Shapes" column: PyTorch's key_averages(group_by_input_shapes=True). Zones without the
  // argument make the name's row with an empty cell.
  bool group_by_input_shapes = false;
  // The same for any other argument key (a text or a number: "batch", "dtype"), the column
  // named after the key. "input_shapes" is group_by_input_shapes; both set to different
  // keys throws std::invalid_argument (table_exporter, key_averages).
  std::string group_by_arg;
  // Group by name and node (TraceContext::node_id_of: each process of a merged file has
  // one; Config::node_id). The "Node ID" column is shown when the stream's zones come from
  // several nodes.
  bool group_by_node = false;
  // Group by name and process instead (the processes of a merged file, or each file of a
  // table over several): a "Process" column, "name (pid N)", when there are several. Not
  // with group_by_node (std::invalid_argument).
  bool group_by_process = false;
  // Every run adds to the table of the runs before instead of starting afresh: one table
  // over several recordings replayed one after another (`ringtrace report DIR`), whose
  // rows are those of the recordings merged into one file (`ringtrace merge`), but for the
  // order of first_seen. table() and each write are the table of every run so far. Not
  // with source_locations (std::invalid_argument): a run's call sites are its own.
  bool accumulate_runs = false;
  // A "Source Location" column: the call site's file:line (an instrumented function's:
  // where it is defined), that of the first zone closed when a row holds several sites.
  bool source_locations = false;
};

struct TableRow {
  std::string name;
  std::vector<std::string> stack;  // group_by_stack_n > 0: enclosing zones, outermost first
  std::uint64_t calls = 0;         // every call, recursive ones included
  std::uint64_t self_ns = 0;       // sum of self times (children excluded)
  std::uint64_t total_ns = 0;      // sum of inclusive times of outermost activations only
  std::uint64_t avg_ns = 0;        // mean inclusive time of one call (rounded)
  std::uint64_t min_ns = 0;        // shortest call (inclusive)
  std::uint64_t max_ns = 0;        // longest call (inclusive)
  std::uint64_t p50_ns = 0;        // from a log-linear histogram: within 0.79% of the
  std::uint64_t p99_ns = 0;        // nearest-rank percentile
  double self_percent = 0;         // self_ns / self_total_ns * 100
  double total_percent = 0;        // total_ns / self_total_ns * 100
  // On-CPU time (KeyAverages::on_cpu: the stream had context switches): as the columns
  // above, of each zone's on-CPU time (its time less the time its thread was off the CPU
  // inside it; docs/context-switches.md). 0 without switches.
  std::uint64_t on_cpu_self_ns = 0;
  std::uint64_t on_cpu_total_ns = 0;  // outermost activations only
  std::uint64_t on_cpu_avg_ns = 0;
  std::uint64_t on_cpu_p50_ns = 0;
  std::uint64_t on_cpu_p99_ns = 0;
  // The largest on-CPU time of one call (in the struct only, not in the forms): with
  // max_ns, the slowest call waited at least max_ns - on_cpu_max_ns.
  std::uint64_t on_cpu_max_ns = 0;
  // Memory (KeyAverages::memory: the stream had alloc and free events, Config::memory):
  // PyTorch's cpu_memory_usage, bytes allocated less bytes freed inside the zone with its
  // children (summed over outermost activations only, as total_ns), and its self part,
  // children excluded (over every call). Negative when the zone freed more than it
  // allocated. 0 without memory events.
  std::int64_t cpu_memory_usage = 0;
  std::int64_t self_cpu_memory_usage = 0;
  // The sum of its zones' `flops` arguments (RINGTRACE_ZONE("matmul", "flops", n),
  // RINGTRACE_ZONE_FLOPS(n)); 0 when none had one.
  std::uint64_t flops = 0;
  std::string arg;      // group_by_input_shapes / group_by_arg: the argument's value ("" without)
  std::string node_id;  // group_by_node: the node of its zones; group_by_process: its process, "name (pid N)"
  // source_locations: the call site's file and line ("" and 0 for names given at run
  // time), and how many distinct file:line its zones came from (more than 1: the first
  // closed is shown).
  std::string source_file;
  std::uint32_t source_line = 0;
  std::uint32_t source_locations = 0;
};

struct ThreadDrops {
  ThreadId thread = 0;
  std::uint64_t os_tid = 0;
  std::string name;
  std::uint64_t dropped = 0;
};

struct KeyAverages {
  std::vector<TableRow> rows;                  // sorted, at most row_limit
  std::size_t groups = 0;                      // rows before the limit
  std::uint64_t self_total_ns = 0;             // sum of self times of every zone (the percentages' base)
  std::uint64_t dropped = 0;                   // events the session lost
  std::vector<ThreadDrops> dropped_by_thread;  // threads that lost events
  std::uint64_t closed_at_stop = 0;            // zones still open at stop(), closed at the stop time
  bool estimated = false;                      // estimate_sampled was on and some site was sampled
  // The stream had context switches (Config::context_switches): the rows' on-CPU columns
  // are filled in, and every form shows them.
  bool on_cpu = false;
  // The stream had alloc or free events (Config::memory): the rows' memory columns are
  // filled in, and every form shows them ("CPU Mem", "Self CPU Mem"), as PyTorch's table
  // does with profile_memory.
  bool memory = false;
  // Frees inside zones whose block's size was not known (allocated before the recording,
  // or past Config::memory_max_blocks): in no row's memory columns, said under the table.
  std::uint64_t frees_size_unknown = 0;
  // The argument rows are grouped by (TableOptions::group_by_arg, or "input_shapes"), "" for none.
  std::string arg_key;
  // group_by_node: the distinct nodes of the stream's zones (the forms show a "Node ID"
  // column when there are several); 0 otherwise.
  std::size_t nodes = 0;
  bool processes = false;         // group_by_process: node_id and `nodes` are of processes (a "Process" column)
  bool source_locations = false;  // TableOptions::source_locations: the rows' source fields are filled in
  // What a filter in front of the table left out (ringtrace/stream_filter.hpp: the
  // context's "filter" metadata), one line under the table; "" without one.
  std::string filtered;
};

// The table of a recorded stream (what the exporter computes live).
RINGTRACE_API KeyAverages key_averages(const RecordedTrace& trace, const TableOptions& options = {});

// Formats a table as options.format does.
RINGTRACE_API std::string format_table(const KeyAverages& table, const TableOptions& options = {});

class TableExporter;
namespace detail {
// The live table of `ringtrace top` (exporters/numbers_only.hpp).
KeyAverages table_so_far(TableExporter& exporter, const TraceContext& context, bool restart);
}  // namespace detail

class RINGTRACE_API TableExporter final : public Exporter {
 public:
  struct Impl;
  explicit TableExporter(std::unique_ptr<Impl> impl);
  ~TableExporter() override;
  void on_start(const TraceContext& context) override;
  void on_events(std::span<const Event> events, const TraceContext& context) override;
  void on_finish(const TraceContext& context, const SessionStats& stats) override;
  std::vector<std::filesystem::path> output_paths() const override;
  // The last completed run's table (valid once Session::stop() has returned).
  const KeyAverages& table() const;
  // TableOptions::accumulate_runs: adds the runs `other` (an exporter of the same options)
  // has finished to this one's, and table() becomes the table of them all, this one's
  // runs first: one table over recordings replayed on several threads, an exporter each.
  // Throws std::logic_error when this exporter does not accumulate runs.
  void add(const TableExporter& other);

 private:
  friend KeyAverages detail::table_so_far(TableExporter& exporter, const TraceContext& context, bool restart);
  std::unique_ptr<Impl> impl_;
};

// Aggregates while the session runs and writes the table at stop(). The file is
// created here: a path that cannot be opened throws std::runtime_error naming the path
// and the reason. Each later run of the session rewrites the file. Like every factory it
// returns a plain std::shared_ptr<Exporter>; the object is a TableExporter (dynamic_cast to
// read table() in process).
RINGTRACE_API std::shared_ptr<Exporter> table_exporter(const std::filesystem::path& path, TableOptions options = {});
// Writes to a stream that the caller keeps alive for the exporter's lifetime.
RINGTRACE_API std::shared_ptr<Exporter> table_exporter(std::ostream& stream, TableOptions options = {});

}  // namespace ringtrace
