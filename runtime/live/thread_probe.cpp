#include "thread_probe.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <ctime>

namespace ringtrace::detail {

char thread_state(pid_t tid) {
  char path[64];
  std::snprintf(path, sizeof(path), "/proc/self/task/%d/stat", static_cast<int>(tid));
  const int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  char text[512];
  const ssize_t n = ::read(fd, text, sizeof(text) - 1);
  ::close(fd);
  if (n <= 0) return 0;
  text[n] = '\0';
  // "tid (name) S ...": the name may hold anything, ')' too; the state follows the last.
  const char* close = std::strrchr(text, ')');
  if (close == nullptr || close + 2 >= text + n || close[1] != ' ') return 0;
  return close[2];
}

bool thread_cpu_ns(pid_t tid, std::uint64_t& ns) {
  // The kernel's clock id of a thread's CPU time (glibc's pthread_getcpuclockid builds the
  // same from the thread's id: CPUCLOCK_PERTHREAD_MASK 4 | CPUCLOCK_SCHED 2).
  const clockid_t clock = static_cast<clockid_t>((~static_cast<unsigned>(tid) << 3) | 6u);
  timespec t{};
  if (::clock_gettime(clock, &t) != 0) return false;
  ns = static_cast<std::uint64_t>(t.tv_sec) * 1'000'000'000u + static_cast<std::uint64_t>(t.tv_nsec);
  return true;
}

std::uint64_t ThreadProbe::look(pid_t tid, std::uint64_t now_ns) {
  std::uint64_t proven = 0;
  std::uint64_t cpu = 0;
  const bool have_cpu = thread_cpu_ns(tid, cpu);
  if (have_cpu && looked_ && cpu >= cpu_ns_ + kMinRunNs) proven = look_ns_;
  if (thread_state(tid) == 'S') proven = now_ns;
  looked_ = have_cpu;
  look_ns_ = now_ns;
  cpu_ns_ = cpu;
  return proven;
}

}  // namespace ringtrace::detail
