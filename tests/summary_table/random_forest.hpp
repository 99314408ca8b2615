// Random zone forests for the cross-checks: explicit intervals with parent links
// (the independent answer) and the same zones as a TraceBuilder stream.
#pragma once

#include <cstdint>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "ringtrace/recorded_trace.hpp"

namespace ringtrace::testing {

struct Zone {
  ThreadId thread;
  std::string name;
  std::int64_t region_id;  // for "graph"
  std::uint64_t begin, end;
  int parent;  // index, -1 at top level
  std::vector<int> children;
};

inline const std::vector<std::string> kNames = {"graph", "step", "fib", "matmul", "relu", "io", "graph2"};

struct Forest {
  std::vector<Zone> zones;
  RecordedTrace trace;
};

inline Forest make_forest(std::uint64_t seed, int threads) {
  std::mt19937_64 rng(seed);
  Forest f;
  TraceBuilder b;
  std::map<std::string, SiteId> sites;
  for (const std::string& n : kNames)
    sites[n] = b.site(n, n.rfind("graph", 0) == 0 ? SiteKind::region : SiteKind::zone);
  for (int t = 0; t < threads; ++t) {
    std::string thread_name = "t";
    thread_name += std::to_string(t);
    const ThreadId thread = b.thread(thread_name);
    std::uint64_t now = rng() % 50;
    // Recursive generation in time order (begin, children, end).
    auto gen = [&](auto& self, int parent, int depth) -> void {
      const int index = static_cast<int>(f.zones.size());
      Zone z{thread, kNames[rng() % kNames.size()], static_cast<std::int64_t>(rng() % 4), now, 0, parent, {}};
      f.zones.push_back(z);
      if (parent >= 0) f.zones[static_cast<std::size_t>(parent)].children.push_back(index);
      b.begin(thread, sites[z.name], now, z.region_id);
      now += rng() % 7;  // may be 0: zero-length gaps and zones
      const int children = depth < 6 ? static_cast<int>(rng() % 4) : 0;
      for (int c = 0; c < children; ++c) {
        self(self, index, depth + 1);
        now += rng() % 5;
      }
      now += rng() % 9;
      f.zones[static_cast<std::size_t>(index)].end = now;
      b.end(thread, now);
    };
    for (int top = 0; top < 40; ++top) {
      gen(gen, -1, 0);
      now += rng() % 20;
    }
  }
  f.trace = b.build();
  return f;
}

inline std::uint64_t total(const Zone& z) { return z.end - z.begin; }

inline std::uint64_t self_time(const Forest& f, const Zone& z) {
  std::uint64_t children = 0;
  for (const int c : z.children) children += total(f.zones[static_cast<std::size_t>(c)]);
  return total(z) - children;
}

inline std::vector<std::string> ancestors(const Forest& f, const Zone& z) {  // outermost first
  std::vector<std::string> out;
  for (int p = z.parent; p >= 0; p = f.zones[static_cast<std::size_t>(p)].parent) {
    out.insert(out.begin(), f.zones[static_cast<std::size_t>(p)].name);
  }
  return out;
}

}  // namespace ringtrace::testing
