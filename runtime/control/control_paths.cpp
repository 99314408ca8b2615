#include "control_paths.hpp"

#include <sys/stat.h>
#include <sys/un.h>

#include <cerrno>
#include <cstring>

namespace ringtrace::control {

ChannelSettings settings_from_environment(const char* control, const char* root) {
  ChannelSettings s;
  if (root != nullptr) {
    const std::string r = root;
    if (r == "1") {
      s.allow_root = true;
    } else if (r != "0" && !r.empty()) {
      s.error = "RINGTRACE_CONTROL_ROOT: '" + r + "' is neither 1 nor 0";
      s.enabled = false;
      return s;
    }
  }
  if (control == nullptr) return s;
  const std::string c = control;
  s.given = !c.empty();
  if (c.empty() || c == "1" || c == "on") return s;
  if (c == "0" || c == "off") {
    s.enabled = false;
    return s;
  }
  if (c.front() != '/' || c.back() == '/') {
    s.error = "RINGTRACE_CONTROL: '" + c + "' is neither on, off nor the absolute path of a socket";
    s.enabled = false;
    return s;
  }
  s.path = c;
  return s;
}

std::string with_pid(std::string path, long pid) {
  const std::string id = std::to_string(pid);
  for (std::size_t at = path.find("%p"); at != std::string::npos; at = path.find("%p", at + id.size())) {
    path.replace(at, 2, id);
  }
  return path;
}

std::string default_directory(const char* xdg_runtime_dir, uid_t uid) {
  if (xdg_runtime_dir != nullptr && xdg_runtime_dir[0] == '/') {
    struct stat st {};
    if (::lstat(xdg_runtime_dir, &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == uid && (st.st_mode & 022) == 0) {
      std::string dir = xdg_runtime_dir;
      while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
      return dir + "/ringtrace";
    }
  }
  return "/tmp/ringtrace-" + std::to_string(uid);
}

std::string default_socket_name(long pid) { return std::to_string(pid) + ".sock"; }

std::string private_directory(const std::string& dir, uid_t uid, bool create) {
  if (create && ::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
    return "cannot create the directory " + dir + ": " + std::strerror(errno);
  }
  struct stat st {};
  if (::lstat(dir.c_str(), &st) != 0) return dir + ": " + std::strerror(errno);
  if (S_ISLNK(st.st_mode)) return dir + " is a symbolic link, not a directory";
  if (!S_ISDIR(st.st_mode)) return dir + " is not a directory";
  if (st.st_uid != uid) {
    return dir + " belongs to uid " + std::to_string(st.st_uid) + ", not to uid " + std::to_string(uid);
  }
  if ((st.st_mode & 077) != 0) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
    return dir + " has mode " + mode + ": others may use it (it must be 0700)";
  }
  return {};
}

bool fits_socket_address(const std::string& path) { return path.size() < sizeof(sockaddr_un{}.sun_path); }

}  // namespace ringtrace::control
