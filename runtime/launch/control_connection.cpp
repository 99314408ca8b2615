#include "control_connection.hpp"

#include <poll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <exception>
#include <string>

#include "control_protocol.hpp"
#include "control_requests.hpp"

namespace ringtrace::detail {

namespace {

constexpr std::uint64_t kMs = 1'000'000;
constexpr std::uint64_t kFrameTimeoutNs = 10'000 * kMs;       // a frame begun must be whole by then
constexpr std::uint64_t kStallTimeoutNs = 10'000 * kMs;       // a reply not read for this long
constexpr std::uint64_t kIdleTimeoutNs = 60'000 * kMs;        // a connection that owns nothing, silent
constexpr std::uint64_t kClosingNs = 1'000 * kMs;             // a last reply's time to go out
constexpr std::uint64_t kListenPauseNs = 100 * kMs;           // after accept() ran out of descriptors
constexpr std::size_t kMaxPendingOut = std::size_t{4} << 20;  // then the peer is let go
constexpr int kReadsPerRound = 8;

std::uint64_t now_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::uint64_t>(ts.tv_sec) * 1'000'000'000u + static_cast<std::uint64_t>(ts.tv_nsec);
}

}  // namespace

struct ConnectionSet::Connection {
  Connection(int descriptor, std::uint64_t now) : fd(descriptor), active_at(now) {}
  int fd;
  control::FrameReader reader{true, control::kMaxRequestPayload};
  std::string out;  // reply bytes not yet sent, from out_at
  std::size_t out_at = 0;
  std::uint64_t active_at;          // the last request served
  std::uint64_t frame_since = 0;    // a frame begun and not whole since (0: none)
  std::uint64_t stalled_since = 0;  // replies waiting for the peer to read since (0: none)
  std::uint64_t closing_since = 0;  // writes what is left, then goes (0: not closing)
  bool gone = false;                // let go at the end of the round
  ControlWork work;

  bool pending() const { return out_at < out.size(); }
  void queue(const control::Message& reply) {
    std::string bytes;
    try {
      bytes = control::encode(reply);
    } catch (const std::exception& e) {
      bytes = control::encode(error_reply("failed", e.what()));
    }
    if (out.size() - out_at + bytes.size() > kMaxPendingOut) {
      gone = true;  // a peer that sends requests and never reads the replies
      return;
    }
    out.append(bytes);
  }
  void close_after_reply(std::uint64_t now) {
    if (closing_since == 0) closing_since = now;
  }
};

ConnectionSet::ConnectionSet() = default;
ConnectionSet::~ConnectionSet() = default;

void ConnectionSet::poll_once(int listen_fd, int wake_fd, bool allow_root, std::mutex& work,
                              const std::function<bool()>& exiting) {
  std::uint64_t now = now_ns();
  std::vector<pollfd>& fds = fds_;
  fds.clear();
  fds.push_back(pollfd{wake_fd, POLLIN, 0});
  fds.push_back(pollfd{now >= listen_paused_until_ ? listen_fd : -1, POLLIN, 0});
  for (const auto& c : connections_) {
    const short events = static_cast<short>((c->closing_since == 0 ? POLLIN : 0) | (c->pending() ? POLLOUT : 0));
    fds.push_back(pollfd{c->fd, events, 0});
  }
  if (::poll(fds.data(), fds.size(), timeout_ms(now)) < 0) return;  // EINTR: the next round
  if (fds[0].revents != 0) {
    std::uint64_t count = 0;
    (void)!::read(wake_fd, &count, sizeof count);
  }
  if (exiting()) return;
  now = now_ns();
  const std::size_t known = connections_.size();
  if ((fds[1].revents & POLLIN) != 0) accept_new(listen_fd, allow_root, now);
  for (std::size_t i = 0; i < known; ++i) {
    Connection& c = *connections_[i];
    const short revents = fds[i + 2].revents;
    if ((revents & (POLLIN | POLLHUP | POLLERR)) != 0 && c.closing_since == 0) {
      read_from(c, work, exiting, now);
      if (exiting()) return;
    }
    if ((revents & POLLNVAL) != 0) c.gone = true;
    if (c.pending()) write_to(c, now);
  }
  expire(now);
  for (auto& c : connections_) {
    if (!c->gone) continue;
    std::lock_guard<std::mutex> lock(work);
    if (exiting()) return;
    let_go(*c);
  }
  std::erase_if(connections_, [](const auto& c) { return c->gone; });
}

