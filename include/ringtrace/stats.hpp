// What a session reports about itself: per-thread counts, loss, clock calibration.
#pragma once

#include <cstdint>  // counters
#include <string>   // names, error messages
#include <utility>  // per-function counts
#include <vector>   // per-thread rows

#include "ringtrace/detail/platform.hpp"  // RINGTRACE_NO_INSTRUMENT
#include "ringtrace/event.hpp"            // ThreadId

namespace ringtrace {

struct ClockInfo {
  bool tsc = false;                  // true: invariant TSC; false: CLOCK_MONOTONIC on each event
  double ticks_per_second = 1e9;     // calibrated TSC frequency (1e9 for the monotonic clock)
  std::uint64_t start_ns = 0;        // session start on the CLOCK_MONOTONIC timeline
  std::uint64_t stop_ns = 0;         // session stop (0 while running)
  std::uint32_t recalibrations = 0;  // times the drainer re-fit ticks to CLOCK_MONOTONIC
  double max_correction_ns = 0;      // largest offset the re-fits corrected
};

struct ThreadStats {
  ThreadId thread = 0;
  std::uint64_t os_tid = 0;
  std::string name;
  std::uint64_t recorded = 0;  // events delivered to the exporters from this thread
  std::uint64_t dropped = 0;   // events lost because the ring was full (drop policy)
  std::uint32_t pid = 0;       // the thread's process (ThreadInfo::pid; 0: the session's own)
  std::uint64_t switches = 0;  // switch_out and switch_in events delivered (Config::context_switches)
};

// Calls of instrumented functions (Config::functions) the session did not record as
// they ran.
struct FunctionStats {
  // Calls whose exit an exception or a longjmp skipped: closed where the thread next
  // entered or left an instrumented function, with an argument "unwound" = 1.
  std::uint64_t unwound = 0;
  // Calls deeper than FunctionOptions::max_depth, not recorded.
  std::uint64_t too_deep = 0;
  // Calls shorter than FunctionOptions::min_duration, left out by the drainer.
  std::uint64_t short_calls = 0;
  // Calls of functions the name filters left out (FunctionOptions::include, exclude).
  std::uint64_t excluded = 0;
  // Calls of functions g++ inlined into the function whose frame they ran in, left out
  // at the hook (FunctionOptions::inlined false).
  std::uint64_t inlined = 0;
  // The short calls per function, most first: (qualified name, calls left out).
  std::vector<std::pair<std::string, std::uint64_t>> short_by_function;
  // The inlined calls per function, most first: (qualified name, calls left out); last,
  // "(other functions)": calls of functions a thread's table had no room for (512 per
  // thread). Their time is in the function they were inlined into, not known apart.
  std::vector<std::pair<std::string, std::uint64_t>> inlined_by_function;
};

// Allocations (Config::memory, docs/memory.md). Counted from the events the session
// decoded: a session whose only output is the binary file decodes nothing (`known`
// false; `ringtrace report` and `info` give them from the file).
struct MemoryStats {
  bool known = false;  // the session recorded allocations and decoded them
  // The blocks were followed by address (false for a stream's file, a window or snapshot,
  // whose events carry sizes only: no leaks, and frees of earlier blocks not told apart).
  bool blocks_known = true;
  std::uint64_t allocations = 0;
  std::uint64_t frees = 0;
  std::uint64_t allocated_bytes = 0;
  std::uint64_t freed_bytes = 0;  // frees whose size is known
  std::uint64_t live_bytes = 0;   // allocated in the session and not freed
  std::uint64_t live_blocks = 0;
  std::uint64_t peak_live_bytes = 0;
  std::uint64_t peak_time_ns = 0;  // CLOCK_MONOTONIC ns when the live bytes first reached the peak
  // Frees of blocks allocated before the session (or whose allocation was not recorded,
  // or past Config::memory_max_blocks): counted, never an error.
  std::uint64_t frees_unmatched = 0;
  std::uint64_t frees_size_unknown = 0;  // of those, the ones whose size is not known (not guessed)
  std::uint64_t untracked_blocks = 0;    // allocations past Config::memory_max_blocks live blocks
  std::uint64_t lost_frees = 0;          // blocks whose free was not recorded (seen reused)
  // The program's allocations and frees the recording did not follow, by cause, each
  // counted (docs/memory.md, "What is not recorded"): those of a signal handler that
  // interrupted its thread inside ringtrace's own slow path (`nested`), those of a thread
  // after ringtrace let its ring go at the thread's very end (`after_exit`: after the last
  // round of its pthread key destructors), and those a full ring dropped under the drop
  // policy (`dropped`, among SessionStats::dropped too). A free among them leaves its block
  // live in the accounting (a leak that may not be one); an allocation among them makes
  // its free one of frees_unmatched. `bytes`: of the allocations.
  struct LeftOut {
    std::uint64_t allocations = 0;
    std::uint64_t frees = 0;
    std::uint64_t bytes = 0;
    RINGTRACE_NO_INSTRUMENT std::uint64_t events() const { return allocations + frees; }
  };
  LeftOut nested;
  LeftOut after_exit;
  LeftOut dropped;
  // nested and after_exit's events (what earlier versions counted here).
  std::uint64_t unrecorded_nested = 0;

  // Sampled allocation stacks (Config::memory_stack_bytes): the mean bytes between two
  // samples (0: no stacks), and how stacks were taken ("unwinder (.eh_frame)").
  std::uint64_t stack_bytes = 0;
  std::string stack_method;

