// The configuration matrix's memory configurations (issue 42; spec.hpp lists them and
// why these): the memory workload (memory_workload.cpp) in a process of its own per
// configuration, recorded as the configuration says (Session in code, RINGTRACE_OUTPUT by
// hand, `ringtrace record --memory`), its files checked by memory_checker.cpp against the
// counting preload's windows (tests/memtruth), or the workload's own count where the
// preload cannot run (under a sanitizer). Until the files say what they left out
// (sampled out, nested, past the limit, dropped), any difference is a failure.
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "memory_checker.hpp"
#include "run_child.hpp"
#include "spec.hpp"

namespace matrix {
void PrintTo(const MemoryConfig& config, std::ostream* out) { *out << name_of(config); }
}  // namespace matrix

namespace {

using namespace matrix;
namespace fs = std::filesystem;

double test_scale() {
  const char* text = std::getenv("RINGTRACE_TEST_SCALE");
  const double scale = text != nullptr ? std::atof(text) : 1.0;
  return scale > 0 ? scale : 1.0;
}

std::vector<MemoryConfig> runnable_configs() {
  std::vector<MemoryConfig> out;
  for (const MemoryConfig& c : memory_configs()) {
#ifndef MATRIX_RECORD_MEMORY
    if (c.recorded_by_tool()) continue;  // no `record --memory` here (a sanitizer's build)
#endif
    out.push_back(c);
  }
  return out;
}

// The workload's command line and environment for a configuration.
std::pair<std::vector<std::string>, std::vector<std::pair<std::string, std::string>>> command_of(
    const MemoryConfig& config, const fs::path& dir) {
  std::vector<std::pair<std::string, std::string>> env;
#ifdef MATRIX_MEMTRUTH_COUNTER
  env.emplace_back("LD_PRELOAD", MATRIX_MEMTRUTH_COUNTER);
  env.emplace_back("MEMTRUTH_OUTPUT", (dir / "c.%p").string());
#endif
  const std::string policy = name_of(config.policy);
  const std::string buffer = config.policy == Policy::drop ? "512" : "4096";
  const std::string outputs[] = {(dir / "run.%p.rtrace").string(), (dir / "table.%p.txt").string(),
                                 (dir / "chrome.%p.json").string()};
  std::vector<std::string> args;
#ifdef MATRIX_RECORD_MEMORY
  if (config.recorded_by_tool()) {
    args = {MATRIX_RINGTRACE_TOOL,
            "record",
            "--memory",
            "--policy",
            policy,
            "--buffer",
            buffer,
            "-o",
            outputs[0],
            "--table",
            outputs[1],
            "--chrome",
            outputs[2],
            "--"};
  }
#endif
#ifdef MATRIX_MEMORY_PLAIN
  args.push_back(config.linked() ? MATRIX_MEMORY_WORKLOAD : MATRIX_MEMORY_PLAIN);
#else
  args.push_back(MATRIX_MEMORY_WORKLOAD);
#endif
  args.insert(args.end(), {name_of(config), dir.string(), kProgressFd});
  if (config.how == MemHow::env) {
    env.emplace_back("RINGTRACE_OUTPUT", "rtrace:" + outputs[0] + ",table:" + outputs[1] + ",chrome:" + outputs[2]);
    env.emplace_back("RINGTRACE_MEMORY", "1");
    env.emplace_back("RINGTRACE_POLICY", policy);
    env.emplace_back("RINGTRACE_BUFFER", buffer);
  }
  return {args, env};
}

class MemoryMatrix : public ::testing::TestWithParam<MemoryConfig> {};

TEST_P(MemoryMatrix, EveryRecordingMatchesTheTruth) {
  const MemoryConfig config = GetParam();
  const std::string name = name_of(config);
  const fs::path dir = fs::temp_directory_path() / ("ringtrace-matrix-" + std::to_string(::getpid()) + "-" + name);
  fs::remove_all(dir);
  fs::create_directories(dir);
  const auto [args, env] = command_of(config, dir);
  const double slow = test_scale() < 1 ? 4 : 1;
  const ChildRun run =
      run_child(args, env, dir, std::chrono::duration<double>(10 * slow), std::chrono::duration<double>(60 * slow));
  std::printf("[matrix] %s: workload %.2f s\n", name.c_str(), run.seconds);
  ASSERT_TRUE(run.started) << name << ": the workload could not be started: " << run.phase;
  std::vector<std::string> failures;
  if (run.hung) {
    failures.push_back("HUNG: no progress for " + std::to_string(run.stalled_for) + " s (" +
                       std::to_string(run.progress) + " done); killed. Its log: " + tail_of(dir / kChildLog, 800));
  } else if (!WIFEXITED(run.status) || WEXITSTATUS(run.status) != 0) {
    failures.push_back(std::string("the workload ") +
                       (WIFSIGNALED(run.status) ? "died of signal " + std::to_string(WTERMSIG(run.status))
                                                : "exited with status " + std::to_string(WEXITSTATUS(run.status))) +
                       ". Its log: " + tail_of(dir / kChildLog));
  }
  MemoryTools tools;
#ifdef MATRIX_RINGTRACE_TOOL
  tools.ringtrace = MATRIX_RINGTRACE_TOOL;
#endif
#ifdef MATRIX_PYTHON
  tools.python = MATRIX_PYTHON;
#endif
  tools.chrome_script = MATRIX_CHROME_SCRIPT;
#ifdef MATRIX_MEMTRUTH_COUNTER
  tools.counter = true;
#endif
  if (!run.hung && !tools.ringtrace.empty()) {
    for (const std::string& line : check_memory(config, dir, tools)) {
      if (line.rfind("note: ", 0) == 0) {
        std::printf("[matrix] %s: %s\n", name.c_str(), line.c_str());
      } else {
        failures.push_back(line);
      }
    }
  }
  std::fflush(stdout);
  if (failures.empty()) {
    fs::remove_all(dir);
    return;
  }
  std::string text = "configuration " + name + " (files kept in " + dir.string() + "):";
  for (const std::string& line : failures) text += "\n  " + line;
  ADD_FAILURE() << text;
}

INSTANTIATE_TEST_SUITE_P(MemoryConfigurations, MemoryMatrix, ::testing::ValuesIn(runnable_configs()),
                         [](const ::testing::TestParamInfo<MemoryConfig>& info) { return name_of(info.param); });

}  // namespace
