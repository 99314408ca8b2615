// Opening files safely: the temporary a run writes beside its output, the checks of an
// output path, and inputs that never block. Every failure throws std::runtime_error
// naming the file and the operating system's reason. The naming rule is in
// <ringtrace/files.hpp>.
#pragma once

#include <string>

namespace ringtrace::detail {

// A file created by create_temporary(): its descriptor (close-on-exec) and its name.
struct TemporaryFile {
  int fd = -1;
  std::string path;
};

// Creates `<output>.partial.XXXXXXXX` in the directory of `output`: exclusively
// (O_CREAT | O_EXCL | O_NOFOLLOW, so never a file or link that exists), with a random
// name another process cannot guess, mode 0644 less the umask. `access` is O_WRONLY
// or O_RDWR. Throws naming `output` when it cannot (directory missing or read-only,
// name too long, a file system that creates nothing, as /sys even for root).
TemporaryFile create_temporary(const std::string& output, int access);

// Whether the temporary can be made: creates one and removes it at once. What a
// factory calls so that a bad path fails at the call, before anything is written.
void check_temporary(const std::string& output);

// Refuses (throws naming it) an output path that is a directory, or that exists and,
// following symbolic links, is no regular file: a FIFO (opening it would block until a
// reader comes), a device, a socket. Standard output is written through the factories'
// std::ostream overloads (the tool's '-'), never through a path.
void check_output_path(const std::string& output);

// Opens `path` for reading: O_RDONLY | O_NONBLOCK | O_CLOEXEC (a FIFO does not block),
// refuses anything but a regular file (following symbolic links), then clears
// O_NONBLOCK. The caller owns the descriptor (fdopen() it for stdio).
int open_input(const std::string& path);

}  // namespace ringtrace::detail
