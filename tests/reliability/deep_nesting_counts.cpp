// deep_nesting_counts: every exporter and stream processor of deep_nesting_cases.hpp fed
// the four shapes at depths 5,000 and 20,000, each replay between callgrind's client
// requests (zeroed before, dumped after as "<case> <shape> <depth>"), so that
// deep_nesting_counts.sh compares the instructions each executed at the two depths.
// Run natively it only replays.
#include <valgrind/callgrind.h>

#include <cstdio>
#include <string>

#include "deep_nesting_cases.hpp"

int main() {
  using namespace ringtrace::deep_nesting;
  for (int s = 0; s < 4; ++s) {
    const Shape shape{(s & 1) != 0, (s & 2) != 0};
    const std::string shape_name =
        std::string(shape.ends ? "ends" : "no_ends") + (shape.same_time ? "_same_ns" : "_spread");
    for (const std::size_t depth : {5'000u, 20'000u}) {
      const ringtrace::RecordedTrace trace = nested(depth, shape);
      for (const Case& c : cases()) {
        const std::shared_ptr<ringtrace::Exporter> exporter = c.make();
        const std::string name = std::string(c.name) + " " + shape_name + " " + std::to_string(depth);
        CALLGRIND_ZERO_STATS;
        ringtrace::replay(trace, *exporter);
        CALLGRIND_DUMP_STATS_AT(name.c_str());
      }
    }
  }
  fs::remove_all(scratch_dir());
  std::printf("deep_nesting_counts: %zu cases, 4 shapes\n", cases().size());
  return 0;
}
