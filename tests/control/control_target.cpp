// A program that links ringtrace and is reached from outside (tests/control): it counts
// its own zones, so that what the files and tables say can be compared with it. It reads
// commands on standard input, one a line, and answers on standard output:
//   (start)            "ready PID SOCKET" (the control socket's path, "-" for none; "?"
//                      with CONTROL_TARGET_UNASKED set: not asked for)
//   run N              N zones "work" on the main thread, zone k carrying seq = k (k
//                      counts from 0 over the run): "ran TOTAL"
//   count              "count N NOW_NS": zones "tick" the pacer has finished, and when
//   within A B         "within FIRST LAST": the first and last tick the pacer began at
//                      or after A (its clock read before the zone) and whose zone had
//                      begun by B (its clock read inside the zone, after the begin); "within
//                      - -" for none. CLOCK_MONOTONIC ns, as the session's start_ns.
//   overlapping A B    "overlapping FIRST LAST": the first and last tick whose zone ended
//                      at or after A (read after it) and began by B (read before it)
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
// Each tick's own clock reads (CLOCK_MONOTONIC ns): before its zone, inside it after its
// begin, and after its end; published by g_ticks (release). 2^20 ticks: 8 minutes at 2000/s.
constexpr std::size_t kTickTimes = std::size_t{1} << 20;
struct TickTimes {
  std::uint64_t before = 0, inside = 0, after = 0;
};
// calloc: pages the kernel zeroes as the pacer first touches them (a program that runs no
// pacer pays nothing for them; new[] would write all 24 MiB at the start).
TickTimes* const g_tick_times = static_cast<TickTimes*>(std::calloc(kTickTimes, sizeof(TickTimes)));
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
    const std::uint64_t seq = g_ticks.load(std::memory_order_relaxed);
    TickTimes& times = g_tick_times[seq % kTickTimes];
    times.before = now_ns();
    {
      RINGTRACE_ZONE("tick", "seq", static_cast<std::int64_t>(seq));
      times.inside = now_ns();
      spin(200);
    }
    times.after = now_ns();
    g_ticks.fetch_add(1, std::memory_order_release);
    next += period;
    std::this_thread::sleep_until(next);
  }
}

// The first and last finished tick for which `in(times)` holds (the ticks are in time
// order, so those are a run): "FIRST LAST", "- -" for none.
template <typename In>
std::string ticks_where(In&& in) {
  const std::uint64_t n = g_ticks.load(std::memory_order_acquire);
  std::int64_t first = -1, last = -1;
  for (std::uint64_t k = n > kTickTimes ? n - kTickTimes : 0; k < n; ++k) {
    if (!in(g_tick_times[k % kTickTimes])) continue;
    if (first < 0) first = static_cast<std::int64_t>(k);
    last = static_cast<std::int64_t>(k);
  }
  return first < 0 ? "- -" : std::to_string(first) + " " + std::to_string(last);
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
  // CONTROL_TARGET_UNASKED: the socket is not asked for (control_socket_path() opens it
  // at once): it opens on its own, as in a program that knows nothing of it; "ready PID ?".
  say("ready " + std::to_string(::getpid()) + " " + (std::getenv("CONTROL_TARGET_UNASKED") ? "?" : socket_text()));
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
    } else if (command == "within" || command == "overlapping") {
      std::uint64_t a = 0, b = 0;
      std::cin >> a >> b;
      const bool within = command == "within";
      say(command + " " + ticks_where([&](const TickTimes& t) {
            return within ? t.before >= a && t.inside <= b : t.after >= a && t.before <= b;
          }));
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
