// The `ringtrace` tool's side of the control channel (docs/control.md): finding a
// process's socket, connecting, one request and its reply at a time. Used by
// `record --pid` (attach.cpp), `snapshot` (snapshot.cpp) and `top` (top.cpp).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "control_protocol.hpp"  // runtime/control: the one codec of the format

namespace ringtrace::tool {

class ControlClient {
 public:
  // Connects to the channel of `target`: a process id, or a socket's path (with a '/').
  // Throws std::runtime_error saying why not: no such process, one of another user's, no
  // channel (it does not link ringtrace, or its channel is off), a refusal.
  static ControlClient connect(const std::string& target);
  ControlClient(ControlClient&& other) noexcept;
  ControlClient& operator=(ControlClient&&) = delete;
  ~ControlClient();

  // Sends `request` and waits for its reply, at most `wait`; throws std::runtime_error
  // when the process goes away, the reply breaks the format, or it does not come.
  control::Message request(const control::Message& request, std::chrono::milliseconds wait);
  // The reply if it is `ok` (or `table`); else throws std::runtime_error with its message.
  control::Message expect(const control::Message& request, std::chrono::milliseconds wait);

  pid_t pid() const { return pid_; }  // 0 when connected by path and the status did not say
  const std::string& path() const { return path_; }
  int fd() const { return fd_; }
  // "process 1234 (name)".
  std::string described() const;
  void set_identity(pid_t pid, std::string program);

 private:
  ControlClient(int fd, pid_t pid, std::string path) : fd_(fd), pid_(pid), path_(std::move(path)) {}
  // A reply the process sent before it closed the connection, if any.
  std::optional<control::Message> reply_left();
  int fd_ = -1;
  pid_t pid_ = 0;
  std::string path_;
  std::string program_;
  control::FrameReader reader_{false, control::kMaxReplyPayload};
};

// The error reply's text: "message (code)".
std::string error_text(const control::Message& reply);

// The output options of record (-o, --chrome, --perfetto, --pstats, --folded, --table,
// --summary, --callgraph): when args[i] is one, appends "format:path" with the path made absolute (the
// process's working directory is not the tool's), advances i and returns true.
bool output_option(const std::vector<std::string>& args, std::size_t& i, std::vector<std::string>& outputs);
// "a.rtrace (1.23 MB), b.json (456 kB)": the files as this tool sees them.
std::string files_with_sizes(const std::vector<std::string>& paths);
// A duration on the command line: 500ms, 10s, 2m (or 1.5s); UsageError naming the option.
std::chrono::milliseconds parse_wait(std::string_view option, const std::string& text);

// SIGINT, SIGTERM and SIGHUP, while it lives, only write a byte into a pipe whose
// reading end fd() a poll(2) loop watches (and the previous handlers come back after).
class Interruption {
 public:
  Interruption();
  ~Interruption();
  Interruption(const Interruption&) = delete;
  Interruption& operator=(const Interruption&) = delete;
  int fd() const;
  bool happened() const;
};

}  // namespace ringtrace::tool
