// write_large_trace OUT.rtrace BYTES [THREADS]: a long recording for the streaming bench
// (streaming_bench.sh): THREADS threads (default 2) record nested zones as fast as they
// can (a request of a parse, a compute of four kernels, an allocation-free loop; every
// 1,000 requests a counter sample and a text value) into the binary trace file until it
// holds BYTES bytes, under the block policy (nothing dropped). Prints the events
// recorded and the file's size.
#include <sys/stat.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>
#include <thread>
#include <vector>

#include "ringtrace/exporters/binary_trace.hpp"
#include "ringtrace/files.hpp"
#include "ringtrace/ringtrace.hpp"

namespace {

std::atomic<bool> g_full{false};
volatile std::uint64_t g_sink = 0;

void work(int index) {
  char name[32];
  std::snprintf(name, sizeof name, "recorder-%d", index);
  ringtrace::set_thread_name(name);
  for (std::uint64_t i = 0; !g_full.load(std::memory_order_relaxed); ++i) {
    RINGTRACE_ZONE("request");
    {
      RINGTRACE_ZONE("parse");
      g_sink = g_sink + i;
    }
    {
      RINGTRACE_ZONE("compute");
      for (int k = 0; k < 4; ++k) {
        RINGTRACE_ZONE("kernel");
        g_sink = g_sink + static_cast<std::uint64_t>(k);
      }
    }
    if (i % 1000 == 0) {
      RINGTRACE_COUNTER("requests", static_cast<std::int64_t>(i));
      char shape[32];
      const int n = std::snprintf(shape, sizeof shape, "[%d, 128]", static_cast<int>(i % 64));
      RINGTRACE_ZONE_TEXT("shape", std::string_view(shape, static_cast<std::size_t>(n)));
    }
  }
}

// The temporary the binary exporter is writing (<path>.partial.XXXXXXXX), its size.
std::uint64_t written(const std::filesystem::path& out) {
  std::uint64_t bytes = 0;
  for (const auto& p : ringtrace::partial_files(out)) {
    struct stat st {};
    if (::stat(p.c_str(), &st) == 0) bytes = std::max<std::uint64_t>(bytes, static_cast<std::uint64_t>(st.st_size));
  }
  return bytes;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: write_large_trace OUT.rtrace BYTES [THREADS]\n");
    return 2;
  }
  const std::filesystem::path out = argv[1];
  const std::uint64_t bytes = std::strtoull(argv[2], nullptr, 10);
  const int threads = argc > 3 ? std::atoi(argv[3]) : 2;
  ringtrace::Config config;
  config.overflow = ringtrace::OverflowPolicy::block;
  ringtrace::Session session(config);
  session.add_exporter(ringtrace::binary_trace_exporter(out));
  session.start();
  std::vector<std::thread> workers;
  for (int i = 0; i < threads; ++i) workers.emplace_back(work, i);
  while (written(out) < bytes) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  g_full = true;
  for (std::thread& t : workers) t.join();
  session.stop();
  const ringtrace::SessionStats stats = session.stats();
  struct stat st {};
  ::stat(out.c_str(), &st);
  std::printf("%llu events recorded, %llu dropped, %llu bytes\n", static_cast<unsigned long long>(stats.recorded),
              static_cast<unsigned long long>(stats.dropped), static_cast<unsigned long long>(st.st_size));
  return 0;
}
