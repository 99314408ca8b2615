// Per-thread zone stacks over the ordered stream, shared by every exporter that needs
// inclusive and self times (folded stacks, pstats, ops summary, key averages, Chrome's
// handling of zones).
//
// Feed every event in order; for each zone end the callback gets the closed zone with
// its total and self time (total minus its direct children's totals, integer ns) and
// the zones still open outside it on that thread, outermost first. Memory: the deepest
// nesting per thread, never the number of events.
#pragma once

#include <algorithm>
#include <cstdint>
#include <span>
#include <vector>

#include "ringtrace/event.hpp"
#include "ringtrace/exporter.hpp"  // TraceContext: sites' sampling rates

namespace ringtrace::detail {

struct OpenZone {
  SiteId site;
  std::uint32_t tag;       // the exporter's own word, given to feed() with the begin
  std::uint8_t flags;      // EventFlags of the begin (region)
  std::int64_t value;      // region id
  std::uint64_t begin_ns;
  std::uint64_t child_ns;  // sum of direct children's totals so far
  std::uint64_t weight;    // zones this one stands for (sampling: its and its ancestors' rates)
};

struct ClosedZone {
  ThreadId thread;
  SiteId site;
  std::uint32_t tag;       // as given with the begin
  std::uint8_t flags;      // begin's flags | end's flags (region, closed_at_stop)
  std::int64_t value;      // region id
  std::uint64_t begin_ns;
  std::uint64_t end_ns;
  std::uint64_t total_ns;  // end - begin
  std::uint64_t self_ns;   // total - direct children's totals
  std::uint32_t depth;     // zones open outside this one
  // Zones this one stands for in an estimate: the product of the sampling rates (the
  // `factor` given with each begin) of this zone and every zone open outside it. 1
  // unless the exporter estimates sampled sites.
  std::uint64_t weight;
};

// Each site's sampling rate (SiteInfo::sample_every, 1 for sites not sampled), looked up
// once per site: the `factor` an estimating exporter feeds with each begin.
class SampleRates {
 public:
  std::uint32_t of(SiteId site, const TraceContext& context) {
    if (site >= rates_.size()) [[unlikely]] rates_.resize(std::max<std::size_t>(site + 1, context.site_count()), 0);
    std::uint32_t& r = rates_[site];
    if (r == 0) [[unlikely]] r = std::max<std::uint32_t>(1, context.site(site).sample_every);
    return r;
  }
  // Whether any site seen had a rate above 1.
  bool any_sampled() const {
    for (const std::uint32_t r : rates_) {
      if (r > 1) return true;
    }
    return false;
  }

 private:
  std::vector<std::uint32_t> rates_;  // 0: not looked up yet
};

class ZoneTracker {
 public:
  // Calls on_close(const ClosedZone&, std::span<const OpenZone> outer) at each zone end.
  // Ends with no open zone on their thread are ignored (the drainer never sends them).
  // `tag` is kept with a begin and handed back with its close (the table keeps its group
  // there, so that it needs no stack of its own).
  // `factor`, with a begin: the zone's site's sampling rate when the exporter estimates.
  template <typename OnClose>
  void feed(const Event& e, OnClose&& on_close, std::uint32_t tag = 0, std::uint32_t factor = 1) {
    last_ns_ = e.time_ns;
    if (e.kind == EventKind::zone_begin) {
      std::vector<OpenZone>& stack = stack_for(e.thread);
      const std::uint64_t outer = stack.empty() ? 1 : stack.back().weight;
      stack.push_back(OpenZone{e.site, tag, e.flags, e.value.i, e.time_ns, 0, outer * factor});
    } else if (e.kind == EventKind::zone_end) {
      std::vector<OpenZone>& stack = stack_for(e.thread);
      if (stack.empty()) return;
      // Field by field, each as wide as it was stored: a zone that closes right after
      // it opened would otherwise be read with 16-byte loads spanning two 8-byte stores
      // still in the store buffer, which cannot be forwarded and stall.
      const OpenZone& top = stack.back();
      const SiteId site = top.site;
      const std::uint32_t tag = top.tag;
      const std::uint8_t flags = top.flags;
      const std::int64_t value = top.value;
      const std::uint64_t begin_ns = top.begin_ns;
      const std::uint64_t child_ns = top.child_ns;
      const std::uint64_t weight = top.weight;
      stack.pop_back();
      const std::uint64_t total = e.time_ns >= begin_ns ? e.time_ns - begin_ns : 0;
      const std::uint64_t self = total >= child_ns ? total - child_ns : 0;
      if (!stack.empty()) stack.back().child_ns += total;
      const ClosedZone closed{e.thread, site, tag, static_cast<std::uint8_t>(flags | e.flags),
                              value, begin_ns, e.time_ns, total, self,
                              static_cast<std::uint32_t>(stack.size()), weight};
      on_close(closed, std::span<const OpenZone>(stack.data(), stack.size()));
    }
  }

  // Closes every zone still open, innermost first, through the same callback as feed():
  // at `stop_ns`, or at the last time fed if that is later, flagged closed_at_stop. A live
  // session closes open zones itself at stop(); this is for a stream that ended without
  // their ends (a truncated recording), so that every exporter counts them the same way.
  template <typename OnClose>
  void close_open(std::uint64_t stop_ns, OnClose&& on_close) {
    const std::uint64_t end_ns = std::max(stop_ns, last_ns_);
    for (ThreadId t = 0; t < stacks_.size(); ++t) {
      while (!stacks_[t].empty()) {
        const OpenZone& open = stacks_[t].back();
        Event end{end_ns, open.site, t, EventKind::zone_end, EventFlags::closed_at_stop, 0,
                  static_cast<std::uint32_t>(stacks_[t].size() - 1), {}};
        end.value.i = open.value;
        feed(end, on_close);
      }
    }
  }

  // Zones open on `thread` now, outermost first.
  std::span<const OpenZone> open(ThreadId thread) const {
    if (thread >= stacks_.size()) return {};
    return std::span<const OpenZone>(stacks_[thread].data(), stacks_[thread].size());
  }

  std::uint32_t thread_count() const { return static_cast<std::uint32_t>(stacks_.size()); }

 private:
  std::vector<OpenZone>& stack_for(ThreadId thread) {
    if (thread >= stacks_.size()) [[unlikely]] stacks_.resize(thread + 1);
    return stacks_[thread];
  }
  std::vector<std::vector<OpenZone>> stacks_;
  std::uint64_t last_ns_ = 0;  // time of the last event fed
};

}  // namespace ringtrace::detail
