// The workload of bench/functions/compare.sh: the recursive fib of issue 23's figures,
// timed by the program itself (fib(N) REPEAT times, in thread CPU time; the median per call is printed), built
// plain, with a RINGTRACE_ZONE in fib (-DZONED), with -finstrument-functions and
// ringtrace::functions (-DRINGTRACE_HOOKS), or for uftrace (-pg, -finstrument-functions)
// and XRay (-fxray-instrument) with nothing of ringtrace. Only fib is instrumented: the rest
// says no_instrument_function.
// -DXRAY_HANDLER (with -fxray-instrument): XRay's sleds patched at start to a handler that
// does nothing (the floor any recorder on XRay's sleds starts from), or left unpatched
// (FIB_NO_SESSION=1: the cost of the sleds alone).
//   fib [N [REPEAT [trace.rtrace]]]     FIB_NO_SESSION=1: a ringtrace build without a session
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

#if defined(ZONED) || defined(RINGTRACE_HOOKS)
#include "ringtrace/exporters/binary_trace.hpp"
#include "ringtrace/ringtrace.hpp"
#define WITH_SESSION 1
#endif

#ifdef XRAY_HANDLER
#include <xray/xray_interface.h>
#define QUIET __attribute__((no_instrument_function, xray_never_instrument))
#else
#define QUIET __attribute__((no_instrument_function))
#endif

volatile int g_sink = 0;

// Neither recursive call in a tail position (clang would make one a loop), no inlining.
[[gnu::noinline]] int fib(int n) {
#ifdef ZONED
  RINGTRACE_ZONE("fib");
#endif
  if (n < 2) return n;
  const int a = fib(n - 1);
  g_sink = fib(n - 2);
  return a + g_sink;
}

#ifdef XRAY_HANDLER
QUIET static void xray_nothing(std::int32_t, XRayEntryType) {}
#endif

QUIET static double calls_of(int n) { return n < 2 ? 1 : 1 + calls_of(n - 1) + calls_of(n - 2); }

// The thread's CPU time, as Google Benchmark's CPU time: on a loaded machine the time the
// thread waits for a core is not the recorder's cost. What a recorder does on other
// threads (ringtrace's drainer, uftrace's writer) is not counted, the same for each.
QUIET static std::uint64_t now_ns() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<std::uint64_t>(t.tv_sec) * 1000000000u + static_cast<std::uint64_t>(t.tv_nsec);
}

QUIET int main(int argc, char** argv) {
  const int n = argc > 1 ? std::atoi(argv[1]) : 25;
  const int repeat = argc > 2 ? std::atoi(argv[2]) : 15;
#ifdef WITH_SESSION
  ringtrace::Config config;
  config.buffer_records = std::size_t{1} << 21;  // a repetition's records fit: nothing waits, nothing drops
  config.overflow = ringtrace::OverflowPolicy::block;
  ringtrace::Session session(config);
  const bool record = std::getenv("FIB_NO_SESSION") == nullptr;
  if (record) {
    session.add_exporter(ringtrace::binary_trace_exporter(argc > 3 ? argv[3] : "/dev/shm/fib.rtrace"));
    session.start();
  }
#endif
#ifdef XRAY_HANDLER
  if (std::getenv("FIB_NO_SESSION") == nullptr) {
    __xray_set_handler(xray_nothing);
    if (__xray_patch() != SUCCESS) {
      std::fprintf(stderr, "fib: __xray_patch failed\n");
      return 1;
    }
  }
#endif
  std::vector<double> per_call;
  const double calls = calls_of(n);
  for (int r = 0; r < repeat; ++r) {
    std::this_thread::sleep_for(std::chrono::milliseconds(30));  // the drainer empties the ring
    const std::uint64_t t0 = now_ns();
    g_sink = fib(n);
    per_call.push_back(static_cast<double>(now_ns() - t0) / calls);
  }
  std::sort(per_call.begin(), per_call.end());
#ifdef WITH_SESSION
  if (record) {
    session.stop();
    if (session.stats().dropped != 0)
      std::fprintf(stderr, "fib: %llu dropped\n", static_cast<unsigned long long>(session.stats().dropped));
  }
#endif
  std::printf("%.3f %.3f\n", per_call[per_call.size() / 2], per_call.front());  // median, best ns per call
  return 0;
}
