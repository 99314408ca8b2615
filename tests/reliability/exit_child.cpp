// A program that ends its run in one of the ways real programs end, while a session is
// running: test_exit_paths runs it and loads the files it leaves.
//   exit_child <mode> <dir>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>

#include "ringtrace/exporters/chrome_trace.hpp"
#include "ringtrace/exporters/folded_stacks.hpp"
#include "ringtrace/ringtrace.hpp"

namespace {

std::filesystem::path g_dir;
ringtrace::Session g_global;  // mode "global": never stopped by the program

void add_exporters(ringtrace::Session& session) {
  session.add_exporter(
      ringtrace::folded_stacks_exporter(g_dir / "trace.folded", {.value = ringtrace::FoldedValue::calls}));
  session.add_exporter(ringtrace::chrome_trace_exporter(g_dir / "trace.json"));
}

void record_work() {
  for (int i = 0; i < 100; ++i) {
    RINGTRACE_ZONE("work");
  }
}

ringtrace::Session& function_static() {
  static ringtrace::Session session;
  return session;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) return 2;
  alarm(30);  // a hang is a failure
  const std::string mode = argv[1];
  g_dir = argv[2];
  if (mode == "return_main") {
    ringtrace::Session session;
    add_exporters(session);
    session.start();
    record_work();
    return 0;  // the destructor stops it
  }
  if (mode == "global" || mode == "function_static" || mode == "heap") {
    ringtrace::Session& session = mode == "global"            ? g_global
                                  : mode == "function_static" ? function_static()
                                                              : *new ringtrace::Session();
    add_exporters(session);
    session.start();
    record_work();
    return 0;  // never stopped, the heap one never destroyed
  }
  ringtrace::Session session;
  add_exporters(session);
  if (mode == "sigterm" || mode == "sigint") ringtrace::flush_on_signals({SIGTERM, SIGINT});
  session.start();
  record_work();
  if (mode == "exit_worker") {
    std::thread([] { std::exit(0); }).detach();
    for (;;) {
      RINGTRACE_ZONE("spin");  // main keeps recording while another thread exits
    }
  }
  if (mode == "quick_exit") std::quick_exit(0);
  if (mode == "exit") std::exit(0);
  if (mode == "sigterm" || mode == "sigint") {
    kill(getpid(), mode == "sigterm" ? SIGTERM : SIGINT);
    for (;;) pause();  // the watcher thread stops the session and ends the process
  }
  if (mode == "abort") std::abort();
  return 3;
}
