#include "control_channel.hpp"

#include <dirent.h>
#include <dlfcn.h>  // dladdr, dlopen: the object the thread runs in pinned
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <new>
#include <optional>
#include <string>
#include <vector>

#include "control_connection.hpp"
#include "control_paths.hpp"
#include "outside.hpp"  // live: set_control_hook, mark_thread_untraced

namespace ringtrace::detail {

namespace {

// What a request needs at most: a 1 KiB regular expression compiled (recursively) by
// std::regex, 2 KiB of stack per nested group under ThreadSanitizer (1 MiB was too little
// there for 511 of them). Address space, as a thread's default: the pages touched are
// resident, a few while idle.
constexpr std::size_t kStackBytes = std::size_t{8} << 20;
constexpr int kBacklog = 16;
// How long after the program's start the thread opens the socket: a program that ends
// sooner (most of the processes of a build run under `ringtrace record`) never makes one,
// nor removes it at its exit (docs/performance.md, "The control channel").
constexpr auto kOpenAfter = std::chrono::milliseconds(100);

constinit thread_local bool t_control_thread = false;

// ThreadSanitizer cannot start a thread in the fork child of a process that has threads
// (its die_after_fork): a program built with it, which forks and starts a session in the
// child, would die for the channel's thread. There the channel opens only when
// RINGTRACE_CONTROL asks for it (on, or a path), and Config::control is not applied.
#if defined(__SANITIZE_THREAD__)
constexpr bool kOnByDefault = false;
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
constexpr bool kOnByDefault = false;
#else
constexpr bool kOnByDefault = true;
#endif
#else
constexpr bool kOnByDefault = true;
#endif

// Every descriptor the channel holds, as fd + 1 (0: a free slot), so that a fork child
// closes them without touching anything else (async-signal-safe).
constexpr std::size_t kMaxFds = 2 * kMaxConnections + 8;  // refused and busy ones closing too
constinit std::atomic<int> g_fds[kMaxFds] = {};

void hold_fd(int fd) {
  for (auto& slot : g_fds) {
    int free = 0;
    if (slot.compare_exchange_strong(free, fd + 1)) return;
  }
}
void close_fd(int fd) {
  if (fd < 0) return;
  for (auto& slot : g_fds) {
    int mine = fd + 1;
    if (slot.compare_exchange_strong(mine, 0)) break;
  }
  ::close(fd);
}

struct Listener {
  int fd = -1;
  std::string path;
  dev_t dev = 0;
  ino_t ino = 0;
  pid_t pid = 0;  // the process that made it
};

// The channel of this process: made once, never destroyed (its thread may outlive
// every destructor of the program's).
struct Channel {
  std::mutex mutex;  // guards what follows
  bool started = false;
  // The program's start only starts the thread: the socket is opened on it, with these
  // settings, kOpenAfter later or when `open_now` asks (docs/control.md, "What it costs");
  // `settled` is told of either change.
  std::optional<control::ChannelSettings> pending;
  bool open_now = false;
  std::condition_variable settled;
  const char* control_variable = nullptr;  // RINGTRACE_CONTROL and RINGTRACE_CONTROL_ROOT as
  const char* root_variable = nullptr;     // the program started with them (nullptr: unset)
  Listener listener;
  std::string setting_path;  // the settings' path it was opened for ("": the default)
  bool allow_root = false;
  std::vector<int> retired;  // listening sockets replaced, for the thread to close
  std::string sweep;         // a directory for the thread to rid of stale sockets
  std::string error;         // why the last attempt to open failed
  bool thread_running = false;
  int wake_fd = -1;
  bool exiting = false;
  std::mutex work;  // held while a request is served and while a connection is let go
};

Channel& channel() {
  static Channel* const c = new Channel;
  return *c;
}

std::string errno_text(const std::string& what) { return what + ": " + std::strerror(errno); }

// A socket there answers (a process listens on it).
bool answers(const std::string& path) {
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return false;
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::memcpy(address.sun_path, path.c_str(), path.size() + 1);
  const int r = ::connect(fd, reinterpret_cast<const sockaddr*>(&address), sizeof address);
  const bool live = r == 0 || errno == EAGAIN || errno == EINPROGRESS;
  ::close(fd);
  return live;
}

// Why the socket cannot go at `path`: "" when nothing is there or a socket of this user's
// that no one answers on (left by a process that crashed, or by this one's image before
// an exec), which the rename replaces.
std::string taken(const std::string& path, uid_t uid) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) return errno == ENOENT ? "" : errno_text(path);
  if (!S_ISSOCK(st.st_mode) || st.st_uid != uid) return path + " exists and is not a socket of this user's";
  if (answers(path)) return path + " is the socket of a process that is running";
  return {};
}

