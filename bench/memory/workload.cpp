// The allocation workload of issue 33, timed by itself (no Google Benchmark: the same
// source is built plain, with ringtrace::memory linked, and run under heaptrack and
// `ringtrace record --memory`; compare.sh runs them alternately and prints the table).
//
// Phase 1: mixed-size malloc/free pairs, 64 blocks live (a FIFO), 16 to 1039 bytes.
// Phase 2: 200,000 inserts into a std::map<int, std::string> (each a node and a string
// of 40 bytes: two allocations), then the map's destruction.
// Prints: "pairs NS_PER_PAIR map NS_PER_INSERT".
//
// Built with RINGTRACE_WORKLOAD_SESSION: starts a ringtrace session with Config::memory
// (binary file to $RINGTRACE_WORKLOAD_OUT, /dev/null's directory not allowed: a temp
// file) when RINGTRACE_WORKLOAD_MEMORY=1, else one without memory.
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>

#ifdef RINGTRACE_WORKLOAD_SESSION
#include <memory>

#include "ringtrace/exporters/binary_trace.hpp"
#include "ringtrace/ringtrace.hpp"
#endif

namespace {

void* volatile g_sink;

double pairs(std::uint64_t n) {
  void* live[64] = {};
  std::uint32_t x = 12345;
  const auto start = std::chrono::steady_clock::now();
  for (std::uint64_t i = 0; i < n; ++i) {
    x = x * 1664525u + 1013904223u;
    const std::size_t slot = i & 63;
    std::free(live[slot]);
    live[slot] = std::malloc(16 + (x >> 8) % 1024);
    g_sink = live[slot];
  }
  const auto end = std::chrono::steady_clock::now();
  for (void* p : live) std::free(p);
  return std::chrono::duration<double, std::nano>(end - start).count() / static_cast<double>(n);
}

double map_inserts(int n) {
  const auto start = std::chrono::steady_clock::now();
  {
    std::map<int, std::string> m;
    for (int i = 0; i < n; ++i) m.emplace(i * 7919 % n, std::string(40, static_cast<char>('a' + i % 26)));
    g_sink = &m;
  }
  const auto end = std::chrono::steady_clock::now();
  return std::chrono::duration<double, std::nano>(end - start).count() / n;
}

}  // namespace

int main(int argc, char** argv) {
  const std::uint64_t n = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 5000000;
#ifdef RINGTRACE_WORKLOAD_SESSION
  ringtrace::Config config;
  const char* memory = std::getenv("RINGTRACE_WORKLOAD_MEMORY");
  config.memory = memory != nullptr && memory[0] == '1';
  config.overflow = ringtrace::OverflowPolicy::block;  // every allocation recorded
  const char* out = std::getenv("RINGTRACE_WORKLOAD_OUT");
  ringtrace::Session session(config);
  if (out != nullptr) session.add_exporter(ringtrace::binary_trace_exporter(out));
  session.start();
#endif
  pairs(n / 10);  // warm: the allocator's caches, the thread's ring
  const double pair_ns = pairs(n);
  const double map_ns = map_inserts(200000);
#ifdef RINGTRACE_WORKLOAD_SESSION
  session.stop();
  const ringtrace::SessionStats stats = session.stats();
  std::fprintf(stderr, "recorded %llu events, dropped %llu\n", static_cast<unsigned long long>(stats.recorded),
               static_cast<unsigned long long>(stats.dropped));
#endif
  std::printf("pairs %.1f map %.1f\n", pair_ns, map_ns);
  return 0;
}
