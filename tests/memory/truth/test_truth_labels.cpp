// Issue 42, point 6: labels that are false. Each claim the tool prints about a recording's
// memory ("frees of blocks allocated before the recording", "Leaks: N blocks", a merged
// file's leaks and peak, the units of a size) against what the program did.
#include <gtest/gtest.h>

#include <set>

#include "recording.hpp"

namespace {

using namespace truth_test;
using memtruth::DumpMemory;

// Drop mode drops allocation records (the program holds the drainer while it allocates):
// their frees are of blocks allocated during the recording, not before it. The program
// allocates exactly 7 blocks before start().
TEST(Point6, DroppedAllocationsAreNotFromBeforeTheRecording) {
  const fs::path dir = fresh_dir("p6-dropped");
  const memtruth::Run run = memtruth::run({TRUTH_LINKED, "dropped", dir.string()});
  ASSERT_EQ(run.status, 0) << run.err;
  const fs::path file = dir / "run.rtrace";
  const DumpMemory dump = memtruth::memory_of_dump(dump_of(file));
  ASSERT_GT(dump.dropped, 0u) << "the scenario needs drop mode to drop (4 KiB rings, the drainer held)";
  const memtruth::MemorySummary info = memtruth::memory_summary(info_of(file));
  ASSERT_TRUE(info.present);
  EXPECT_LE(info.frees_before_recording, 7u)
      << "frees said to be of blocks from before the recording; the program allocated 7 before it (" << dump.dropped
      << " events dropped): " << info.lines.back();
}

// mimalloc's own API beside the C one: a block from mi_malloc freed with free is not from
// before the recording, a block from malloc freed with mi_free is no leak.
TEST(Point6, AnAllocatorsOwnApiGivesNoFalseLeaksNorFalseOrigins) {
  const Recording r = record("p6-mimalloc", {"--memory"}, {TRUTH_MIMALLOC});
  ASSERT_EQ(r.run.status, 0) << r.describe();
  const Recording baseline = record("p6-mimalloc-baseline", {"--memory"}, {TRUTH_MIMALLOC, "baseline"});
  ASSERT_EQ(baseline.run.status, 0) << baseline.describe();
  ASSERT_EQ(r.files().size(), 1u) << r.describe();
  ASSERT_EQ(baseline.files().size(), 1u) << baseline.describe();
  const fs::path file = r.files()[0].second;
  const memtruth::Leaks leaks = memtruth::leaks_of(report_of(file, {"--leaks"}));
  EXPECT_EQ(leaks.in_zone("mi_pairs").second, 0u) << "blocks of mi_pairs listed as leaks: all were freed (mi_free)";
  // The same program without the 200 pairs: whatever it frees from before the recording
  // (the C library's own start), the pairs add nothing to it.
  const memtruth::MemorySummary with = memtruth::memory_summary(info_of(file));
  const memtruth::MemorySummary without = memtruth::memory_summary(info_of(baseline.files()[0].second));
  EXPECT_EQ(with.frees_before_recording, without.frees_before_recording)
      << "frees said to be of blocks from before the recording: the 100 mi_malloc blocks freed by free were "
         "allocated during it";
}

// A realloc that fails leaves its block; its later free is of a block allocated during
// the recording, of a size known.
TEST(Point6, AFailedReallocsBlockIsNotFromBeforeTheRecording) {
  const Recording r = record("p6-realloc", {"--memory"}, {TRUTH_LINKED, "failed_realloc"});
  ASSERT_EQ(r.run.status, 0) << r.describe();
  const Recording baseline = record("p6-realloc-baseline", {"--memory"}, {TRUTH_LINKED, "work"});
  ASSERT_EQ(r.files().size(), 1u) << r.describe();
  ASSERT_EQ(baseline.files().size(), 1u) << baseline.describe();
  const fs::path file = r.files()[0].second;
  const DumpMemory dump = memtruth::memory_of_dump(dump_of(file));
  const memtruth::ZoneBytes z = dump.self.count("r") ? dump.self.at("r") : memtruth::ZoneBytes{};
  EXPECT_EQ(z.frees, 1u);
  EXPECT_EQ(z.free_bytes, 100u) << "the free of the block the failed realloc left (100 bytes)";
  EXPECT_EQ(z.frees_size_unknown, 0u) << "its size is known: it was allocated in the recording";
  const memtruth::MemorySummary with = memtruth::memory_summary(info_of(file));
  const memtruth::MemorySummary without = memtruth::memory_summary(info_of(baseline.files()[0].second));
  EXPECT_EQ(with.frees_before_recording, without.frees_before_recording)
      << "the failed realloc's block counted among the frees of blocks from before the recording";
}

// A window's and a snapshot's file keep no addresses: their leaks are unknown, not zero,
// and never contradict the live count printed above them.
void expect_leaks_not_false(const fs::path& file, const std::string& zone) {
  const std::string text = report_of(file, {"--leaks"});
  const memtruth::Leaks leaks = memtruth::leaks_of(text);
  const memtruth::MemorySummary summary = memtruth::memory_summary(text);
  ASSERT_TRUE(leaks.present) << file << ":\n" << text;
  if (leaks.unknown) return;
  // Said as a number: the truth, 10 blocks of 113 bytes in `zone`.
  EXPECT_EQ(leaks.in_zone(zone).second, 10u) << file << ":\n" << text;
  EXPECT_EQ(leaks.in_zone(zone).first, 1130u) << file << ":\n" << text;
  EXPECT_GE(leaks.blocks, summary.live_blocks) << "'still live at the end' and 'Leaks' disagree in " << file << ":\n"
                                               << text;
}

TEST(Point6, AWindowsAndASnapshotsLeaksAreUnknownNotZero) {
  const fs::path dir = fresh_dir("p6-window");
  const memtruth::Run run = memtruth::run({TRUTH_LINKED, "window", dir.string()});
  ASSERT_EQ(run.status, 0) << run.err;
  ASSERT_TRUE(fs::exists(dir / "window.rtrace"));
  ASSERT_TRUE(fs::exists(dir / "snapshot.rtrace"));
  expect_leaks_not_false(dir / "window.rtrace", "win");
  expect_leaks_not_false(dir / "snapshot.rtrace", "snap");
}

// Two processes merged: each leak row says whose it is, no two rows read the same, and the
// peak is the two processes' together (one held 1 MB all along the other's 2 MB).
TEST(Point6, AMergedFilesLeaksNameTheirProcessAndItsPeakIsTheWhole) {
  const fs::path dir = fresh_dir("p6-merge");
  const std::string a = std::string(TRUTH_LINKED) + " merge_a " + dir.string();
  const std::string b = std::string(TRUTH_LINKED) + " merge_b " + dir.string();
  const memtruth::Run run =
      memtruth::run({"sh", "-c", a + " & " + b + "; wait"},
                    {{"RINGTRACE_OUTPUT", "rtrace:" + (dir / "m.%p.rtrace").string()}, {"RINGTRACE_MEMORY", "1"}});
  ASSERT_EQ(run.status, 0) << run.err;
  ASSERT_TRUE(memtruth::truth_value(run.out, "together").has_value()) << run.out << run.err;
  std::vector<std::string> merge = {"merge"}, pids;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.path().extension() != ".rtrace") continue;
    merge.push_back(entry.path().string());
    const std::string name = entry.path().filename().string();  // m.<pid>.rtrace
    pids.push_back(name.substr(2, name.size() - 9));
  }
  ASSERT_EQ(merge.size(), 3u) << "two processes, two files";
  merge.insert(merge.end(), {"-o", (dir / "merged.rtrace").string()});
  const memtruth::Run merged = tool(merge);
  ASSERT_EQ(merged.status, 0) << merged.err;
  const std::string text = report_of(dir / "merged.rtrace", {"--leaks"});
  const memtruth::Leaks leaks = memtruth::leaks_of(text);
  ASSERT_TRUE(leaks.present) << text;
  std::set<std::string> seen;
  for (const memtruth::LeakRow& row : leaks.rows) {
    const std::string whole = row.process + " " + row.rest + " " + row.site;
    EXPECT_TRUE(seen.insert(whole).second) << "two leak rows read '" << whole << "':\n" << text;
    const bool named = row.process == pids[0] || row.process == pids[1];
    EXPECT_TRUE(named) << "a leak row of a merged file of two processes that names neither process: '" << whole << "'\n"
                       << text;
  }
  const memtruth::MemorySummary summary = memtruth::memory_summary(text);
  const auto peak = memtruth::size_range(summary.peak_text);
  ASSERT_TRUE(peak.has_value()) << "no peak in: " << (summary.lines.empty() ? text : summary.lines[0]);
  EXPECT_GE(peak->second, 3'000'000.0) << "the merged peak '" << summary.peak_text
                                       << "' is below the two processes' 1 MB + 2 MB held together";
}

// One unit convention (the seed's table: 1024, KB/MB/GB) in every memory line.
TEST(Point6, OneUnitConvention) {
  const Recording r = record("p6-units", {"--memory"}, {TRUTH_LINKED, "units"});
  ASSERT_EQ(r.run.status, 0) << r.describe();
  ASSERT_EQ(r.files().size(), 1u) << r.describe();
  const fs::path file = r.files()[0].second;
  const std::string report = report_of(file);
  for (const std::string& text : {report, info_of(file), report_of(file, {"--leaks"})}) {
    for (const std::string& unit : memtruth::size_units(text)) {
      EXPECT_TRUE(unit == "KB" || unit == "MB" || unit == "GB") << "a size in " << unit << " in:\n" << text;
    }
  }
  EXPECT_EQ(memtruth::table_cell(report, "units_big", "CPU Mem").value_or("(none)"), memtruth::format_1024(11200));
  EXPECT_EQ(memtruth::table_cell(report, "units_small", "CPU Mem").value_or("(none)"), memtruth::format_1024(4198));
}

}  // namespace
