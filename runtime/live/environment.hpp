// The session the runtime starts from the environment (runtime/launch/): while it runs,
// another Session's start() says so on standard error and records nothing, rather than
// failing the program that `ringtrace record` runs.
#pragma once

#include <string>

#include "ringtrace/session.hpp"

namespace ringtrace::detail {

// `session` (running) is the environment's; `described` says what it writes.
void mark_environment_session(Session& session, std::string described);

}  // namespace ringtrace::detail
