// Files for diff_tests.sh whose zone durations the test chooses (the binary trace exporter
// fed a hand-built stream by replay()), for the paths of `ringtrace diff`'s U test that
// real recordings rarely take:
//   diff_crafted DIR
//     DIR/exact_a.rtrace, exact_b.rtrace   zone "w": 5 calls against 300, every duration
//                                          distinct (U's exact distribution, a large side)
//     DIR/wide_a.rtrace, wide_b.rtrace     zone "w": 8 calls against 400, distinct
//     DIR/ties_a.rtrace, ties_b.rtrace     zone "w": 6 calls against 7, with ties (the
//                                          normal approximation's tie correction)
//     and in every *_a file a zone "gone", in every *_b file a zone "new": a row for each
// Durations are in ns, the calls back to back from t = 1000.
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "ringtrace/exporters/binary_trace.hpp"
#include "ringtrace/recorded_trace.hpp"

namespace {

void write(const std::filesystem::path& path, const std::vector<std::uint64_t>& durations, const char* extra) {
  ringtrace::TraceBuilder b("crafted");
  const ringtrace::ThreadId t = b.thread("main", 10);
  const ringtrace::SiteId w = b.site("w"), other = b.site(extra);
  std::uint64_t now = 1000;
  for (const std::uint64_t d : durations) {
    b.begin(t, w, now).end(t, now + d);
    now += d + 10;
  }
  b.begin(t, other, now).end(t, now + 5);
  auto exporter = ringtrace::binary_trace_exporter(path);
  ringtrace::replay(b.build(now + 100), *exporter);
}

// n distinct durations from `first`, `step` apart.
std::vector<std::uint64_t> spaced(std::size_t n, std::uint64_t first, std::uint64_t step) {
  std::vector<std::uint64_t> out;
  for (std::size_t i = 0; i < n; ++i) out.push_back(first + step * i);
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) return 2;
  const std::filesystem::path dir = argv[1];
  std::filesystem::create_directories(dir);
  // b: 1001 + 3k; a: 1000 + 99i, never 1001 + 3k; wide: a even, b odd. No ties, a U between the extremes.
  write(dir / "exact_a.rtrace", spaced(5, 1000, 99), "gone");
  write(dir / "exact_b.rtrace", spaced(300, 1001, 3), "new");
  write(dir / "wide_a.rtrace", spaced(8, 1200, 50), "gone");
  write(dir / "wide_b.rtrace", spaced(400, 1001, 2), "new");
  write(dir / "ties_a.rtrace", {100, 100, 120, 130, 130, 130}, "gone");
  write(dir / "ties_b.rtrace", {100, 125, 130, 140, 140, 150, 160}, "new");
  return 0;
}
