// `memory_rings DIR`: records allocations (Config::memory, ringtrace::memory linked) into
// DIR/memory.rtrace with the rings in a file; some before a drainer pass writes them,
// 500 more after it, then SIGKILL before the next pass: those are in the ring file only
// (tests/python/run_tests.sh reads it back with both readers).
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <thread>

#include "ringtrace/exporters/binary_trace.hpp"
#include "ringtrace/ringtrace.hpp"

void* volatile g_sink;

int main(int argc, char** argv) {
  if (argc != 2) return 2;
  ringtrace::Config config;
  config.memory = true;
  config.process_name = "memory_rings";
  config.drain_interval = std::chrono::milliseconds(50);
  ringtrace::Session session(config);
  ringtrace::BinaryTraceOptions options;
  options.rings_in_file = true;
  session.add_exporter(ringtrace::binary_trace_exporter(std::filesystem::path(argv[1]) / "memory.rtrace", options));
  session.start();
  void* before = nullptr;
  {
    RINGTRACE_ZONE("before the pass");
    before = std::malloc(4096);
    g_sink = before;
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // passes write it
  {
    RINGTRACE_ZONE("after the pass");
    std::free(before);
    for (int i = 0; i < 500; ++i) {
      void* p = std::malloc(8 + static_cast<std::size_t>(i));
      g_sink = p;
      if (i % 2 == 0) std::free(p);
    }
  }
  ::kill(::getpid(), SIGKILL);
  return 1;
}
