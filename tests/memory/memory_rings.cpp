// `memory_rings DIR`: records allocations (Config::memory, ringtrace::memory linked) into
// DIR/memory.rtrace with the rings in a file; some before a drainer pass writes them,
// 500 more after it, then SIGKILL before the next pass: those are in the ring file only
// (tests/python/run_tests.sh reads it back with both readers).
// `memory_rings DIR stream`: a whole recording, DIR/whole.rtrace, written again from its
// stream as DIR/stream.rtrace (as a window or a snapshot is written: sizes, no addresses).
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <thread>

#include "ringtrace/exporters/binary_trace.hpp"
#include "ringtrace/ringtrace.hpp"

void* volatile g_sink;

int stream(const std::filesystem::path& dir) {
  ringtrace::Config config;
  config.memory = true;
  config.process_name = "memory_stream";
  ringtrace::Session session(config);
  session.add_exporter(ringtrace::binary_trace_exporter(dir / "whole.rtrace"));
  void* before = std::malloc(777);  // its free: of a block from before the session
  g_sink = before;
  session.start();
  void* kept[100];  // live at the stop (the recording's leaks), freed after it
  {
    RINGTRACE_ZONE("work");
    std::free(before);
    for (int i = 0; i < 300; ++i) {
      void* p = std::malloc(8 + static_cast<std::size_t>(i));
      g_sink = p;
      if (i % 3 != 0) {
        std::free(p);
      } else {
        kept[i / 3] = p;
      }
    }
  }
  session.stop();
  for (void* p : kept) std::free(p);  // not the program's leak (LeakSanitizer)
  auto writer = ringtrace::binary_trace_exporter(dir / "stream.rtrace");
  ringtrace::Exporter* to[] = {writer.get()};
  return ringtrace::replay_file(dir / "whole.rtrace", to).complete ? 0 : 1;
}

int main(int argc, char** argv) {
  if (argc == 3 && std::string(argv[2]) == "stream") return stream(argv[1]);
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
