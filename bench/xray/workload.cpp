// The workload of bench/xray/compare.sh: `threads` threads each make `calls` calls of a
// small function that calls another (two nested zones per iteration). Built twice:
// with XRay instrumentation (every function entry and exit logged, basic mode), and
// with RINGTRACE_ZONE in the same two functions, recording a binary trace file.
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

#ifdef WITH_RINGTRACE
#include "ringtrace/exporters/binary_trace.hpp"
#include "ringtrace/ringtrace.hpp"
#define ZONE(name) RINGTRACE_ZONE(name)
#else
#define ZONE(name)
#endif

static volatile unsigned g_sink = 0;

[[gnu::noinline]] void inner(unsigned i) {
  ZONE("inner");
  g_sink = g_sink + i;
}

[[gnu::noinline]] void outer(unsigned i) {
  ZONE("outer");
  inner(i);
  g_sink = g_sink ^ i;
}

[[gnu::noinline]] void work(unsigned calls) {
  for (unsigned i = 0; i < calls; ++i) outer(i);
}

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: workload THREADS CALLS [trace.rtrace]\n");
    return 2;
  }
  const unsigned threads = static_cast<unsigned>(std::atoi(argv[1]));
  const unsigned calls = static_cast<unsigned>(std::atoi(argv[2]));
#ifdef WITH_RINGTRACE
  ringtrace::Config config;
  config.overflow = ringtrace::OverflowPolicy::block;  // every call kept, as XRay's basic mode does
  ringtrace::Session session(config);
  session.add_exporter(ringtrace::binary_trace_exporter(argc > 3 ? argv[3] : "trace.rtrace"));
  session.start();
#endif
  std::vector<std::thread> pool;
  for (unsigned t = 0; t < threads; ++t) pool.emplace_back(work, calls);
  for (auto& t : pool) t.join();
#ifdef WITH_RINGTRACE
  session.stop();
  std::printf("ringtrace: %llu events recorded, %llu dropped\n",
              static_cast<unsigned long long>(session.stats().recorded),
              static_cast<unsigned long long>(session.stats().dropped));
#endif
  return 0;
}
