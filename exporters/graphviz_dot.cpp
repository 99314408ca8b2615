// Graphviz's `dot` run on a call graph: posix_spawn (no fork of the traced program, no
// atfork handler runs), memory files for its input and outputs.
#include "graphviz_dot.hpp"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

extern char** environ;

namespace ringtrace::detail {

namespace {

// A file descriptor closed when it goes out of scope.
struct Fd {
  int fd = -1;
  explicit Fd(int f) : fd(f) {}
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

[[noreturn]] void fail(const std::string& target, const std::string& why) {
  throw std::runtime_error("ringtrace: cannot draw '" + target + "': " + why);
}

int memory_file(const char* name, const std::string& target) {
  const int fd = ::memfd_create(name, MFD_CLOEXEC);
  if (fd < 0) fail(target, std::string("memfd_create: ") + std::strerror(errno));
  return fd;
}

void write_all(int fd, std::string_view text, const std::string& target) {
  while (!text.empty()) {
    const ssize_t n = ::write(fd, text.data(), text.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      fail(target, std::string("writing dot's input: ") + std::strerror(errno));
    }
    text.remove_prefix(static_cast<std::size_t>(n));
  }
  if (::lseek(fd, 0, SEEK_SET) != 0) fail(target, std::string("lseek: ") + std::strerror(errno));
}

std::string read_all(int fd, const std::string& target) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) fail(target, std::string("fstat: ") + std::strerror(errno));
  std::string text(static_cast<std::size_t>(st.st_size), '\0');
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::pread(fd, text.data() + done, text.size() - done, static_cast<off_t>(done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) fail(target, std::string("reading dot's output: ") + std::strerror(errno));
    done += static_cast<std::size_t>(n);
  }
  return text;
}

// The environment without what would make `dot` record itself or load ringtrace.
std::vector<char*> environment_for_dot() {
  std::vector<char*> env;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    const std::string_view entry(*e);
    if (entry.starts_with("LD_PRELOAD=") || entry.starts_with("RINGTRACE_")) continue;
    env.push_back(*e);
  }
  env.push_back(nullptr);
  return env;
}

// Waits for `pid` up to `limit_seconds` (0: no limit), killing it then; its wait status,
// or -1 when the program reaps its children itself (SIGCHLD ignored) and the status is
// gone. Polls every 10 ms: dot runs for milliseconds to seconds.
int wait_for(pid_t pid, double limit_seconds, const std::string& target) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(limit_seconds);
  int status = 0;
  while (true) {
    const pid_t done = ::waitpid(pid, &status, limit_seconds > 0 ? WNOHANG : 0);
    if (done == pid) return status;
    if (done < 0 && errno != EINTR) return -1;  // ECHILD: reaped by the program's own SIGCHLD handling
    if (done == 0 && std::chrono::steady_clock::now() >= deadline) {
      ::kill(pid, SIGKILL);
      while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
      char limit[64];
      std::snprintf(limit, sizeof limit, "%g", limit_seconds);
      fail(target, std::string("dot had not finished after ") + limit + " s (a large graph with long cycles); " +
                       "draw the .dot file by hand (dot -Tsvg), or leave out more with a higher node threshold");
    }
    if (done == 0) {
      const timespec pause{0, 10'000'000};
      ::nanosleep(&pause, nullptr);
    }
  }
}

// Runs dot with the three descriptors as its standard streams; its wait status (as wait_for).
int run_dot(int in, int out, int err, const std::string& target, double limit_seconds) {
  posix_spawn_file_actions_t actions;
  posix_spawnattr_t attributes;
  posix_spawn_file_actions_init(&actions);
  posix_spawnattr_init(&attributes);
  posix_spawn_file_actions_adddup2(&actions, in, 0);
  posix_spawn_file_actions_adddup2(&actions, out, 1);
  posix_spawn_file_actions_adddup2(&actions, err, 2);
  // The caller may be ringtrace's drainer, which blocks every signal, or a program's
  // thread with handlers of its own: dot starts with none of that.
  sigset_t none, every;
  sigemptyset(&none);
  sigfillset(&every);
  sigdelset(&every, SIGKILL);
  sigdelset(&every, SIGSTOP);
  posix_spawnattr_setsigmask(&attributes, &none);
  posix_spawnattr_setsigdefault(&attributes, &every);
  posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  char arg0[] = "dot", arg1[] = "-Tsvg";
  char* argv[] = {arg0, arg1, nullptr};
  std::vector<char*> env = environment_for_dot();
  pid_t pid = 0;
  const int started = ::posix_spawnp(&pid, "dot", &actions, &attributes, argv, env.data());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attributes);
  if (started == ENOENT) {
    fail(target, "Graphviz's dot is not on PATH (Debian: apt install graphviz)");
  }
  if (started != 0) fail(target, std::string("cannot run dot: ") + std::strerror(started));
  return wait_for(pid, limit_seconds, target);
}

std::string first_line(const std::string& text) {
  const std::size_t end = text.find('\n');
  std::string line = text.substr(0, end == std::string::npos ? text.size() : end);
  if (line.size() > 300) line = line.substr(0, 300) + "...";
  return line;
}

bool whole_svg(const std::string& text) {
  std::size_t end = text.size();
  while (end > 0 && (text[end - 1] == '\n' || text[end - 1] == ' ' || text[end - 1] == '\r')) --end;
  return text.find("<svg") != std::string::npos && std::string_view(text).substr(0, end).ends_with("</svg>");
}

}  // namespace

bool graphviz_dot_on_path() {
  const char* path = std::getenv("PATH");
  const std::string_view dirs = path != nullptr ? path : "/usr/local/bin:/usr/bin:/bin";
  for (std::size_t from = 0; from <= dirs.size();) {
    std::size_t to = dirs.find(':', from);
    if (to == std::string_view::npos) to = dirs.size();
    std::string dir(dirs.substr(from, to - from));
    from = to + 1;
    const std::string file = (dir.empty() ? std::string(".") : dir) + "/dot";
    struct stat st {};
    if (::stat(file.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(file.c_str(), X_OK) == 0) return true;
  }
  return false;
}

std::string render_svg_with_dot(std::string_view dot_text, const std::string& target, double limit_seconds) {
  const Fd in(memory_file("ringtrace-dot-input", target));
  const Fd out(memory_file("ringtrace-dot-svg", target));
  const Fd err(memory_file("ringtrace-dot-errors", target));
  write_all(in.fd, dot_text, target);
  const int status = run_dot(in.fd, out.fd, err.fd, target, limit_seconds);
  std::string svg = read_all(out.fd, target);
  if (status != -1 && !(WIFEXITED(status) && WEXITSTATUS(status) == 0)) {
    const std::string said = first_line(read_all(err.fd, target));
    const std::string how = WIFSIGNALED(status) ? "was killed by signal " + std::to_string(WTERMSIG(status))
                                                : "failed (exit status " + std::to_string(WEXITSTATUS(status)) + ")";
    fail(target, "dot " + how + (said.empty() ? "" : ": " + said));
  }
  if (!whole_svg(svg)) fail(target, "dot wrote no whole SVG (" + std::to_string(svg.size()) + " bytes)");
  return svg;
}

}  // namespace ringtrace::detail
