// A session started by the runtime itself, from the environment, when a program that
// links ringtrace starts (`ringtrace record`, or the variables set by hand), and stopped
// at its exit: no change to the program's code. docs/guide.md and docs/functions.md list the
// variables:
//   RINGTRACE_OUTPUT         where and what: comma-separated [format:]path, the format
//                            from the path's extension when not named (.rtrace binary,
//                            .json/.json.gz chrome, .perfetto-trace/.pftrace perfetto,
//                            .prof/.pstats pstats, .folded folded; table: and summary:
//                            always named); "%p" in a path becomes the process id
//   RINGTRACE_BUFFER         records per thread ring (Config::buffer_records)
//   RINGTRACE_POLICY         drop or block (Config::overflow)
//   RINGTRACE_MIN_DURATION   instrumented calls shorter than this left out: 100ns, 2us, 1ms
//   RINGTRACE_MAX_DEPTH      instrumented calls deeper than this not recorded
//   RINGTRACE_INCLUDE        only instrumented functions whose name matches (ECMAScript regex)
//   RINGTRACE_EXCLUDE        instrumented functions whose name matches left out
//   RINGTRACE_MEMORY_STACKS  bytes between sampled allocation stacks on average
//                            (Config::memory_stack_bytes; 0: none)
//   RINGTRACE_CONTEXT_SWITCHES  1: record the threads' context switches, for on-CPU times
//                            (Config::context_switches); where the kernel refuses, the run
//                            is recorded without them and the files say why
// The variables are read once and stay in the environment: the programs this one starts,
// and the program it becomes with exec, are recorded too, each into its own file when the
// path has "%p" (without it they write one file, the last to finish replacing the
// others: `ringtrace record` says so). RINGTRACE_REPORT (set by `ringtrace record`) names
// the socket each process reports its run to (record_report.hpp).
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "ringtrace/config.hpp"
#include "ringtrace/detail/platform.hpp"  // RINGTRACE_API
#include "ringtrace/exporter.hpp"
#include "ringtrace/session.hpp"

namespace ringtrace::detail {

// One output of RINGTRACE_OUTPUT.
struct EnvironmentOutput {
  std::string format;  // rtrace, chrome, perfetto, pstats, folded, table or summary
  std::string path;    // "%p" replaced
};

// The rings of a session the variables start (`ringtrace record`): 8 MiB per thread, where
// Config's default is 1 MiB. A whole program with every function instrumented writes fast
// (leveldb's db_bench, g++: about 700 MB/s on its busiest thread), and 1 MiB is then 1.4 ms
// of its events, less than a drainer waits for a core on a busy 2-core machine; 8 MiB is
// about 11 ms (docs/performance.md, "Built by the script, record's rings at 8 MiB"). A ring's pages
// are touched only as far as its thread writes; in a binary file's ring file each ring's
// 8 MiB is allocated on disk for the run (removed at its end). RINGTRACE_BUFFER sets it.
inline constexpr std::size_t kEnvironmentBufferRecords = std::size_t{1} << 19;

struct EnvironmentPlan {
  bool wanted = false;  // RINGTRACE_OUTPUT is set (and not empty)
  Config config;
  std::vector<EnvironmentOutput> outputs;
  std::string error;  // non-empty: a variable is wrong, nothing is recorded
};

// The plan the variables describe, `get` reading one (nullptr: unset), `pid` for "%p".
EnvironmentPlan plan_from_environment(const std::function<const char*(const char*)>& get, long pid);

// The process's session from the environment. One per process, even where the runtime
// is in it twice (a program that links ringtrace run under `record --memory`, which
// preloads it): exported, so that both copies find the first one's.
struct EnvironmentRun {
  Session* session = nullptr;        // running, or stopped for an exec; nullptr: none
  long pid = 0;                      // the process it records (a fork child's copy is not its own)
  std::vector<std::string> outputs;  // the files it writes
  std::string report_socket;         // RINGTRACE_REPORT: `ringtrace record`'s socket, "" none
};
RINGTRACE_API EnvironmentRun& environment_run();

// Before this process replaces itself with `target` (exec): stops the environment's
// session, so that its files are finished (the new image starts a session of its own,
// which writes the same file when the path has no "%p" or the pid is the same: its file
// replaces this one's when it finishes), and tells `ringtrace record`. Nothing when the
// session is not this process's (a fork or vfork child's exec).
RINGTRACE_API void stop_environment_session_for_exec(const char* target) noexcept;

// `text` without its leading "ringtrace: " (an exception's text, said by whoever prints it
// with its own prefix: the program's standard error, `ringtrace record`, the control
// channel's replies).
std::string_view without_ringtrace_prefix(std::string_view text);

// "100ns", "2us", "1.5ms", "3s" or a number of nanoseconds; false if it is none.
bool parse_duration(const std::string& text, std::chrono::nanoseconds& out);

// The exporter of one output (its file created now: throws naming it). Also the control
// channel's (`ringtrace record --pid`, `ringtrace snapshot`).
std::shared_ptr<Exporter> exporter_for(const EnvironmentOutput& out);

}  // namespace ringtrace::detail
