// The recordings a command-line argument names: a file, or a directory of .rtrace files
// (commands.hpp, trace_files).
#include <algorithm>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <system_error>
#include <vector>

#include "commands.hpp"

namespace ringtrace::tool {

std::vector<std::string> trace_files(const std::string& argument) {
  std::error_code error;
  if (!std::filesystem::is_directory(argument, error)) return {argument};  // check_input() says what is wrong
  std::vector<std::string> files;
  std::filesystem::recursive_directory_iterator it(argument, error), end;
  for (; !error && it != end; it.increment(error)) {
    const std::filesystem::path& path = it->path();
    std::error_code ignored;
    if (path.extension() == ".rtrace" && !it->is_directory(ignored)) files.push_back(path.string());
  }
  if (error) throw std::runtime_error("cannot read '" + argument + "': " + error.message());
  if (files.empty()) throw std::runtime_error("'" + argument + "' holds no .rtrace file");
  std::sort(files.begin(), files.end());
  return files;
}

}  // namespace ringtrace::tool
