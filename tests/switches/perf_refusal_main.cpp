// perf_refusal: the rule of perf_refusal.hpp for the shell tests. Exits 0 when this
// process opens a context-switch stream; 77, saying why, where the machine refuses it;
// 1, saying why, on any other failure.
#include <cstdio>

#include "perf_refusal.hpp"

int main() {
  const switch_test::PerfCheck check = switch_test::check_perf_access();
  if (check.access == switch_test::PerfAccess::open) return 0;
  std::printf("perf_event_open %s: %s\n", check.access == switch_test::PerfAccess::refused ? "refused" : "failed",
              check.why.c_str());
  return check.access == switch_test::PerfAccess::refused ? 77 : 1;
}
