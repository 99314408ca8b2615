// Files ringtrace writes and reads: where a run's output is while it is being written,
// and the checks every exporter factory and the `ringtrace` tool make (see
// docs/reliability.md, "Exporters and their files").
//
// The rule: a file exporter writes `<path>.partial.XXXXXXXX` (eight random characters
// of [A-Za-z0-9]) in the directory of `path`, created exclusively (never through a
// symbolic link, never a file that exists), mode 0644 less the umask, and renames it to
// `path` when the run finishes (a symbolic link at `path` is replaced, its target left
// alone). A run that never finishes (SIGKILL, a crash) leaves its temporary there; two
// runs writing one path at once write two temporaries, and the last to finish owns
// `path`. partial_files() lists the temporaries of a path.
#pragma once

#include "ringtrace/requires_cxx20.hpp"  // first: one clear error below C++20

#include <filesystem>    // paths
#include <system_error>  // error codes of weakly_canonical
#include <vector>        // several temporaries

#include "ringtrace/detail/platform.hpp"  // RINGTRACE_API

namespace ringtrace {

// The temporaries of `output` (finished or not, of this process or another), oldest
// first by modification time; empty when there are none or the directory cannot be read.
RINGTRACE_API std::vector<std::filesystem::path> partial_files(const std::filesystem::path& output);

// The output a temporary belongs to (`run.rtrace.partial.Ab3dE6fG` -> `run.rtrace`), or
// an empty path when `path` is not named by the rule.
RINGTRACE_API std::filesystem::path output_of_partial(const std::filesystem::path& path);

// Throws std::runtime_error naming `path` unless it names a regular file that can be
// opened for reading (following symbolic links). Never blocks: a FIFO is refused, not
// opened for a writer that may never come.
RINGTRACE_API void check_input_file(const std::filesystem::path& path);

// Throws std::runtime_error naming `path` unless a file exporter could write it: it is a
// directory, or exists and (following links) is no regular file (a FIFO, a device), or
// no file can be created beside it (one is created and removed to know). What every
// factory checks; for a program that writes through the library later.
RINGTRACE_API void check_output_file(const std::filesystem::path& path);

// What two output paths are compared by (Session::add_exporter, a window's exporters,
// `ringtrace convert`): the absolute path with `.`, `..` and the symbolic links of its
// existing part resolved, so `dir/../dir/x` and `dir/x` are one file.
RINGTRACE_NO_INSTRUMENT inline std::filesystem::path output_path_key(const std::filesystem::path& path) {
  std::error_code ignored;
  const std::filesystem::path canonical = std::filesystem::weakly_canonical(path, ignored);
  return canonical.empty() ? path.lexically_normal() : canonical;
}

// Whether two paths name one file: the same key, or both exist and are the same file
// (hard links, bind mounts, a link the key cannot see through).
RINGTRACE_API bool same_file(const std::filesystem::path& a, const std::filesystem::path& b);

}  // namespace ringtrace
