// ringtrace: the convenience header. An instrumented source file needs only
// ringtrace/instrument.hpp (macros and hot path); the file that starts and stops the
// capture needs ringtrace/session.hpp (Session, Config). This header includes both.
#pragma once

#include "ringtrace/instrument.hpp"  // RINGTRACE_ZONE and the other macros, the hot path
#include "ringtrace/session.hpp"     // Session, Config
