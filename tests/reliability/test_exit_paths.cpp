// Every way a program ends while a session runs leaves complete files, or, when it is
// killed, leaves the previous run's files as they were.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "ringtrace/files.hpp"

namespace {

namespace fs = std::filesystem;

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// Runs exit_child <mode> <dir>; returns its wait status.
int run_child(const std::string& mode, const fs::path& dir) {
  const pid_t pid = fork();
  if (pid == 0) {
    // The "heap" mode leaks its Session on purpose: that is the case it tests.
    setenv("ASAN_OPTIONS", "detect_leaks=0", 1);
    execl(RINGTRACE_EXIT_CHILD, RINGTRACE_EXIT_CHILD, mode.c_str(), dir.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  return status;
}

fs::path fresh_dir(const std::string& mode) {
  const fs::path dir = fs::temp_directory_path() / ("ringtrace_exit_" + std::to_string(::getpid())) / mode;
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

bool chrome_loads(const fs::path& path) {
  const std::string check =
      "python3 -c \"import json,sys; e=json.load(open(sys.argv[1])); "
      "sys.exit(0 if sum(1 for x in e if x.get('name')=='work' and x['ph']=='X')==100 else 3)\" " +
      path.string();
  return std::system(check.c_str()) == 0;
}

class ExitPath : public ::testing::TestWithParam<const char*> {};

TEST_P(ExitPath, EveryFileIsCompleteAndValid) {
  const std::string mode = GetParam();
  const fs::path dir = fresh_dir(mode);
  const int status = run_child(mode, dir);
  if (mode == "sigterm" || mode == "sigint") {
    ASSERT_TRUE(WIFSIGNALED(status)) << "the process must end by the signal it got";
    EXPECT_EQ(WTERMSIG(status), mode == "sigterm" ? SIGTERM : SIGINT);
  } else {
    ASSERT_TRUE(WIFEXITED(status)) << "killed by signal " << (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
    EXPECT_EQ(WEXITSTATUS(status), 0);
  }
  const std::string folded = read_file(dir / "trace.folded");
  if (mode == "exit_worker") {
    EXPECT_NE(folded.find("work 100\n"), std::string::npos) << folded;
  } else {
    EXPECT_EQ(folded, "work 100\n");
  }
  EXPECT_TRUE(chrome_loads(dir / "trace.json"));
  EXPECT_TRUE(ringtrace::partial_files(dir / "trace.json").empty()) << "a finished run leaves no temporary";
}

INSTANTIATE_TEST_SUITE_P(Modes, ExitPath,
                         ::testing::Values("return_main", "exit", "exit_worker", "quick_exit", "global",
                                           "function_static", "heap", "sigterm", "sigint"));

TEST(ExitPath, AbortKeepsThePreviousRunsFiles) {
  const fs::path dir = fresh_dir("abort");
  ASSERT_TRUE(WIFEXITED(run_child("return_main", dir)));
  const std::string folded = read_file(dir / "trace.folded"), chrome = read_file(dir / "trace.json");
  ASSERT_EQ(folded, "work 100\n");
  const int status = run_child("abort", dir);
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT);
  EXPECT_EQ(read_file(dir / "trace.folded"), folded);
  EXPECT_EQ(read_file(dir / "trace.json"), chrome);
}

}  // namespace
