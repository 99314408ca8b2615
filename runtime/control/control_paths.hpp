// Where a process's control socket is (docs/control.md, "Where the socket is"): the rule
// the process follows to create it and the `ringtrace` tool follows to find it.
//   RINGTRACE_CONTROL       unset, "", "1" or "on": the default path; "0" or "off": no
//                           channel; otherwise the socket's absolute path ("%p": the pid)
//   RINGTRACE_CONTROL_ROOT  "1": root may use the channel of another user's process
// The default path is <directory>/<pid>.sock, the directory $XDG_RUNTIME_DIR/ringtrace
// when XDG_RUNTIME_DIR is a directory of the user's that no one else may write, else
// /tmp/ringtrace-<uid>; either is created with mode 0700 and used only while it is a
// directory (not a link) owned by the user with no permission for anyone else.
#pragma once

#include <sys/types.h>

#include <string>

namespace ringtrace::control {

struct ChannelSettings {
  bool enabled = true;
  std::string path;  // the socket's path ("%p" not yet replaced); "" the default
  bool allow_root = false;
  bool given = false;  // RINGTRACE_CONTROL was set: a channel that cannot open says why
  std::string error;   // a variable's value is wrong: no channel
};

// The settings the two variables' values give (nullptr: unset).
ChannelSettings settings_from_environment(const char* control, const char* root);

// "%p" in `path` replaced by `pid`.
std::string with_pid(std::string path, long pid);

// The default directory for user `uid`, given $XDG_RUNTIME_DIR's value (nullptr: unset).
std::string default_directory(const char* xdg_runtime_dir, uid_t uid);
// The socket's file name in that directory.
std::string default_socket_name(long pid);

// Checks that `dir` is a private directory of `uid` (a directory, not a symbolic link,
// owned by uid, mode without group or other bits), creating it (mode 0700) first when
// `create` and it does not exist. "" when it is; else why not, naming it.
std::string private_directory(const std::string& dir, uid_t uid, bool create);

// Whether `path` fits in a Unix socket address (sun_path, 107 bytes and a NUL).
bool fits_socket_address(const std::string& path);

}  // namespace ringtrace::control
