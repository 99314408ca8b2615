// Offline symbolization: a recorder process writes its module list and function addresses
// to a file and exits; this process symbolizes them from the file alone.
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>

#include "record_format.hpp"
#include "symbols_test_support.hpp"

extern char** environ;

namespace {

using namespace symbols_test;
using ringtrace::symbols::find_module;
using ringtrace::symbols::Symbolizer;

// Runs `program` to write its recording, waits for it to exit, reads the file.
fixture::Recording record_with(const std::string& program, const TempDir& dir) {
  const std::string out = (dir.path() / "recording.txt").string();
  std::vector<char*> argv{const_cast<char*>(program.c_str()), const_cast<char*>(out.c_str()),
                          const_cast<char*>(SYMBOLS_FIXTURE_LIB), nullptr};
  pid_t pid = 0;
  fixture::Recording recording;
  if (posix_spawn(&pid, program.c_str(), nullptr, nullptr, argv.data(), environ) != 0) {
    ADD_FAILURE() << "cannot run " << program;
    return recording;
  }
  int status = 0;
  waitpid(pid, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << program << " status " << status;
  EXPECT_TRUE(fixture::read_recording(out, recording));
  EXPECT_EQ(recording.pid, static_cast<long>(pid));
  EXPECT_NE(recording.pid, static_cast<long>(getpid()));
  // Gone (and reaped): nothing of it is left to read but the files.
  EXPECT_EQ(kill(pid, 0), -1);
  EXPECT_EQ(errno, ESRCH);
  return recording;
}

TEST(Offline, SymbolizesAProcessThatHasExited) {
  TempDir dir;
  const fixture::Recording recording = record_with(SYMBOLS_RECORDER, dir);
  ASSERT_FALSE(recording.modules.empty());
  ASSERT_EQ(recording.functions.size(), fixture::main_program_functions().size() + 1 + 5);
  EXPECT_EQ(recording.modules.front().path, fs::canonical(SYMBOLS_RECORDER).string());

  Symbolizer symbolizer(recording.modules);
  int in_program = 0, in_library = 0;
  for (const auto& function : recording.functions) {
    const auto* module = find_module(recording.modules, function.address);
    ASSERT_NE(module, nullptr) << function.name;
    in_program += module == &recording.modules.front();
    in_library += module->path == SYMBOLS_FIXTURE_LIB;
    expect_function(symbolizer.resolve(function.address), function.name, function.file.c_str(), function.line,
                    module->path);
  }
  EXPECT_EQ(in_program, static_cast<int>(fixture::main_program_functions().size()) + 1);
  EXPECT_EQ(in_library, 5);
  EXPECT_TRUE(symbolizer.problems().empty()) << testing::PrintToString(symbolizer.problems());
}

// The recorder stripped (no symbol table, no DWARF): its own functions come out as
// "<program>+0x<offset>", the library's still by name.
TEST(Offline, AStrippedProgramGivesModulePlusOffset) {
  TempDir dir;
  const fixture::Recording recording = record_with(SYMBOLS_RECORDER_STRIPPED, dir);
  ASSERT_FALSE(recording.modules.empty());
  const auto& program = recording.modules.front();
  EXPECT_EQ(program.path, fs::canonical(SYMBOLS_RECORDER_STRIPPED).string());

  Symbolizer symbolizer(recording.modules);
  for (const auto& function : recording.functions) {
    const auto* module = find_module(recording.modules, function.address);
    ASSERT_NE(module, nullptr) << function.name;
    const auto& symbol = symbolizer.resolve(function.address);
    if (module == &program) {
      EXPECT_FALSE(symbol.resolved) << function.name;
      EXPECT_EQ(symbol.function, "symbols_recorder.stripped+" + hex(function.address - program.base));
      EXPECT_EQ(symbol.module, program.path);
      EXPECT_EQ(symbol.line, 0u);
    } else {
      expect_function(symbol, function.name, function.file.c_str(), function.line, module->path);
    }
  }
  EXPECT_TRUE(has_problem(symbolizer.problems(), {program.path, "no DWARF"}))
      << testing::PrintToString(symbolizer.problems());
}

}  // namespace
