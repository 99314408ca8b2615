// The program `ringtrace record` runs in record_tests.sh: it links ringtrace and starts no
// session of its own, so the environment's session (RINGTRACE_OUTPUT) records it.
//   record_child STATUS   a few zones, then exits with STATUS
//   record_child _exit    a few zones, then _exit(0) at once
//   record_child killed   a few zones, waits for the drainer to write them into its
//                         temporary, then kills itself with SIGKILL
//   record_child sleep    five calls of sleeper(), a zone that sleeps 20 ms (off the CPU)
//   record_child thread   a zone on the main thread, never named, and one on a thread
//                         named with pthread_setname_np only ("kname")
//   record_child flood    500,000 zones as fast as it can (run with --buffer 64: rings
//                         full all the time)
#include <pthread.h>  // pthread_setname_np
#include <signal.h>   // kill
#include <unistd.h>   // getpid

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
  for (int i = 0; i < 10; ++i) {
    RINGTRACE_ZONE("child_work");
  }
  if (mode == "_exit") ::_exit(0);  // no exit(): the session is not stopped
  if (mode == "killed") {
    // Drainer passes run every few milliseconds: 300 ms is many of them.
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    ::kill(::getpid(), SIGKILL);
  }
  return std::stoi(mode);
}
