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

namespace {

// The parsers of the tool's text, on today's lines and on the draft lines of
// docs/memory.md ("Draft: the output the tests read").
TEST(TruthParsers, ReadTodaysAndTheDraftsMemoryLines) {
  const std::string today =
      "events:      26494 recorded, 13517 dropped\n"
      "memory:      7,285 allocations (233 kB), 19,205 frees (229 kB), peak 233 kB live at 9.025 ms after the "
      "start; still live at the end: 144 blocks (4.61 kB)\n"
      "             not in the live heap: 12,064 frees of blocks allocated before the recording, 12,064 of them of "
      "unknown size, 6 frees lost (dropped events)\n"
      "threads:     1\n";
  const memtruth::MemorySummary t = memtruth::memory_summary(today);
  EXPECT_TRUE(t.present);
  EXPECT_EQ(t.allocations, 7285u);
  EXPECT_EQ(t.frees, 19205u);
  EXPECT_EQ(t.live_blocks, 144u);
  EXPECT_EQ(t.peak_text, "233 kB");
  EXPECT_EQ(t.frees_before_recording, 12064u);
  EXPECT_EQ(t.lost_frees, 6u);
  EXPECT_EQ(t.left_out_frees(), 6u);
  EXPECT_EQ(t.left_out_allocations(), 0u);
  const std::string draft =
      "memory:      1,875 allocations (670.8 KB), 10 frees (1.00 KB); still live at the end: 87 blocks (40.26 KB)\n"
      "             left out: 547 allocations dropped (213,442 bytes), 135 allocations sampled out,\n"
      "             9 allocations nested in ringtrace's slow path, 1 free at thread exit\n";
  const memtruth::MemorySummary d = memtruth::memory_summary(draft);
  EXPECT_EQ(d.left_out_allocations(), 547u + 135u + 9u);
  EXPECT_EQ(d.left_out_frees(), 1u);
  ASSERT_FALSE(d.left_out.empty());
  EXPECT_EQ(d.left_out[0].bytes.value_or(0), 213442u);
  const memtruth::Leaks unknown = memtruth::leaks_of("Leaks: unknown (this file keeps no block addresses)\n");
  EXPECT_TRUE(unknown.present);
  EXPECT_TRUE(unknown.unknown);
  const memtruth::Leaks rows = memtruth::leaks_of(
      "Leaks: 6 blocks (4.49 KB) still live at the end, by the zones and the function that allocated them, "
      "largest first\n"
      "bytes  blocks  zones (outermost first)  allocated by\n"
      "4,096       1  (no zone)                main\n"
      "  500       5  outer; work              work_fn(int)\n");
  EXPECT_EQ(rows.blocks, 6u);
  EXPECT_EQ(rows.bytes, 4596u);
  ASSERT_EQ(rows.rows.size(), 2u);
  EXPECT_EQ(rows.in_zone("work"), std::make_pair(std::uint64_t{500}, std::uint64_t{5}));
  EXPECT_EQ(rows.rows[1].rest, "outer; work");
  EXPECT_EQ(rows.rows[1].site, "work_fn(int)");
  const memtruth::Leaks merged = memtruth::leaks_of(
      "Leaks: 2 blocks (300 B) still live at the end, by the zones and the function that allocated them, "
      "largest first\n"
      "bytes  blocks  process  zones (outermost first)  allocated by\n"
      "  200       1    41234  a                        f\n"
      "  100       1       77  b                        g\n");
  ASSERT_EQ(merged.rows.size(), 2u);
  EXPECT_EQ(merged.rows[0].process, "41234");
  EXPECT_EQ(merged.rows[1].process, "77");
  EXPECT_EQ(merged.rows[1].rest, "b");
  const std::string table =
      "Name   Self %      Self  Total %     Total       Avg       Min       Max       p50       p99  Calls  CPU Mem  "
      "Self CPU Mem\n"
      "work  100.00%  22.572us  100.00%  22.572us  22.572us  22.572us  22.572us  22.572us  22.572us      1    500 B    "
      "     500 B\n";
  EXPECT_EQ(memtruth::table_cell(table, "work", "CPU Mem").value_or("(none)"), "500 B");
  EXPECT_EQ(memtruth::format_1024(-10000), "-9.77 KB");
  EXPECT_EQ(memtruth::format_1024(500), "500 B");
  const auto range = memtruth::size_range("peak 2.86 MB live");
  ASSERT_TRUE(range.has_value());
  EXPECT_LT(range->first, 2.86 * 1048576);
  EXPECT_GT(range->second, 2.86 * 1048576);
  EXPECT_EQ(memtruth::size_units("a 4.60 kB b (1.13 KB) c 500 B"), (std::vector<std::string>{"kB", "KB"}));
}

}  // namespace
