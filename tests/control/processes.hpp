// Child processes for the control channel's tests: the program reached (control_target)
// and the tool that reaches it, each with pipes on its standard streams, read line by
// line with a deadline (a test waits for what a process says, never for "long enough").
#pragma once

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace ringtrace::test {

class Process {
 public:
  // Runs argv[0] with `environment` added to this one's; `in_child` runs in the child
  // before exec (setuid, ...).
  static Process start(const std::vector<std::string>& argv, const std::vector<std::string>& environment = {},
                       const std::function<void()>& in_child = {}) {
    int in[2], out[2], err[2];
    if (::pipe2(in, O_CLOEXEC) != 0 || ::pipe2(out, O_CLOEXEC) != 0 || ::pipe2(err, O_CLOEXEC) != 0) {
      throw std::runtime_error("pipe");
    }
    const pid_t pid = ::fork();
    if (pid < 0) throw std::runtime_error("fork");
    if (pid == 0) {
      ::dup2(in[0], 0);
      ::dup2(out[1], 1);
      ::dup2(err[1], 2);
      for (const std::string& e : environment) ::putenv(const_cast<char*>(e.c_str()));
      if (in_child) in_child();
      std::vector<char*> args;
      for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
      args.push_back(nullptr);
      ::execv(args[0], args.data());
      std::_Exit(127);
    }
    ::close(in[0]);
    ::close(out[1]);
    ::close(err[1]);
    Process p;
    p.pid = pid;
    p.in_ = in[1];
    p.out_ = out[0];
    p.err_ = err[0];
    return p;
  }

  Process() = default;
  Process(Process&& o) noexcept { *this = std::move(o); }
  Process& operator=(Process&& o) noexcept {
    std::swap(pid, o.pid);
    std::swap(in_, o.in_);
    std::swap(out_, o.out_);
    std::swap(err_, o.err_);
    std::swap(out_text_, o.out_text_);
    std::swap(err_text_, o.err_text_);
    std::swap(status_, o.status_);
    return *this;
  }
  ~Process() {
    if (pid > 0 && !status_) {
      ::kill(pid, SIGKILL);
      wait();
    }
    for (const int fd : {in_, out_, err_}) {
      if (fd >= 0) ::close(fd);
    }
  }

  void send(const std::string& line) {
    const std::string text = line + "\n";
    if (::write(in_, text.data(), text.size()) != static_cast<ssize_t>(text.size())) {
      throw std::runtime_error("cannot write to process " + std::to_string(pid));
    }
  }
  void close_input() {
    ::close(in_);
    in_ = -1;
  }

  // The next line on standard output (standard error), without its newline; nullopt when
  // the stream ends or nothing comes within `wait`.
  std::optional<std::string> line(std::chrono::milliseconds wait = std::chrono::seconds(60)) {
    return next_line(out_, out_text_, wait);
  }
  std::optional<std::string> error_line(std::chrono::milliseconds wait = std::chrono::seconds(60)) {
    return next_line(err_, err_text_, wait);
  }
  // The rest of both streams, until the process closes them (at most `wait`).
  std::pair<std::string, std::string> rest(std::chrono::milliseconds wait = std::chrono::seconds(120)) {
    const auto until = std::chrono::steady_clock::now() + wait;
    while ((out_ >= 0 || err_ >= 0) && std::chrono::steady_clock::now() < until) {
      pollfd fds[2] = {{out_, POLLIN, 0}, {err_, POLLIN, 0}};
      ::poll(fds, 2, 100);
      for (int k = 0; k < 2; ++k) {
        if (fds[k].revents == 0) continue;
        int& fd = k == 0 ? out_ : err_;
        std::string& text = k == 0 ? out_text_ : err_text_;
        char buffer[4096];
        const ssize_t n = ::read(fd, buffer, sizeof buffer);
        if (n <= 0) {
          ::close(fd);
          fd = -1;
        } else {
          text.append(buffer, static_cast<std::size_t>(n));
        }
      }
    }
    return {std::exchange(out_text_, {}), std::exchange(err_text_, {})};
  }
  // The exit status (waitpid's).
  int wait() {
    if (!status_) {
      int status = 0;
      while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
      status_ = status;
    }
    return *status_;
  }
  // Exit code, or 128 + signal.
  int exit_code() {
    const int s = wait();
    return WIFEXITED(s) ? WEXITSTATUS(s) : 128 + WTERMSIG(s);
  }

  pid_t pid = -1;

 private:
  static std::optional<std::string> next_line(int& fd, std::string& text, std::chrono::milliseconds wait) {
    const auto until = std::chrono::steady_clock::now() + wait;
    for (;;) {
      const std::size_t newline = text.find('\n');
      if (newline != std::string::npos) {
        std::string line = text.substr(0, newline);
        text.erase(0, newline + 1);
        return line;
      }
      if (fd < 0) return std::nullopt;
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - std::chrono::steady_clock::now());
      if (left.count() <= 0) return std::nullopt;
      pollfd p{fd, POLLIN, 0};
      if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) continue;
      char buffer[4096];
      const ssize_t n = ::read(fd, buffer, sizeof buffer);
      if (n <= 0) {
        ::close(fd);
        fd = -1;
      } else {
        text.append(buffer, static_cast<std::size_t>(n));
      }
    }
  }

  int in_ = -1, out_ = -1, err_ = -1;
  std::string out_text_, err_text_;
  std::optional<int> status_;
};

// The words of a line.
inline std::vector<std::string> words(const std::string& line) {
  std::vector<std::string> out;
  std::size_t at = 0;
  while (at < line.size()) {
    const std::size_t from = line.find_first_not_of(' ', at);
    if (from == std::string::npos) break;
    const std::size_t to = line.find(' ', from);
    out.push_back(line.substr(from, to == std::string::npos ? std::string::npos : to - from));
    at = to == std::string::npos ? line.size() : to;
  }
  return out;
}

}  // namespace ringtrace::test