  // Where the memory went: one row per allocation site, the return address into the code
  // that called the allocation function (its caller, past operator new), most bytes
  // first. Exact: every recorded allocation carries its caller. Only with memory records
  // of format 2.4 (a file of 2.3 has none). `function` and `location` ("file:line" of the
  // call) as the program's symbols tell them; the function is the innermost inlined one
  // at the call, as heaptrack names its allocation sites.
  struct Site {
    std::uint64_t address = 0;
    std::string function;  // "" when not symbolized (a tool names it from the file's modules)
    std::string location;  // "file:line", "" unknown
    std::string module;    // the object holding the address
    std::uint64_t allocations = 0;
    std::uint64_t bytes = 0;
    std::uint64_t peak_bytes = 0;  // its blocks' bytes live when the heap peaked (peak_time_ns)
    std::uint64_t leaked_blocks = 0;
    std::uint64_t leaked_bytes = 0;  // its blocks' bytes still live at the end
  };
  std::vector<Site> sites;
  // Call stacks of sampled allocations (Config::memory_stack_bytes): each distinct stack
  // (the caller first, then its callers), with estimates weighed from its samples: the
  // bytes and calls allocated there, their part of the peak, and of what is live at the
  // end. Estimates, said so wherever they are shown.
  struct Stack {
    std::vector<std::uint64_t> frames;   // return addresses, the allocation's caller first
    std::vector<std::string> functions;  // the frames' functions, when symbolized
    std::uint64_t samples = 0;
    double bytes = 0;
    double calls = 0;
    double peak_bytes = 0;
    double leaked_bytes = 0;
  };
  std::vector<Stack> stacks;

  // The blocks live at stop(), grouped by the zones that allocated them (outermost
  // first, "; "-joined names; "(no zone)" outside every zone) and by their allocation
  // site (`function`, `site` its address; 0 when the records had no caller), most bytes
  // first. A merged file's rows are each of one process (`pid`; 0: the session's own).
  struct Leak {
    std::string stack;
    std::string function;
    std::uint64_t site = 0;
    std::uint32_t pid = 0;
    std::uint64_t blocks = 0;
    std::uint64_t bytes = 0;
  };
  std::vector<Leak> leaks;
};

struct SessionStats {
  // One row per thread, by the time of its first event; then, if the session folded
  // exited threads (Config::max_thread_rows), one row named "(exited threads)" with
  // thread == kFoldedThread (0xFFFFFFFF) and os_tid 0 holding their summed counts.
  std::vector<ThreadStats> threads;
  std::uint64_t folded_threads = 0;  // threads whose counts are in the "(exited threads)" row
  std::uint64_t recorded = 0;        // sum over threads
  std::uint64_t dropped = 0;         // sum over threads, plus dropped_without_ring
  // Events of threads that had no ring in this session (it could not be allocated), and
  // of signal handlers that interrupted their thread while it was binding its ring.
  std::uint64_t dropped_without_ring = 0;
  // Why a thread had no ring, when one had none (the first failure): "cannot make a ring
  // of 8 MiB: File too large" (a ring's mapping refused: RLIMIT_FSIZE, RLIMIT_AS, a full
  // disk under the ring file), or "no memory for a thread's ring". Empty otherwise.
  std::string rings_unavailable;
  std::uint64_t late_events = 0;  // events whose time was raised to keep the order
  // Zone ends with no open zone (ignored), and RINGTRACE_ZONE_ENDs with no
  // RINGTRACE_ZONE_BEGIN open on their thread.
  std::uint64_t unbalanced_ends = 0;
  std::uint64_t closed_at_stop = 0;
  // Zones named at run time (RINGTRACE_ZONE_DYNAMIC): the distinct (call site, name)
  // given a site of their own, and the zones past Config::max_runtime_names of them,
  // which share the one site "ringtrace: run-time names past the limit".
  std::uint64_t runtime_names = 0;
  std::uint64_t runtime_names_overflowed = 0;  // zones still open at stop(), closed at the stop time
  std::uint64_t drain_passes = 0;
  // Passes the drainer could not finish for want of memory (an allocation of its own
  // failed): the program goes on; while the drainer is short, threads under the block
  // policy drop instead of waiting (counted in `dropped`).
  std::uint64_t drainer_out_of_memory = 0;
  // Of `recorded`, the events those passes had decoded from the rings and not yet given
  // to the exporters: let go of, counted here. (A pass that hands the rings' records to a
  // binary file undecoded, Config's raw path, is not covered: its losses are not known.)
  std::uint64_t drainer_events_lost = 0;
  // Of `recorded`, the events their own threads packed into the binary file when they
  // found their ring full (Config::self_drain); the drainer handed over the rest.
  std::uint64_t self_drained = 0;
  std::uint64_t snapshots = 0;             // flight-recorder snapshots written
  std::uint64_t snapshots_suppressed = 0;  // requests and triggers the rate limit refused
  FunctionStats functions;                 // instrumented functions' calls not recorded as they ran
  MemoryStats memory;                      // Config::memory
  // Config::context_switches. Empty when switches are recorded (or were not asked for);
  // else why they are missing, once for the session (the first refusal, e.g.
  // "perf_event_open: Permission denied (perf_event_paranoid 3)"): the session runs
  // as it would without them. A refusal that concerns one thread only (its stream could
  // not be mapped: the locked-memory budget) is counted in threads_without_switches and
  // its message kept here too.
  std::string context_switches_unavailable;
  std::uint64_t context_switches = 0;          // switch_out and switch_in events delivered
  std::uint64_t context_switches_lost = 0;     // switch records the kernel could not keep (its ring was full)
  std::uint64_t threads_without_switches = 0;  // threads whose switches were asked for and not recorded
  ClockInfo clock;
  std::string allocator;                     // "mimalloc" or "system" (where ring memory came from)
  std::vector<std::string> exporter_errors;  // an exporter that threw is listed and disabled
};

}  // namespace ringtrace
