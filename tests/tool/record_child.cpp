// The program `ringtrace record` runs in record_tests.sh: it links ringtrace and starts no
// session of its own, so the environment's session (RINGTRACE_OUTPUT) records it.
//   record_child STATUS   a few zones, then exits with STATUS
//   record_child _exit    a few zones, then _exit(0) at once
//   record_child killed   a few zones, waits for the drainer to write them into its
//                         temporary, then kills itself with SIGKILL
#include <signal.h>  // kill
#include <unistd.h>  // getpid

#include <chrono>
#include <string>
#include <thread>

#include "ringtrace/ringtrace.hpp"

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "0";
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
