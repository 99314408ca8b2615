// Compiled with RINGTRACE_DISABLED=1 (see CMakeLists.txt): every macro is nothing.
#include "ringtrace/ringtrace.hpp"

#if !RINGTRACE_DISABLED
#error "this file must be compiled with RINGTRACE_DISABLED=1"
#endif

int record_with_macros_compiled_out(int n) {
  int evaluated = 0;
  for (int i = 0; i < n; ++i) {
    RINGTRACE_ZONE("compiled out");
    RINGTRACE_FUNCTION();
    RINGTRACE_INSTANT("compiled out");
    RINGTRACE_COUNTER("compiled out", ++evaluated);  // arguments are not evaluated
    RINGTRACE_REGION("compiled out", ++evaluated);
    RINGTRACE_ZONE_FLOPS(++evaluated);
  }
  return evaluated;
}
