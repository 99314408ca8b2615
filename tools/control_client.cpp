#include "control_client.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <vector>

#include "commands.hpp"
#include "control_paths.hpp"  // runtime/control: where the process put its socket

namespace ringtrace::tool {

namespace {

std::uint64_t now_ms() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::uint64_t>(ts.tv_sec) * 1000u + static_cast<std::uint64_t>(ts.tv_nsec) / 1'000'000u;
}

// The variables of process `pid` (readable by its own user: /proc/PID/environ).
std::map<std::string, std::string> environment_of(pid_t pid) {
  std::map<std::string, std::string> vars;
  std::ifstream in("/proc/" + std::to_string(pid) + "/environ", std::ios::binary);
  const std::string all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  for (std::size_t from = 0; from < all.size();) {
    std::size_t end = all.find('\0', from);
    if (end == std::string::npos) end = all.size();
    const std::string item = all.substr(from, end - from);
    const std::size_t eq = item.find('=');
    if (eq != std::string::npos) vars.emplace(item.substr(0, eq), item.substr(eq + 1));
    from = end + 1;
  }
  return vars;
}

// Where process `pid` of user `uid` may have put its socket, most likely first: what its
// own RINGTRACE_CONTROL and XDG_RUNTIME_DIR say, then what this tool's say, then the
// fallback directory. Throws when its variables turn the channel off.
std::vector<std::string> candidates(pid_t pid, uid_t uid) {
  std::vector<std::string> paths;
  const auto add = [&](const std::string& p) {
    for (const std::string& q : paths) {
      if (q == p) return;
    }
    paths.push_back(p);
  };
  const auto add_from = [&](const char* control, const char* xdg) {
    const control::ChannelSettings s = control::settings_from_environment(control, nullptr);
    if (!s.path.empty()) add(control::with_pid(s.path, pid));
    add(control::default_directory(xdg, uid) + "/" + control::default_socket_name(pid));
  };
  const std::map<std::string, std::string> theirs = environment_of(pid);
  const auto var = [&](const char* name) -> const char* {
    const auto found = theirs.find(name);
    return found == theirs.end() ? nullptr : found->second.c_str();
  };
  if (!theirs.empty()) {
    const control::ChannelSettings s = control::settings_from_environment(var("RINGTRACE_CONTROL"), nullptr);
    if (!s.enabled && s.error.empty()) {
      throw std::runtime_error("process " + std::to_string(pid) +
                               " was started with RINGTRACE_CONTROL=off: it has no control channel");
    }
    add_from(var("RINGTRACE_CONTROL"), var("XDG_RUNTIME_DIR"));
  }
  add_from(std::getenv("RINGTRACE_CONTROL"), std::getenv("XDG_RUNTIME_DIR"));
  add_from(nullptr, nullptr);
  return paths;
}

// A connected socket to `path`, or -1 with `why` (errno's text) set.
int connect_to(const std::string& path, std::string& why, int& error) {
  if (!control::fits_socket_address(path)) {
    why = "too long for a socket's address";
    error = ENAMETOOLONG;
    return -1;
  }
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) throw std::runtime_error(std::string("socket: ") + std::strerror(errno));
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::memcpy(address.sun_path, path.c_str(), path.size() + 1);
  if (::connect(fd, reinterpret_cast<const sockaddr*>(&address), sizeof address) == 0) return fd;
  error = errno;
  why = std::strerror(errno);
  ::close(fd);
  return -1;
}

}  // namespace

