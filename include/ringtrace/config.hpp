// Session configuration. Every field has a default that suits a typical program.
#pragma once

#include "ringtrace/requires_cxx20.hpp"  // first: one clear error below C++20

#include <chrono>    // drain interval and grace window
#include <cstddef>   // std::size_t
#include <cstdint>   // std::uint32_t
#include <optional>  // schedule
#include <string>    // process name
#include <vector>    // disabled categories

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
  std::chrono::milliseconds keep{0};              // 0: no flight recorder
  std::size_t max_bytes = std::size_t{64} << 20;  // events (32 bytes each) and texts kept
  // A snapshot also takes the stream's next `after` (0: it ends at its request).
  std::chrono::milliseconds after{0};
  // Rate limit: a request (the trigger's or snapshot()'s) less than this after the
  // last snapshot began, or while one is still taking its `after`, is counted in
  // SessionStats::snapshots_suppressed and writes nothing. snapshot()'s requests wait
  // for the stream to reach their time; of those waiting within min_interval of one
  // another only the oldest and the newest are kept (at most one of them can be
  // served), and at most 64 wait: the others are counted as suppressed when they are
  // made. So snapshot() in a loop costs a constant per call and holds no memory.
  std::chrono::milliseconds min_interval{1000};
};

// The flight recorder's automatic snapshot: when a zone named `zone` ends and took longer
// than `longer_than` (by `measure`; empty zone: no trigger).
struct Trigger {
  // What `longer_than` is compared with: the zone's wall time, its on-CPU time, or its
  // off-CPU time (wall less on-CPU: the time its thread waited inside it). On-CPU and
  // off-CPU need Config::context_switches; without switch events a zone's on-CPU time is
  // its wall time and its off-CPU time 0.
  enum class Measure : std::uint8_t { wall, on_cpu, off_cpu };
  std::string zone;
  std::chrono::nanoseconds longer_than{0};
  Measure measure = Measure::wall;
};

// Automatic function instrumentation: code built with -finstrument-functions and linked
// with ringtrace::functions records every instrumented call as a zone named after its
// function (docs/functions.md). What a session keeps of those calls:
struct FunctionOptions {
  // Calls deeper than this many instrumented functions on a thread are not recorded, nor
  // is any instrumented call they make (counted in SessionStats::functions.too_deep); each
  // thread keeps 16 bytes per level for its stack of calls. 1 to 1,048,576.
  std::uint32_t max_depth = 1024;
  // Calls shorter than this are left out by the drainer, counted per function
  // (SessionStats::functions). 0: every call kept. The drainer then holds every thread's
  // newest `min_duration` of events back one pass.
  std::chrono::nanoseconds min_duration{0};
  // ECMAScript regular expressions searched in a function's qualified name
  // ("ns::Parser::parse(std::string_view)"), decided once per function: when `include`
  // has any, only functions that match one are kept; a function that matches one of
  // `exclude` is left out (counted in SessionStats::functions.excluded).
  std::vector<std::string> include;
  std::vector<std::string> exclude;
  // g++ instruments a function also where it inlines it: its hooks run in the frame of
  // the function it was inlined into (a `Slice::size()` inside every caller), each call
  // costing what a recorded zone costs. false: such calls are left out, counted per
  // thread in SessionStats::functions.inlined, as clang's
  // -finstrument-functions-after-inlining leaves them out of the code; the calls they make
  // that are not inlined are recorded, nested in the function they were inlined into.
  // true: every instrumented call is recorded (g++'s inlined ones nested in their outer
  // function). No effect on clang's -finstrument-functions-after-inlining code.
  bool inlined = false;
};

// The control channel (docs/control.md): a Unix socket, open from the program's start
// (before main), through which `ringtrace record --pid`, `ringtrace snapshot` and
// `ringtrace top` reach this process from another process of the same user. Nothing on
// the recording path; while no one uses it, one thread blocked in poll(2). These settings
// apply when a session starts (Session::start()) and stay after it stops; the
// environment's RINGTRACE_CONTROL and RINGTRACE_CONTROL_ROOT, when set, win over them
// (RINGTRACE_CONTROL=off: no channel from the program's first instruction on).
struct ControlChannel {
  bool enabled = true;
  // The socket's absolute path ("%p": the process id); empty: <pid>.sock in
  // $XDG_RUNTIME_DIR/ringtrace, else in /tmp/ringtrace-<uid> (a private directory).
  std::string path;
  // Root may use it too (by default only the process's own user may).
  bool allow_root = false;
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
  // The size of each thread's ring, in units of 16 bytes: the ring is buffer_records * 16
  // bytes, rounded up to a power of two, 4 KiB at least. A zone takes 24 bytes (its begin
  // 16, its end 8), an instant or a value 16, a counter, async span or region begin 24, a
  // text or message 24 and its bytes (docs/file-format.md, "Ring records").
  std::size_t buffer_records = std::size_t{1} << 16;

  OverflowPolicy overflow = OverflowPolicy::drop;

  // How often the drainer empties the rings when no ring is filling up.
  std::chrono::microseconds drain_interval{2000};

  // A thread whose ring is fuller than this fraction wakes the drainer early.
  double high_water = 0.5;

  // The thread that wakes the sleeping drainer (its ring past high_water) then yields
  // its CPU once (sched_yield): on a machine whose cores are all busy the drainer runs
  // at once rather than after that thread's time slice, and rings do not overflow
  // meanwhile. At most once per drainer pass; with a core free it returns at once. Under
  // the drop policy a thread whose ring is full also yields at its first drop and every
  // 16th after it while the ring stays full (it never waits: it drops and goes on).
  // false: never yield (the thread then only makes the futex call that wakes the drainer).
  bool yield_to_drainer = true;