std::string random_hex() {
  unsigned char bytes[8] = {};
  if (::getrandom(bytes, sizeof bytes, GRND_NONBLOCK) != static_cast<ssize_t>(sizeof bytes)) {
    timespec ts{};
    clock_gettime(CLOCK_MONOTONIC, &ts);
    std::memcpy(bytes, &ts.tv_nsec, sizeof ts.tv_nsec < sizeof bytes ? sizeof ts.tv_nsec : sizeof bytes);
  }
  std::string hex;
  for (const unsigned char b : bytes) {
    hex += "0123456789abcdef"[b >> 4];
    hex += "0123456789abcdef"[b & 15];
  }
  return hex;
}

// A directory given for the socket: no one but the user (or root) may replace what is in it.
std::string check_given_directory(const std::string& dir, uid_t uid) {
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0) return errno_text(dir);
  if (!S_ISDIR(st.st_mode)) return dir + " is not a directory";
  if (st.st_uid != uid && st.st_uid != 0) return dir + " belongs to another user";
  if ((st.st_mode & 022) != 0) return dir + " may be written by others";
  return {};
}

// Binds, restricts (0600) and listens under a temporary name in `dir`, then renames it to
// `path`: the name is never there without a listener.
std::string bind_and_rename(const std::string& dir, const std::string& path, Listener& out) {
  const std::string temp = dir + "/." + std::to_string(::getpid()) + "." + random_hex() + ".tmp";
  if (!control::fits_socket_address(temp)) return temp + ": too long for a socket's address";
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return errno_text("socket");
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::memcpy(address.sun_path, temp.c_str(), temp.size() + 1);
  std::string why;
  if (::bind(fd, reinterpret_cast<const sockaddr*>(&address), sizeof address) != 0) {
    why = errno_text("bind " + temp);
  } else if (::chmod(temp.c_str(), 0600) != 0) {
    why = errno_text("chmod " + temp);
  } else if (::listen(fd, kBacklog) != 0) {
    why = errno_text("listen");
  } else if (::rename(temp.c_str(), path.c_str()) != 0) {
    why = errno_text("rename to " + path);
  }
  if (!why.empty()) {
    ::unlink(temp.c_str());
    ::close(fd);
    return why;
  }
  struct stat st {};
  ::lstat(path.c_str(), &st);
  out = Listener{fd, path, st.st_dev, st.st_ino, ::getpid()};
  hold_fd(fd);
  return {};
}

// The socket for `s`, or why there is none; `dir` gets its directory.
std::string open_listener(const control::ChannelSettings& s, Listener& out, std::string& dir) {
  const uid_t uid = ::geteuid();
  std::string path;
  if (s.path.empty()) {
    dir = control::default_directory(std::getenv("XDG_RUNTIME_DIR"), uid);
    if (std::string why = control::private_directory(dir, uid, true); !why.empty()) return why;
    path = dir;  // append, not operator+: g++ 12 warns wrongly there (-Wrestrict)
    path.append("/").append(control::default_socket_name(::getpid()));
  } else {
    path = control::with_pid(s.path, ::getpid());
    const std::size_t slash = path.rfind('/');  // the path is absolute: there is one
    dir.assign(path, 0, slash == 0 ? 1 : slash);
    if (std::string why = check_given_directory(dir, uid); !why.empty()) return why;
  }
  if (!control::fits_socket_address(path)) return path + ": too long for a socket's address";
  if (std::string why = taken(path, uid); !why.empty()) return why;
  return bind_and_rename(dir, path, out);
}