ControlClient ControlClient::connect(const std::string& target) {
  if (target.find('/') != std::string::npos) {
    std::string why;
    int error = 0;
    const int fd = connect_to(target, why, error);
    if (fd < 0) throw std::runtime_error("cannot connect to " + target + ": " + why);
    return ControlClient(fd, 0, target);
  }
  const bool digits =
      !target.empty() && target.size() <= 9 && target.find_first_not_of("0123456789") == std::string::npos;
  if (!digits || std::stol(target) <= 0)
    throw UsageError("'" + target + "' is neither a process id nor a socket's path");
  const auto pid = static_cast<pid_t>(std::stol(target));
  struct stat proc {};
  if (::stat(("/proc/" + target).c_str(), &proc) != 0) throw std::runtime_error("no process " + target);
  const uid_t own = ::geteuid();
  if (proc.st_uid != own && own != 0) {
    throw std::runtime_error("process " + target + " belongs to uid " + std::to_string(proc.st_uid) +
                             ", not to you (uid " + std::to_string(own) +
                             "): a process's control channel is its own user's only");
  }
  std::string tried, stale;
  for (const std::string& path : candidates(pid, proc.st_uid)) {
    struct stat st {};
    if (::lstat(path.c_str(), &st) != 0) {
      tried += (tried.empty() ? "" : ", ") + path;
      continue;
    }
    if (!S_ISSOCK(st.st_mode)) continue;
    std::string why;
    int error = 0;
    const int fd = connect_to(path, why, error);
    if (fd >= 0) return ControlClient(fd, pid, path);
    if (error == ECONNREFUSED) {
      stale = path;
      continue;
    }
    throw std::runtime_error("cannot connect to " + path + " (process " + target + "'s control channel): " + why);
  }
  if (!stale.empty()) {
    throw std::runtime_error("process " + target + " does not answer on " + stale +
                             ", a socket left by an earlier process of that id or by its image before an exec: it "
                             "does not link ringtrace (any more), or its channel is closed (Config::control)");
  }
  throw std::runtime_error("process " + target + " has no control channel (none of " + tried +
                           "): it does not link ringtrace, its channel is off (RINGTRACE_CONTROL=off, "
                           "Config::control), or it runs in another mount namespace (give the socket's path)");
}

ControlClient::ControlClient(ControlClient&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)),
      pid_(other.pid_),
      path_(std::move(other.path_)),
      program_(std::move(other.program_)),
      reader_(std::move(other.reader_)) {}

ControlClient::~ControlClient() {
  if (fd_ >= 0) ::close(fd_);
}

void ControlClient::set_identity(pid_t pid, std::string program) {
  if (pid_ == 0) pid_ = pid;
  program_ = std::move(program);
}

std::string ControlClient::described() const {
  std::string text = "process " + (pid_ != 0 ? std::to_string(pid_) : path_);
  if (!program_.empty()) text += " (" + program_ + ")";
  return text;
}

control::Message ControlClient::request(const control::Message& request, std::chrono::milliseconds wait) {
  const std::string bytes = control::encode(request);
  const std::uint64_t deadline = now_ms() + static_cast<std::uint64_t>(wait.count());
  const auto remaining = [&]() -> int {
    const std::uint64_t now = now_ms();
    if (now >= deadline)
      throw std::runtime_error(described() + " did not answer within " +
                               std::to_string(wait.count() / 1000.0).substr(0, 4) + " s");
    return static_cast<int>(deadline - now);
  };
  for (std::size_t sent = 0; sent < bytes.size();) {
    pollfd p{fd_, POLLOUT, 0};
    if (::poll(&p, 1, remaining()) < 0 && errno != EINTR)
      throw std::runtime_error(std::string("poll: ") + std::strerror(errno));
    const ssize_t n = ::send(fd_, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n < 0) {
      if (errno == EAGAIN || errno == EINTR) continue;
      // A process that refuses the connection (another uid, too many) says why, then
      // closes: its reply may be waiting although the request could not be sent.
      const std::string why = std::strerror(errno);
      if (std::optional<control::Message> said = reply_left()) return *said;
      throw std::runtime_error(described() + " closed its control connection (" + why + ")");
    }
    sent += static_cast<std::size_t>(n);
  }
  for (;;) {
    if (std::optional<control::Message> reply = reader_.next()) return *reply;
    if (!reader_.error().empty()) throw std::runtime_error(described() + " sent a malformed reply: " + reader_.error());
    pollfd p{fd_, POLLIN, 0};
    if (::poll(&p, 1, remaining()) < 0 && errno != EINTR)
      throw std::runtime_error(std::string("poll: ") + std::strerror(errno));
    char buffer[65536];
    const ssize_t n = ::recv(fd_, buffer, sizeof buffer, MSG_DONTWAIT);
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) continue;
    if (n <= 0) throw std::runtime_error(described() + " closed its control connection (it exited?)");
    reader_.feed(std::span<const char>(buffer, static_cast<std::size_t>(n)));
  }
}

