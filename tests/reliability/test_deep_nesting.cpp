// A crafted stream of zones nested hundreds of thousands deep (a corrupt or hostile
// trace file, a runaway recursion) through every exporter and stream processor
// (deep_nesting_cases.hpp): each is fed depth 200,000 of nested begins, with or without
// their ends (without: on_finish closes them), begins in one nanosecond (the Chrome
// writer's tie path) or spread out; the stream processors' windows get every begin with
// its end, in order. That the work stays linear in the depth is counted, not timed:
// deep_nesting_counts.sh counts each one's instructions (callgrind) at two depths.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>

#include "deep_nesting_cases.hpp"

namespace ringtrace::deep_nesting {
namespace {

void check_whole(const Case& c, Shape shape) {
  const std::size_t depth = 200'000;
  const RecordedTrace trace = nested(depth, shape);
  const std::shared_ptr<Exporter> exporter = c.make();
  replay(trace, *exporter);
  if (c.window && (shape.ends || !c.window_needs_ends)) {
    // Every begin it got has its end (the processor closes what is open at its end).
    const std::shared_ptr<testing::ValidatingExporter> w = *c.window;
    ASSERT_TRUE(w != nullptr) << c.name << ": no window or snapshot was written";
    EXPECT_EQ(w->nesting_errors + w->depth_errors + w->order_errors, 0u) << c.name;
    for (const auto& [id, thread] : w->threads) {
      EXPECT_TRUE(thread.stack.empty()) << c.name;
      EXPECT_GT(thread.begins, 0u) << c.name;
    }
    c.window->reset();
  }
}

class DeepNesting : public ::testing::TestWithParam<int> {};

TEST_P(DeepNesting, EveryExporterTakesItWhole) {
  const Shape shape{(GetParam() & 1) != 0, (GetParam() & 2) != 0};
  for (const Case& c : cases()) {
    SCOPED_TRACE(c.name);
    check_whole(c, shape);
  }
  fs::remove_all(scratch_dir());
}

std::string shape_name(const ::testing::TestParamInfo<int>& info) {
  return std::string((info.param & 1) != 0 ? "WithEnds" : "NoEnds") + ((info.param & 2) != 0 ? "SameNs" : "Spread");
}

INSTANTIATE_TEST_SUITE_P(Shapes, DeepNesting, ::testing::Values(0, 1, 2, 3), shape_name);

}  // namespace
}  // namespace ringtrace::deep_nesting
