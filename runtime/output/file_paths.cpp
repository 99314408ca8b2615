#include "file_paths.hpp"

#include <fcntl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <string_view>

#include "ringtrace/files.hpp"

namespace ringtrace::detail {
namespace {

constexpr std::string_view kPartial = ".partial.";
constexpr std::size_t kRandomChars = 8;
constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
constexpr std::size_t kAlphabetSize = sizeof(kAlphabet) - 1;

[[noreturn]] void fail(const std::string& what, const std::string& name, int error) {
  throw std::runtime_error("ringtrace: cannot " + what + " '" + name + "': " + std::strerror(error));
}

[[noreturn]] void not_regular(const std::string& what, const std::string& name, mode_t mode) {
  const char* kind = S_ISFIFO(mode)                   ? "a FIFO"
                     : S_ISCHR(mode) || S_ISBLK(mode) ? "a device"
                     : S_ISSOCK(mode)                 ? "a socket"
                                                      : "not a regular file";
  throw std::runtime_error("ringtrace: cannot " + what + " '" + name + "': it is " + kind + ", not a regular file" +
                           (what == "read" ? "" : " (write to standard output through '-' or a std::ostream)"));
}

// Eight characters of [A-Za-z0-9] from the kernel's generator; should it fail (very
// early boot, a seccomp filter), from the clock, the pid and a counter: O_EXCL keeps the
// name ours either way, the randomness keeps it from being guessed in advance.
std::string random_suffix() {
  unsigned char bytes[kRandomChars];
  if (::getrandom(bytes, sizeof bytes, GRND_NONBLOCK) != static_cast<ssize_t>(sizeof bytes)) {
    static std::atomic<std::uint64_t> counter{0};
    timespec ts{};
    ::clock_gettime(CLOCK_MONOTONIC, &ts);
    std::uint64_t x = static_cast<std::uint64_t>(ts.tv_nsec) ^ (static_cast<std::uint64_t>(ts.tv_sec) << 30) ^
                      (static_cast<std::uint64_t>(::getpid()) << 40) ^ counter.fetch_add(0x9E3779B97F4A7C15u);
    for (unsigned char& b : bytes) {
      x ^= x >> 33;
      x *= 0xFF51AFD7ED558CCDu;
      x ^= x >> 29;
      b = static_cast<unsigned char>(x);
    }
  }
  std::string out;
  for (const unsigned char b : bytes) out.push_back(kAlphabet[b % kAlphabetSize]);
  return out;
}

bool is_rule_suffix(std::string_view s) {
  return s.size() == kRandomChars && std::all_of(s.begin(), s.end(), [](char c) {
           return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
         });
}

}  // namespace

TemporaryFile create_temporary(const std::string& output, int access) {
  // A name taken (by another run, or planted) is skipped; a hundred collisions in a row
  // of 62^8 names is a directory someone fills on purpose.
  for (int attempt = 0; attempt < 100; ++attempt) {
    std::string path = output;
    path.append(kPartial).append(random_suffix());
    const int fd = ::open(path.c_str(), access | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd >= 0) return TemporaryFile{fd, std::move(path)};
    if (errno != EEXIST) fail("open for writing", output, errno);
  }
  fail("open for writing", output, EEXIST);
}

void check_temporary(const std::string& output) {
  const TemporaryFile probe = create_temporary(output, O_WRONLY);
  ::close(probe.fd);
  ::unlink(probe.path.c_str());
}

void check_output_path(const std::string& output) {
  struct stat st {};
  if (::stat(output.c_str(), &st) != 0) {
    // Missing (it will be created), or a dangling link (replaced): the temporary's
    // creation tells the rest.
    if (errno == ENOENT) return;
    // ENOTDIR, ELOOP, EACCES on the way: the path cannot be written.
    fail("open for writing", output, errno);
  }
  if (S_ISDIR(st.st_mode)) fail("open for writing", output, EISDIR);
  if (!S_ISREG(st.st_mode)) not_regular("write", output, st.st_mode);
}

int open_input(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) fail("open", path, errno);
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int error = errno;
    ::close(fd);
    fail("open", path, error);
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    if (S_ISDIR(st.st_mode)) fail("read", path, EISDIR);
    not_regular("read", path, st.st_mode);
  }
  // Reads of a regular file never return EAGAIN, but stdio is handed a plain descriptor.
  const int flags = ::fcntl(fd, F_GETFL);
  if (flags < 0 || ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) != 0) {
    const int error = errno;
    ::close(fd);
    fail("open", path, error);
  }
  return fd;
}

}  // namespace ringtrace::detail

namespace ringtrace {

std::vector<std::filesystem::path> partial_files(const std::filesystem::path& output) {
  namespace fs = std::filesystem;
  const fs::path dir = output.has_parent_path() ? output.parent_path() : fs::path(".");
  const std::string prefix = output.filename().string() + std::string(detail::kPartial);
  std::vector<std::pair<fs::file_time_type, fs::path>> found;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.size() != prefix.size() + detail::kRandomChars || name.compare(0, prefix.size(), prefix) != 0) continue;
    if (!detail::is_rule_suffix(std::string_view(name).substr(prefix.size()))) continue;
    std::error_code time_error;
    const fs::file_time_type time = fs::last_write_time(it->path(), time_error);
    found.emplace_back(time_error ? fs::file_time_type::min() : time,
                       output.has_parent_path() ? dir / name : fs::path(name));
  }
  std::sort(found.begin(), found.end());
  std::vector<fs::path> out;
  for (auto& f : found) out.push_back(std::move(f.second));
  return out;
}

std::filesystem::path output_of_partial(const std::filesystem::path& path) {
  const std::string name = path.filename().string();
  const std::size_t at = name.rfind(detail::kPartial);
  if (at == std::string::npos || at == 0 || at + detail::kPartial.size() + detail::kRandomChars != name.size() ||
      !detail::is_rule_suffix(std::string_view(name).substr(at + detail::kPartial.size()))) {
    return {};
  }
  return path.has_parent_path() ? path.parent_path() / name.substr(0, at) : std::filesystem::path(name.substr(0, at));
}

void check_input_file(const std::filesystem::path& path) { ::close(detail::open_input(path.string())); }

void check_output_file(const std::filesystem::path& path) {
  detail::check_output_path(path.string());
  detail::check_temporary(path.string());
}

bool same_file(const std::filesystem::path& a, const std::filesystem::path& b) {
  if (output_path_key(a) == output_path_key(b)) return true;
  std::error_code ec;
  return std::filesystem::equivalent(a, b, ec) && !ec;
}

}  // namespace ringtrace