std::optional<control::Message> ControlClient::reply_left() {
  char buffer[65536];
  for (;;) {
    if (std::optional<control::Message> reply = reader_.next()) return reply;
    const ssize_t n = ::recv(fd_, buffer, sizeof buffer, MSG_DONTWAIT);
    if (n <= 0 || !reader_.feed(std::span<const char>(buffer, static_cast<std::size_t>(n)))) return std::nullopt;
  }
}

control::Message ControlClient::expect(const control::Message& request, std::chrono::milliseconds wait) {
  control::Message reply = this->request(request, wait);
  if (reply.type == control::Type::error) throw std::runtime_error(described() + ": " + error_text(reply));
  return reply;
}

std::string error_text(const control::Message& reply) {
  const std::string* message = reply.find("message");
  std::string text = message != nullptr ? *message : "an error";
  for (const std::string_view e : reply.all("error")) text.append("; ").append(e);
  return text;
}

bool output_option(const std::vector<std::string>& args, std::size_t& i, std::vector<std::string>& outputs) {
  static constexpr std::pair<std::string_view, const char*> kOptions[] = {
      {"-o", "rtrace"},           {"--output", "rtrace"},   {"--chrome", "chrome"},
      {"--perfetto", "perfetto"}, {"--pstats", "pstats"},   {"--folded", "folded"},
      {"--table", "table"},       {"--summary", "summary"}, {"--callgraph", "callgraph"},
  };
  for (const auto& [option, format] : kOptions) {
    if (args[i] != option) continue;
    const std::string& path = option_value(args, i);
    if (path.empty()) throw UsageError(std::string(option) + " needs a file");
    if (path.find(',') != std::string::npos)
      throw UsageError("'" + path + "': an output path with a ',' cannot be passed on");
    outputs.push_back(std::string(format) + ":" + std::filesystem::absolute(path).lexically_normal().string());
    return true;
  }
  return false;
}

std::string files_with_sizes(const std::vector<std::string>& paths) {
  std::string text;
  for (const std::string& p : paths) {
    std::error_code ec;
    const std::uintmax_t bytes = std::filesystem::file_size(p, ec);
    if (!text.empty()) text += ", ";
    text += p + " (" + (ec ? std::string("not seen from here") : byte_size(bytes)) + ")";
  }
  return text;
}

std::chrono::milliseconds parse_wait(std::string_view option, const std::string& text) {
  std::size_t used = 0;
  double value = -1;
  try {
    value = std::stod(text, &used);
  } catch (const std::exception&) {}
  const std::string unit = text.substr(std::min(used, text.size()));
  const double scale = unit == "ms" ? 1 : unit == "s" ? 1e3 : unit == "m" ? 60e3 : -1;
  const double ms = value * scale;
  if (scale < 0 || !(ms >= 1) || ms > 1e10) {
    throw UsageError(std::string(option) + " takes a duration of 1 ms or more (500ms, 10s, 2m), not '" + text + "'");
  }
  return std::chrono::milliseconds(static_cast<std::int64_t>(ms));
}

namespace {

int g_interruption_pipe[2] = {-1, -1};
volatile sig_atomic_t g_interrupted = 0;
constexpr int kInterruptions[] = {SIGINT, SIGTERM, SIGHUP};
struct sigaction g_previous[3];

void on_interruption(int) {
  const int saved = errno;
  g_interrupted = 1;
  const char byte = 1;
  (void)!::write(g_interruption_pipe[1], &byte, 1);
  errno = saved;
}

}  // namespace

Interruption::Interruption() {
  if (::pipe2(g_interruption_pipe, O_CLOEXEC | O_NONBLOCK) != 0) {
    throw std::runtime_error(std::string("pipe: ") + std::strerror(errno));
  }
  struct sigaction action {};
  action.sa_handler = on_interruption;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;
  for (std::size_t k = 0; k < std::size(kInterruptions); ++k) ::sigaction(kInterruptions[k], &action, &g_previous[k]);
}

Interruption::~Interruption() {
  for (std::size_t k = 0; k < std::size(kInterruptions); ++k) ::sigaction(kInterruptions[k], &g_previous[k], nullptr);
  ::close(g_interruption_pipe[0]);
  ::close(g_interruption_pipe[1]);
}

int Interruption::fd() const { return g_interruption_pipe[0]; }
bool Interruption::happened() const { return g_interrupted != 0; }

}  // namespace ringtrace::tool
