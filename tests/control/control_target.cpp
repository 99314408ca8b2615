// A program that links ringtrace and is reached from outside (tests/control): it counts
// its own zones, so that what the files and tables say can be compared with it. It reads
// commands on standard input, one a line, and answers on standard output:
//   (start)            "ready PID SOCKET" (the control socket's path, "-" for none)
//   run N              N zones "work" on the main thread, zone k carrying seq = k (k
//                      counts from 0 over the run): "ran TOTAL"
//   count              "count N NOW_NS": zones "tick" the pacer has finished, and when
//   socket             "socket PATH" ("-" for none)
//   start-session OPT  a session of the program's own with Config::control as OPT says
//                      (off | default | an absolute path), no exporter: "started PATH"
//   stop-session       "stopped PATH"
//   fork               a child that says "child-socket PATH" (it has none), then starts a
//                      session and says "child-session PATH", then exits: "forked STATUS"
//   exec               this program again in the same process (mode idle): "ready ..."
//   quit               returns from main (the exit hooks run); "exit" calls _exit(0)
// Modes (argv[1]):
//   idle                      no session, no pacer
//   paced RATE                a thread ("pacer") records zones "tick" (seq = its count)
//                             RATE times a second, by absolute deadlines
//   recorder KEEP_MS RATE DIR as paced, inside the program's own session with a flight
//                             recorder keeping KEEP_MS, whose window exporter writes
//                             DIR/own-INDEX-REASON.rtrace
//   binary RATE FILE          as paced, inside the program's own session writing only FILE
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <string>
#include <thread>

#include "control_channel.hpp"  // white box: the socket's path
#include "ringtrace/exporters/binary_trace.hpp"
#include "ringtrace/ringtrace.hpp"

namespace {

std::atomic<std::uint64_t> g_ticks{0};
std::atomic<bool> g_stop{false};
std::uint64_t g_work = 0;

std::uint64_t now_ns() {
  return static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
          .count());
}

// A little work inside each zone, so that its self time is not 0.
void spin(int n) {
  volatile int sink = 0;
  for (int i = 0; i < n; ++i) sink = sink + i;
}

void pacer(double rate) {
  ringtrace::set_thread_name("pacer");
  const auto period = std::chrono::nanoseconds(static_cast<std::int64_t>(1e9 / rate));
  auto next = std::chrono::steady_clock::now();
  while (!g_stop.load(std::memory_order_relaxed)) {
    {
      RINGTRACE_ZONE("tick", "seq", static_cast<std::int64_t>(g_ticks.load(std::memory_order_relaxed)));
      spin(200);
    }
    g_ticks.fetch_add(1, std::memory_order_release);
    next += period;
    std::this_thread::sleep_until(next);
  }
}

std::string socket_text() {
  const std::string path = ringtrace::detail::control_socket_path();
  return path.empty() ? "-" : path;
}

void say(const std::string& line) {
  std::cout << line << std::endl;  // flushed: the test waits for it
}

ringtrace::Config control_config(const std::string& option) {
  ringtrace::Config config;
  if (option == "off") config.control.enabled = false;
  if (!option.empty() && option[0] == '/') config.control.path = option;
  return config;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "idle";
  std::unique_ptr<ringtrace::Session> own;
  std::thread paced;
  double rate = 0;
  if (mode == "paced" && argc > 2) rate = std::atof(argv[2]);
  if (mode == "recorder" && argc > 4) {
    ringtrace::Config config;
    config.flight_recorder.keep = std::chrono::milliseconds(std::atoi(argv[2]));
    rate = std::atof(argv[3]);
    const std::string dir = argv[4];
    own = std::make_unique<ringtrace::Session>(config);
    own->add_window_exporter([dir](const ringtrace::WindowInfo& w) {
      return ringtrace::binary_trace_exporter(dir + "/own-" + std::to_string(w.index) + "-" + w.reason + ".rtrace");
    });
    own->start();
  }
  if (mode == "binary" && argc > 3) {
    rate = std::atof(argv[2]);
    own = std::make_unique<ringtrace::Session>();
    own->add_exporter(ringtrace::binary_trace_exporter(argv[3]));
    own->start();
  }
  if (rate > 0) paced = std::thread(pacer, rate);
  say("ready " + std::to_string(::getpid()) + " " + socket_text());
  std::string command;
  while (std::cin >> command) {
    if (command == "run") {
      std::uint64_t n = 0;
      std::cin >> n;
      for (std::uint64_t i = 0; i < n; ++i) {
        RINGTRACE_ZONE("work", "seq", static_cast<std::int64_t>(g_work));
        spin(50);
        ++g_work;
      }
      say("ran " + std::to_string(g_work));
    } else if (command == "count") {
      say("count " + std::to_string(g_ticks.load(std::memory_order_acquire)) + " " + std::to_string(now_ns()));
    } else if (command == "socket") {
      say("socket " + socket_text());
    } else if (command == "start-session") {
      std::string option;
      std::cin >> option;
      own = std::make_unique<ringtrace::Session>(control_config(option));
      own->start();
      say("started " + socket_text());
    } else if (command == "stop-session") {
      if (own) own->stop();
      say("stopped " + socket_text());
    } else if (command == "fork") {
      std::fflush(nullptr);
      const pid_t child = ::fork();
      if (child == 0) {
        say("child-socket " + socket_text());
        ringtrace::Session session;
        session.start();
        say("child-session " + socket_text());
        session.stop();
        std::exit(0);  // its exit hook removes its own socket, never its parent's
      }
      int status = 0;
      ::waitpid(child, &status, 0);
      say("forked " + std::to_string(status));
    } else if (command == "exec") {
      g_stop = true;
      if (paced.joinable()) paced.join();
      std::fflush(nullptr);
      ::execl("/proc/self/exe", argv[0], "idle", static_cast<char*>(nullptr));
      say("exec failed");
    } else if (command == "quit") {
      break;
    } else if (command == "exit") {
      std::fflush(nullptr);
      ::_exit(0);
    }
  }
  g_stop = true;
  if (paced.joinable()) paced.join();
  if (own) own->stop();
  return 0;
}
