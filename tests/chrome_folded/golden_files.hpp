// Golden-file comparison for the Chrome/folded tests. RINGTRACE_UPDATE_GOLDEN=1 rewrites
// the files (review the diff before committing them).
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace ringtrace::testing {

inline std::string read_text(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

inline std::filesystem::path test_out_dir() {
  const std::filesystem::path dir = RINGTRACE_TEST_OUT_DIR;
  std::filesystem::create_directories(dir);
  return dir;
}

inline void expect_golden(const std::string& name, const std::string& actual) {
  const std::filesystem::path golden = std::filesystem::path(RINGTRACE_GOLDEN_DIR) / name;
  const char* update = std::getenv("RINGTRACE_UPDATE_GOLDEN");
  if (update != nullptr && std::string(update) == "1") {
    std::ofstream(golden, std::ios::binary) << actual;
    return;
  }
  const std::string expected = read_text(golden);
  if (expected != actual) {
    const std::filesystem::path out = test_out_dir() / name;
    std::ofstream(out, std::ios::binary) << actual;
    ADD_FAILURE() << "output differs from " << golden << "; actual output written to " << out << "\n--- expected\n"
                  << expected << "\n--- actual\n"
                  << actual;
  }
}

}  // namespace ringtrace::testing
