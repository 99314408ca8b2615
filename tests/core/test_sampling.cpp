// 1-in-N sampling (RINGTRACE_ZONE_SAMPLED, Config::sample_every): exact counts, whole
// zones, nested sites recorded exactly with their sampled ancestors, deterministic per
// thread, the rate in effect visible to exporters and kept in the binary file.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "ringtrace/exporters/binary_trace.hpp"
#include "ringtrace/recorded_trace.hpp"
#include "ringtrace/ringtrace.hpp"
#include "support/validating_exporter.hpp"

namespace ringtrace {
namespace {

using testing::test_scale;

struct Counts {
  std::map<std::string, std::uint64_t> begins, ends, instants, counters, args;
  std::map<std::string, std::uint32_t> rate;  // TraceContext::site().sample_every
};

Counts count(const RecordedTrace& t) {
  Counts c;
  for (const Event& e : t.events) {
    const std::string& name = t.sites[e.site].name;
    switch (e.kind) {
      case EventKind::zone_begin: ++c.begins[name]; break;
      case EventKind::zone_end: ++c.ends[name]; break;
      case EventKind::instant: ++c.instants[name]; break;
      case EventKind::counter: ++c.counters[name]; break;
      case EventKind::arg: ++c.args[name]; break;
      default: break;
    }
  }
  for (const RecordedSite& s : t.sites) c.rate[s.name] = s.sample_every;
  return c;
}

// The case: N = 10 over 1M zones at one site keeps exactly 100,000, never a
// half zone; what the sampled zone holds (a plain zone, a nested sampled site, an
// instant, a counter, a value) is recorded exactly in the zones kept.
TEST(Sampling, OneInTenKeepsExactlyATenthWithWholeSubtrees) {
  const std::uint64_t n = std::max<std::uint64_t>(20000, static_cast<std::uint64_t>(1000000 * test_scale())) / 20 * 20;
  Config config;
  config.overflow = OverflowPolicy::block;  // lossless: what is missing was sampled out
  Session session(config);
  auto memory = std::make_shared<MemoryExporter>();
  auto validator = std::make_shared<testing::ValidatingExporter>();
  session.add_exporter(memory);
  session.add_exporter(validator);
  session.start();
  for (std::uint64_t i = 0; i < n; ++i) {
    RINGTRACE_ZONE_SAMPLED("outer", 10);
    RINGTRACE_ZONE_VALUE("i", i);
    RINGTRACE_INSTANT("inside");
    RINGTRACE_COUNTER("gauge", i);
    {
      RINGTRACE_ZONE("child");
      RINGTRACE_ZONE_SAMPLED("nested", 2);  // one in two of the children of kept outers
    }
  }
  { RINGTRACE_ZONE("after"); }  // recording resumes after the last sampled-out zone
  session.stop();
  const SessionStats stats = session.stats();
  EXPECT_EQ(stats.dropped, 0u);
  EXPECT_EQ(validator->nesting_errors, 0u);
  const RecordedTrace trace = memory->trace();
  const Counts c = count(trace);
  EXPECT_EQ(c.begins.at("outer"), n / 10);
  EXPECT_EQ(c.ends.at("outer"), n / 10);
  EXPECT_EQ(c.begins.at("child"), n / 10);
  EXPECT_EQ(c.begins.at("nested"), n / 20);
  EXPECT_EQ(c.ends.at("nested"), n / 20);
  EXPECT_EQ(c.instants.at("inside"), n / 10);
  EXPECT_EQ(c.counters.at("gauge"), n / 10);
  EXPECT_EQ(c.args.at("i"), n / 10);
  EXPECT_EQ(c.begins.at("after"), 1u);
  EXPECT_EQ(c.rate.at("outer"), 10u);
  EXPECT_EQ(c.rate.at("nested"), 2u);
  EXPECT_EQ(c.rate.at("child"), 1u);
  EXPECT_EQ(stats.recorded, trace.events.size());
  // The first zone is recorded, then every tenth: the values say which.
  std::uint64_t expected = 0;
  for (const Event& e : trace.events) {
    if (e.kind != EventKind::arg) continue;
    ASSERT_EQ(e.value.u, expected);
    expected += 10;
  }
}

// Per thread and per site: each thread keeps its own first zone and every Nth after it.
TEST(Sampling, DeterministicPerThreadAndSite) {
  Session session;
  auto memory = std::make_shared<MemoryExporter>();
  session.add_exporter(memory);
  session.start();
  std::vector<std::thread> threads;
  for (int t = 0; t < 3; ++t) {
    threads.emplace_back([] {
      for (int i = 0; i < 700; ++i) {
        {
          RINGTRACE_ZONE_SAMPLED("seven", 7);
          RINGTRACE_ZONE_VALUE("i", i);
        }
        RINGTRACE_ZONE_SAMPLED("five", 5);
      }
    });
  }
  for (auto& t : threads) t.join();
  session.stop();
  const RecordedTrace trace = memory->trace();
  std::map<ThreadId, std::vector<std::uint64_t>> values;
  std::map<ThreadId, int> fives;
  for (const Event& e : trace.events) {
    if (e.kind == EventKind::arg) values[e.thread].push_back(e.value.u);
    if (e.kind == EventKind::zone_begin && trace.sites[e.site].name == "five") ++fives[e.thread];
  }
  ASSERT_EQ(values.size(), 3u);
  for (const auto& [thread, v] : values) {
    ASSERT_EQ(v.size(), 100u);
    for (std::size_t k = 0; k < v.size(); ++k) EXPECT_EQ(v[k], 7 * k);
    EXPECT_EQ(fives[thread], 140);
  }
}

// A site that gives 0 takes Config::sample_every; the binary file keeps each site's rate.
TEST(Sampling, TheSessionsDefaultRateAndTheBinaryFile) {
  const std::filesystem::path file =
      std::filesystem::temp_directory_path() / ("ringtrace_sampling_" + std::to_string(::getpid()) + ".rtrace");
  Config config;
  config.sample_every = 4;
  Session session(config);
  auto memory = std::make_shared<MemoryExporter>();
  session.add_exporter(memory);
  session.add_exporter(binary_trace_exporter(file));
  session.start();
  for (int i = 0; i < 1000; ++i) {
    RINGTRACE_ZONE_SAMPLED("default", 0);
    RINGTRACE_ZONE("inner");
  }
  session.stop();
  MemoryExporter replayed;
  const ReplayResult result = replay_file(file, replayed);
  std::filesystem::remove(file);
  ASSERT_TRUE(result.complete) << result.problem;
  for (const RecordedTrace& t : {memory->trace(), replayed.trace()}) {
    const Counts c = count(t);
    EXPECT_EQ(c.begins.at("default"), 250u);
    EXPECT_EQ(c.begins.at("inner"), 250u);
    EXPECT_EQ(c.rate.at("default"), 4u);
    EXPECT_EQ(c.rate.at("inner"), 1u);
  }
}

}  // namespace
}  // namespace ringtrace