// Removes the socket's file if it is still the one this process made.
void remove_socket_file(const Listener& l) {
  if (l.path.empty() || l.pid != ::getpid()) return;
  struct stat st {};
  if (::lstat(l.path.c_str(), &st) == 0 && st.st_dev == l.dev && st.st_ino == l.ino) ::unlink(l.path.c_str());
}

// Sockets (and temporaries) in `dir` of processes that are gone, on which no one answers.
void sweep_stale(const std::string& dir) {
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return;
  const uid_t uid = ::geteuid();
  std::size_t seen = 0;
  while (const dirent* e = ::readdir(d)) {
    if (++seen > 4096) break;
    const std::string name = e->d_name;
    const bool temporary = name.starts_with('.') && name.ends_with(".tmp");
    const std::size_t digits_from = temporary ? 1 : 0;
    const std::size_t digits_end = name.find_first_not_of("0123456789", digits_from);
    if (digits_end == digits_from || digits_end == std::string::npos) continue;
    if (!temporary && name.substr(digits_end) != ".sock") continue;
    const long pid = std::strtol(name.c_str() + digits_from, nullptr, 10);
    if (pid <= 0 || pid == ::getpid() || ::kill(static_cast<pid_t>(pid), 0) == 0 || errno != ESRCH) continue;
    struct stat st {};
    if (::fstatat(::dirfd(d), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
    if (!S_ISSOCK(st.st_mode) || st.st_uid != uid) continue;
    if (!temporary && answers(dir + "/" + name)) continue;  // a process of another pid namespace
    ::unlinkat(::dirfd(d), name.c_str(), 0);
  }
  ::closedir(d);
}

// A program its user could not trace (setuid, setgid, file capabilities: the kernel made
// it not dumpable) gets no channel: through it the user would act with its privileges.
bool traceable() { return ::prctl(PR_GET_DUMPABLE) == 1 && ::getuid() == ::geteuid() && ::getgid() == ::getegid(); }

void serve();
void before_fork();
void after_fork_in_parent();
void after_fork_in_child();
void close_at_exit();

// The object this code is in, made never to unload (RTLD_NODELETE): the channel's thread
// runs its code until the process ends. A program's own objects never unload anyway; a
// plugin opened with dlopen that carries the process's runtime (the program has none)
// would otherwise be unmapped by its dlclose under the sleeping thread.
void pin_this_object() noexcept {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&pin_this_object), &info) == 0 || info.dli_fname == nullptr) return;
  (void)dlopen(info.dli_fname, RTLD_LAZY | RTLD_NOLOAD | RTLD_NODELETE);  // a reference kept for good
}

bool start_thread(Channel& ch) {
  const int wake = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (wake < 0) {
    ch.error = errno_text("eventfd");
    return false;
  }
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, kStackBytes);
  pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
  // Every signal blocked on the new thread (it inherits the mask): the program's signals
  // go to the program's threads.
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, &old);
  pthread_t thread;
  const int r = pthread_create(
      &thread, &attr,
      [](void*) -> void* {
        serve();
        return nullptr;
      },
      nullptr);
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  pthread_attr_destroy(&attr);
  if (r != 0) {
    ::close(wake);
    ch.error = std::string("pthread_create: ") + std::strerror(r);
    return false;
  }
  hold_fd(wake);
  ch.wake_fd = wake;
  ch.thread_running = true;
  pin_this_object();
  return true;
}

void wake(Channel& ch) {
  const std::uint64_t one = 1;
  if (ch.wake_fd >= 0) (void)!::write(ch.wake_fd, &one, sizeof one);
}

