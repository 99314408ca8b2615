// One of two processes that exchange messages over two FIFOs, each message recorded as a
// flow (RINGTRACE_FLOW_OUT before the write, RINGTRACE_FLOW_IN in a zone opened after the
// read returned: a receive is then never stamped before its send), one step per round
// trip. The test (check_clocks.py) runs them in different time namespaces with a
// CLOCK_REALTIME skew injected, merges their files and checks the offsets measured.
//   flow_peer ping|pong TO_FIFO FROM_FIFO TRACE ROUNDS [--early-receive] [--slow-step K]
// ping writes to TO_FIFO first; pong answers each request. --early-receive (pong): the
// receiving zone opens before the read, and ping waits 2 ms before each request, so each
// request's receive is stamped before its send: flows that contradict every offset.
// --slow-step K (pong): 30 ms of work after its reply in step K, so that pong is the
// straggler of step K.
#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

#include <ringtrace/exporters/binary_trace.hpp>
#include <ringtrace/ringtrace.hpp>

namespace {

constexpr std::uint64_t kRequest = std::uint64_t{1} << 32;  // flow ids: request i, reply i
constexpr std::uint64_t kReply = std::uint64_t{2} << 32;

void write_word(int fd, std::uint64_t v) {
  if (::write(fd, &v, sizeof v) != static_cast<ssize_t>(sizeof v)) {
    std::perror("flow_peer: write");
    std::exit(1);
  }
}

std::uint64_t read_word(int fd) {
  std::uint64_t v = 0;
  std::size_t got = 0;
  while (got < sizeof v) {
    const ssize_t n = ::read(fd, reinterpret_cast<char*>(&v) + got, sizeof v - got);
    if (n <= 0) {
      std::fprintf(stderr, "flow_peer: the other process went away\n");
      std::exit(1);
    }
    got += static_cast<std::size_t>(n);
  }
  return v;
}

int open_fifo(const char* path, int flags) {
  const int fd = ::open(path, flags | O_CLOEXEC);
  if (fd < 0) {
    std::fprintf(stderr, "flow_peer: %s: %s\n", path, std::strerror(errno));
    std::exit(1);
  }
  return fd;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 6) {
    std::fprintf(stderr,
                 "usage: flow_peer ping|pong TO_FIFO FROM_FIFO TRACE ROUNDS [--early-receive] [--slow-step K]\n");
    return 2;
  }
  const bool ping = std::strcmp(argv[1], "ping") == 0;
  const long rounds = std::atol(argv[5]);
  bool early = false;
  long slow_step = -1;
  for (int i = 6; i < argc; ++i) {
    if (std::strcmp(argv[i], "--early-receive") == 0) early = true;
    if (std::strcmp(argv[i], "--slow-step") == 0 && i + 1 < argc) slow_step = std::atol(argv[++i]);
  }
  // Opened in the same order on both sides (the request FIFO first): neither blocks forever.
  int to = -1, from = -1;
  if (ping) {
    to = open_fifo(argv[2], O_WRONLY);
    from = open_fifo(argv[3], O_RDONLY);
  } else {
    from = open_fifo(argv[3], O_RDONLY);
    to = open_fifo(argv[2], O_WRONLY);
  }

  ringtrace::Config config;
  config.overflow = ringtrace::OverflowPolicy::block;
  ringtrace::Session session(config);
  session.add_exporter(ringtrace::binary_trace_exporter(argv[4]));
  session.start();
  ringtrace::set_thread_name(ping ? "ping" : "pong");
  for (long i = 0; i < rounds; ++i) {
    const auto n = static_cast<std::uint64_t>(i);
    if (ping) {
      if (early) std::this_thread::sleep_for(std::chrono::milliseconds(2));
      {
        RINGTRACE_ZONE("send request");
        RINGTRACE_FLOW_OUT(kRequest | n);
        write_word(to, n);
      }
      const std::uint64_t reply = read_word(from);
      {
        RINGTRACE_ZONE("receive reply");
        RINGTRACE_FLOW_IN(kReply | reply);
      }
    } else {
      std::uint64_t request = 0;
      if (early) {
        RINGTRACE_ZONE("receive request");  // stamped before the read: the wrong order
        RINGTRACE_FLOW_IN(kRequest | n);
        request = read_word(from);
      } else {
        request = read_word(from);
        RINGTRACE_ZONE("receive request");
        RINGTRACE_FLOW_IN(kRequest | request);
      }
      {
        RINGTRACE_ZONE("send reply");
        RINGTRACE_FLOW_OUT(kReply | request);
        write_word(to, request);
      }
      if (i == slow_step) {
        RINGTRACE_ZONE("slow work");
        std::this_thread::sleep_for(std::chrono::milliseconds(30));
      }
    }
    session.step();
  }
  session.stop();
  ::close(to);
  ::close(from);
  return 0;
}
