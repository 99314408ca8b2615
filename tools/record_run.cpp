// `ringtrace record`: running the program while its processes report to the tool.
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <regex>
#include <stdexcept>

#include "record_run.hpp"
#include "ringtrace/files.hpp"

namespace ringtrace::tool {

FileTimes files_of(const std::string& output) {
  const std::filesystem::path path = output;
  const std::string name = path.filename().string();
  std::string pattern;
  for (std::size_t from = 0;;) {
    const std::size_t at = name.find("%p", from);
    for (const char c : name.substr(from, at == std::string::npos ? std::string::npos : at - from)) {
      if (std::strchr("\\^$.|?*+()[]{}", c) != nullptr) pattern += '\\';
      pattern += c;
    }
    if (at == std::string::npos) break;
    pattern += "[0-9]+";
    from = at + 2;
  }
  const std::regex named(pattern);
  FileTimes files;
  std::error_code ec;
  const std::filesystem::path directory = path.parent_path();
  for (const auto& entry : std::filesystem::directory_iterator(directory.empty() ? "." : directory, ec)) {
    const std::filesystem::path file = directory / entry.path().filename();  // as the user wrote the directory
    const std::filesystem::path finished = ringtrace::output_of_partial(file);
    if (!std::regex_match((finished.empty() ? file : finished).filename().string(), named)) continue;
    std::error_code time_ec;
    const auto when = std::filesystem::last_write_time(file, time_ec);
    if (!time_ec) files.emplace(file, when);
  }
  return files;
}

namespace {

// A directory of the user's own for the socket: $XDG_RUNTIME_DIR when it is one (owned
// by this user, not writable by others), else $TMPDIR, else /tmp; mkdtemp makes it 0700
// with a name no one can predict.
std::string private_directory() {
  std::vector<std::string> bases;
  if (const char* xdg = std::getenv("XDG_RUNTIME_DIR"); xdg != nullptr && *xdg == '/') {
    struct stat st {};
    if (::lstat(xdg, &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == ::getuid() && (st.st_mode & 022) == 0)
      bases.emplace_back(xdg);
  }
  if (const char* tmp = std::getenv("TMPDIR"); tmp != nullptr && *tmp == '/') bases.emplace_back(tmp);
  bases.emplace_back("/tmp");
  for (const std::string& base : bases) {
    std::string dir = base + "/ringtrace-record.XXXXXX";
    if (dir.size() + 3 >= sizeof(sockaddr_un{}.sun_path)) continue;  // the socket's name must fit
    if (::mkdtemp(dir.data()) != nullptr) return dir;
  }
  throw std::runtime_error(std::string("cannot make a private directory for the processes' reports: ") +
                           std::strerror(errno));
}

}  // namespace

ReportInbox::ReportInbox() : directory_(private_directory()), path_(directory_ + "/r") {
  fd_ = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::memcpy(address.sun_path, path_.c_str(), path_.size());
  if (fd_ < 0 || ::bind(fd_, reinterpret_cast<const sockaddr*>(&address), sizeof address) != 0) {
    const int saved = errno;
    if (fd_ >= 0) ::close(fd_);
    ::rmdir(directory_.c_str());
    throw std::runtime_error("cannot make a socket for the processes' reports: " + std::string(std::strerror(saved)));
  }
  // Room for many processes' reports between two reads (a build's compiler runs): as much
  // as the system allows.
  const int bytes = 4 << 20;
  if (::setsockopt(fd_, SOL_SOCKET, SO_RCVBUFFORCE, &bytes, sizeof bytes) != 0)
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVBUF, &bytes, sizeof bytes);
}

ReportInbox::~ReportInbox() {
  ::close(fd_);
  ::unlink(path_.c_str());
  ::rmdir(directory_.c_str());
}

void ReportInbox::take_waiting() {
  std::vector<char> buffer(detail::kMaxRecordReportBytes + 1);
  for (;;) {
    const ssize_t n = ::recv(fd_, buffer.data(), buffer.size(), MSG_DONTWAIT);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return;
    if (auto report = detail::decode_record_report(std::string_view(buffer.data(), static_cast<std::size_t>(n))))
      reports_.push_back(std::move(*report));
  }
}

namespace {

[[noreturn]] void run_in_child(const RecordPlan& plan, const std::string& outputs, const std::string& inbox) {
  ::setenv("RINGTRACE_OUTPUT", outputs.c_str(), 1);
  for (const auto& [name, value] : plan.settings) ::setenv(name, value.c_str(), 1);
  ::setenv(detail::kRecordReportVariable, inbox.c_str(), 1);
  if (!plan.preload.empty()) ::setenv("LD_PRELOAD", plan.preload.c_str(), 1);
  std::vector<char*> argv;
  for (const std::string& a : plan.program) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  ::execvp(argv[0], argv.data());
  std::fprintf(stderr, "ringtrace record: cannot run '%s': %s\n", argv[0], std::strerror(errno));
  ::_exit(127);
}

// Waits for `child`, taking the reports as they come: a pidfd tells when it ended; where
// the kernel has none (before 5.3), a poll every 50 ms.
int wait_taking_reports(pid_t child, ReportInbox& inbox) {
  const int pidfd = static_cast<int>(::syscall(SYS_pidfd_open, child, 0));
  int status = 0;
  for (;;) {
    pollfd fds[2] = {{inbox.fd(), POLLIN, 0}, {pidfd, POLLIN, 0}};
    const int ready = ::poll(fds, pidfd >= 0 ? 2 : 1, pidfd >= 0 ? -1 : 50);
    if (ready < 0 && errno != EINTR) break;
    inbox.take_waiting();
    if (pidfd >= 0 && (fds[1].revents & POLLIN) == 0) continue;
    const pid_t done = ::waitpid(child, &status, pidfd >= 0 ? 0 : WNOHANG);
    if (done == child || (done < 0 && errno != EINTR)) break;
  }
  if (pidfd >= 0) {
    ::close(pidfd);
  } else {
    while (::waitpid(child, &status, 0) < 0 && errno == EINTR) {}
  }
  inbox.take_waiting();  // what the last processes sent as they ended
  return status;
}

}  // namespace

RunResult run_recorded(const RecordPlan& plan, const std::string& outputs, ReportInbox& inbox) {
  const auto start = std::chrono::steady_clock::now();
  std::fflush(nullptr);
  const pid_t child = ::fork();
  if (child < 0) throw std::runtime_error(std::string("fork: ") + std::strerror(errno));
  if (child == 0) run_in_child(plan, outputs, inbox.path());
  // The terminal's Ctrl-C goes to the whole group: the program stops its session and
  // ends; the tool waits for it and reports.
  struct sigaction ignore {
  }, old_int{}, old_term{};
  ignore.sa_handler = SIG_IGN;
  ::sigaction(SIGINT, &ignore, &old_int);
  ::sigaction(SIGTERM, &ignore, &old_term);
  RunResult result;
  result.status = wait_taking_reports(child, inbox);
  ::sigaction(SIGINT, &old_int, nullptr);
  ::sigaction(SIGTERM, &old_term, nullptr);
  result.took = std::chrono::steady_clock::now() - start;
  return result;
}

}  // namespace ringtrace::tool
