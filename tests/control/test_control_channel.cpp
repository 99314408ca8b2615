// The control channel's socket over a program's life (docs/control.md): where it is, its
// permissions, its end at exit, after a crash, across fork and exec, what the
// environment and Config::control make of it, and who may use it.
#include <gtest/gtest.h>
#include <linux/capability.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "control_paths.hpp"
#include "control_protocol.hpp"
#include "processes.hpp"

namespace {

using ringtrace::test::Process;
using ringtrace::test::words;
using namespace std::chrono_literals;

const std::string kTool = RINGTRACE_TOOL;
const std::string kTarget = CONTROL_TARGET;

std::filesystem::path work_dir(const std::string& test) {
  const std::filesystem::path dir = std::filesystem::path(CONTROL_WORK_DIR) / test;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  std::filesystem::permissions(dir, std::filesystem::perms::owner_all);
  return dir;
}

struct Started {
  Process process;
  std::string pid;
  std::string socket;
};

Started start(const std::vector<std::string>& mode, const std::vector<std::string>& environment = {}) {
  std::vector<std::string> argv{kTarget};
  argv.insert(argv.end(), mode.begin(), mode.end());
  Started s{Process::start(argv, environment), {}, {}};
  const std::optional<std::string> ready = s.process.line();
  if (!ready) throw std::runtime_error("control_target said nothing: " + s.process.rest().second);
  const std::vector<std::string> w = words(*ready);
  if (w.size() != 3 || w[0] != "ready") throw std::runtime_error("control_target said: " + *ready);
  s.pid = w[1];
  s.socket = w[2];
  return s;
}

std::string ask(Started& s, const std::string& command) {
  s.process.send(command);
  return s.process.line().value_or("(nothing)");
}

std::string default_path(const std::string& pid) {
  return ringtrace::control::default_directory(std::getenv("XDG_RUNTIME_DIR"), ::geteuid()) + "/" + pid + ".sock";
}

bool exists(const std::string& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0;
}

// The channel answers a request (a snapshot: "no flight recorder" is an answer).
bool answers(const std::string& target) {
  Process tool = Process::start({kTool, "snapshot", target});
  const auto [out, err] = tool.rest();
  return err.find("no flight recorder") != std::string::npos;
}

TEST(ControlChannel, IsAPrivateSocketNamedByPidAndGoneAtExit) {
  Started s = start({"idle"});
  EXPECT_EQ(s.socket, default_path(s.pid));
  struct stat st {};
  ASSERT_EQ(::lstat(s.socket.c_str(), &st), 0);
  EXPECT_TRUE(S_ISSOCK(st.st_mode));
  EXPECT_EQ(st.st_mode & 07777, 0600u);
  EXPECT_EQ(st.st_uid, ::geteuid());
  struct stat dir {};
  ASSERT_EQ(::lstat(std::filesystem::path(s.socket).parent_path().c_str(), &dir), 0);
  EXPECT_TRUE(S_ISDIR(dir.st_mode));
  EXPECT_EQ(dir.st_mode & 07777, 0700u);
  EXPECT_TRUE(answers(s.pid));
  s.process.send("quit");
  EXPECT_EQ(s.process.exit_code(), 0);
  EXPECT_FALSE(exists(s.socket));
}

// A program that never asks for its socket (as none does): the channel's thread opens it
// on its own shortly after the start (docs/control.md, "What it costs"), and it answers.
TEST(ControlChannel, OpensOnItsOwnShortlyAfterTheProgramsStart) {
  Started s = start({"idle"}, {"CONTROL_TARGET_UNASKED=1"});
  EXPECT_EQ(s.socket, "?");
  const std::string path = default_path(s.pid);
  const auto until = std::chrono::steady_clock::now() + 60s;
  while (!exists(path) && std::chrono::steady_clock::now() < until) std::this_thread::sleep_for(10ms);
  ASSERT_TRUE(exists(path));
  EXPECT_TRUE(answers(s.pid));
  s.process.send("quit");
  EXPECT_EQ(s.process.exit_code(), 0);
  EXPECT_FALSE(exists(path));
}

TEST(ControlChannel, TheSocketOfAKilledProcessIsRemovedByTheNextChannel) {
  Started killed = start({"idle"});
  ::kill(killed.process.pid, SIGKILL);
  killed.process.wait();
  ASSERT_TRUE(exists(killed.socket));  // a crash leaves it
  Started next = start({"idle"});
  EXPECT_TRUE(answers(next.pid));  // served after its first sweep
  EXPECT_FALSE(exists(killed.socket));
  EXPECT_EQ(ask(next, "quit"), "(nothing)");
  EXPECT_EQ(next.process.exit_code(), 0);
}

TEST(ControlChannel, ExecKeepsThePidAndTheNewImageTakesOverTheSocket) {
  Started s = start({"idle"});
  s.process.send("exec");
  const std::vector<std::string> w = words(s.process.line().value_or(""));
  ASSERT_EQ(w.size(), 3u);
  EXPECT_EQ(w[1], s.pid);
  EXPECT_EQ(w[2], s.socket);  // the old image's socket, which no one answered on, replaced
  EXPECT_TRUE(answers(s.pid));
  s.process.send("quit");
  EXPECT_EQ(s.process.exit_code(), 0);
  EXPECT_FALSE(exists(s.socket));
}

TEST(ControlChannel, AForkChildHasNoneOfItsParentsAndItsOwnOnceItStartsASession) {
  Started s = start({"idle"});
  s.process.send("fork");
  EXPECT_EQ(s.process.line().value_or(""), "child-socket -");
  const std::vector<std::string> w = words(s.process.line().value_or(""));
  ASSERT_EQ(w.size(), 2u);
  EXPECT_EQ(w[0], "child-session");
  EXPECT_NE(w[1], s.socket);
  EXPECT_NE(w[1], "-");
  EXPECT_EQ(s.process.line().value_or(""), "forked 0");
  // The child's exit removed its own socket, not its parent's.
  EXPECT_FALSE(exists(w[1]));
  EXPECT_TRUE(exists(s.socket));
  EXPECT_TRUE(answers(s.pid));
  s.process.send("quit");
  EXPECT_EQ(s.process.exit_code(), 0);
}

TEST(ControlChannel, TheEnvironmentTurnsItOffOrMovesIt) {
  Started off = start({"idle"}, {"RINGTRACE_CONTROL=off"});
  EXPECT_EQ(off.socket, "-");
  EXPECT_FALSE(exists(default_path(off.pid)));
  off.process.send("quit");
  EXPECT_EQ(off.process.exit_code(), 0);

  const auto dir = work_dir("environment_path");
  Started moved = start({"idle"}, {"RINGTRACE_CONTROL=" + (dir / "ctl-%p.sock").string()});
  EXPECT_EQ(moved.socket, (dir / ("ctl-" + moved.pid + ".sock")).string());
  EXPECT_TRUE(answers(moved.socket));  // the tool takes the path
  EXPECT_TRUE(answers(moved.pid));     // or finds it in the process's environment
  moved.process.send("quit");
  EXPECT_EQ(moved.process.exit_code(), 0);
  EXPECT_FALSE(exists(moved.socket));
}

TEST(ControlChannel, ALinkAtItsPathIsNeverFollowedNorReplaced) {
  const auto dir = work_dir("link");
  { std::ofstream(dir / "victim") << "keep"; }
  std::filesystem::create_symlink(dir / "victim", dir / "ctl.sock");
  Started s = start({"idle"}, {"RINGTRACE_CONTROL=" + (dir / "ctl.sock").string()});
  EXPECT_EQ(s.socket, "-");
  s.process.send("quit");
  EXPECT_EQ(s.process.exit_code(), 0);
  const std::string err = s.process.rest().second;
  EXPECT_NE(err.find("exists and is not a socket of this user's"), std::string::npos) << err;
  EXPECT_TRUE(std::filesystem::is_symlink(dir / "ctl.sock"));
  std::ifstream victim(dir / "victim");
  std::string text;
  victim >> text;
  EXPECT_EQ(text, "keep");
}

TEST(ControlChannel, AStaleSocketAtItsPathIsReplacedALiveOneIsNot) {
  const auto dir = work_dir("stale");
  const std::string path = (dir / "ctl.sock").string();
  {  // a socket no one listens on: what a crashed process leaves
    const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    std::strcpy(a.sun_path, path.c_str());
    ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    ::close(fd);
  }
  Started first = start({"idle"}, {"RINGTRACE_CONTROL=" + path});
  EXPECT_EQ(first.socket, path);
  EXPECT_TRUE(answers(path));
  Started second = start({"idle"}, {"RINGTRACE_CONTROL=" + path});
  EXPECT_EQ(second.socket, "-");
  EXPECT_TRUE(answers(first.pid));
  second.process.send("quit");
  EXPECT_EQ(second.process.exit_code(), 0);
  EXPECT_NE(second.process.rest().second.find("is the socket of a process that is running"), std::string::npos);
  first.process.send("quit");
  EXPECT_EQ(first.process.exit_code(), 0);
}

TEST(ControlChannel, ConfigControlTurnsItOffAndMovesItWhenASessionStarts) {
  const auto dir = work_dir("config");
  Started s = start({"idle"});
  const std::string first = s.socket;
  EXPECT_EQ(ask(s, "start-session off"), "started -");
  EXPECT_FALSE(exists(first));
  EXPECT_EQ(ask(s, "stop-session"), "stopped -");
  const std::string moved = (dir / "moved.sock").string();
  EXPECT_EQ(ask(s, "start-session " + moved), "started " + moved);
  EXPECT_TRUE(answers(moved));
  EXPECT_EQ(ask(s, "stop-session"), "stopped " + moved);
  EXPECT_EQ(ask(s, "start-session default"), "started " + first);
  EXPECT_FALSE(exists(moved));
  EXPECT_TRUE(answers(s.pid));
  EXPECT_EQ(ask(s, "stop-session"), "stopped " + first);
  s.process.send("quit");
  EXPECT_EQ(s.process.exit_code(), 0);
}

// A peer of another uid that got through the file's permissions (CAP_DAC_OVERRIDE kept
// across setuid): SO_PEERCRED still refuses it.
TEST(ControlChannel, APeerOfAnotherUidIsRefusedEvenPastTheFilesPermissions) {
  if (::geteuid() != 0) GTEST_SKIP() << "acting as another uid (setuid to 65534 in a child) needs root";
  Started s = start({"idle"});
  int result[2];
  ASSERT_EQ(::pipe(result), 0);
  const pid_t child = ::fork();
  if (child == 0) {
    ::prctl(PR_SET_KEEPCAPS, 1);
    if (::setresgid(65534, 65534, 65534) != 0 || ::setresuid(65534, 65534, 65534) != 0) std::_Exit(2);
    __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
    __user_cap_data_struct data[2] = {};
    data[0].effective = data[0].permitted = 1u << CAP_DAC_OVERRIDE;
    if (::syscall(SYS_capset, &header, data) != 0) std::_Exit(3);
    const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    std::strcpy(a.sun_path, s.socket.c_str());
    if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) std::_Exit(4);
    // The process may refuse and close before the request is written: its reply is read
    // whether or not the send went through (no SIGPIPE).
    const std::string request = ringtrace::control::encode(ringtrace::control::Message{});
    (void)::send(fd, request.data(), request.size(), MSG_NOSIGNAL);
    char buffer[4096];
    std::string reply;
    for (ssize_t n; (n = ::read(fd, buffer, sizeof buffer)) > 0;) reply.append(buffer, static_cast<std::size_t>(n));
    (void)!::write(result[1], reply.data(), reply.size());
    std::_Exit(0);
  }
  ::close(result[1]);
  std::string reply;
  char buffer[4096];
  for (ssize_t n; (n = ::read(result[0], buffer, sizeof buffer)) > 0;)
    reply.append(buffer, static_cast<std::size_t>(n));
  ::close(result[0]);
  int status = 0;
  ::waitpid(child, &status, 0);
  ASSERT_TRUE(WIFEXITED(status));
  ASSERT_EQ(WEXITSTATUS(status), 0);
  ringtrace::control::FrameReader reader(false, ringtrace::control::kMaxReplyPayload);
  reader.feed(std::span<const char>(reply.data(), reply.size()));
  const std::optional<ringtrace::control::Message> m = reader.next();
  ASSERT_TRUE(m.has_value()) << reader.error();
  EXPECT_EQ(m->type, ringtrace::control::Type::error);
  ASSERT_NE(m->find("code"), nullptr);
  EXPECT_EQ(*m->find("code"), "refused");
  EXPECT_NE(m->find("message")->find("uid 65534 may not use"), std::string::npos) << *m->find("message");
  EXPECT_TRUE(answers(s.pid));  // its own user still may
  s.process.send("quit");
  EXPECT_EQ(s.process.exit_code(), 0);
}

