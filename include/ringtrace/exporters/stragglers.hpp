// The straggler view of a stepped program run by several processes (ranks of a
// distributed job, merged with `ringtrace merge`): per step, each process's step time
// (the duration of its Session::step() zone `step #N`) and the slowest process, as
// distributed training users read their ranks. `ringtrace report --stragglers`.
#pragma once

#include <cstdint>  // times
#include <iosfwd>   // the text goes to a stream
#include <memory>   // the exporter is shared with the session
#include <string>   // process names
#include <vector>   // steps

#include "ringtrace/detail/platform.hpp"  // RINGTRACE_API
#include "ringtrace/exporter.hpp"         // Exporter

namespace ringtrace {

inline constexpr std::uint64_t kNoStep = UINT64_MAX;  // a process that has no zone of that step

struct StepProcess {
  std::uint32_t pid = 0;      // ThreadInfo::pid (the context's process_id() in a file of one process)
  std::string name;           // TraceContext::process_name_of(pid)
  std::uint64_t slowest = 0;  // steps in which it was the slowest process (of two or more)
};

struct StepRow {
  std::uint64_t step = 0;
  // Per process (StepTimes::processes' order): its step's duration, or kNoStep.
  std::vector<std::uint64_t> duration_ns;
  // Per process: when its step ended on the stream's timeline (a merged file's: clock
  // offsets applied), or kNoStep.
  std::vector<std::uint64_t> end_ns;
  std::size_t slowest = 0;          // index of the longest step (the first of equals)
  std::uint64_t spread_ns = 0;      // longest minus shortest duration
  std::uint64_t ends_apart_ns = 0;  // latest minus earliest end
};

struct StepTimes {
  std::vector<StepProcess> processes;  // in the order of their first step
  std::vector<StepRow> steps;          // by step number: every step some process completed
  // Step zones left out: closed at the end of the recording rather than by step() (the
  // last, unfinished step) or at a window's end.
  std::uint64_t unfinished = 0;
};

struct StragglerOptions {
  // 0: every step; else the `rows` steps with the largest spread, in step order.
  std::size_t rows = 0;
};

class StragglerExporter : public Exporter {
 public:
  // The steps seen, complete after on_finish.
  virtual const StepTimes& steps() const = 0;
};

// Writes, at on_finish, the processes (numbered [1], [2], ...), then one line per step:
// each process's step time, the slowest process, the spread (slowest minus fastest) and
// how far apart the steps ended on the timeline; then per process the steps it was the
// slowest in and its mean step time. Keeps 16 bytes per step and process.
RINGTRACE_API std::shared_ptr<StragglerExporter> straggler_exporter(std::ostream& out, StragglerOptions options = {});

}  // namespace ringtrace
