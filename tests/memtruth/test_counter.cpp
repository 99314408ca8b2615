// The ground truth is checked before it is trusted: counter_selfcheck.cpp counts every
// allocation and free it makes (every function the counter interposes, on several threads,
// frees across threads and windows) and the counter's file must say the same, window by
// window, thread by thread, caller by caller.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <regex>
#include <sstream>
#include <string>

#include "truth.hpp"

namespace {

namespace fs = std::filesystem;
using memtruth::Counts;

fs::path fresh_dir(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / ("memtruth-" + name + "-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

TEST(Counter, CountsWhatTheProgramCountsItself) {
  const fs::path dir = fresh_dir("selfcheck");
  const memtruth::Run r = memtruth::run(
      {MEMTRUTH_SELFCHECK}, {{"LD_PRELOAD", MEMTRUTH_COUNTER}, {"MEMTRUTH_OUTPUT", (dir / "c.%p").string()}});
  ASSERT_EQ(r.status, 0) << r.err;
  const auto files = memtruth::read_counter_files(dir, "c.");
  ASSERT_EQ(files.size(), 1u) << "one process, one file";
  const memtruth::CounterFile& file = files[0];
  ASSERT_EQ(file.problem, "");
  const memtruth::Snapshot* done = file.find("done");
  ASSERT_NE(done, nullptr);
  EXPECT_EQ(memtruth::inexact(*done), "");
  EXPECT_EQ(done->notes.at("sized_delete_mismatch"), 0u);
  ASSERT_NE(file.find("exit"), nullptr) << "the exit's snapshot";

  std::istringstream out(r.out);
  std::string line;
  int windows = 0, callers = 0;
  while (std::getline(out, line)) {
    std::smatch m;
    if (std::regex_match(line, m, std::regex(R"(expect window (\S+) (.*))"))) {
      ++windows;
      const std::string name = m[1];
      const Counts got = done->window(name);
      std::map<std::string, std::uint64_t> want;
      std::istringstream words(m[2].str());
      std::string w;
      while (words >> w) want[w.substr(0, w.find('='))] = std::stoull(w.substr(w.find('=') + 1));
      EXPECT_EQ(got.allocs, want["allocs"]) << name;
      EXPECT_EQ(got.alloc_bytes, want["alloc_bytes"]) << name;
      EXPECT_EQ(got.frees, want["frees"]) << name;
      EXPECT_EQ(got.free_bytes, want["free_bytes"]) << name;
      EXPECT_EQ(got.foreign_frees, want["foreign_frees"]) << name;
      EXPECT_EQ(got.foreign_free_bytes, want["foreign_free_bytes"]) << name;
      EXPECT_EQ(got.failed_reallocs, want["failed_reallocs"]) << name;
      EXPECT_EQ(got.live_blocks, want["live_blocks"]) << name;
      EXPECT_EQ(got.live_bytes, want["live_bytes"]) << name;
      EXPECT_EQ(got.unknown_frees, 0u) << name;
    } else if (std::regex_match(line, m, std::regex(R"(expect caller (\S+) (\S+) allocs=(\d+) bytes=(\d+))"))) {
      ++callers;
      std::uint64_t allocs = 0, bytes = 0;
      for (const memtruth::CallerCounts& c : done->callers) {
        if (c.window == m[1] && c.function.find(m[2].str()) != std::string::npos) {
          allocs += c.allocs;
          bytes += c.bytes;
          EXPECT_EQ(fs::path(c.module).filename(), fs::path(MEMTRUTH_SELFCHECK).filename()) << c.function;
        }
      }
      EXPECT_EQ(allocs, std::stoull(m[3])) << "caller " << m[2];
      EXPECT_EQ(bytes, std::stoull(m[4])) << "caller " << m[2];
    } else if (std::regex_match(line, m, std::regex(R"(expect balanced (\S+) (\d+))"))) {
      // What libstdc++ allocated for itself (a bad_alloc's object) and freed, in the window.
      const Counts got = done->window(m[1]);
      EXPECT_EQ(got.allocs, std::stoull(m[2])) << m[1];
      EXPECT_EQ(got.frees, got.allocs) << m[1];
      EXPECT_EQ(got.free_bytes, got.alloc_bytes) << m[1];
      EXPECT_EQ(got.live_blocks, 0u) << m[1];
      EXPECT_EQ(got.unknown_frees, 0u) << m[1];
    } else if (std::regex_match(line, m, std::regex(R"(expect threads (\S+) (\d+))"))) {
      // Each worker thread's counts on a line of its own; together the window's.
      Counts sum;
      int threads = 0;
      for (const auto& [key, counts] : done->threads) {
        if (key.second != m[1]) continue;
        ++threads;
        sum += counts;
        EXPECT_NE(key.first, file.pid) << "a worker's window counted on the main thread";
      }
      EXPECT_EQ(threads, std::stoi(m[2]));
      const Counts whole = done->window(m[1]);
      EXPECT_EQ(sum.allocs, whole.allocs);
      EXPECT_EQ(sum.alloc_bytes, whole.alloc_bytes);
      EXPECT_EQ(sum.frees, whole.frees);
      EXPECT_EQ(sum.free_bytes, whole.free_bytes);
      EXPECT_EQ(sum.live_bytes, whole.live_bytes);
    }
  }
  EXPECT_EQ(windows, 5) << r.out;
  EXPECT_EQ(callers, 2) << r.out;
  // Per caller, every allocation of a window once.
  for (const auto& [name, counts] : done->windows) {
    std::uint64_t allocs = 0, bytes = 0;
    for (const memtruth::CallerCounts& c : done->callers) {
      if (c.window != name) continue;
      allocs += c.allocs;
      bytes += c.bytes;
    }
    EXPECT_EQ(allocs, counts.allocs) << name;
    EXPECT_EQ(bytes, counts.alloc_bytes) << name;
  }
  fs::remove_all(dir);
}

// A fork's child starts from zero and writes its own file only when it opens a window;
// a program that opens none writes nothing unless every process is asked for.
TEST(Counter, WritesOnlyForProcessesWithWindows) {
  const fs::path dir = fresh_dir("quiet");
  const memtruth::Run r =
      memtruth::run({"/bin/true"}, {{"LD_PRELOAD", MEMTRUTH_COUNTER}, {"MEMTRUTH_OUTPUT", (dir / "c.%p").string()}});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(memtruth::read_counter_files(dir, "c.").empty());
  const memtruth::Run every = memtruth::run({"/bin/true"}, {{"LD_PRELOAD", MEMTRUTH_COUNTER},
                                                            {"MEMTRUTH_OUTPUT", (dir / "c.%p").string()},
                                                            {"MEMTRUTH_EVERY_PROCESS", "1"}});
  ASSERT_EQ(every.status, 0) << every.err;
  const auto files = memtruth::read_counter_files(dir, "c.");
  ASSERT_EQ(files.size(), 1u);
  EXPECT_EQ(files[0].exe, fs::canonical("/bin/true").string());
  ASSERT_NE(files[0].find("exit"), nullptr);
  EXPECT_EQ(memtruth::inexact(*files[0].find("exit")), "");
  fs::remove_all(dir);
}

}  // namespace
