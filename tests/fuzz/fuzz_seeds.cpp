// Writes a few small, valid binary trace files into the folder given: the fuzzer's
// seeds (every frame type, packed records of every kind, texts), and a merged file of
// two of them (format version 2: process frames and sections).
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "ringtrace/exporters/binary_trace.hpp"
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
  return 0;
}
