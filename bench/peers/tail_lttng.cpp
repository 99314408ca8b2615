// bench_tail's loop on LTTng-UST (issue 36): each zone is a zone_entry and a zone_exit
// tracepoint of one provider (tail_lttng_tp.h), timed with the TSC around it, 5 M zones
// per thread. Usage: tail_lttng THREADS LABEL. Run by bench/peers/run_tail_peers.sh,
// inside an lttng session in discard mode (the events lost are the session's
// "Discarded events", read by the script), or with no session (tracepoints disabled:
// the floor). Build: g++ -O2 -std=c++20 -I bench/peers tail_lttng.cpp -llttng-ust -ldl
#define LTTNG_UST_TRACEPOINT_CREATE_PROBES
#define LTTNG_UST_TRACEPOINT_DEFINE
#include "tail_lttng_tp.h"

#include <cstdlib>

#include "tail_common.hpp"

namespace {
const char kSite[] = "z";
}

int main(int argc, char** argv) {
  const int threads = argc > 1 ? std::atoi(argv[1]) : 1;
  const char* label = argc > 2 ? argv[2] : "lttng";
  peers::run(
      label, threads, [](int) {},
      [](int) {
        lttng_ust_tracepoint(ringtrace_peer, zone_entry, kSite);
        lttng_ust_tracepoint(ringtrace_peer, zone_exit);
      },
      [](int) {});
}
