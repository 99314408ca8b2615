// What the drainer learns of an instrumented thread from the kernel, for the functions'
// filter (function_filter.hpp): a time up to which the thread has published every record
// it stamped. A thread publishes a zone's end a few instructions after reading the clock
// for it, with no system call between; only a thread stopped in between (preempted, or
// interrupted by a signal handler) holds a stamped end back. So:
//   - sleeping in the kernel ('S' in /proc/self/task/TID/stat) when looked at, it was not
//     between the two: everything it stamped before the look is published;
//   - on a CPU for longer than kMinRunNs since an earlier look (its CPU clock), it went
//     past them: everything it stamped before that earlier look is published.
// Neither is known of a thread that is runnable but not running, stopped or in an
// uninterruptible wait: the filter waits for it. A signal handler that runs for a
// millisecond or sleeps between the two is the one case the look gets wrong
// (docs/functions.md).
#pragma once

#include <sys/types.h>

#include <cstdint>

namespace ringtrace::detail {

// A thread's CPU time that tells it ran past a clock read and its publish.
inline constexpr std::uint64_t kMinRunNs = 1'000'000;

class ThreadProbe {
 public:
  // Looks at thread `tid` now; `now_ns` is the drainer's clock read before the look (and
  // the caller reads the thread's ring after it). Returns t: every record the thread
  // stamped at or before t was published before the look; 0 if the look shows nothing.
  std::uint64_t look(pid_t tid, std::uint64_t now_ns);
  // The next look has no earlier one to compare with.
  void forget() { looked_ = false; }

 private:
  std::uint64_t look_ns_ = 0;  // the drainer's clock at the last look
  std::uint64_t cpu_ns_ = 0;   // the thread's CPU time then
  bool looked_ = false;
};

// The thread's state letter in /proc/self/task/TID/stat ('R', 'S', 'D', 't', ...), or 0
// if it cannot be read (no such thread, no /proc).
char thread_state(pid_t tid);
// The thread's CPU time (its CLOCK_THREAD_CPUTIME_ID, read from another thread of the
// process); false if it cannot be read.
bool thread_cpu_ns(pid_t tid, std::uint64_t& ns);

}  // namespace ringtrace::detail
