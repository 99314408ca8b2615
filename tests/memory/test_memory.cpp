// Allocations on the rings (Config::memory): what the program allocates and frees, counted
// by the test itself, against the events and the session's stats.
#include <gtest/gtest.h>

#include <malloc.h>
#include <stdlib.h>

#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "ringtrace/exporter.hpp"
#include "ringtrace/ringtrace.hpp"

namespace {

using ringtrace::Event;
using ringtrace::EventKind;

// Every alloc and free event, with the zone it was in (innermost open on its thread).
class MemoryEvents final : public ringtrace::Exporter {
 public:
  struct Seen {
    EventKind kind;
    std::uint64_t bytes;
    std::uint8_t flags;
    std::string zone;  // "" outside every zone
  };
  void on_events(std::span<const Event> events, const ringtrace::TraceContext& context) override {
    for (const Event& e : events) {
      auto& stack = open[e.thread];
      if (e.kind == EventKind::zone_begin) {
        stack.push_back(context.site(e.site).name);
      } else if (e.kind == EventKind::zone_end) {
        if (!stack.empty()) stack.pop_back();
      } else if (e.kind == EventKind::alloc || e.kind == EventKind::free) {
        seen.push_back(Seen{e.kind, e.value.u, e.flags, stack.empty() ? "" : stack.back()});
      }
    }
  }
  // Bytes allocated and freed in the zone `name` (its own events: not its children's).
  std::pair<std::uint64_t, std::uint64_t> in(const std::string& name) const {
    std::pair<std::uint64_t, std::uint64_t> r{0, 0};
    for (const Seen& s : seen) {
      if (s.zone != name) continue;
      (s.kind == EventKind::alloc ? r.first : r.second) += s.bytes;
    }
    return r;
  }
  std::vector<Seen> seen;
  std::map<ringtrace::ThreadId, std::vector<std::string>> open;
};

ringtrace::Config memory_config() {
  ringtrace::Config config;
  config.memory = true;
  config.overflow = ringtrace::OverflowPolicy::block;
  return config;
}

// Opaque to the optimizer: a new/delete pair it could otherwise elide.
void* volatile g_sink;

TEST(Memory, MallocAndFreeInAZoneAreItsBytes) {
  ringtrace::Session session(memory_config());
  auto events = std::make_shared<MemoryEvents>();
  session.add_exporter(events);
  session.start();
  {
    RINGTRACE_ZONE("blocks");
    for (std::size_t size : {16u, 100u, 4000u, 123457u}) {
      void* p = std::malloc(size);
      g_sink = p;
      std::free(p);
    }
  }
  session.stop();
  const auto [allocated, freed] = events->in("blocks");
  EXPECT_EQ(allocated, 16u + 100u + 4000u + 123457u);
  EXPECT_EQ(freed, allocated);
  const ringtrace::MemoryStats& m = session.stats().memory;
  EXPECT_TRUE(m.known);
  EXPECT_GE(m.allocations, 4u);
  EXPECT_GE(m.peak_live_bytes, 123457u);
}

TEST(Memory, ALeakOfKnownSizeIsFoundInItsZone) {
  ringtrace::Session session(memory_config());
  session.start();
  void* kept = nullptr;
  {
    RINGTRACE_ZONE("leaky");
    kept = std::malloc(77777);
    g_sink = kept;
  }
  session.stop();
  const ringtrace::MemoryStats& m = session.stats().memory;
  bool found = false;
  for (const auto& leak : m.leaks) {
    if (leak.stack == "leaky") {
      found = true;
      EXPECT_EQ(leak.bytes, 77777u);
      EXPECT_EQ(leak.blocks, 1u);
    }
  }
  EXPECT_TRUE(found);
  std::free(kept);
}

}  // namespace