  // Block policy, and a session whose only exporter is the binary trace file (without
  // rings_in_file): a thread that finds its ring full (its drainer is not keeping up: no
  // core to spare for it) packs its own records into the file's buffer instead of
  // waiting, and for its next 128 MiB of ring packs them whenever its ring
  // holds 128 KiB (or high_water, if less), while they are still in its core's cache. A
  // thread whose drainer keeps up never packs. It never waits for this: if the drainer is
  // in a pass (or another thread is packing) it goes on and tries again a little later.
  // Nothing is allocated, no system call is made and no lock is waited for: a signal
  // handler or an allocator hook may be the one that packs. The drainer writes the packed
  // buffer to the file in its next pass. SessionStats::self_drained counts the events.
  // false: the drainer alone empties the rings. Under the drop policy a thread never
  // packs, whatever this says: its slow path only counts a drop, wakes the drainer (one
  // futex call) and, at its first drop and every 16th while the ring stays full, yields
  // (yield_to_drainer; the kernel may run another thread first: that wait is the
  // scheduler's, at most a time slice). No zone waits for the drainer's work: packing a
  // full ring cost a drop-mode zone 20 us and more at the 99.99th percentile; without it,
  // 0.55 us (bench_tail, docs/performance.md).
  bool self_drain = true;

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

  // Zones named at run time (RINGTRACE_ZONE_DYNAMIC): each distinct name (per call site)
  // becomes a site of its own, up to this many; every further name shares one site,
  // "ringtrace: run-time names past the limit", counted in
  // SessionStats::runtime_names_overflowed. Bounds the sites' memory (a name is at most
  // 256 bytes) whatever the program names its zones after.
  std::uint32_t max_runtime_names = 65536;

  // Threads a session keeps a row for after they exit. The first max_thread_rows
  // threads of a session keep their row (stats, ThreadInfo) until stop(); a later
  // thread keeps it while it lives, and once it has exited and its last event is
  // delivered its counts are added to one "(exited threads)" row of the stats and its
  // id resolves to a placeholder (ringtrace::kFoldedThread). So the runtime's memory
  // follows the threads alive at once, not the threads ever started.
  std::uint32_t max_thread_rows = 4096;

  // Context switches (docs/context-switches.md): the drainer opens a perf_event_open
  // stream of switch records for each thread it serves (the kernel writes them; the
  // recording threads run no code of ours for it) and merges them into the stream as
  // EventKind::switch_out / switch_in events, from which every exporter that times zones
  // gets each zone's on-CPU time (wall time less the time its thread was off the CPU
  // inside it). Where the kernel refuses (perf_event_paranoid 3, a seccomp filter, an
  // old kernel) the session runs without them and SessionStats::context_switches_unavailable
  // says why. Each traced thread's switches then take about 1 us longer, and each thread
  // holds a 36 KiB kernel ring (8 + 1 pages, charged to the locked-memory budget).
  bool context_switches = false;

  // Allocations (docs/memory.md): with ringtrace::memory linked into the program (or
  // preloaded by `ringtrace record --memory`), every malloc, free, operator new and
  // delete of the program's threads is recorded on its thread's ring (an alloc or free
  // event with its size), from which the exporters give each zone its bytes, the live
  // heap and its peak (SessionStats::memory), and the blocks still live at stop() by the
  // zones that allocated them. Without ringtrace::memory it records nothing.
  bool memory = false;
  // The live blocks the heap's accounting keeps (about 64 bytes each): an allocation
  // past that many is counted (MemoryStats::untracked_blocks), and so is its free.
  std::size_t memory_max_blocks = std::size_t{1} << 22;
  // Sampled allocation stacks (docs/memory.md): on average one allocation in every this
  // many bytes a thread allocates carries its whole call stack (byte sampling, as
  // tcmalloc's and jemalloc's heap profilers: an allocation of s bytes is sampled with
  // probability 1 - exp(-s / memory_stack_bytes), and readers weigh it back, so that the
  // bytes and calls they estimate per stack are unbiased). 0: none (every allocation
  // still carries its caller). `ringtrace record --memory-stacks` sets 512 KiB.
  std::uint64_t memory_stack_bytes = 0;

  // Shown by exporters that name the process (Chrome trace metadata).
  std::string process_name = "ringtrace";

  // The node this process runs on, as the key-averages table names it when several
  // processes are merged into one file (TableOptions::group_by_node): a machine, a rank,
  // anything (at most 256 bytes). Empty: the environment's RINGTRACE_NODE_ID if set,
  // else "host:pid". The binary trace file keeps it.
  std::string node_id;

  // Categories switched off at start() (ringtrace::set_category_enabled switches them
  // at any time; a category not listed keeps its current state, on by default).
  std::vector<std::string> disabled_categories;

  // The flight recorder (keep > 0) and its trigger; see FlightRecorder and Trigger. With
  // the recorder on and no schedule, the window factories get snapshots only.
  FlightRecorder flight_recorder;
  Trigger trigger;

  // Instrumented functions (-finstrument-functions with ringtrace::functions).
  FunctionOptions functions;

  // The control channel (ControlChannel above).
  ControlChannel control;

  // Steps and windows: with a schedule, events are recorded only in warmup and active
  // steps, and the window exporters (Session::add_window_exporter) get one window per
  // cycle's active steps. Without one, step() only marks steps.
  std::optional<Schedule> schedule;
};

}  // namespace ringtrace