// Fuzzed messages from a client written from docs/control.md alone (control_fuzz.py):
// any bytes, any length, half a frame, a peer that never reads. The program's pacer
// keeps its pace (its threads never wait for the channel) and it ends normally.
TEST(ControlChannel, TenThousandFuzzedMessagesNeitherCrashNorSlowTheProgram) {
  Started s = start({"paced", "2000"});
  const auto count = [&]() {
    const std::vector<std::string> w = words(ask(s, "count"));
    if (w.size() != 3) throw std::runtime_error("count");
    return std::pair<double, double>(std::stod(w[1]), std::stod(w[2]));
  };
  const auto before = count();
  Process fuzz = Process::start({PYTHON, CONTROL_FUZZ, s.socket, "10000", s.pid});
  const auto [out, err] = fuzz.rest(std::chrono::minutes(5));
  ASSERT_EQ(fuzz.exit_code(), 0) << out << err;
  EXPECT_NE(out.find("sent 10000 messages"), std::string::npos) << out;
  const auto after = count();
  const double rate = (after.first - before.first) / ((after.second - before.second) / 1e9);
  EXPECT_NEAR(rate, 2000, 2000 * 0.05) << out;
  EXPECT_TRUE(answers(s.pid));
  s.process.send("quit");
  EXPECT_EQ(s.process.exit_code(), 0);
}

}  // namespace
