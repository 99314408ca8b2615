// Hand-built streams with alloc and free events (Config::memory), for the exporters'
// tests: TraceBuilder has no memory events, so each is built as an instant of a site of
// its own (the builder gives it its thread's depth and merges it in time order), then
// turned into the alloc or free the heap's accounting would deliver.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>

#include "ringtrace/recorded_trace.hpp"

namespace ringtrace::memory_test {

class MemoryStream {
 public:
  explicit MemoryStream(std::string process = "proc") : b(std::move(process)) {
    alloc_site_ = b.site("ringtrace: allocated", SiteKind::instant);
    free_site_ = b.site("ringtrace: freed", SiteKind::instant);
  }
  MemoryStream& alloc(ThreadId t, std::uint64_t time_ns, std::uint64_t bytes, std::uint8_t flags = 0) {
    b.instant(t, alloc_site_, time_ns);
    memory_[{t, time_ns}] = Memory{EventKind::alloc, bytes, flags};
    return *this;
  }
  // A free of `bytes` (0 and EventFlags::size_unknown: a block of unknown size).
  MemoryStream& free(ThreadId t, std::uint64_t time_ns, std::uint64_t bytes, std::uint8_t flags = 0) {
    b.instant(t, free_site_, time_ns);
    memory_[{t, time_ns}] = Memory{EventKind::free, bytes, flags};
    return *this;
  }
  RecordedTrace build(std::uint64_t stop_ns = 0) const {
    RecordedTrace trace = b.build(stop_ns);
    for (Event& e : trace.events) {
      if (e.kind != EventKind::instant || (e.site != alloc_site_ && e.site != free_site_)) continue;
      const Memory& m = memory_.at({e.thread, e.time_ns});
      e.kind = m.kind;
      e.value.u = m.bytes;
      e.flags = m.flags;
    }
    return trace;
  }

  TraceBuilder b;  // zones, threads and sites as ever

 private:
  struct Memory {
    EventKind kind;
    std::uint64_t bytes;
    std::uint8_t flags;
  };
  SiteId alloc_site_ = 0, free_site_ = 0;
  std::map<std::pair<ThreadId, std::uint64_t>, Memory> memory_;  // one memory event per thread and ns
};

}  // namespace ringtrace::memory_test
