// What a session reports about itself: per-thread counts, loss, clock calibration.
#pragma once

#include <cstdint>  // counters
#include <string>   // names, error messages
#include <vector>   // per-thread rows

#include "ringtrace/event.hpp"  // ThreadId

namespace ringtrace {

struct ClockInfo {
  bool tsc = false;                 // true: invariant TSC; false: CLOCK_MONOTONIC on each event
  double ticks_per_second = 1e9;    // calibrated TSC frequency (1e9 for the monotonic clock)
  std::uint64_t start_ns = 0;       // session start on the CLOCK_MONOTONIC timeline
  std::uint64_t stop_ns = 0;        // session stop (0 while running)
  std::uint32_t recalibrations = 0;  // times the drainer re-fit ticks to CLOCK_MONOTONIC
  double max_correction_ns = 0;     // largest offset the re-fits corrected
};

struct ThreadStats {
  ThreadId thread = 0;
  std::uint64_t os_tid = 0;
  std::string name;
  std::uint64_t recorded = 0;  // events delivered to the exporters from this thread
  std::uint64_t dropped = 0;   // events lost because the ring was full (drop policy)
  std::uint32_t pid = 0;       // the thread's process (ThreadInfo::pid; 0: the session's own)
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
  std::uint64_t late_events = 0;     // events whose time was raised to keep the order
  std::uint64_t unbalanced_ends = 0;  // zone ends with no open zone (ignored)
  std::uint64_t closed_at_stop = 0;   // zones still open at stop(), closed at the stop time
  std::uint64_t drain_passes = 0;
  std::uint64_t snapshots = 0;             // flight-recorder snapshots written
  std::uint64_t snapshots_suppressed = 0;  // requests and triggers the rate limit refused
  ClockInfo clock;
  std::string allocator;               // "mimalloc" or "system" (where ring memory came from)
  std::vector<std::string> exporter_errors;  // an exporter that threw is listed and disabled
};

}  // namespace ringtrace
