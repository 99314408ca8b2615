// The bound of ringtrace::benchmark's traces: an exporter that keeps the first part of
// a run's stream in memory and counts the rest (ringtrace_benchmark.cpp says why the run
// records to its end). Header-only, so that tests drive it with hand-built streams.
#pragma once

#include <cstdint>
#include <set>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "ringtrace/exporter.hpp"
#include "ringtrace/recorded_trace.hpp"  // MemoryExporter

namespace ringtrace::bench {

// What the bound kept of a run and what it left out.
struct Counts {
  std::uint64_t zones = 0, untraced_zones = 0;
  std::uint64_t events = 0, untraced_events = 0;  // instants, counters, values, texts, flows, async spans, drops
  std::uint64_t first_ns = 0, cut_ns = 0;         // cut_ns: the first event left out (0: none)
  const char* cut_by = "none";                    // "time", "events" or "none"
};

// Keeps the first max_ns / max_events of a run's stream in memory and counts the rest.
// A zone begun before the cut is kept whole (its end, values and flows follow it);
// nothing that begins after the cut is kept. Zones, instants, counter samples, async
// begins, values and texts count toward max_events (a zone once).
class BoundedRecorder final : public Exporter {
 public:
  BoundedRecorder(std::uint64_t max_ns, std::uint64_t max_events) : max_ns_(max_ns), max_events_(max_events) {}

  void on_start(const TraceContext& context) override { memory_.on_start(context); }
  void on_events(std::span<const Event> events, const TraceContext& context) override {
    kept_.clear();
    for (const Event& e : events) {
      if (keep(e, context)) kept_.push_back(e);
    }
    if (!kept_.empty()) memory_.on_events(kept_, context);  // texts resolve in this call
  }
  void on_finish(const TraceContext& context, const SessionStats& stats) override { memory_.on_finish(context, stats); }

  RecordedTrace trace() const { return memory_.trace(); }
  const Counts& counts() const { return counts_; }

 private:
  bool keep(const Event& e, const TraceContext& context) {
    if (!seen_) {
      seen_ = true;
      counts_.first_ns = e.time_ns;
    }
    if (e.thread >= kept_open_.size()) kept_open_.resize(e.thread + 1, 0);
    std::uint32_t& kept_open = kept_open_[e.thread];  // its open zones that are kept: depths [0, kept_open)
    switch (e.kind) {
      case EventKind::zone_end:
        if (e.depth >= kept_open) return false;
        kept_open = e.depth;
        return true;
      case EventKind::arg:
      case EventKind::flow_out:
      case EventKind::flow_in: {  // on the innermost open zone, at depth e.depth - 1
        // Before the cut, kept (and counted toward the bound, but never the event that
        // cuts: it would part a zone from its value); after it, kept when its zone is.
        const bool keep = !cut_ || (e.depth >= 1 && e.depth <= kept_open);
        if (!cut_) ++items_;
        ++(keep ? counts_.events : counts_.untraced_events);
        return keep;
      }
      case EventKind::async_end: {  // its begin's site is another one of the same name
        const auto it = async_.find({context.site(e.site).name, e.value.u});
        if (it != async_.end()) {
          async_.erase(it);
          return true;
        }
        return !cut_;
      }
      case EventKind::switch_out:
      case EventKind::switch_in:  // written by the kernel, not the run: kept before the cut, not counted
        return !cut_;
      case EventKind::zone_begin:
      case EventKind::instant:
      case EventKind::counter:
      case EventKind::dropped:
      case EventKind::async_begin:
      case EventKind::message:
      case EventKind::alloc:
      case EventKind::free:
        break;
    }
    if (!cut_) {
      const bool late = max_ns_ != 0 && e.time_ns - counts_.first_ns >= max_ns_;
      if (late || (max_events_ != 0 && items_ >= max_events_)) {
        cut_ = true;
        counts_.cut_ns = e.time_ns;
        counts_.cut_by = late ? "time" : "events";
      }
    }
    const bool zone = e.kind == EventKind::zone_begin;
    if (cut_) {
      ++(zone ? counts_.untraced_zones : counts_.untraced_events);
      return false;
    }
    ++items_;
    ++(zone ? counts_.zones : counts_.events);
    if (zone) kept_open = e.depth + 1;
    if (e.kind == EventKind::async_begin) async_.insert({context.site(e.site).name, e.value.u});
    return true;
  }

  const std::uint64_t max_ns_, max_events_;
  MemoryExporter memory_;
  std::vector<Event> kept_;
  std::vector<std::uint32_t> kept_open_;                   // by thread
  std::set<std::pair<std::string, std::uint64_t>> async_;  // spans begun before the cut, not yet ended
  std::uint64_t items_ = 0;
  bool seen_ = false, cut_ = false;
  Counts counts_;
};

}  // namespace ringtrace::bench
