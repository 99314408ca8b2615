// Session configuration. Every field has a default that suits a typical program.
#pragma once

#include <chrono>   // drain interval and grace window
#include <cstddef>  // std::size_t
#include <cstdint>  // std::uint32_t
#include <string>   // process name
#include <optional>  // schedule
#include <vector>   // disabled categories

namespace ringtrace {

// Profiling windows over the steps of a run (Session::step()), as PyTorch's
// torch.profiler.schedule: skip the first `skip_first` steps, then repeat cycles of
// `wait` steps (nothing recorded), `warmup` steps (recorded and discarded) and `active`
// steps (recorded: one window); after `repeat` cycles, nothing more (0: forever).
struct Schedule {
  int skip_first = 0;
  int wait = 0;
  int warmup = 0;
  int active = 1;
  int repeat = 0;
};

// The flight recorder: the drainer keeps the last `keep` of the merged stream (at most
// `max_bytes`) in memory all the time, and Session::snapshot() or the trigger writes it
// through the window exporter factories (Session::add_window_exporter).
struct FlightRecorder {
  std::chrono::milliseconds keep{0};   // 0: no flight recorder
  std::size_t max_bytes = std::size_t{64} << 20;  // events (32 bytes each) and texts kept
  // A snapshot also takes the stream's next `after` (0: it ends at its request).
  std::chrono::milliseconds after{0};
  // Rate limit: a request (the trigger's or snapshot()'s) less than this after the
  // last snapshot began, or while one is still taking its `after`, is counted in
  // SessionStats::snapshots_suppressed and writes nothing.
  std::chrono::milliseconds min_interval{1000};
};

// The flight recorder's automatic snapshot: when a zone named `zone` ends longer than
// `longer_than` after it began (empty zone: no trigger).
struct Trigger {
  std::string zone;
  std::chrono::nanoseconds longer_than{0};
};

// What a thread does when its ring is full.
enum class OverflowPolicy {
  drop,   // never wait: the event is dropped and counted (zones are dropped whole)
  block,  // lossless: the thread waits until the drainer has made room
};

// Where timestamps come from.
enum class ClockSource {
  automatic,  // invariant TSC when the CPU has one, else CLOCK_MONOTONIC
  tsc,        // invariant TSC; falls back to CLOCK_MONOTONIC if there is none
  monotonic,  // clock_gettime(CLOCK_MONOTONIC) on every event
};

struct Config {
  // Records per thread ring (16 bytes each); rounded up to a power of two, at least 64.
  // A zone takes two records, a counter or region begin two, an instant one.
  std::size_t buffer_records = std::size_t{1} << 16;

  OverflowPolicy overflow = OverflowPolicy::drop;

  // How often the drainer empties the rings when no ring is filling up.
  std::chrono::microseconds drain_interval{2000};

  // A thread whose ring is fuller than this fraction wakes the drainer early.
  double high_water = 0.5;

  // The thread that wakes the sleeping drainer (its ring past high_water) then yields
  // its CPU once (sched_yield): on a machine whose cores are all busy the drainer runs
  // at once rather than after that thread's time slice, and rings do not overflow
  // meanwhile. At most once per drainer pass; with a core free it returns at once. false:
  // never yield (the thread then only makes the futex call that wakes the drainer).
  bool yield_to_drainer = true;

  // Events younger than this are held back one pass so that a thread that was
  // preempted between reading the clock and publishing can still be merged in order.
  std::chrono::microseconds merge_grace{1000};

  // Events per batch handed to the exporters (32 bytes each).
  std::size_t batch_events = std::size_t{1} << 14;

  ClockSource clock = ClockSource::automatic;

  // The rate of RINGTRACE_ZONE_SAMPLED sites that give 0: one zone in this many is
  // recorded, per site and thread (1 to 65535). Other zones are never sampled.
  std::uint32_t sample_every = 1;

  // Counter tracks: false, one track per counter name for the whole process (what
  // RINGTRACE_COUNTER gives); true, one per counter name and thread, for every counter
  // (what RINGTRACE_COUNTER_PER_THREAD gives one site), in every exporter, live and in
  // the binary file. The exporters' own per_thread_counters options do the same for
  // their output alone.
  bool per_thread_counters = false;

  // Threads a session keeps a row for after they exit. The first max_thread_rows
  // threads of a session keep their row (stats, ThreadInfo) until stop(); a later
  // thread keeps it while it lives, and once it has exited and its last event is
  // delivered its counts are added to one "(exited threads)" row of the stats and its
  // id resolves to a placeholder (ringtrace::kFoldedThread). So the runtime's memory
  // follows the threads alive at once, not the threads ever started.
  std::uint32_t max_thread_rows = 4096;

  // Shown by exporters that name the process (Chrome trace metadata).
  std::string process_name = "ringtrace";

  // Categories switched off at start() (ringtrace::set_category_enabled switches them
  // at any time; a category not listed keeps its current state, on by default).
  std::vector<std::string> disabled_categories;

  // The flight recorder (keep > 0) and its trigger; see FlightRecorder and Trigger. With
  // the recorder on and no schedule, the window factories get snapshots only.
  FlightRecorder flight_recorder;
  Trigger trigger;

  // Steps and windows: with a schedule, events are recorded only in warmup and active
  // steps, and the window exporters (Session::add_window_exporter) get one window per
  // cycle's active steps. Without one, step() only marks steps.
  std::optional<Schedule> schedule;
};

}  // namespace ringtrace