// Opens, moves or closes the socket as `s` says (under ch.mutex).
void apply(Channel& ch, const control::ChannelSettings& s) {
  if (ch.exiting) return;
  const bool open = ch.listener.fd >= 0;
  if (open && s.enabled && s.path == ch.setting_path) {
    ch.allow_root = s.allow_root;
    return;
  }
  if (open) {
    remove_socket_file(ch.listener);
    ch.retired.push_back(ch.listener.fd);
    ch.listener = Listener{};
  }
  ch.error.clear();
  if (s.enabled && !traceable()) {
    ch.error = "the process is not dumpable (setuid, setgid or file capabilities): no control channel";
  } else if (s.enabled) {
    Listener l;
    std::string dir;
    ch.error = open_listener(s, l, dir);
    if (ch.error.empty()) {
      ch.listener = std::move(l);
      ch.setting_path = s.path;
      ch.allow_root = s.allow_root;
      if (s.path.empty()) ch.sweep = dir;
    } else if (s.given) {
      std::fprintf(stderr, "ringtrace: control channel: %s; this process has none\n", ch.error.c_str());
    }
  }
  if (ch.thread_running) {
    wake(ch);
  } else {
    for (const int fd : ch.retired) close_fd(fd);
    ch.retired.clear();
    if (ch.listener.fd >= 0 && !start_thread(ch)) {
      close_fd(ch.listener.fd);
      remove_socket_file(ch.listener);
      ch.listener = Listener{};
    }
  }
}

// Session::start(): Config::control, unless the environment's variables say otherwise.
void on_session_start(const Config& config) {
  if (t_control_thread) return;  // a session the channel starts: the channel stays as it is
  Channel& ch = channel();
  std::lock_guard<std::mutex> lock(ch.mutex);
  if (!kOnByDefault && ch.control_variable == nullptr) return;
  control::ChannelSettings s;
  s.enabled = config.control.enabled;
  s.path = config.control.path;
  s.allow_root = config.control.allow_root;
  s.given = true;
  if (!s.path.empty() && (s.path.front() != '/' || s.path.back() == '/')) {
    std::fprintf(stderr, "ringtrace: Config::control.path '%s' is not an absolute path; the channel stays as it is\n",
                 s.path.c_str());
    return;
  }
  const control::ChannelSettings env = control::settings_from_environment(ch.control_variable, ch.root_variable);
  if (!env.error.empty()) return;  // said at the start; no channel
  if (ch.control_variable != nullptr) {
    s.enabled = env.enabled;
    s.path = env.path;
  }
  if (ch.root_variable != nullptr) s.allow_root = env.allow_root;
  // Before the thread opened what the program's start asked for: this replaces it.
  ch.pending.reset();
  ch.settled.notify_all();
  apply(ch, s);
}

}  // namespace

void start_control_channel() noexcept {
  try {
    Channel& ch = channel();
    std::lock_guard<std::mutex> lock(ch.mutex);
    if (ch.started) return;
    ch.started = true;
    // Kept for Session::start(): the program may change its environment meanwhile.
    if (const char* v = std::getenv("RINGTRACE_CONTROL")) ch.control_variable = ::strdup(v);
    if (const char* v = std::getenv("RINGTRACE_CONTROL_ROOT")) ch.root_variable = ::strdup(v);
    control::ChannelSettings s = control::settings_from_environment(ch.control_variable, ch.root_variable);
    if (!s.error.empty()) std::fprintf(stderr, "ringtrace: %s; this process has no control channel\n", s.error.c_str());
    if (!kOnByDefault && ch.control_variable == nullptr) s.enabled = false;
    std::atexit(close_at_exit);
    std::at_quick_exit(close_at_exit);
    pthread_atfork(before_fork, after_fork_in_parent, after_fork_in_child);
    set_control_hook(on_session_start);
    if (!s.enabled || !traceable()) return apply(ch, s);  // no thread: none, or only why
    // Nothing that waits on the program's start: the thread opens the socket (serve()).
    ch.pending = s;
    if (!start_thread(ch)) ch.pending.reset();
  } catch (...) {  // no memory at the program's start: no channel, the program runs on
  }
}

namespace {
// The channel once its thread has opened (or failed to open) the socket the program's
// start asked for, asked to do it now: at most 10 s.
std::unique_lock<std::mutex> settled_channel() {
  Channel& ch = channel();
  std::unique_lock<std::mutex> lock(ch.mutex);
  ch.open_now = true;
  ch.settled.notify_all();
  ch.settled.wait_for(lock, std::chrono::seconds(10), [&] { return !ch.pending; });
  return lock;
}
}  // namespace

std::string control_socket_path() {
  const std::unique_lock<std::mutex> lock = settled_channel();
  return channel().listener.path;
}

