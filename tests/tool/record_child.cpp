// The program `ringtrace record` runs in record_tests.sh: it links ringtrace and starts no
// session of its own, so the environment's session (RINGTRACE_OUTPUT) records it.
//   record_child STATUS   a few zones, then exits with STATUS
//   record_child _exit    a few zones, then _exit(0) at once (ringtrace's _exit stops the
//                         session first)
//   record_child exec     a few zones ("before_exec"), then execs itself as `record_child 7`
//   record_child early    SIGKILL right after its first zone: before the drainer's first write
//   record_child killed   a few zones, waits for the drainer to write them into its
//                         temporary, then kills itself with SIGKILL
//   record_child sleep    five calls of sleeper(), a zone that sleeps 20 ms (off the CPU)
//   record_child thread   a zone on the main thread, never named, and one on a thread
//                         named with pthread_setname_np only ("kname")
//   record_child flood    500,000 zones as fast as it can (run with --buffer 64: rings
//                         full all the time)
#include <pthread.h>  // pthread_setname_np
#include <signal.h>   // kill
#include <unistd.h>   // getpid, execv, _exit

#include <chrono>
#include <string>
#include <thread>

#include "ringtrace/ringtrace.hpp"

// A zone named "sleeper" whose wall time is a sleep: off the CPU, with context switches.
void sleeper() {
  RINGTRACE_FUNCTION();
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
}

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "0";
  if (mode == "flood") {
    for (int i = 0; i < 500000; ++i) {
      RINGTRACE_ZONE("flood");
    }
    return 0;
  }
  if (mode == "sleep") {
    for (int i = 0; i < 5; ++i) sleeper();
    return 0;
  }
  if (mode == "thread") {
    { RINGTRACE_ZONE("main_work"); }  // the main thread, never named: the program's name
    std::thread named([] {
      pthread_setname_np(pthread_self(), "kname");
      RINGTRACE_ZONE("named_work");
    });
    named.join();
    return 0;
  }
  if (mode == "early") {
    { RINGTRACE_ZONE("child_work"); }
    ::kill(::getpid(), SIGKILL);
  }
  if (mode == "exec") {
    for (int i = 0; i < 3; ++i) {
      RINGTRACE_ZONE("before_exec");
    }
    char seven[] = "7";
    char* const again[] = {argv[0], seven, nullptr};
    ::execv("/proc/self/exe", again);
    return 99;
  }
  for (int i = 0; i < 10; ++i) {
    RINGTRACE_ZONE("child_work");
  }
  if (mode == "_exit") ::_exit(0);  // no exit(): ringtrace's _exit stops the session
  if (mode == "killed") {
    // Drainer passes run every few milliseconds: 300 ms is many of them.
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    ::kill(::getpid(), SIGKILL);
  }
  return std::stoi(mode);
}
