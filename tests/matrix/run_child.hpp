// A workload of the matrix in a process of its own, watched: killed when its progress
// ("phase count" lines it writes to a pipe) stands still too long.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

namespace matrix {

struct ChildRun {
  bool started = false;
  bool hung = false;
  int status = 0;
  std::string phase = "not started";
  std::uint64_t progress = 0;
  double seconds = 0;
  double stalled_for = 0;
};

// The argument that becomes the number of the progress pipe's descriptor.
inline constexpr const char* kProgressFd = "{progress-fd}";

// Runs args[0] (a path) with `args` (kProgressFd replaced), its environment this process's
// with `env` set, its output in dir/child.log; kills it when its progress stands still for
// `stall` (or the whole run passes `limit`).
ChildRun run_child(std::vector<std::string> args, const std::vector<std::pair<std::string, std::string>>& env,
                   const std::filesystem::path& dir, std::chrono::duration<double> stall,
                   std::chrono::duration<double> limit);

// The last `bytes` of a file, for messages.
std::string tail_of(const std::filesystem::path& file, std::size_t bytes = 1500);

}  // namespace matrix
