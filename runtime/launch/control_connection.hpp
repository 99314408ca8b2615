// The control channel's connections (docs/control.md, "Connections"), on the channel's
// thread: accepted with the peer's uid checked (SO_PEERCRED), read without blocking into
// a FrameReader (a frame's header is checked as soon as it arrives, a payload held to its
// limit), each whole request served in turn, replies written without blocking. A peer
// that sends half a frame, stops reading, or sends nothing is let go after a timeout; one
// that breaks the format gets an error reply and is let go. Nothing here can make a
// thread of the program's wait.
#pragma once

#include <poll.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

namespace ringtrace::detail {

inline constexpr std::size_t kMaxConnections = 16;

// Defined in control_channel.cpp: a descriptor the channel holds (a fork child closes
// them), and its closing.
void hold_connection_fd(int fd);
void close_connection_fd(int fd);

class ConnectionSet {
 public:
  ConnectionSet();
  ~ConnectionSet();
  ConnectionSet(const ConnectionSet&) = delete;
  ConnectionSet& operator=(const ConnectionSet&) = delete;

  // One poll(2) over the listening socket, the wake eventfd and the connections, and what
  // it found: connections accepted, requests served (each under `work`, none once
  // `exiting()` says so), replies written, connections let go.
  void poll_once(int listen_fd, int wake_fd, bool allow_root, std::mutex& work, const std::function<bool()>& exiting);
  // Every connection let go (what they started stops). Under `work`.
  void close_all();
  // Makes room for poll_once's descriptors ahead (under the channel's lock, which a fork
  // waits for): an idle round allocates nothing, so that a fork never finds this thread
  // inside an allocator whose lock the child would inherit held (a sanitizer's: ASan's
  // allocator is not fork-safe, and a fork child of a test deadlocked in it).
  void reserve() { fds_.reserve(kMaxConnections + 2); }

 private:
  struct Connection;
  void accept_new(int listen_fd, bool allow_root, std::uint64_t now);
  void read_from(Connection& c, std::mutex& work, const std::function<bool()>& exiting, std::uint64_t now);
  void write_to(Connection& c, std::uint64_t now);
  void let_go(Connection& c);
  int timeout_ms(std::uint64_t now) const;
  void expire(std::uint64_t now);

  std::vector<std::unique_ptr<Connection>> connections_;
  std::vector<pollfd> fds_;                // poll_once's, its capacity kept
  std::uint64_t listen_paused_until_ = 0;  // accept() ran out of descriptors
};

}  // namespace ringtrace::detail
