// Opening a stream: refusals (injected, a seccomp filter), bad arguments, an unprivileged
// user. Refusals must leave a stream that says why and does nothing, never a crash.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <grp.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <dirent.h>
#include <cerrno>
#include <cstddef>
#include <cstring>
#include <string>
#include <vector>

#include "switch_test_support.hpp"

namespace {

using ringtrace::switches::inject_open_failure;
using switch_test::Switch;
using switch_test::SwitchStream;
using switch_test::this_tid;

std::size_t open_descriptors() {
  std::size_t n = 0;
  if (DIR* dir = opendir("/proc/self/fd")) {
    while (readdir(dir) != nullptr) ++n;
    closedir(dir);
  }
  return n;
}

struct ChildResult {
  int exit_code = -1;
  int signal = 0;
  std::string message;
};

// Runs `body` in a fork child; its return value is the exit code, what it writes to the
// given descriptor comes back as `message`.
template <class Body>
ChildResult in_child(Body body) {
  int pipe_fds[2];
  if (pipe(pipe_fds) != 0) return {};
  const pid_t pid = fork();
  if (pid == 0) {
    ::close(pipe_fds[0]);
    const int code = body(pipe_fds[1]);
    _exit(code);
  }
  ::close(pipe_fds[1]);
  ChildResult result;
  char buffer[512];
  ssize_t got;
  while ((got = ::read(pipe_fds[0], buffer, sizeof buffer)) > 0)
    result.message.append(buffer, static_cast<std::size_t>(got));
  ::close(pipe_fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  if (WIFEXITED(status)) result.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) result.signal = WTERMSIG(status);
  return result;
}

void say(int fd, const std::string& text) {
  const ssize_t ignored = ::write(fd, text.data(), text.size());
  (void)ignored;
}

class InjectedFailure : public ::testing::Test {
 protected:
  void TearDown() override { inject_open_failure(0); }
};

TEST_F(InjectedFailure, OpenFailsCleanlyWithTheKernelsWordsAndNothingOpen) {
  const std::size_t before = open_descriptors();
  inject_open_failure(EACCES);
  SwitchStream stream = SwitchStream::open(this_tid());
  EXPECT_FALSE(stream.ok());
  EXPECT_EQ(stream.error_number(), EACCES);
  EXPECT_EQ(stream.error().rfind("perf_event_open: Permission denied (perf_event_paranoid ", 0), 0u) << stream.error();
  EXPECT_NE(stream.error().find("injected"), std::string::npos) << stream.error();
  EXPECT_EQ(stream.fd(), -1);
  EXPECT_EQ(stream.ring_bytes(), 0u);
  std::vector<Switch> out;
  EXPECT_EQ(stream.read(out), 0u);
  EXPECT_EQ(stream.lost(), 0u);
  EXPECT_FALSE(stream.thread_exited());
  stream.close();  // harmless on a stream that never opened
  EXPECT_EQ(open_descriptors(), before);

  inject_open_failure(ENOSYS);
  SwitchStream other = SwitchStream::open(this_tid());
  EXPECT_FALSE(other.ok());
  EXPECT_NE(other.error().find("Function not implemented"), std::string::npos) << other.error();
}

TEST_F(InjectedFailure, OpensAgainOnceTheInjectionIsOff) {
  SWITCH_TEST_REQUIRE_PERF();
  inject_open_failure(EPERM);
  EXPECT_FALSE(SwitchStream::open(this_tid()).ok());
  inject_open_failure(0);
  SwitchStream stream = SwitchStream::open(this_tid());
  EXPECT_TRUE(stream.ok()) << stream.error();
  EXPECT_TRUE(stream.error().empty());
  EXPECT_EQ(stream.error_number(), 0);
}

TEST(SwitchOpen, ArgumentsAreChecked) {
  for (const std::size_t pages : {std::size_t{0}, std::size_t{3}, std::size_t{12}}) {
    SwitchStream stream = SwitchStream::open(this_tid(), pages);
    EXPECT_FALSE(stream.ok());
    EXPECT_EQ(stream.error_number(), EINVAL);
    EXPECT_NE(stream.error().find("power of two"), std::string::npos) << stream.error();
  }
  for (const pid_t tid : {pid_t{0}, pid_t{-3}, pid_t{1}}) {  // 1: init, not a thread of ours
    SwitchStream stream = SwitchStream::open(tid);
    EXPECT_FALSE(stream.ok());
    EXPECT_EQ(stream.error_number(), ESRCH);
    EXPECT_NE(stream.error().find("not a thread of this process"), std::string::npos) << stream.error();
  }
  SwitchStream never_opened;
  EXPECT_FALSE(never_opened.ok());
  std::vector<Switch> out;
  EXPECT_EQ(never_opened.read(out), 0u);
}

// A seccomp filter (what container runtimes install) answers EPERM to perf_event_open.
TEST(SwitchOpen, SeccompRefusalIsReportedNotFatal) {
  const ChildResult child = in_child([](int report) {
    sock_filter filter[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, arch)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_perf_event_open, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA)),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
    sock_fprog program{static_cast<unsigned short>(sizeof filter / sizeof filter[0]), filter};
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return say(report, "PR_SET_NO_NEW_PRIVS failed"), 10;
    if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &program) != 0) return say(report, "PR_SET_SECCOMP failed"), 11;
    SwitchStream stream = SwitchStream::open(this_tid());
    say(report, stream.error());
    if (stream.ok()) return 12;
    if (stream.error_number() != EPERM) return 13;
    std::vector<Switch> out;
    if (stream.read(out) != 0 || stream.lost() != 0) return 14;
    if (getpid() <= 0) return 15;  // other system calls still work
    return 0;
  });
  EXPECT_EQ(child.signal, 0);
  EXPECT_EQ(child.exit_code, 0) << child.message;
  EXPECT_EQ(child.message.rfind("perf_event_open: Operation not permitted (perf_event_paranoid ", 0), 0u)
      << child.message;
  EXPECT_NE(child.message.find("seccomp filter"), std::string::npos) << child.message;
}

// CI runs as root, where perf_event_paranoid does not apply: check the unprivileged path as
// `nobody` in a child. At paranoid 2 it must work (exclude_kernel is what it needs); above
// 2 it must be refused with the level in the message.
TEST(SwitchOpen, WorksWithoutPrivilegeAtParanoidTwo) {
  const int paranoid = switch_test::perf_event_paranoid();
  const ChildResult child = in_child([paranoid](int report) {
    if (geteuid() == 0) {
      if (setgroups(0, nullptr) != 0 || setresgid(65534, 65534, 65534) != 0 || setresuid(65534, 65534, 65534) != 0) {
        return say(report, std::string("could not become nobody: ") + std::strerror(errno)), 20;
      }
    }
    SwitchStream stream = SwitchStream::open(this_tid());
    say(report, stream.error());
    if (paranoid > 2) {
      if (stream.ok()) return 21;
      return stream.error().find("perf_event_paranoid") != std::string::npos ? 0 : 22;
    }
    if (!stream.ok()) return 23;
    for (int i = 0; i < 3; ++i) usleep(1000);
    std::vector<Switch> out;
    stream.read(out);
    std::size_t outs = 0;
    for (const Switch& s : out) outs += s.out ? 1 : 0;
    say(report, "switches: " + std::to_string(out.size()));
    return outs >= 3 && out.size() >= 6 ? 0 : 24;
  });
  EXPECT_EQ(child.signal, 0);
  EXPECT_EQ(child.exit_code, 0) << child.message;
}

}  // namespace
