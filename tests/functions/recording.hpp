// The function tests' view of a recorded stream (test_functions.cpp, test_compiled.cpp):
// every zone as a call with its parent and depth, whether it was closed "unwound", and a
// session that keeps every event (block policy) around some work.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "ringtrace/recorded_trace.hpp"
#include "ringtrace/ringtrace.hpp"

namespace function_tests {

using ringtrace::Event;
using ringtrace::EventKind;
using ringtrace::RecordedTrace;

// One call as the stream shows it.
struct Call {
  std::string name, file;
  std::uint32_t line = 0;
  std::uint32_t depth = 0;
  std::string parent;  // "" at the top
  std::uint64_t begin = 0, end = 0;
  bool unwound = false;   // the argument "unwound" = 1
  bool function = false;  // a SiteOptions::function site
  ringtrace::ThreadId thread = 0;
};

// Every zone of the stream, in the order they began, with their parents.
inline std::vector<Call> calls_of(const RecordedTrace& trace) {
  std::vector<Call> calls;
  std::map<ringtrace::ThreadId, std::vector<std::size_t>> open;
  for (const Event& e : trace.events) {
    std::vector<std::size_t>& stack = open[e.thread];
    if (e.kind == EventKind::zone_begin) {
      const ringtrace::RecordedSite& site = trace.sites.at(e.site);
      Call c;
      c.name = site.name;
      c.file = site.file;
      c.line = site.line;
      c.depth = e.depth;
      c.parent = stack.empty() ? "" : calls[stack.back()].name;
      c.begin = e.time_ns;
      c.function = (site.options & ringtrace::SiteOptions::function) != 0;
      c.thread = e.thread;
      EXPECT_EQ(e.depth, stack.size()) << c.name;
      stack.push_back(calls.size());
      calls.push_back(c);
    } else if (e.kind == EventKind::zone_end) {
      if (stack.empty()) {
        ADD_FAILURE() << "an end with no zone open";
        continue;
      }
      calls[stack.back()].end = e.time_ns;
      EXPECT_EQ(e.depth, stack.size() - 1);
      stack.pop_back();
    } else if (e.kind == EventKind::arg && !stack.empty() && trace.sites.at(e.site).name == "unwound") {
      calls[stack.back()].unwound = e.value.i == 1;
    }
  }
  for (const auto& [thread, stack] : open) EXPECT_TRUE(stack.empty()) << "zones left open on thread " << thread;
  return calls;
}

inline std::map<std::string, int> counts(const std::vector<Call>& calls) {
  std::map<std::string, int> n;
  for (const Call& c : calls) ++n[c.name];
  return n;
}

// A session with every event kept (block policy), its stream.
struct Recording {
  RecordedTrace trace;
  ringtrace::SessionStats stats;
  std::vector<Call> calls;
};
inline Recording record(const std::function<void()>& work, ringtrace::Config config = {}) {
  config.overflow = ringtrace::OverflowPolicy::block;
  ringtrace::Session session(config);
  auto memory = std::make_shared<ringtrace::MemoryExporter>();
  session.add_exporter(memory);
  session.start();
  work();
  session.stop();
  Recording r;
  r.trace = memory->trace();
  r.stats = session.stats();
  r.calls = calls_of(r.trace);
  EXPECT_EQ(r.stats.dropped, 0u);
  EXPECT_EQ(r.stats.unbalanced_ends, 0u);
  return r;
}

inline const Call* find(const std::vector<Call>& calls, const std::string& name) {
  for (const Call& c : calls) {
    if (c.name == name) return &c;
  }
  return nullptr;
}

}  // namespace function_tests
