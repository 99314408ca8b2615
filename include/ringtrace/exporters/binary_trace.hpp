// The binary trace file (.rtrace): the rings' records written as they are, in per-thread
// chunks, with the tables needed to read them (call sites, threads, clock segments);
// merged and converted when read, by replay_file() or the `ringtrace` tool. The cheapest
// way to record: alone, it makes the drainer copy records and nothing else. Survives
// crashes: written at every drainer pass, readable up to the last complete chunk. See
// docs/file-format.md.
#pragma once

#include <cstddef>     // sizes
#include <cstdint>     // counts, INT64_MIN
#include <filesystem>  // paths
#include <functional>  // progress callbacks
#include <memory>      // the exporter is shared with the session
#include <span>        // several exporters
#include <string>      // problems
#include <vector>      // processes

#include "ringtrace/detail/platform.hpp"  // RINGTRACE_API
#include "ringtrace/exporter.hpp"         // Exporter

namespace ringtrace {

struct BinaryTraceOptions {
  // Bytes buffered before a write; the buffer also goes to the OS after every drainer
  // pass, so a killed process loses at most the last pass.
  std::size_t buffer_bytes = std::size_t{1} << 20;
  // The threads' rings themselves in a shared file mapping, `path` + ".rings" (removed
  // when the session stops): a process killed with SIGKILL, or crashing, loses nothing
  // it had published. replay_file() and the `ringtrace` tool read the rings beside a
  // file that was cut short and recover what the drainer had not yet written. Costs: the
  // file holds one ring per thread (16 x Config::buffer_records bytes) on disk while the
  // session runs; a thread's first event maps its ring; the drainer writes to the trace
  // file before each ring's slots are reused (one write per pass, as without it).
  bool rings_in_file = false;
  // Instrumented functions (ringtrace::functions): the file holds each one's address and
  // module (path, load address, build id) and, with this set, its name, file and line as
  // the recording process names them (once per function, on the drainer thread). false:
  // addresses and modules only, named when the file is read (from the modules' files, or
  // copies of them found by build id: ReplayOptions::symbol_paths, `ringtrace convert
  // --symbols-path`).
  bool name_functions = true;
};

// Writes its temporary `path`.partial.XXXXXXXX (<ringtrace/files.hpp>) while the session
// runs and renames it to `path` at stop(); a process killed before leaves the temporary,
// which replay_file() and the tool read up to its last complete chunk. A path that
// cannot be written (or that is a FIFO, a device, a directory) throws
// std::runtime_error naming it. Each later run of the session rewrites the file. In a
// live session it stores the rings' records as they are (the drainer neither decodes
// nor merges for it). Fed a stream instead (a window or snapshot of
// Session::add_window_exporter, replay()), it writes that stream's events, times exact;
// zones the stream closed at its end (closed_at_stop, closed_at_window_end) are closed
// at the file's end when read, flagged closed_at_stop. A stream of several processes (a
// merged file replayed) is refused with std::logic_error: merge files with merge_files().
RINGTRACE_API std::shared_ptr<Exporter> binary_trace_exporter(const std::filesystem::path& path,
                                                              BinaryTraceOptions options = {});

// How merge_files() checked a process's clock offset against the messages (flows) that
// crossed between its host (and boot) and the others'. The bounds are on
// ReplayProcess::offset_ns; a side with no message is unbounded (low_ns INT64_MIN,
// high_ns INT64_MAX).
struct ClockCheck {
  bool measured = false;                // some flow crossed between this process's clock and another's
  bool agrees = false;                  // the CLOCK_REALTIME offset lies within the bounds (and was kept)
  bool contradicted = false;            // the messages admit no offset at all (a receive before its send
                                        // whatever the offsets): offset_ns is CLOCK_REALTIME's
  std::int64_t realtime_offset_ns = 0;  // the offset the CLOCK_REALTIME anchors gave
  std::int64_t low_ns = INT64_MIN, high_ns = INT64_MAX;
  std::uint64_t messages = 0;  // flows between this process's clock and another
  // How far the true offset can be from `offset`, as the bounds say: UINT64_MAX when a
  // side is unbounded.
  std::uint64_t uncertainty_ns(std::int64_t offset) const {
    if (low_ns == INT64_MIN || high_ns == INT64_MAX || offset < low_ns || offset > high_ns) return UINT64_MAX;
    const auto below = static_cast<std::uint64_t>(offset) - static_cast<std::uint64_t>(low_ns);
    const auto above = static_cast<std::uint64_t>(high_ns) - static_cast<std::uint64_t>(offset);
    return below > above ? below : above;
  }
};

// One recorded process of a file: a file from binary_trace_exporter holds one, a file
// from `ringtrace merge` one per input process.
struct ReplayProcess {
  std::uint32_t pid = 0;  // as recorded (ThreadInfo::pid may differ when two collide)
  std::string name;
  std::string host;
  // The node id its session named (Config::node_id, RINGTRACE_NODE_ID; format 2.3's node
  // frame); "" when it named none: its node is then "host:pid" (TraceContext::node_id_of).
  std::string node_id;
  std::string source;  // the file it was merged from ("" in a file of one process)
  // Added to the process's CLOCK_MONOTONIC times to place them on the file's timeline
  // (the first process's clock): 0 for processes of the first one's host and boot;
  // else derived from both processes' CLOCK_REALTIME anchors, as exact as the hosts'
  // clocks agree (NTP typically keeps it to a millisecond), moved inside the bounds that
  // the flows between the hosts give when it lies outside them (`clock`).
  std::int64_t offset_ns = 0;
  bool realtime_aligned = false;  // offset_ns came from CLOCK_REALTIME anchors
  // What the messages between hosts said of offset_ns (format 2.3; merge_files() measures
  // it when some flow links this process's host and boot to another's: its
  // RINGTRACE_FLOW_OUT and RINGTRACE_FLOW_IN with one id in two processes): a receive is
  // never before its send, so offset_ns lies within [low_ns, high_ns]. See ClockCheck.
  ClockCheck clock;
  // The pid its threads carry in the stream (ThreadInfo::pid), when the file holds
  // several processes (a pid seen twice is replaced); 0 in a file of one process.
  std::uint32_t stream_pid = 0;
  bool complete = false;
  std::string problem;  // as ReplayResult::problem, for this process
  // Events read from the process's ring file (BinaryTraceOptions::rings_in_file) after
  // the trace file's own: what the drainer had not written when the process died.
  std::uint64_t recovered = 0;
  // Frames of a later minor version of the format that this reader does not know, skipped
  // (said in `problem` too): what they held is missing from the stream.
  std::uint64_t skipped_frames = 0;
};

// What reading a file found.
struct ReplayResult {
  bool complete = false;     // the file ends with its end frame (the session was stopped)
  std::string problem;       // empty, or one line: what is wrong and at which byte offset
  std::uint64_t events = 0;  // events delivered
  // From the file's session frame: the recording host, process id, when the session
  // started on CLOCK_REALTIME (ns since the epoch), and the file's size.
  std::string host;
  std::uint32_t pid = 0;
  std::uint64_t realtime_start_ns = 0;
  std::uint64_t bytes = 0;
  // The file's format: 2 (this version writes it), or 1 (before; still read).
  std::uint32_t version = 0;
  std::uint32_t minor_version = 0;
  std::vector<ReplayProcess> processes;
  // A file cut short whose ring file was beside it: the ring file read, and how many
  // events came from it (also in `problem`'s line).
  std::string rings;
  std::uint64_t recovered = 0;
};

// Reads a binary trace file and feeds its merged, time-ordered stream to the exporters
// (on_start, on_events, on_finish; never on_flush): the same events a live session
// would have delivered, named after the recorded process and threads. A file that is
// cut short (a killed process) or damaged is read up to its last good chunk, then, when
// the recording kept its rings in a file (BinaryTraceOptions::rings_in_file), what the
// rings still held beyond that; zones left open are closed at the last time read, and
// the result says what was wrong. Throws
// std::runtime_error when the file cannot be opened or is not a ringtrace file at all
// (or of a newer version). Memory: the tables and the events within the recording's
// merge grace of the newest one read, never the whole file.
RINGTRACE_API ReplayResult replay_file(const std::filesystem::path& path, std::span<Exporter* const> exporters);
RINGTRACE_API ReplayResult replay_file(const std::filesystem::path& path, Exporter& exporter);

// Called with the bytes of the file done so far and its size: now and then while the
// work runs (after each drainer pass read, at most every 1 MiB copied), last with
// done == total. For a progress bar (the `ringtrace` tool draws one on a terminal).
using ProgressFunction = std::function<void(std::uint64_t done, std::uint64_t total)>;

struct ReplayOptions {
  ProgressFunction progress;  // optional
  // The ring file of a recording made with BinaryTraceOptions::rings_in_file. Empty:
  // looked for beside the file (`run.rtrace` or `run.rtrace.partial`: `run.rtrace.rings`)
  // and read when the file was cut short and the ring file is of the same session. For a
  // killed run's temporary `run.rtrace.partial.XXXXXXXX`, give it:
  // output_of_partial(file) + ".rings" (<ringtrace/files.hpp>; the tool does).
  std::filesystem::path rings;
  bool recover_rings = true;  // false: never read a ring file
  // Instrumented functions the recording left unnamed (or named `module+0x...` only) are
  // named from their modules' files: at their recorded paths, then in these directories
  // (by build id as <dir>/.build-id/xx/yyyy[.debug], by <dir>/<file name>, or as a sysroot
  // <dir>/<recorded path>); a file of another build is never used. docs/functions.md.
  std::vector<std::filesystem::path> symbol_paths;
};
RINGTRACE_API ReplayResult replay_file(const std::filesystem::path& path, std::span<Exporter* const> exporters,
                                       const ReplayOptions& options);

// One line on how a process of a merged file is placed on the file's timeline
// (ReplayProcess::offset_ns and clock): what `ringtrace merge` and `ringtrace info` print,
// and the trace metadata `clock.pid N` (N its ThreadInfo::pid) that replay_file() of a
// merged file gives the exporters (the Chrome trace's ringtrace_metadata, the Perfetto
// trace's metadata), with the numbers as integers beside it (`clock.pid N.offset_ns`,
// `.realtime_offset_ns`, `.uncertainty_ns`, `.messages`, `.agrees_with_realtime`,
// `.contradicted`).
RINGTRACE_API std::string describe_clock(const ReplayProcess& process);

// What merge_files() wrote.
struct MergeResult {
  std::vector<ReplayProcess> processes;  // in the output's order, with their offsets
  // One line per process whose input was cut short or damaged: what was complete of it
  // is in the output, and replay_file() of the output reports it too.
  std::vector<std::string> problems;
  // Flows between processes of different clocks (hosts or boots) that bounded the
  // offsets (ReplayProcess::clock), and how many of their receives come before their
  // sends with the offsets written: 0, unless the flows contradict every offset; then
  // `clock_problem` says so (one line) and every offset is CLOCK_REALTIME's.
  std::uint64_t messages = 0;
  std::uint64_t receives_before_sends = 0;
  std::string clock_problem;
};

// Merges binary trace files of several processes (files of binary_trace_exporter, or of
// an earlier merge) into `output`, format version 2: a section per process, on the
// CLOCK_MONOTONIC timeline of the process that started first. Processes of one host and
// boot share that clock exactly; others are placed through the CLOCK_REALTIME anchors
// (ReplayProcess::realtime_aligned), as exact as the hosts' clocks agree, and then, when
// flows link processes of different clocks, inside the bounds the flows give
// (ReplayProcess::clock; reading every event once more for the flows). replay_file()
// of the output delivers one stream, each thread with its process's pid
// (ThreadInfo::pid). Frames are checked and copied, never decoded (but for the flows,
// when several clocks are merged). Throws
// std::runtime_error naming the file when an input cannot be read or is no ringtrace
// file, or the output cannot be written (checked before reading any input); writes
// `output`.partial and renames it at the end.
RINGTRACE_API MergeResult merge_files(std::span<const std::filesystem::path> inputs,
                                      const std::filesystem::path& output, const ProgressFunction& progress = {});

}  // namespace ringtrace
