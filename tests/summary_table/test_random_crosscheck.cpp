// Both summaries against a computation that shares nothing with them (no ZoneTracker,
// no event stream): random zone trees on several threads, generated as explicit
// intervals with parent links, where self time, outermost activations, stack keys,
// top-level ops and captured ops are computed straight from the tree. The exporters
// see the same trees as a TraceBuilder stream. Exact to the nanosecond.
#include <gtest/gtest.h>

#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "ringtrace/exporters/ops_summary.hpp"
#include "ringtrace/exporters/table.hpp"
#include "ringtrace/recorded_trace.hpp"
#include "summary_table/random_forest.hpp"

namespace ringtrace {
namespace {

using testing::ancestors;
using testing::Forest;
using testing::make_forest;
using testing::self_time;
using testing::total;
using testing::Zone;

struct Expected {
  std::uint64_t calls = 0, self_ns = 0, total_ns = 0, min_ns = ~0ull, max_ns = 0;
};

class RandomCrossCheck : public ::testing::TestWithParam<int> {};

TEST_P(RandomCrossCheck, TableMatchesTheTree) {
  const Forest f = make_forest(static_cast<std::uint64_t>(GetParam()), 3);
  for (const std::size_t stack_n : {std::size_t{0}, std::size_t{2}}) {
    for (const bool top_only : {false, true}) {
      std::map<std::pair<std::string, std::vector<std::string>>, Expected> expected;
      std::uint64_t self_total = 0;
      for (const Zone& z : f.zones) {
        self_total += self_time(f, z);
        if (top_only && z.parent >= 0) continue;
        std::vector<std::string> anc = ancestors(f, z);
        std::vector<std::string> key_frames;
        if (stack_n > 0) {
          key_frames.assign(anc.end() - static_cast<std::ptrdiff_t>(std::min(stack_n, anc.size())), anc.end());
        }
        Expected& e = expected[{z.name, key_frames}];
        e.calls += 1;
        e.self_ns += self_time(f, z);
        // Outermost activation of its group: no ancestor with the same key.
        bool outermost = true;
        for (int p = z.parent; p >= 0; p = f.zones[static_cast<std::size_t>(p)].parent) {
          const Zone& pz = f.zones[static_cast<std::size_t>(p)];
          if (pz.name != z.name) continue;
          std::vector<std::string> panc = ancestors(f, pz);
          std::vector<std::string> pframes;
          if (stack_n > 0)
            pframes.assign(panc.end() - static_cast<std::ptrdiff_t>(std::min(stack_n, panc.size())), panc.end());
          if (pframes == key_frames) outermost = false;
        }
        if (outermost) e.total_ns += total(z);
        e.min_ns = std::min(e.min_ns, total(z));
        e.max_ns = std::max(e.max_ns, total(z));
      }
      TableOptions options;
      options.row_limit = 0;
      options.group_by_stack_n = stack_n;
      options.top_level_only = top_only;
      const KeyAverages table = key_averages(f.trace, options);
      EXPECT_EQ(table.self_total_ns, self_total);
      ASSERT_EQ(table.rows.size(), expected.size()) << "stack_n " << stack_n << " top " << top_only;
      std::uint64_t row_self_sum = 0;
      for (const TableRow& r : table.rows) {
        const auto it = expected.find({r.name, r.stack});
        ASSERT_NE(it, expected.end()) << r.name;
        EXPECT_EQ(r.calls, it->second.calls) << r.name;
        EXPECT_EQ(r.self_ns, it->second.self_ns) << r.name;
        EXPECT_EQ(r.total_ns, it->second.total_ns) << r.name;
        EXPECT_EQ(r.min_ns, it->second.min_ns) << r.name;
        EXPECT_EQ(r.max_ns, it->second.max_ns) << r.name;
        EXPECT_LE(r.min_ns, r.p50_ns);
        EXPECT_LE(r.p50_ns, r.p99_ns);
        EXPECT_LE(r.p99_ns, r.max_ns);
        row_self_sum += r.self_ns;
      }
      if (!top_only) {
        EXPECT_EQ(row_self_sum, self_total);
      }
    }
  }
}

TEST_P(RandomCrossCheck, OpsSummaryMatchesTheTree) {
  const Forest f = make_forest(static_cast<std::uint64_t>(GetParam()) + 1000, 3);
  auto is_region = [](const std::string& n) { return n.rfind("graph", 0) == 0; };
  auto is_transparent = [](const std::string& n) { return n == "step"; };
  auto is_op = [&](const std::string& n) { return !is_region(n) && !is_transparent(n); };
  std::vector<CaptureCounts> threads(3);
  std::vector<std::set<std::pair<std::string, std::int64_t>>> graphs(3);
  std::set<std::pair<std::string, std::int64_t>> all_graphs;
  std::map<std::string, std::uint64_t> missing_ns;
  for (const Zone& z : f.zones) {
    CaptureCounts& c = threads[z.thread];
    if (is_region(z.name)) {
      c.graph_calls += 1;
      graphs[z.thread].insert({z.name, z.region_id});
      all_graphs.insert({z.name, z.region_id});
      continue;
    }
    if (!is_op(z.name)) continue;
    bool nested = false, inside_region = false;
    for (int p = z.parent; p >= 0; p = f.zones[static_cast<std::size_t>(p)].parent) {
      const std::string& pn = f.zones[static_cast<std::size_t>(p)].name;
      nested |= is_op(pn);
      inside_region |= is_region(pn);
    }
    if (nested) continue;
    c.total_ops += 1;
    c.total_ns += total(z);
    if (inside_region) {
      c.captured_ops += 1;
      c.captured_ns += total(z);
    } else {
      missing_ns[z.name] += total(z);
    }
  }
  OpsSummaryOptions options;
  options.transparent_names = {"step"};
  options.stack_frames = 0;
  const OpsSummary s = ops_summary(f.trace, options);
  ASSERT_EQ(s.threads.size(), 3u);
  CaptureCounts sum;
  for (ThreadId t = 0; t < 3; ++t) {
    const CaptureCounts& got = s.threads[t].counts;
    EXPECT_EQ(got.graph_calls, threads[t].graph_calls);
    EXPECT_EQ(got.unique_graphs, graphs[t].size());
    EXPECT_EQ(got.total_ops, threads[t].total_ops);
    EXPECT_EQ(got.captured_ops, threads[t].captured_ops);
    EXPECT_EQ(got.total_ns, threads[t].total_ns);
    EXPECT_EQ(got.captured_ns, threads[t].captured_ns);
    sum.total_ops += threads[t].total_ops;
    sum.captured_ns += threads[t].captured_ns;
  }
  EXPECT_EQ(s.total.unique_graphs, all_graphs.size());
  EXPECT_EQ(s.total.total_ops, sum.total_ops);
  EXPECT_EQ(s.total.captured_ns, sum.captured_ns);
  ASSERT_EQ(s.missing.size(), missing_ns.size());
  for (const MissingOp& m : s.missing) EXPECT_EQ(m.total_ns, missing_ns[m.name]) << m.name;
  for (std::size_t i = 1; i < s.missing.size(); ++i) EXPECT_GE(s.missing[i - 1].total_ns, s.missing[i].total_ns);
}

INSTANTIATE_TEST_SUITE_P(Seeds, RandomCrossCheck, ::testing::Values(1, 2, 3, 4, 5, 6, 7, 8));

}  // namespace
}  // namespace ringtrace
