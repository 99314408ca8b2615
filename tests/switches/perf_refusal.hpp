// The one rule of every context-switch test for when the machine, not the product, is why
// no switch stream opens: perf_event_open fails with EACCES or EPERM while
// /proc/sys/kernel/perf_event_paranoid is above 2 and the process is not root (or a seccomp
// filter the test itself installs answers so: tests/tool/refuse_perf.cpp). Any other failure
// (EINVAL for a wrong attribute, ENOENT, EMFILE, ...) is the product's: the test fails.
// Used by SWITCH_TEST_REQUIRE_PERF (switch_test_support.hpp), switches_live.cpp, and the
// shell tests through perf_refusal_main.cpp.
#pragma once

#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <fstream>
#include <string>

#include "switch_stream.hpp"

namespace switch_test {

inline int perf_event_paranoid() {
  std::ifstream in("/proc/sys/kernel/perf_event_paranoid");
  int level = 99;
  in >> level;
  return level;
}

enum class PerfAccess {
  open,     // a stream of this thread opened
  refused,  // the machine refuses (the rule above): a reason to skip, saying `why`
  failed,   // anything else: a reason to fail, saying `why`
};
struct PerfCheck {
  PerfAccess access;
  std::string why;
};

inline PerfCheck check_perf_access() {
  const ringtrace::switches::SwitchStream probe =
      ringtrace::switches::SwitchStream::open(static_cast<pid_t>(syscall(SYS_gettid)));
  if (probe.ok()) return {PerfAccess::open, {}};
  const bool denied = probe.error_number() == EACCES || probe.error_number() == EPERM;
  const bool root = geteuid() == 0;
  if (denied && perf_event_paranoid() > 2 && !root) return {PerfAccess::refused, probe.error()};
  return {PerfAccess::failed, probe.error() + (root ? ", as root" : "")};
}

}  // namespace switch_test