void ConnectionSet::accept_new(int listen_fd, bool allow_root, std::uint64_t now) {
  for (std::size_t k = 0; k < kMaxConnections; ++k) {
    const int fd = ::accept4(listen_fd, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd < 0) {
      // Out of descriptors: the listener stays readable; not polled for a while, so that
      // the thread does not spin on it.
      if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
        listen_paused_until_ = now + kListenPauseNs;
      }
      return;
    }
    if (connections_.size() >= 2 * kMaxConnections) {
      ::close(fd);  // refused and busy ones still closing: no reply, no descriptor held
      continue;
    }
    hold_connection_fd(fd);
    auto c = std::make_unique<Connection>(fd, now);
    ucred peer{};
    socklen_t size = sizeof peer;
    const uid_t own = ::geteuid();
    const bool known = ::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &peer, &size) == 0 && size == sizeof peer;
    if (!known || !(peer.uid == own || (peer.uid == 0 && allow_root))) {
      std::string why = "uid " + (known ? std::to_string(peer.uid) : std::string("unknown")) +
                        " may not use the control channel of process " + std::to_string(::getpid()) + " (uid " +
                        std::to_string(own) + "): only its own user may";
      if (known && peer.uid == 0) why += " (root too with RINGTRACE_CONTROL_ROOT=1 or Config::control.allow_root)";
      c->queue(error_reply("refused", why));
      c->close_after_reply(now);
    } else if (connections_.size() >= kMaxConnections) {
      c->queue(error_reply("busy", std::to_string(kMaxConnections) + " connections are open already"));
      c->close_after_reply(now);
    }
    write_to(*c, now);
    connections_.push_back(std::move(c));
  }
}

void ConnectionSet::read_from(Connection& c, std::mutex& work, const std::function<bool()>& exiting,
                              std::uint64_t now) {
  char buffer[16384];
  for (int round = 0; round < kReadsPerRound && c.closing_since == 0 && !c.gone; ++round) {
    const ssize_t n = ::recv(c.fd, buffer, sizeof buffer, MSG_DONTWAIT);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno != EAGAIN && errno != EWOULDBLOCK) c.gone = true;
      break;
    }
    if (n == 0) {  // the peer is done sending: its replies go out, then it goes
      c.close_after_reply(now);
      if (!c.pending()) c.gone = true;
      break;
    }
    const bool well_formed = c.reader.feed(std::span<const char>(buffer, static_cast<std::size_t>(n)));
    while (std::optional<control::Message> request = c.reader.next()) {
      std::lock_guard<std::mutex> lock(work);
      if (exiting()) return;
      c.queue(c.work.handle(*request));
      c.active_at = now_ns();
    }
    if (!well_formed || !c.reader.error().empty()) {
      c.queue(error_reply("malformed", c.reader.error()));
      c.close_after_reply(now);
    }
    if (c.reader.buffered() == 0) {
      c.frame_since = 0;
    } else if (c.frame_since == 0) {
      c.frame_since = now;
    }
    if (c.pending()) write_to(c, now);
  }
}

void ConnectionSet::write_to(Connection& c, std::uint64_t now) {
  while (c.pending()) {
    const ssize_t n = ::send(c.fd, c.out.data() + c.out_at, c.out.size() - c.out_at, MSG_DONTWAIT | MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) {
        if (c.stalled_since == 0) c.stalled_since = now;
        return;
      }
      c.gone = true;  // the peer has gone
      return;
    }
    c.out_at += static_cast<std::size_t>(n);
    c.stalled_since = 0;
  }
  c.out.clear();
  c.out_at = 0;
  if (c.closing_since != 0) c.gone = true;
}

void ConnectionSet::expire(std::uint64_t now) {
  // Whether `limit` has passed since `since` (0: not started; a time after `now`, taken
  // while serving this round, has not).
  const auto passed = [&](std::uint64_t since, std::uint64_t limit) {
    return since != 0 && now > since && now - since >= limit;
  };
  for (auto& p : connections_) {
    Connection& c = *p;
    if (passed(c.closing_since, kClosingNs) || passed(c.stalled_since, kStallTimeoutNs)) c.gone = true;
    if (passed(c.frame_since, kFrameTimeoutNs) && c.closing_since == 0) {
      c.queue(error_reply("malformed", "a frame begun 10 s ago is not whole"));
      c.close_after_reply(now);
      write_to(c, now);
    }
    if (!c.work.owns() && !c.pending() && c.frame_since == 0 && passed(c.active_at, kIdleTimeoutNs)) c.gone = true;
  }
}

int ConnectionSet::timeout_ms(std::uint64_t now) const {
  std::uint64_t next = ~std::uint64_t{0};
  const auto at = [&](std::uint64_t since, std::uint64_t after) {
    if (since != 0) next = std::min(next, since + after);
  };
  if (listen_paused_until_ > now) next = listen_paused_until_;
  for (const auto& c : connections_) {
    at(c->closing_since, kClosingNs);
    at(c->stalled_since, kStallTimeoutNs);
    at(c->frame_since, kFrameTimeoutNs);
    if (!c->work.owns()) at(c->active_at, kIdleTimeoutNs);
  }
  if (next == ~std::uint64_t{0}) return -1;
  return next <= now ? 0 : static_cast<int>(std::min<std::uint64_t>((next - now) / kMs + 1, 60'000));
}

void ConnectionSet::let_go(Connection& c) {
  c.work.release();
  close_connection_fd(c.fd);
  c.fd = -1;
}

void ConnectionSet::close_all() {
  for (auto& c : connections_) let_go(*c);
  connections_.clear();
}

}  // namespace ringtrace::detail
