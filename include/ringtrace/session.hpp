// The session: owns the drainer and the exporters for one capture.
#pragma once

#include <initializer_list>  // flush_on_signals
#include <memory>            // exporters are shared with the caller

#include "ringtrace/config.hpp"           // Config
#include "ringtrace/detail/platform.hpp"  // RINGTRACE_API
#include "ringtrace/stats.hpp"            // SessionStats

namespace ringtrace {

class Exporter;  // ringtrace/exporter.hpp; the session only stores and calls them

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

  // Counts of the last completed run (or the current one, as of the drainer's last
  // pass, while running).
  SessionStats stats() const;

  const Config& config() const noexcept;

  struct Impl;  // opaque; public only so that the runtime's process hooks can name it

 private:
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
