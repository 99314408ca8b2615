// Issue 42, points 1 to 5: each wrong answer in the issue's own scenario, asserted
// against the truth (the program's own count, and the counting preload from outside),
// never against what the tool printed before the fix.
#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <sstream>

#include "recording.hpp"

namespace {

using namespace truth_test;
using memtruth::DumpMemory;

// One environment for the binary (every test file of it shares this one).
[[maybe_unused]] const ::testing::Environment* const g_cleanup =
    ::testing::AddGlobalTestEnvironment(new RemoveDirsWhenPassed);

std::uint64_t u(const std::optional<std::string>& v) { return v ? std::stoull(*v) : ~std::uint64_t{0}; }

std::string read_file(const fs::path& file) {
  std::ifstream in(file);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// The program's process: the pid of its "truth" line, or the only file's.
std::uint64_t only_pid(const Recording& r) {
  const auto files = r.files();
  return files.size() == 1 ? files[0].first : 0;
}

// --- Point 1: a program linking ringtrace::memory under `record --memory` ---

TEST(Point1, LinkedProgramUnderRecordMemoryCountsEachAllocationOnce) {
  const Recording r = record("p1", {"--memory"}, {TRUTH_LINKED, "work"});
  ASSERT_EQ(r.run.status, 0) << r.describe();
  const std::uint64_t pid = only_pid(r);
  ASSERT_NE(pid, 0u) << "one process, one file: " << r.describe();
  const fs::path file = r.file_of(pid);
  const DumpMemory dump = memtruth::memory_of_dump(dump_of(file));
  // The truth: the program's count, and the counter's (its window `work`).
  const memtruth::CounterFile counter = r.counter_of(pid);
  const memtruth::Snapshot* counted = counter.find("exit");
  ASSERT_NE(counted, nullptr) << r.describe();
  ASSERT_EQ(memtruth::inexact(*counted), "");
  ASSERT_EQ(counted->window("work").allocs, 5u);
  ASSERT_EQ(counted->window("work").alloc_bytes, 500u);

  EXPECT_EQ(dump.self.count("work") ? dump.self.at("work").allocs : 0, 5u) << "allocations recorded in `work`";
  EXPECT_EQ(dump.self.count("work") ? dump.self.at("work").alloc_bytes : 0, 500u) << "bytes recorded in `work`";
  const std::string report = report_of(file);
  EXPECT_EQ(memtruth::table_cell(report, "work", "CPU Mem").value_or("(no cell)"), memtruth::format_1024(500))
      << report;
  // The file's totals are its events' (no second copy counted anywhere), no lost frees
  // without a dropped event, and no more allocations on the main thread than the C
  // library got from it (the counter sees every call that reaches it, ringtrace's own
  // included: an upper bound).
  const memtruth::MemorySummary info = memtruth::memory_summary(info_of(file));
  EXPECT_EQ(info.allocations, dump.all.allocs) << "info's allocations against the file's alloc events";
  EXPECT_EQ(info.frees, dump.all.frees) << "info's frees against the file's free events";
  if (dump.dropped == 0) {
    EXPECT_EQ(info.lost_frees, 0u) << "frees said lost with no event dropped: " << info.lines[0];
  }
  std::uint64_t main_thread_calls = 0;
  for (const auto& [key, counts] : counted->threads) main_thread_calls += key.first == pid ? counts.allocs : 0;
  EXPECT_LE(dump.by_thread.count(pid) ? dump.by_thread.at(pid).allocs : 0, main_thread_calls)
      << "the main thread recorded more allocations than reached the C library";
}

// --- Point 2: under --memory, every process record follows without it ---

// The child's own count (its "truth child pid=P ..." line) against its file's zone.
void expect_child_recorded(const Recording& r, const std::string& zone) {
  EXPECT_EQ(r.run.status, 0) << r.describe();
  EXPECT_EQ(r.run.err.find("does not link ringtrace"), std::string::npos) << r.describe();
  EXPECT_EQ(r.run.err.find("killed or crashed"), std::string::npos) << "no process was killed: " << r.describe();
  EXPECT_EQ(r.run.err.find("partial"), std::string::npos) << r.describe();
  const auto pid = memtruth::truth_value(r.run.out, "pid");
  ASSERT_TRUE(pid.has_value()) << "the child did not run: " << r.describe();
  const fs::path file = r.file_of(std::stoull(*pid));
  ASSERT_TRUE(fs::exists(file)) << "no file of the child (pid " << *pid << "): " << r.describe();
  const DumpMemory dump = memtruth::memory_of_dump(dump_of(file));
  const memtruth::ZoneBytes z = dump.self.count(zone) ? dump.self.at(zone) : memtruth::ZoneBytes{};
  EXPECT_EQ(z.allocs, u(memtruth::truth_value(r.run.out, "allocs"))) << zone << " in " << file;
  EXPECT_EQ(z.alloc_bytes, u(memtruth::truth_value(r.run.out, "alloc_bytes"))) << zone << " in " << file;
  EXPECT_EQ(z.frees, u(memtruth::truth_value(r.run.out, "frees"))) << zone << " in " << file;
  EXPECT_EQ(z.free_bytes, u(memtruth::truth_value(r.run.out, "free_bytes"))) << zone << " in " << file;
}

TEST(Point2, EnvRunsALinkedChild) {
  expect_child_recorded(record("p2-env", {"--memory"}, {"env", TRUTH_LINKED, "child"}), "child");
}

TEST(Point2, SystemRunsALinkedChild) {
  expect_child_recorded(record("p2-system", {"--memory"}, {TRUTH_PLAIN, "run", "system", TRUTH_LINKED, "child"}),
                        "child");
}

TEST(Point2, PosixSpawnRunsALinkedChild) {
  expect_child_recorded(record("p2-spawn", {"--memory"}, {TRUTH_PLAIN, "run", "spawn", TRUTH_LINKED, "child"}),
                        "child");
}

TEST(Point2, ForkExecRunsALinkedChild) {
  expect_child_recorded(record("p2-fork", {"--memory"}, {TRUTH_PLAIN, "run", "fork", TRUTH_LINKED, "child"}), "child");
}

TEST(Point2, PosixSpawnRunsAChildThatDoesNotLinkRingtrace) {
  expect_child_recorded(record("p2-plain", {"--memory"}, {TRUTH_PLAIN, "run", "spawn", TRUTH_PLAIN, "child"}),
                        "child_work");
}

TEST(Point2, MakeRunsALinkedChild) {
  const fs::path dir = fresh_dir("p2-makefile");
  std::ofstream(dir / "Makefile") << "all:\n\t" << TRUTH_LINKED << " child\n";
  expect_child_recorded(record("p2-make", {"--memory"}, {"make", "-s", "-f", (dir / "Makefile").string()}), "child");
}

TEST(Point2, AShellWrapperThatExecs) {
  const fs::path dir = fresh_dir("p2-wrapper-script");
  const fs::path wrapper = dir / "wrapper.sh";
  std::ofstream(wrapper) << "#!/bin/sh\nexec " << TRUTH_LINKED << " child \"$@\"\n";
  fs::permissions(wrapper, fs::perms::owner_all);
  expect_child_recorded(record("p2-wrapper", {"--memory"}, {wrapper.string()}), "child");
}

// pyenv's python3 (a shell script that execs the interpreter), where the machine has it.
TEST(Point2, APyenvShimThatExecsPython) {
  const memtruth::Run which = memtruth::run({"sh", "-c", "command -v python3"});
  std::string shim = which.out.substr(0, which.out.find('\n'));
  std::ifstream in(shim);
  char magic[2] = {};
  in.read(magic, 2);
  if (shim.empty() || magic[0] != '#' || magic[1] != '!') {
    GTEST_SKIP() << "python3 on PATH is not a script that execs the interpreter here: " << shim;
  }
  const Recording r =
      record("p2-pyenv", {"--memory"},
             {"python3", "-c",
              "import os; b=[bytearray(100000) for _ in range(50)]; print('truth python pid=%d' % os.getpid())"});
  EXPECT_EQ(r.run.status, 0) << r.describe();
  EXPECT_EQ(r.run.err.find("does not link ringtrace"), std::string::npos) << r.describe();
  const auto pid = memtruth::truth_value(r.run.out, "pid");
  ASSERT_TRUE(pid.has_value()) << r.describe();
  const fs::path file = r.file_of(std::stoull(*pid));
  ASSERT_TRUE(fs::exists(file)) << "no file of the interpreter's process: " << r.describe();
  const DumpMemory dump = memtruth::memory_of_dump(dump_of(file));
  std::uint64_t big = 0;
  for (const auto& [size, n] : dump.alloc_sizes) big += size >= 100000 && size < 100200 ? n : 0;
  EXPECT_GE(big, 50u) << "the 50 bytearrays of 100,000 bytes";
}

// --- Point 3: frees by pthread key destructors and thread_local destructors ---

// 16 threads keep a block each that the C library (or C++ runtime) frees at their exit:
// none of them is a leak, none of their frees is lost.
void expect_exit_frees(const Recording& r, const std::string& zone, std::uint64_t block) {
  ASSERT_EQ(r.run.status, 0) << r.describe();
  const std::uint64_t pid = only_pid(r);
  ASSERT_NE(pid, 0u) << r.describe();
  const std::uint64_t threads = u(memtruth::truth_value(r.run.out, "threads"));
  // The counter saw the C library free every block in the threads' windows.
  const memtruth::CounterFile counter = r.counter_of(pid);
  const memtruth::Snapshot* counted = counter.find("exit");
  ASSERT_NE(counted, nullptr) << r.describe();
  ASSERT_EQ(memtruth::inexact(*counted), "");
  const memtruth::Counts window = counted->window(zone);
  // (The window also sees frees at the exit of blocks allocated outside it: ringtrace's
  // own, on a thread that records, and the C library's.)
  ASSERT_GE(window.allocs, threads);
  ASSERT_EQ(window.frees - window.foreign_frees - window.unknown_frees, window.allocs)
      << "the counter: every block allocated in " << zone << " freed in it";
  ASSERT_EQ(window.live_blocks, 0u);

  const fs::path file = r.file_of(pid);
  const memtruth::Leaks leaks = memtruth::leaks_of(report_of(file, {"--leaks"}));
  EXPECT_EQ(leaks.in_zone(zone).first, 0u) << "bytes listed as leaks in " << zone << ", all freed at thread exit";
  const DumpMemory dump = memtruth::memory_of_dump(dump_of(file));
  const std::uint64_t freed_blocks = dump.free_sizes.count(block) ? dump.free_sizes.at(block) : 0;
  const memtruth::MemorySummary info = memtruth::memory_summary(info_of(file));
  std::uint64_t said_at_exit = 0;
  for (const memtruth::LeftOut& l : info.left_out)
    said_at_exit += l.frees && l.clause.find("exit") != std::string::npos ? l.count : 0;
  EXPECT_EQ(freed_blocks + said_at_exit, threads)
      << "frees of the " << block << "-byte blocks recorded (" << freed_blocks << ") or counted as thread-exit frees ("
      << said_at_exit << ")";
  if (dump.dropped == 0) {
    EXPECT_EQ(info.lost_frees, 0u) << "frees lost with nothing dropped";
  }
}

TEST(Point3, PthreadKeyDestructorsFreeAtThreadExitConcurrent) {
  expect_exit_frees(record("p3-keys-par", {"--memory"}, {TRUTH_PLAIN, "keys", "16", "par"}), "key_worker", 222);
}

TEST(Point3, PthreadKeyDestructorsFreeAtThreadExitOneAfterAnother) {
  expect_exit_frees(record("p3-keys-seq", {"--memory"}, {TRUTH_PLAIN, "keys", "16", "seq"}), "key_worker", 222);
}

TEST(Point3, ThreadLocalDestructorsFreeAtThreadExit) {
  expect_exit_frees(record("p3-tl", {"--memory"}, {TRUTH_LINKED, "thread_local", "16", "par"}), "tl_worker", 333);
}

// --- Point 4: what was counted but not recorded reaches the file ---

// Recorded + what the file says it left out == the truth; exactly the truth when it says
// nothing was left out.
void expect_within(std::uint64_t recorded, std::uint64_t left_out, std::uint64_t truth, const std::string& what) {
  EXPECT_LE(recorded, truth) << what << ": more recorded than made";
  EXPECT_EQ(recorded + left_out, truth) << what << ": " << recorded << " recorded + " << left_out
                                        << " the file says it left out, the program made " << truth;
}

TEST(Point4, SampledZonesLeaksAreAllAccountedFor) {
  const Recording r = record("p4-sampled", {"--memory"}, {TRUTH_LINKED, "sampled"});
  ASSERT_EQ(r.run.status, 0) << r.describe();
  const std::uint64_t pid = only_pid(r);
  ASSERT_NE(pid, 0u) << r.describe();
  const memtruth::CounterFile counter = r.counter_of(pid);
  const memtruth::Snapshot* counted = counter.find("exit");
  ASSERT_NE(counted, nullptr);
  ASSERT_EQ(counted->window("sampled_outer").live_blocks, 500u);
  ASSERT_EQ(counted->window("sampled_outer").live_bytes, 50000u);
  const fs::path file = r.file_of(pid);
  const std::string leaks_text = report_of(file, {"--leaks"});
  const memtruth::Leaks leaks = memtruth::leaks_of(leaks_text);
  const memtruth::MemorySummary beside = memtruth::memory_summary(leaks_text);  // --leaks's own lines
  const memtruth::MemorySummary info = memtruth::memory_summary(info_of(file));
  const auto [bytes, blocks] = leaks.in_zone("sampled_outer");
  expect_within(blocks, beside.left_out_allocations(), 500, "report --leaks: blocks leaked in sampled_outer");
  expect_within(blocks, info.left_out_allocations(), 500, "info's left-out count beside the leaks");
  for (const memtruth::LeftOut& l : beside.left_out) {
    if (l.bytes) expect_within(bytes, *l.bytes, 50000, "bytes leaked in sampled_outer");
  }
  if (beside.left_out_allocations() == 0) {
    EXPECT_EQ(bytes, 50000u) << leaks_text;
  }
}

TEST(Point4, SignalHandlerAllocationsAreAllAccountedFor) {
  // Tiny rings under the block policy: the thread often waits in ringtrace's slow path,
  // where a handler's allocation cannot be recorded (it is counted instead).
  const Recording r =
      record("p4-signals", {"--memory", "--buffer", "64", "--policy", "block"}, {TRUTH_LINKED, "signals", "400"});
  ASSERT_EQ(r.run.status, 0) << r.describe();
  const std::uint64_t pid = only_pid(r);
  ASSERT_NE(pid, 0u) << r.describe();
  const std::uint64_t truth = u(memtruth::truth_value(r.run.out, "handler_allocs"));
  const memtruth::CounterFile counter = r.counter_of(pid);
  const memtruth::Snapshot* counted = counter.find("exit");
  ASSERT_NE(counted, nullptr);
  ASSERT_EQ(memtruth::inexact(*counted), "") << "the counter could not count every handler's call";
  ASSERT_EQ(counted->window("sig").allocs, truth);
  const fs::path file = r.file_of(pid);
  const DumpMemory dump = memtruth::memory_of_dump(dump_of(file));
  const memtruth::MemorySummary info = memtruth::memory_summary(info_of(file));
  expect_within(dump.self.count("sig") ? dump.self.at("sig").allocs : 0, info.left_out_allocations(), truth,
                "allocations in the handler's zone `sig`");
}

// --- Point 5: the live table and the file's agree past memory_max_blocks ---

// 1,000 blocks of 10 B from `a` freed in `b` under a limit of 100 blocks: the frees of the
// 900 blocks past the limit have no size the accounting could know. The live table and
// the file's say the same, exact where it is known (`a`, and `b`'s 100 known frees), and
// both say how many frees they could not size, rather than a number that looks whole.
TEST(Point5, LiveTableAndFileAgreePastTheLimit) {
  const fs::path dir = fresh_dir("p5");
  const memtruth::Run run = memtruth::run({TRUTH_LINKED, "limit", dir.string()});
  ASSERT_EQ(run.status, 0) << run.err;
  const std::string live_text = read_file(dir / "live_table.txt");
  const std::string live_csv = read_file(dir / "live_table.csv");
  const memtruth::Run converted = tool({"convert", (dir / "run.rtrace").string(), "--table", "-"});
  ASSERT_EQ(converted.status, 0) << converted.err;
  const std::int64_t blocks = 1000, size = 10, limit = 100;  // truth_linked's `limit`
  for (const auto& [zone, truth] : {std::pair<std::string, std::int64_t>{"a", blocks * size}, {"b", -limit * size}}) {
    EXPECT_EQ(memtruth::csv_cell(live_csv, zone, "cpu_memory_bytes").value_or("(none)"), std::to_string(truth))
        << "live CSV, zone " << zone << ":\n"
        << live_csv;
    EXPECT_EQ(memtruth::table_cell(live_text, zone, "CPU Mem").value_or("(none)"), memtruth::format_1024(truth))
        << "live table, zone " << zone << ":\n"
        << live_text;
    EXPECT_EQ(memtruth::table_cell(converted.out, zone, "CPU Mem").value_or("(none)"), memtruth::format_1024(truth))
        << "convert --table, zone " << zone << ":\n"
        << converted.out;
  }
  const std::string said = "Memory: " + std::to_string(blocks - limit) + " frees in zones of blocks of unknown size";
  EXPECT_NE(live_text.find(said), std::string::npos) << live_text;
  EXPECT_NE(converted.out.find(said), std::string::npos) << converted.out;
}

}  // namespace
