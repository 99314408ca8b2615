// _exit and the exec family, around the C library's.
//
// _exit and _Exit run no atexit handler: a process recorded from the environment that
// ends with one (dash ends every run so; a program that wants a fast end) first has its
// session stopped, by ringtrace's own thread, as exit() would (stop_active_before_exit:
// an _exit from a signal handler that interrupted a lock's holder waits at most
// kExitStopTimeout, then the process ends and its files stay temporaries, as after a
// crash). exit() itself calls the C library's own _exit, never this one.
//
// The exec family: a process recorded from the environment that
// replaces itself with another program (a wrapper: env, nice, a script's `exec`, a
// version manager's shim) first stops its session, so that its files are finished and
// `ringtrace record` is told, instead of leaving a temporary that looks like a crash. The
// new image keeps RINGTRACE_OUTPUT and records itself (environment_session.hpp).
//
// Only when the exec is about to succeed: the target exists and may be executed (a PATH
// search as the C library makes it); an exec that fails leaves the session running. One
// that fails after the check (ENOMEM, E2BIG, a bad interpreter) leaves the process
// unrecorded from there on, said on standard error. A fork or vfork child's exec leaves
// its parent's session alone (stop_environment_session_for_exec checks the pid).
//
// posix_spawn, system and popen start new processes (the C library's own exec, in the
// child): those record themselves and need nothing here.
#include <dlfcn.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "environment.hpp"  // live: stop_active_before_exit
#include "environment_session.hpp"

namespace ringtrace::detail {
namespace {

template <class F>
F next_definition(const char* name) {
  return reinterpret_cast<F>(::dlsym(RTLD_NEXT, name));
}

bool executable_file(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(path.c_str(), X_OK) == 0;
}

// `path` when it names a file that may be executed, else "".
std::string executable(const char* path) { return path != nullptr && executable_file(path) ? path : std::string(); }

// The file execvp would run: `file` itself when it names a path, else the first
// executable file of that name in PATH (the C library's default when PATH is unset).
std::string search_path(const char* file) {
  if (file == nullptr || *file == '\0') return {};
  if (std::strchr(file, '/') != nullptr) return executable_file(file) ? file : std::string();
  const char* path = std::getenv("PATH");
  const std::string dirs = path != nullptr ? path : "/bin:/usr/bin";
  for (std::size_t from = 0; from <= dirs.size();) {
    std::size_t to = dirs.find(':', from);
    if (to == std::string::npos) to = dirs.size();
    const std::string dir = to == from ? "." : dirs.substr(from, to - from);
    const std::string candidate = dir + "/" + file;
    if (executable_file(candidate)) return candidate;
    from = to + 1;
  }
  return {};
}

// Stops the session for an exec of the file `target()` names ("" when the exec will
// fail: nothing done). Returns whether it did, so that a failure afterwards is said.
// Whose session it is comes first: a vfork child shares its parent's memory, and must
// neither stop its parent's session nor allocate more than it needs.
template <class Target>
bool before_exec(Target&& target) noexcept {
  const EnvironmentRun& run = environment_run();
  if (run.session == nullptr || run.pid != ::getpid()) return false;
  try {
    const std::string file = target();
    if (file.empty()) return false;
    stop_environment_session_for_exec(file.c_str());
    return true;
  } catch (...) {  // no memory for the check: the session goes on, the exec is the C library's
    return false;
  }
}

constexpr std::chrono::seconds kExitStopTimeout{10};

void before_exit() noexcept {
  const EnvironmentRun& run = environment_run();
  if (run.session == nullptr || run.pid != ::getpid()) return;  // a fork child's _exit
  stop_active_before_exit(kExitStopTimeout);
}

int after_failed_exec(bool stopped, int result) noexcept {
  if (stopped) {
    const int saved = errno;
    std::fprintf(stderr,
                 "ringtrace: exec failed (%s) after this process's recording stopped for it: the rest of the run "
                 "is not recorded\n",
                 std::strerror(saved));
    errno = saved;
  }
  return result;
}

std::vector<char*> variadic_argv(const char* first, va_list& args) {
  std::vector<char*> argv{const_cast<char*>(first)};
  while (argv.back() != nullptr) argv.push_back(va_arg(args, char*));
  return argv;
}

}  // namespace
}  // namespace ringtrace::detail

using ringtrace::detail::after_failed_exec;
using ringtrace::detail::before_exec;
using ringtrace::detail::before_exit;
using ringtrace::detail::executable;
using ringtrace::detail::next_definition;
using ringtrace::detail::search_path;

#define RINGTRACE_EXEC_API extern "C" __attribute__((visibility("default"), no_instrument_function))

RINGTRACE_EXEC_API int execve(const char* path, char* const argv[], char* const envp[]) {
  using F = int (*)(const char*, char* const[], char* const[]);
  static const F next = next_definition<F>("execve");
  const bool stopped = before_exec([&] { return executable(path); });
  return after_failed_exec(stopped, next(path, argv, envp));
}

RINGTRACE_EXEC_API int execv(const char* path, char* const argv[]) {
  using F = int (*)(const char*, char* const[]);
  static const F next = next_definition<F>("execv");
  const bool stopped = before_exec([&] { return executable(path); });
  return after_failed_exec(stopped, next(path, argv));
}

RINGTRACE_EXEC_API int execvp(const char* file, char* const argv[]) {
  using F = int (*)(const char*, char* const[]);
  static const F next = next_definition<F>("execvp");
  const bool stopped = before_exec([&] { return search_path(file); });
  return after_failed_exec(stopped, next(file, argv));
}

RINGTRACE_EXEC_API int execvpe(const char* file, char* const argv[], char* const envp[]) {
  using F = int (*)(const char*, char* const[], char* const[]);
  static const F next = next_definition<F>("execvpe");
  const bool stopped = before_exec([&] { return search_path(file); });
  return after_failed_exec(stopped, next(file, argv, envp));
}

RINGTRACE_EXEC_API int fexecve(int fd, char* const argv[], char* const envp[]) {
  using F = int (*)(int, char* const[], char* const[]);
  static const F next = next_definition<F>("fexecve");
  const bool stopped = before_exec([&] { return executable(("/proc/self/fd/" + std::to_string(fd)).c_str()); });
  return after_failed_exec(stopped, next(fd, argv, envp));
}

RINGTRACE_EXEC_API int execl(const char* path, const char* arg, ...) {
  va_list args;
  va_start(args, arg);
  std::vector<char*> argv = ringtrace::detail::variadic_argv(arg, args);
  va_end(args);
  return execv(path, argv.data());
}

RINGTRACE_EXEC_API int execlp(const char* file, const char* arg, ...) {
  va_list args;
  va_start(args, arg);
  std::vector<char*> argv = ringtrace::detail::variadic_argv(arg, args);
  va_end(args);
  return execvp(file, argv.data());
}

RINGTRACE_EXEC_API int execle(const char* path, const char* arg, ...) {
  va_list args;
  va_start(args, arg);
  std::vector<char*> argv = ringtrace::detail::variadic_argv(arg, args);
  char* const* envp = va_arg(args, char* const*);
  va_end(args);
  return execve(path, argv.data(), envp);
}

RINGTRACE_EXEC_API __attribute__((noreturn)) void _exit(int status) {
  using F = void (*)(int);
  static const F next = next_definition<F>("_exit");
  before_exit();
  next(status);
  __builtin_unreachable();
}

RINGTRACE_EXEC_API __attribute__((noreturn)) void _Exit(int status) {
  using F = void (*)(int);
  static const F next = next_definition<F>("_Exit");
  before_exit();
  next(status);
  __builtin_unreachable();
}