std::string control_channel_error() {
  const std::unique_lock<std::mutex> lock = settled_channel();
  return channel().error;
}

bool on_control_thread() noexcept { return t_control_thread; }

namespace {

// At exit (and quick_exit): a request being served ends first, then nothing more is
// served and the socket's file goes. The thread stays blocked (the process is ending).
void close_at_exit() {
  Channel& ch = channel();
  std::lock_guard<std::mutex> work(ch.work);
  std::lock_guard<std::mutex> lock(ch.mutex);
  ch.exiting = true;
  remove_socket_file(ch.listener);
}

// fork: the channel's fields are held still across it (the mutex is held briefly, for a
// few system calls at most, never while a request is served), so that the child finds
// them whole. The child has none of the parent's channel (its thread is not there, its
// socket is the parent's and stays); its copies of the descriptors are closed. A session
// the child starts opens its own.
void before_fork() { channel().mutex.lock(); }
void after_fork_in_parent() { channel().mutex.unlock(); }

void after_fork_in_child() {
  for (auto& slot : g_fds) {
    const int held = slot.exchange(0);
    if (held != 0) ::close(held - 1);
  }
  Channel& ch = channel();
  ch.pending.reset();
  ch.open_now = false;
  ch.listener = Listener{};
  ch.setting_path.clear();
  ch.retired.clear();
  ch.sweep.clear();
  ch.thread_running = false;
  ch.wake_fd = -1;
  // The parent's thread may have held the lock of its work (serving a request), and waited
  // on `settled` (a waiter the child would wait for in a broadcast).
  new (&ch.work) std::mutex();
  new (&ch.settled) std::condition_variable();
  ch.mutex.unlock();  // taken by before_fork, in this thread
}

// The thread: what the settings ask for, then poll, accept and serve, until the channel
// closes (its thread then ends) or the process exits.
void serve() {
  t_control_thread = true;
  mark_thread_untraced();
  pthread_setname_np(pthread_self(), "ringtrace-ctl");
  Channel& ch = channel();
  ConnectionSet connections;
  {
    // What the program's start asked for, opened here kOpenAfter later (or when asked).
    // close_at_exit() and a fork wait for the opening (a few system calls), so that no
    // socket is made after the exit's cleanup; not for the wait before it.
    std::unique_lock<std::mutex> lock(ch.mutex);
    ch.settled.wait_for(lock, kOpenAfter, [&] { return !ch.pending || ch.open_now || ch.exiting; });
    connections.reserve();
    if (ch.pending) {
      const control::ChannelSettings s = *ch.pending;
      apply(ch, s);
      ch.pending.reset();
      ch.settled.notify_all();
    }
  }
  for (;;) {
    int listen_fd = -1;
    int wake_fd = -1;
    bool allow_root = false;
    std::string sweep;
    {
      std::lock_guard<std::mutex> lock(ch.mutex);
      if (ch.exiting) return;
      for (const int fd : ch.retired) close_fd(fd);
      ch.retired.clear();
      if (ch.listener.fd < 0) {
        // Closed (Config::control): the connections go, and so does the thread.
        ch.thread_running = false;
        close_fd(ch.wake_fd);
        ch.wake_fd = -1;
        break;
      }
      listen_fd = ch.listener.fd;
      wake_fd = ch.wake_fd;
      allow_root = ch.allow_root;
      sweep.swap(ch.sweep);
      // Under the lock, which a fork waits for: the sweep allocates (a directory's
      // entries), and a fork child must not inherit an allocator held by this thread.
      if (!sweep.empty()) sweep_stale(sweep);
    }
    connections.poll_once(listen_fd, wake_fd, allow_root, ch.work, [&] {
      std::lock_guard<std::mutex> lock(ch.mutex);
      return ch.exiting;
    });
  }
  std::lock_guard<std::mutex> work(ch.work);
  connections.close_all();
}

}  // namespace

// The descriptors of the thread's connections, for the fork child.
void hold_connection_fd(int fd) { hold_fd(fd); }
void close_connection_fd(int fd) { close_fd(fd); }

}  // namespace ringtrace::detail
