// The session the runtime starts from the environment (runtime/launch/): while it runs,
// another Session's start() says so on standard error and records nothing, rather than
// failing the program that `ringtrace record` runs.
#pragma once

#include <chrono>
#include <string>

#include "ringtrace/session.hpp"

namespace ringtrace::detail {

// `session` (running) is the environment's; `described` says what it writes. When the
// process's exit (exit, quick_exit, a signal of flush_on_signals) has stopped it,
// `after_stop` runs (the launch layer's report to `ringtrace record`); nullptr: nothing.
RINGTRACE_API void mark_environment_session(Session& session, std::string described, void (*after_stop)() = nullptr);

// Before an _exit (which runs no atexit handler): the running session stopped as exit()
// stops it, by the thread flush_on_signals started (so that an _exit from a signal handler
// that interrupted a lock's holder waits at most `timeout`, never forever). False when
// there is no such thread or session, a signal is being handled, or time ran out.
RINGTRACE_API bool stop_active_before_exit(std::chrono::milliseconds timeout) noexcept;

}  // namespace ringtrace::detail
