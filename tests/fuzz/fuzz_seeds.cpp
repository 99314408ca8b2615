// Writes a few small, valid binary trace files into the folder given: the fuzzer's
// seeds (every frame type, packed records of every kind, texts), and a merged file of
// two of them (format version 2: process frames and sections).
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "ringtrace/exporters/binary_trace.hpp"
#include "ringtrace/files.hpp"
#include "ringtrace/ringtrace.hpp"

int main(int argc, char** argv) {
  if (argc != 2) return 2;
  const std::filesystem::path dir = argv[1];
  for (int seed = 0; seed < 3; ++seed) {
    ringtrace::Config config;
    config.buffer_records = 64;
    config.overflow = seed == 2 ? ringtrace::OverflowPolicy::drop : ringtrace::OverflowPolicy::block;
    ringtrace::Session session(config);
    session.add_exporter(ringtrace::binary_trace_exporter(dir / ("seed" + std::to_string(seed) + ".rtrace")));
    session.start();
    std::thread other([seed] {
      ringtrace::set_thread_name("other");
      for (int i = 0; i < 20 * (seed + 1); ++i) {
        RINGTRACE_ZONE_IN("cat", "z");
        RINGTRACE_ZONE_VALUE("v", i * 0.5);
        RINGTRACE_FLOW_IN(i);
      }
    });
    for (int i = 0; i < 20 * (seed + 1); ++i) {
      RINGTRACE_ZONE("a");
      RINGTRACE_ZONE_VALUE("i", i);
      RINGTRACE_ZONE_TEXT("t", "some \"text\"\n", 12);
      RINGTRACE_REGION("r", i);
      RINGTRACE_COUNTER("c", i);
      RINGTRACE_INSTANT("x");
      RINGTRACE_FLOW_OUT(i);
      RINGTRACE_ASYNC_BEGIN("s", i);
      RINGTRACE_ASYNC_END("s", i);
    }
    other.join();
    session.stop();
  }
  const std::vector<std::filesystem::path> two = {dir / "seed0.rtrace", dir / "seed1.rtrace"};
  ringtrace::merge_files(two, dir / "seed_merged.rtrace");
  // A process killed with its rings in a file: the cut trace, then its ring file and the
  // harness's trailer (see fuzz_trace_reader.cpp).
  const std::filesystem::path killed = dir / "killed.rtrace";
  const pid_t child = ::fork();
  if (child == 0) {
    ringtrace::Config config;
    config.buffer_records = 256;  // holds every record after the first pass: no wake-up
    config.high_water = 1.0;
    config.drain_interval = std::chrono::milliseconds(20);
    ringtrace::Session session(config);
    ringtrace::BinaryTraceOptions options;
    options.rings_in_file = true;
    session.add_exporter(ringtrace::binary_trace_exporter(killed, options));
    session.start();
    for (int i = 0; i < 30; ++i) {
      {
        RINGTRACE_ZONE("k");
        RINGTRACE_ZONE_VALUE("i", i);
        RINGTRACE_ZONE_TEXT("t", "text", 4);
      }
      if (i == 0) std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    ::kill(::getpid(), SIGKILL);
  }
  int status = 0;
  ::waitpid(child, &status, 0);
  const std::vector<std::filesystem::path> partials = ringtrace::partial_files(killed);  // its temporary
  if (partials.size() != 1) return 1;
  std::ifstream trace(partials[0], std::ios::binary), ring(killed.string() + ".rings", std::ios::binary);
  std::ostringstream bytes, ring_bytes;
  bytes << trace.rdbuf();
  ring_bytes << ring.rdbuf();
  const std::string r = ring_bytes.str();
  std::ofstream seed(dir / "seed_killed_rings.rtrace", std::ios::binary);
  seed << bytes.str() << r;
  seed.write("\x89RINGS\0\0", 8);
  const auto n = static_cast<std::uint32_t>(r.size());
  seed.write(reinterpret_cast<const char*>(&n), 4);
  std::filesystem::remove(partials[0]);
  std::filesystem::remove(killed.string() + ".rings");
  return r.empty() ? 1 : 0;
}
