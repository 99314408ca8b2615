// What the control channel (runtime/launch/control_*.cpp: `ringtrace record --pid`,
// `snapshot`, `top`) asks of this process's sessions. Any thread but the drainer's.
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <string>

#include "flight_recorder.hpp"  // OutsideSnapshot
#include "ringtrace/config.hpp"
#include "ringtrace/exporter.hpp"
#include "ringtrace/session.hpp"

namespace ringtrace::detail {

// Who started the running session.
enum class SessionOrigin : std::uint8_t {
  none,         // no session runs
  program,      // the program's own Session::start()
  environment,  // RINGTRACE_OUTPUT (`ringtrace record -- PROGRAM`)
  outside,      // the control channel (mark_outside_session)
};

struct RunningSession {
  SessionOrigin origin = SessionOrigin::none;
  std::string described;              // environment, outside: what it writes
  bool decodes = false;               // its drainer decodes events (a tap can join it)
  std::chrono::milliseconds keep{0};  // its flight recorder's (0: none)
  std::size_t window_factories = 0;
  std::chrono::microseconds merge_grace{0};
  std::uint64_t recorded = 0;  // events, as of the drainer's last pass
  std::uint64_t dropped = 0;
};
RunningSession running_session();

// `session` (running, started by the control channel) is recorded from outside:
// `described` says by what; the program's own Session::start() records nothing meanwhile
// (as for the environment's session).
void mark_outside_session(Session& session, std::string described);

// Joins the running session with `tap` (taps.hpp); false with `why` when none runs or it
// decodes no events.
bool attach_tap(std::shared_ptr<Exporter> tap, std::string& why);
void detach_tap(const Exporter* tap);

// The running session's flight recorder writes a snapshot (reason "external") through
// `outside`; false with `why` when no session runs or it has no recorder.
bool request_outside_snapshot(OutsideSnapshot outside, std::string& why);

// Called by Session::start() with the session's Config before it records (the control
// channel's settings in Config::control), on the starting thread; set once by the
// launch layer.
using ControlHook = void (*)(const Config& config);
void set_control_hook(ControlHook hook) noexcept;

// The channel's thread is one of ringtrace's own: never traced (thread_registry.hpp).
void mark_thread_untraced() noexcept;

}  // namespace ringtrace::detail
