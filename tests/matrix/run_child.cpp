#include "run_child.hpp"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>

#include "spec.hpp"  // kChildLog

extern char** environ;

namespace matrix {

namespace fs = std::filesystem;

std::string tail_of(const fs::path& file, std::size_t bytes) {
  std::ifstream in(file);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (text.empty()) return "(empty)";
  if (text.size() > bytes) text = "..." + text.substr(text.size() - bytes);
  return text;
}

ChildRun run_child(std::vector<std::string> args, const std::vector<std::pair<std::string, std::string>>& env,
                   const fs::path& dir, std::chrono::duration<double> stall, std::chrono::duration<double> limit) {
  ChildRun run;
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return run;
  const int child_fd = ::fcntl(fds[1], F_DUPFD, 10);  // without O_CLOEXEC: the child writes it
  ::close(fds[1]);
  ::fcntl(fds[0], F_SETFL, O_NONBLOCK);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  const std::string log = (dir / kChildLog).string();
  posix_spawn_file_actions_addopen(&actions, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  for (std::string& a : args) {
    if (a == kProgressFd) a = std::to_string(child_fd);
  }
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::vector<std::string> entries;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string entry = *e;
    bool replaced = false;
    for (const auto& [name, value] : env) replaced = replaced || entry.rfind(name + "=", 0) == 0;
    if (!replaced) entries.push_back(entry);
  }
  for (const auto& [name, value] : env) entries.push_back(name + "=" + value);
  std::vector<char*> envp;
  for (std::string& e : entries) envp.push_back(e.data());
  envp.push_back(nullptr);
  pid_t pid = 0;
  const auto begin = std::chrono::steady_clock::now();
  const int spawned = posix_spawn(&pid, args[0].c_str(), &actions, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  ::close(child_fd);
  if (spawned != 0) {
    ::close(fds[0]);
    run.phase = std::string("posix_spawn: ") + std::strerror(spawned);
    return run;
  }
  run.started = true;
  std::string pending;
  auto last_change = begin;
  for (;;) {
    char buffer[4096];
    ssize_t n = 0;
    while ((n = ::read(fds[0], buffer, sizeof buffer)) > 0) pending.append(buffer, static_cast<std::size_t>(n));
    std::size_t newline = 0;
    while ((newline = pending.find('\n')) != std::string::npos) {
      std::istringstream line(pending.substr(0, newline));
      pending.erase(0, newline + 1);
      std::string phase;
      std::uint64_t progress = 0;
      if (line >> phase >> progress && (phase != run.phase || progress != run.progress)) {
        run.phase = phase;
        run.progress = progress;
        last_change = std::chrono::steady_clock::now();
      }
    }
    const pid_t done = ::waitpid(pid, &run.status, WNOHANG);
    const auto now = std::chrono::steady_clock::now();
    if (done == pid) break;
    if (now - last_change > stall || now - begin > limit) {
      run.hung = true;
      run.stalled_for = std::chrono::duration<double>(now - last_change).count();
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &run.status, 0);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ::close(fds[0]);
  run.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
  return run;
}

}  // namespace matrix
