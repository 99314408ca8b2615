// A streaming exporter for tests: checks the stream's invariants as it arrives and
// keeps only counters, so it can take millions of events.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "ringtrace/exporter.hpp"

namespace ringtrace::testing {

class ValidatingExporter final : public Exporter {
 public:
  struct Thread {
    std::uint64_t messages = 0;
    std::uint64_t allocs = 0, frees = 0;
    std::vector<SiteId> stack;
    std::uint64_t begins = 0, ends = 0, instants = 0, counters = 0, dropped = 0, closed_at_stop = 0;
    std::uint64_t args = 0, flows = 0, asyncs = 0, unattached = 0;  // unattached: args, flows with no open zone
    // Context switches: outs and ins alternate but after a loss, and after a stream's
    // first event (a thread found runnable reads as on the CPU until its first in).
    std::uint64_t switch_outs = 0, switch_ins = 0, switch_alternation_errors = 0;
    int last_switch = 0;  // 1: out, 2: in, 0: none or a stream's first
    std::uint64_t last_ns = 0;
    std::int64_t last_counter = -1;
    std::uint64_t counter_gaps = 0;  // counter values not last + counter_step
    std::uint64_t os_tid = 0;
    std::string name;
  };

  explicit ValidatingExporter(std::int64_t counter_step = 0) : counter_step_(counter_step) {}

  void on_start(const TraceContext&) override { ++starts; }

  void on_events(std::span<const Event> events, const TraceContext&) override {
    for (const Event& e : events) {
      ++events_seen;
      if (e.time_ns < last_ns_) ++order_errors;
      last_ns_ = e.time_ns;
      Thread& t = threads[e.thread];
      if (e.time_ns < t.last_ns) ++thread_order_errors;
      t.last_ns = e.time_ns;
      switch (e.kind) {
        case EventKind::zone_begin:
          if (e.depth != t.stack.size()) ++depth_errors;
          t.stack.push_back(e.site);
          ++t.begins;
          break;
        case EventKind::zone_end:
          if (t.stack.empty() || t.stack.back() != e.site) {
            ++nesting_errors;
          } else {
            t.stack.pop_back();
          }
          if (e.depth != t.stack.size()) ++depth_errors;
          if ((e.flags & EventFlags::closed_at_stop) != 0) {
            ++t.closed_at_stop;
          } else {
            ++t.ends;
          }
          break;
        case EventKind::instant:
          ++t.instants;
          break;
        case EventKind::counter:
          if (counter_step_ != 0 && t.last_counter >= 0 && e.value.i != t.last_counter + counter_step_)
            ++t.counter_gaps;
          t.last_counter = e.value.i;
          ++t.counters;
          break;
        case EventKind::dropped:
          t.dropped += e.value.u;
          break;
        case EventKind::arg:
        case EventKind::flow_out:
        case EventKind::flow_in:
          if (e.depth != t.stack.size()) ++depth_errors;
          if (t.stack.empty()) ++t.unattached;
          ++(e.kind == EventKind::arg ? t.args : t.flows);
          break;
        case EventKind::async_begin:
        case EventKind::async_end:
          ++t.asyncs;
          break;
        case EventKind::message:
          if (e.depth != t.stack.size()) ++depth_errors;
          ++t.messages;
          break;
        case EventKind::switch_out:
        case EventKind::switch_in: {
          if (e.depth != 0) ++depth_errors;
          const int kind = e.kind == EventKind::switch_out ? 1 : 2;
          if (kind == t.last_switch && (e.value.u & SwitchBits::after_loss) == 0) ++t.switch_alternation_errors;
          t.last_switch = (e.value.u & SwitchBits::stream_start) != 0 ? 0 : kind;
          ++(kind == 1 ? t.switch_outs : t.switch_ins);
          break;
        }
        case EventKind::alloc:
        case EventKind::free:
          if (e.depth != t.stack.size()) ++depth_errors;
          ++(e.kind == EventKind::alloc ? t.allocs : t.frees);
          break;
      }
    }
  }

  void on_finish(const TraceContext& context, const SessionStats& s) override {
    for (auto& [id, t] : threads) {
      t.os_tid = context.thread(id).os_tid;
      t.name = context.thread(id).name;
      if (!t.stack.empty()) ++unclosed_threads;
    }
    stats = s;
    ++finishes;
  }

  std::map<ThreadId, Thread> threads;
  std::uint64_t events_seen = 0;
  std::uint64_t order_errors = 0, thread_order_errors = 0, nesting_errors = 0, depth_errors = 0;
  std::uint64_t unclosed_threads = 0;
  int starts = 0, finishes = 0;
  SessionStats stats;

 private:
  std::int64_t counter_step_;
  std::uint64_t last_ns_ = 0;
};

// Scale for the heavy tests: RINGTRACE_TEST_SCALE=0.05 under sanitizers.
double test_scale();

}  // namespace ringtrace::testing
