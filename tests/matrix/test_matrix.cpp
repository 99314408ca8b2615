// The configuration matrix (issue 31): one workload (tests/matrix/workload.cpp) run in
// a process of its own per configuration (clock source x overflow policy x outputs x
// context switches), every stream it leaves read back and checked by one checker
// (checker.cpp) that knows the workload, not the runtime. A configuration that stops
// making progress is killed and fails, naming the phase it was in.
#include <fcntl.h>
#include <linux/perf_event.h>
#include <signal.h>
#include <spawn.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "checker.hpp"
#include "run_child.hpp"
#include "spec.hpp"
#include "stream.hpp"

extern char** environ;

namespace matrix {
// gtest names the parameter with this (not the struct's bytes, padding included).
void PrintTo(const MatrixConfig& config, std::ostream* out) { *out << name_of(config); }
}  // namespace matrix

namespace {

using namespace matrix;
namespace fs = std::filesystem;

double test_scale() {
  const char* text = std::getenv("RINGTRACE_TEST_SCALE");
  if (text == nullptr) return 1.0;
  const double scale = std::atof(text);
  return scale > 0 ? scale : 1.0;
}

bool cpu_has_invariant_tsc() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("flags", 0) == 0) {
      return line.find(" constant_tsc") != std::string::npos && line.find(" nonstop_tsc") != std::string::npos;
    }
  }
  return false;
}

// Whether this machine lets a process read its threads' context switches: a
// perf_event_open of switch records on the calling thread, as the runtime's would be.
bool switches_allowed(std::string& why) {
  perf_event_attr attr{};
  attr.size = sizeof attr;
  attr.type = PERF_TYPE_SOFTWARE;
  attr.config = PERF_COUNT_SW_DUMMY;
  attr.context_switch = 1;
  attr.sample_id_all = 1;
  attr.sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_TIME;
  attr.exclude_kernel = 1;
  attr.disabled = 1;
  const long fd = ::syscall(SYS_perf_event_open, &attr, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
  if (fd < 0) {
    why = std::string("perf_event_open: ") + std::strerror(errno);
    return false;
  }
  ::close(static_cast<int>(fd));
  return true;
}

class Matrix : public ::testing::TestWithParam<MatrixConfig> {};

TEST_P(Matrix, EveryStreamPassesTheChecker) {
  const MatrixConfig config = GetParam();
  const std::string name = name_of(config);
  const double scale = test_scale();
  const fs::path dir = fs::temp_directory_path() / ("ringtrace-matrix-" + std::to_string(::getpid()) + "-" + name);
  fs::remove_all(dir);
  fs::create_directories(dir);

  // Bounded: a run normally takes well under a second (seconds under the sanitizers).
  const double slow = scale < 1 ? 4 : 1;
  const ChildRun run = run_child({MATRIX_WORKLOAD, name_of(config), dir.string(), kProgressFd}, {}, dir,
                                 std::chrono::duration<double>(5 * slow), std::chrono::duration<double>(40 * slow));
  std::vector<std::string> failures;
  std::printf("[matrix] %s: workload %.2f s\n", name.c_str(), run.seconds);
  if (!run.started) {
    FAIL() << name << ": the workload could not be started: " << run.phase;
  }
  if (run.hung) {
    failures.push_back("HUNG: no progress for " + std::to_string(run.stalled_for).substr(0, 4) + " s in phase '" +
                       run.phase + "' (" + std::to_string(run.progress) +
                       " iterations done); the workload was killed. Its log: " + tail_of(dir / kChildLog, 600));
  } else if (!WIFEXITED(run.status) || WEXITSTATUS(run.status) != 0) {
    failures.push_back(std::string("the workload ") +
                       (WIFSIGNALED(run.status) ? "died of signal " + std::to_string(WTERMSIG(run.status))
                                                : "exited with status " + std::to_string(WEXITSTATUS(run.status))) +
                       " in phase '" + run.phase + "'. Its log: " + tail_of(dir / kChildLog));
  }

  const Manifest manifest = read_manifest(dir / kManifestFile);
  if (failures.empty()) {
    if (!manifest.read || !manifest.done) {
      failures.push_back("the workload wrote no complete manifest");
    } else {
      if (!manifest.switches_unavailable.empty() && config.switches) {
        std::string why;
        if (switches_allowed(why)) {
          failures.push_back(
              "session: context switches unavailable (stats: '" + manifest.switches_unavailable +
              "'), yet this machine allows them (a perf_event_open of this process's switch records succeeds)");
        } else {
          std::printf(
              "[matrix] %s: context switches unavailable on this machine (%s; the test's own probe: %s): the run "
              "checks the rest\n",
              name.c_str(), manifest.switches_unavailable.c_str(), why.c_str());
        }
      }
      for (const std::string& line : check_manifest(manifest, config, cpu_has_invariant_tsc())) {
        if (line.rfind("note: ", 0) == 0) {
          std::printf("[matrix] %s: %s\n", name.c_str(), line.c_str());
        } else {
          failures.push_back(line);
        }
      }
      std::vector<Stream> streams;
      std::vector<double> read_seconds;
      auto timed = [&](auto&& read) {
        const auto start = std::chrono::steady_clock::now();
        streams.push_back(read());
        read_seconds.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
      };
      if (config.collector()) timed([&] { return read_collected(dir / kCollectedFile); });
      std::vector<fs::path> files;
      if (config.plain_file()) files.push_back(dir / kPlainTraceFile);
      if (config.ring_file()) files.push_back(dir / kRingTraceFile);
      for (const fs::path& file : files) timed([&] { return read_with_replay_file(file); });
#ifdef MATRIX_PYTHON
      // The independent reader; on one file per configuration (it is slow).
      if (!files.empty())
        timed([&] { return read_with_rtrace_py(MATRIX_PYTHON, MATRIX_RTRACE_PY, files.back(), dir); });
#endif
      for (std::size_t k = 0; k < streams.size(); ++k) {
        const Stream& stream = streams[k];
        CheckSummary summary;
        const auto start = std::chrono::steady_clock::now();
        const std::vector<std::string> lines = check_stream(stream, manifest, config, summary);
        std::printf(
            "[matrix] %s: %-28s %8llu produced, %8llu arrived, %7llu dropped, %5llu switches, %3llu threads: %s (read "
            "%.2f s, checked %.2f s)\n",
            name.c_str(), stream.source.c_str(), static_cast<unsigned long long>(summary.produced),
            static_cast<unsigned long long>(summary.events), static_cast<unsigned long long>(summary.dropped),
            static_cast<unsigned long long>(summary.switches), static_cast<unsigned long long>(summary.threads),
            lines.empty() ? "ok" : "FAILED", read_seconds[k],
            std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
        failures.insert(failures.end(), lines.begin(), lines.end());
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

INSTANTIATE_TEST_SUITE_P(Configurations, Matrix, ::testing::ValuesIn(all_configs()),
                         [](const ::testing::TestParamInfo<MatrixConfig>& info) { return name_of(info.param); });

}  // namespace
