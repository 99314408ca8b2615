// The control channel (docs/control.md): a Unix socket through which another process of
// the same user reaches this one (`ringtrace record --pid`, `ringtrace snapshot`,
// `ringtrace top`), open from the program's start unless RINGTRACE_CONTROL=off.
//
// How it wakes: one thread of ringtrace's own, started at the program's start with every
// signal blocked and an 8 MiB stack (address space), blocked in poll(2) on the listening
// socket and an eventfd; it costs no CPU while no one connects and the recording threads
// never see it. The program's start only starts it: the thread opens the socket 100 ms
// later (a program that ends sooner makes none), or at once when asked (a session's
// Config::control, control_socket_path()).
// A signal-driven socket (O_ASYNC, F_SETSIG) would need no thread while idle, but it takes
// a signal number from the program, interrupts whichever of its threads the kernel picks
// (EINTR in code that never expected it), and its handler may do nothing but
// async-signal-safe calls, so a thread would have to be started from it anyway, which
// cannot be done safely there. docs/control.md has the comparison.
//
// The socket: mode 0600, in a directory of the user's only (control_paths.hpp), bound
// under a temporary name and renamed into place, so that its name always has a listener;
// removed at exit (atexit, at_quick_exit) by the process that made it; a socket left by a
// process that crashed, or by the image before an exec, is replaced when its name is
// wanted again (no one answers on it), and those of processes that are gone are removed
// by the next channel that opens in the directory. A fork child has no channel (its
// parent's descriptors are closed in it, its socket never touched) until it starts a
// session; a program that cannot be traced by its user (setuid, setgid, file
// capabilities: not dumpable) has none at all.
#pragma once

#include <string>

#include "ringtrace/detail/platform.hpp"  // RINGTRACE_API

namespace ringtrace::detail {

// At the program's start: the channel as RINGTRACE_CONTROL and RINGTRACE_CONTROL_ROOT
// say, and the hook through which Session::start() applies Config::control. The
// process-wide runtime's (default visibility): one channel a process, however many
// objects carry a copy of the runtime (a plugin's constructor calls the program's, which
// has started already). The object whose channel starts a thread is pinned in memory
// (RTLD_NODELETE): a dlclose never takes the thread's code away under it.
RINGTRACE_API void start_control_channel() noexcept;

// The socket's path while the channel is open, "" otherwise; why the last attempt to
// open it failed, "" if it did not. For tests and the bench: each first has the thread
// open the socket the program's start asked for now, and waits for it (at most 10 s).
std::string control_socket_path();
std::string control_channel_error();

// True on the channel's thread (what it starts, it does not re-configure).
bool on_control_thread() noexcept;

}  // namespace ringtrace::detail
