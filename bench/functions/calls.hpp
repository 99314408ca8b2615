// The calls bench_functions.cpp times: a small function, and the recursive fib of the
// comparisons with uftrace and XRay (bench/functions/compare.sh), plain, with a
// RINGTRACE_ZONE, and instrumented (functions/instrumented.cpp).
#pragma once

namespace bench_functions {

inline volatile int g_sink = 0;

int plain(int v);         // no instrumentation
int zoned(int v);         // a RINGTRACE_ZONE at its top
int instrumented(int v);  // -finstrument-functions
int plain_fib(int n);
int zoned_fib(int n);
int instrumented_fib(int n);

}  // namespace bench_functions
