// The session: owns the drainer and the exporters for one capture.
#pragma once

#include <cstdint>           // steps
#include <functional>        // window exporter factories
#include <initializer_list>  // flush_on_signals
#include <memory>            // exporters are shared with the caller

#include "ringtrace/config.hpp"           // Config
#include "ringtrace/detail/platform.hpp"  // RINGTRACE_API
#include "ringtrace/stats.hpp"            // SessionStats

namespace ringtrace {

class Exporter;  // ringtrace/exporter.hpp; the session only stores and calls them

// One window of a schedule (Config::schedule): the active steps of one cycle.
struct WindowInfo {
  std::uint64_t index = 0;       // 0 for the first window of the run
  std::uint64_t first_step = 0;  // steps counted from 0 over the whole run
  std::uint64_t last_step = 0;
  std::uint64_t begin_ns = 0;  // CLOCK_MONOTONIC: the first active step's begin
  std::uint64_t end_ns = 0;    // 0 when the factory is called (the window has just begun)
  // A flight recorder's snapshot: why it was taken (snapshot()'s reason, or the
  // trigger's "zone 'request' took 2.345 ms"); empty for a schedule's window. A
  // snapshot's steps are 0 and begin_ns is the time of its first event.
  std::string reason = {};
};
using WindowExporterFactory = std::function<std::shared_ptr<Exporter>(const WindowInfo&)>;

// One active (started, not yet stopped) session per process at a time.
class RINGTRACE_API Session {
 public:
  explicit Session(Config config = {});
  ~Session();  // stops the session if it is running
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  // Before start(): exporters receive the ordered stream of every later run.
  // Throws std::logic_error while running, std::invalid_argument for a null exporter.
  void add_exporter(std::shared_ptr<Exporter> exporter);

  // Starts recording. Throws std::logic_error if this or another session is running.
  // A stopped session can be started again: each run is a complete capture
  // (exporters get on_start ... on_finish again).
  void start();

  // Stops recording, drains every event recorded before the call, delivers it to
  // every exporter and calls their on_finish. Returns when all of that is done.
  // Events after stop() are ignored. Calling stop() when not running does nothing.
  void stop();

  bool running() const noexcept;

  // Before start(): `factory` is called once per window (on the drainer thread, when the
  // window's first active step begins) for a fresh exporter that gets that window's
  // events: zones that began in it (a zone still open at the window's end is closed
  // there, flagged EventFlags::closed_at_window_end), and the values, counters, instants
  // and spans recorded in it. It is finished (on_finish) when the window ends, while the
  // program runs on. An exception from the factory or the exporter disables windows for
  // the rest of the run (listed in stats().exporter_errors).
  void add_window_exporter(WindowExporterFactory factory);

  // Ends the current step and begins the next one (steps are counted from 0; the first
  // begins at start()). Each recorded step is a zone named "step #N" on the session's
  // "steps" track, a thread of its own in every exporter, whichever thread called
  // step(): from start() with a schedule or window exporters, else from the first call
  // on (a frame between two calls, as ringtrace::frame_mark() makes them). With a
  // schedule, switches recording off in skipped and wait steps and on in warmup and
  // active ones. Any thread, several at once (they take turns); not from a signal
  // handler or an exporter.
  void step();
  std::uint64_t current_step() const noexcept;

  // The flight recorder (Config::flight_recorder): asks the drainer to write what it
  // holds, the last `keep` up to now (and the next `after`), through the window
  // factories, with WindowInfo::reason set to `reason`. Returns at once (the drainer
  // writes on its next pass); false when no recorder runs. Rate-limited as the
  // trigger is (Config::flight_recorder.min_interval). Any thread; not from a signal
  // handler (it takes a lock).
  bool snapshot(std::string reason);

  // Counts of the last completed run (or the current one, as of the drainer's last
  // pass, while running).
  SessionStats stats() const;

  const Config& config() const noexcept;

  struct Impl;  // opaque; public only so that the runtime's process hooks can name it

 private:
  bool start_recording();  // start() but the allocations' switch: false if it records nothing
  std::unique_ptr<Impl> impl_;
};

// Opt-in: when one of `signals` arrives (e.g. {SIGTERM, SIGINT}), stop the running
// session, so that every exporter finishes its files, then end the process with that
// signal's default action. The handler itself only posts a semaphore; a watcher thread
// does the rest. Replaces the handlers installed for those signals (a fork child gets
// the previous ones back). Throws std::invalid_argument for SIGKILL, SIGSTOP or a
// number that is not a signal.
RINGTRACE_API void flush_on_signals(std::initializer_list<int> signals);

}  // namespace ringtrace
