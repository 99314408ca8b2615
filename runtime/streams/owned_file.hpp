// For the live runtime, which may include only the core and the stream processors: files
// it creates under a fixed name (the ring file beside a binary trace, `<path>.rings`,
// which readers look for by that name). Created exclusively under a random name beside
// `path` and renamed onto it, so never written through a link planted at `path`, and
// never the file of another process recording to the same path (which keeps its own,
// now unnamed, file); removed only while `path` still names this file.
#pragma once

#include <filesystem>

namespace ringtrace::detail {

// A new file at `path` (mode 0644 less the umask), open with `access` (O_RDWR or
// O_WRONLY) and close-on-exec; whatever `path` named before (a file, a link) is replaced,
// never opened. Throws std::runtime_error naming `path`.
int create_owned_file(const std::filesystem::path& path, int access);

// Removes `path` if it still names the file open as `fd` (another process may have
// replaced it since); false when it did not.
bool remove_owned_file(const std::filesystem::path& path, int fd);

}  // namespace ringtrace::detail
