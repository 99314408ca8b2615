// What the point tests of issue 42 share: a fresh directory, `ringtrace record` of a test
// program with the counting preload beside it, and the tool's outputs of its files.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include "truth.hpp"

namespace truth_test {

namespace fs = std::filesystem;

inline std::string dir_prefix() { return "ringtrace-truth-" + std::to_string(::getpid()) + "-"; }

// A directory of its own for `name`, in the temporary directory; the test's directories
// are removed when it passes (RemoveDirsWhenPassed), kept to look at when it fails.
inline fs::path fresh_dir(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / (dir_prefix() + name);
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

class RemoveDirsWhenPassed : public ::testing::Environment {
 public:
  void TearDown() override {
    if (!::testing::UnitTest::GetInstance()->Passed()) return;
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(fs::temp_directory_path(), ec)) {
      if (entry.path().filename().string().rfind(dir_prefix(), 0) == 0) fs::remove_all(entry.path(), ec);
    }
  }
};

inline memtruth::Run tool(std::vector<std::string> args) {
  args.insert(args.begin(), RINGTRACE_TOOL);
  return memtruth::run(args);
}

struct Recording {
  fs::path dir;
  std::vector<std::string> command;
  memtruth::Run run;  // record's (the program's output is in it)

  // The binary files written whole (run.<pid>.rtrace), by pid.
  std::vector<std::pair<std::uint64_t, fs::path>> files() const {
    std::vector<std::pair<std::uint64_t, fs::path>> out;
    for (const auto& entry : fs::directory_iterator(dir)) {
      const std::string name = entry.path().filename().string();
      if (name.rfind("run.", 0) == 0 && name.size() > 11 && name.substr(name.size() - 7) == ".rtrace") {
        out.emplace_back(std::stoull(name.substr(4, name.size() - 11)), entry.path());
      }
    }
    return out;
  }
  fs::path file_of(std::uint64_t pid) const { return dir / ("run." + std::to_string(pid) + ".rtrace"); }
  memtruth::CounterFile counter_of(std::uint64_t pid) const {
    return memtruth::read_counter_file(dir / ("c." + std::to_string(pid)));
  }
  std::string describe() const {
    return memtruth::shell_words(command) + " (exit " + std::to_string(run.status) + ")\nstderr: " + run.err +
           "\nstdout: " + run.out + "\nfiles in " + dir.string();
  }
};

// `ringtrace record OPTIONS -o DIR/run.%p.rtrace -- PROGRAM...`, the counter preloaded
// beside (after ringtrace's preload, so that it counts what reaches the C library),
// writing DIR/c.<pid> for every process that opens a window (`counter` false: without it);
// `before`: a command that runs record (setarch -R).
inline Recording record(const std::string& name, const std::vector<std::string>& options,
                        const std::vector<std::string>& program,
                        const std::vector<std::pair<std::string, std::string>>& env = {}, bool counter = true,
                        const std::vector<std::string>& before = {}) {
  Recording r;
  r.dir = fresh_dir(name);
  r.command = before;
  r.command.insert(r.command.end(), {RINGTRACE_TOOL, "record"});
  r.command.insert(r.command.end(), options.begin(), options.end());
  r.command.insert(r.command.end(), {"-o", (r.dir / "run.%p.rtrace").string(), "--"});
  r.command.insert(r.command.end(), program.begin(), program.end());
  std::vector<std::pair<std::string, std::string>> set;
  if (counter) set = {{"LD_PRELOAD", MEMTRUTH_COUNTER}, {"MEMTRUTH_OUTPUT", (r.dir / "c.%p").string()}};
  set.insert(set.end(), env.begin(), env.end());
  std::vector<std::string> unset = {"RINGTRACE_OUTPUT", "RINGTRACE_MEMORY"};
  if (!counter) unset.push_back("LD_PRELOAD");
  r.run = memtruth::run(r.command, set, unset, r.dir);
  return r;
}

inline std::string dump_of(const fs::path& file) { return tool({"dump", file.string()}).out; }
inline std::string info_of(const fs::path& file) { return tool({"info", file.string()}).out; }
inline std::string report_of(const fs::path& file, std::vector<std::string> more = {}) {
  more.insert(more.begin(), {"report", file.string()});
  return tool(more).out;
}

}  // namespace truth_test
