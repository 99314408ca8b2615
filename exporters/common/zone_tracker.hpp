// Per-thread zone stacks over the ordered stream, shared by every exporter that needs
// inclusive and self times (folded stacks, pstats, ops summary, key averages, Chrome's
// handling of zones), and the one computation of on-CPU time (Config::context_switches).
//
// Feed every event in order; for each zone end the callback gets the closed zone with
// its total and self time (total minus its direct children's totals, integer ns) and
// the zones still open outside it on that thread, outermost first. Memory: the deepest
// nesting per thread, never the number of events.
//
// On-CPU time: feed the switch_out and switch_in events too. Per thread the tracker keeps
// whether the thread is off the CPU (since when) and the off-CPU time it accumulated; a
// zone's off-CPU time is what accumulated between its begin and its end, its on-CPU time
// its total less that (so on + off == wall for every zone), and its self on-CPU time its
// self time less what accumulated inside it outside its direct children. The rules, for
// every exporter alike (docs/context-switches.md, "On-CPU time"):
// - an off interval runs from a switch_out to the next switch_in;
// - a zone begin or end of the thread while it reads off the CPU ends the interval there
//   (the thread recorded it: it was running; a clock fit of a microsecond between the
//   kernel's and the thread's times could otherwise overlap them), except the ends a
//   stream made up (closed at stop or at a window's end), which close at a time of their own;
// - across lost records (SwitchBits::after_loss) the interval is not counted: an in
//   after a loss ends the state without adding to it, an out after a loss while out
//   starts anew;
// - an out while out, an in while on are ignored;
// - before a thread's first switch event, and on a thread that has none, its time is
//   on-CPU (ClosedZone::on_cpu_known says which).
// Intervals, as they end, go to the callback given to on_off_cpu() (the Chrome and
// Perfetto exporters draw them).
//
// Memory (Config::memory, docs/memory.md): feed the alloc and free events too. Each goes
// to the innermost zone open on its thread (none: it belongs to no zone); a closed zone
// gets what it and its children allocated and freed (ClosedZone::memory: PyTorch's
// cpu_memory_usage is its allocated less freed bytes) and what it did itself, children
// excluded (self_memory), as its total and self times. Per thread the tracker keeps a
// stack of the open zones' counts no deeper than the deepest zone that saw a memory
// event; a zone closes by adding its counts to its parent's, so the cost is constant per
// event whatever the nesting, and a stream without memory events pays one test per end.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "ringtrace/detail/platform.hpp"  // RINGTRACE_NOINLINE
#include "ringtrace/event.hpp"
#include "ringtrace/exporter.hpp"  // TraceContext: sites' sampling rates

namespace ringtrace::detail {

struct OpenZone {
  SiteId site;
  std::uint32_t tag;   // the exporter's own word, given to feed() with the begin
  std::uint8_t flags;  // EventFlags of the begin (region)
  std::int64_t value;  // region id
  std::uint64_t begin_ns;
  std::uint64_t child_ns;   // sum of direct children's totals so far
  std::uint64_t weight;     // zones this one stands for (sampling: its and its ancestors' rates)
  std::uint64_t off_begin;  // the thread's off-CPU time accumulated at the begin
  std::uint64_t child_off;  // sum of direct children's off-CPU times so far
};

// What a zone allocated and freed: bytes and counts of alloc and free events.
struct ZoneMemory {
  std::uint64_t allocated_bytes = 0;
  std::uint64_t allocations = 0;
  std::uint64_t freed_bytes = 0;  // of the frees whose size is known (EventFlags::size_unknown: 0)
  std::uint64_t frees = 0;        // every free
  // Allocated less freed bytes: PyTorch's cpu_memory_usage (negative when the zone freed
  // more than it allocated).
  std::int64_t net_bytes() const { return static_cast<std::int64_t>(allocated_bytes - freed_bytes); }
  void add(const ZoneMemory& o) {
    allocated_bytes += o.allocated_bytes;
    allocations += o.allocations;
    freed_bytes += o.freed_bytes;
    frees += o.frees;
  }
  ZoneMemory minus(const ZoneMemory& o) const {
    return ZoneMemory{allocated_bytes - o.allocated_bytes, allocations - o.allocations, freed_bytes - o.freed_bytes,
                      frees - o.frees};
  }
};

struct ClosedZone {
  ThreadId thread;
  SiteId site;
  std::uint32_t tag;   // as given with the begin
  std::uint8_t flags;  // begin's flags | end's flags (region, closed_at_stop)
  std::int64_t value;  // region id
  std::uint64_t begin_ns;
  std::uint64_t end_ns;
  std::uint64_t total_ns;  // end - begin
  std::uint64_t self_ns;   // total - direct children's totals
  std::uint32_t depth;     // zones open outside this one
  // Zones this one stands for in an estimate: the product of the sampling rates (the
  // `factor` given with each begin) of this zone and every zone open outside it. 1
  // unless the exporter estimates sampled sites.
  std::uint64_t weight;
  std::uint64_t off_cpu_ns;       // time its thread was off the CPU inside it (<= total_ns)
  std::uint64_t self_off_cpu_ns;  // of which outside its direct children (<= self_ns)
  bool on_cpu_known;              // the thread's switches were tracked when it ended
  // Alloc and free events fed while it was open: in it or its children (memory), in it
  // outside its children (self_memory). Zeros without memory events.
  ZoneMemory memory;
  ZoneMemory self_memory;
  std::uint64_t on_cpu_ns() const { return total_ns - off_cpu_ns; }
  std::uint64_t self_on_cpu_ns() const { return self_ns - self_off_cpu_ns; }
  std::int64_t cpu_memory_usage() const { return memory.net_bytes(); }            // children included
  std::int64_t self_cpu_memory_usage() const { return self_memory.net_bytes(); }  // children excluded
};

// An interval a thread spent off the CPU, as the tracker closed it.
struct OffCpuInterval {
  ThreadId thread;
  std::uint64_t begin_ns;  // its switch_out (a stream_start one: the thread was off at or before)
  std::uint64_t end_ns;    // its switch_in, or the zone boundary that ended it
  bool preempted;          // the out's SwitchBits::preempted: runnable, waiting for a CPU
};

inline bool is_switch(EventKind kind) { return kind == EventKind::switch_out || kind == EventKind::switch_in; }
inline bool is_memory(EventKind kind) { return kind == EventKind::alloc || kind == EventKind::free; }

// Each site's sampling rate (SiteInfo::sample_every, 1 for sites not sampled), looked up
// once per site: the `factor` an estimating exporter feeds with each begin.
class SampleRates {
 public:
  std::uint32_t of(SiteId site, const TraceContext& context) {
    if (site >= rates_.size()) [[unlikely]]
      rates_.resize(std::max<std::size_t>(site + 1, context.site_count()), 0);
    std::uint32_t& r = rates_[site];
    if (r == 0) [[unlikely]]
      r = std::max<std::uint32_t>(1, context.site(site).sample_every);
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
  // Switch events update the thread's CPU state (on_close is not called for them).
  template <typename OnClose>
  void feed(const Event& e, OnClose&& on_close, std::uint32_t tag = 0, std::uint32_t factor = 1) {
    last_ns_ = e.time_ns;
    if (e.kind == EventKind::zone_begin) {
      std::vector<OpenZone>& stack = stack_for(e.thread);
      const std::uint64_t outer = stack.empty() ? 1 : stack.back().weight;
      std::uint64_t off = 0;
      if (any_switches_) [[unlikely]]
        off = ran_at(e.thread, e.time_ns);
      stack.push_back(OpenZone{e.site, tag, e.flags, e.value.i, e.time_ns, 0, outer * factor, off, 0});
    } else if (e.kind == EventKind::zone_end) {
      if (stack_for(e.thread).empty()) return;
      const std::vector<OpenZone>& open_zones = stacks_[e.thread];
      // Field by field, each as wide as it was stored: a zone that closes right after
      // it opened would otherwise be read with 16-byte loads spanning two 8-byte stores
      // still in the store buffer, which cannot be forwarded and stall.
      const OpenZone& top = open_zones.back();
      const SiteId site = top.site;
      const std::uint32_t tag = top.tag;
      const std::uint8_t flags = top.flags;
      const std::int64_t value = top.value;
      const std::uint64_t begin_ns = top.begin_ns;
      const std::uint64_t child_ns = top.child_ns;
      const std::uint64_t weight = top.weight;
      const std::uint64_t off_begin = top.off_begin;
      const std::uint64_t child_off = top.child_off;
      const std::uint64_t total = e.time_ns >= begin_ns ? e.time_ns - begin_ns : 0;
      const std::uint64_t self = total >= child_ns ? total - child_ns : 0;
      std::uint64_t off = 0, self_off = 0;
      bool known = false;
      if (any_switches_) [[unlikely]] {
        // With the zone still on the stack: an interval the end cuts is drawn inside it.
        const bool made_up = (e.flags & (EventFlags::closed_at_stop | EventFlags::closed_at_window_end)) != 0;
        const std::uint64_t off_end = made_up ? off_at(e.thread, e.time_ns) : ran_at(e.thread, e.time_ns);
        off = std::min(off_end >= off_begin ? off_end - off_begin : 0, total);
        self_off = std::min(off >= child_off ? off - child_off : 0, self);
        known = e.thread < cpu_.size() && cpu_[e.thread].tracked;
      }
      std::vector<OpenZone>& stack = stacks_[e.thread];
      ClosedZone closed{e.thread,  site,
                        tag,       static_cast<std::uint8_t>(flags | e.flags),
                        value,     begin_ns,
                        e.time_ns, total,
                        self,      static_cast<std::uint32_t>(stack.size() - 1),
                        weight,    off,
                        self_off,  known,
                        {},        {}};
      if (any_memory_) [[unlikely]]
        close_memory(e.thread, stack.size(), closed);
      stack.pop_back();
      if (!stack.empty()) {
        stack.back().child_ns += total;
        stack.back().child_off += off;
      }
      on_close(closed, std::span<const OpenZone>(stack.data(), stack.size()));
    } else if (is_switch(e.kind)) [[unlikely]] {
      feed_switch(e);
    } else if (is_memory(e.kind)) [[unlikely]] {
      feed_memory(e);
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
        Event end{end_ns,
                  open.site,
                  t,
                  EventKind::zone_end,
                  EventFlags::closed_at_stop,
                  0,
                  static_cast<std::uint32_t>(stacks_[t].size() - 1),
                  {}};
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

  // The innermost zone open on `thread`, or null: for an exporter that changes its tag
  // after the begin (the table regroups a zone when its grouping argument arrives).
  OpenZone* innermost(ThreadId thread) {
    if (thread >= stacks_.size() || stacks_[thread].empty()) return nullptr;
    return &stacks_[thread].back();
  }

  std::uint32_t thread_count() const { return static_cast<std::uint32_t>(stacks_.size()); }

  // The thread ran at `time_ns`: an off-CPU interval it is in ends there (what feed()
  // does at a zone boundary), for an exporter that must write that interval before its
  // own handling of the boundary. Nothing without switch events.
  void ran(ThreadId thread, std::uint64_t time_ns) {
    if (any_switches_) [[unlikely]]
      ran_at(thread, time_ns);
  }
  // Off-CPU intervals go to `sink` as they end (a switch_in, or a zone boundary).
  void on_off_cpu(std::function<void(const OffCpuInterval&)> sink) { interval_sink_ = std::move(sink); }
  // Ends the intervals still open (threads off the CPU at the stream's end) at `end_ns`
  // (or their begin if later), through the on_off_cpu() callback. For on_finish, after
  // close_open().
  void end_off_cpu(std::uint64_t end_ns) {
    for (ThreadId t = 0; t < cpu_.size(); ++t) {
      if (cpu_[t].out) end_interval(t, cpu_[t], end_ns, true);
    }
  }
  // A switch event has been fed: zones have on-CPU times (exporters show their columns).
  bool any_switches() const { return any_switches_; }
  // An alloc or free event has been fed: zones have memory (exporters show it).
  bool any_memory() const { return any_memory_; }
  // Frees inside zones whose size was not known (not in any zone's freed bytes).
  std::uint64_t zone_frees_size_unknown() const { return zone_frees_size_unknown_; }
  // The thread is off the CPU now (and since when), as the switches fed say.
  bool off_cpu(ThreadId thread) const { return thread < cpu_.size() && cpu_[thread].out; }

 private:
  struct CpuState {
    std::uint64_t off_total = 0;  // ns off the CPU in the intervals closed so far
    std::uint64_t out_since = 0;  // while out
    bool out = false;
    bool preempted = false;
    bool tracked = false;  // a switch event of the thread was fed
  };

  CpuState& cpu_for(ThreadId thread) {
    if (thread >= cpu_.size()) [[unlikely]]
      cpu_.resize(thread + 1);
    return cpu_[thread];
  }
  // The thread's off-CPU time accumulated up to t.
  std::uint64_t off_at(ThreadId thread, std::uint64_t t) {
    const CpuState& c = cpu_for(thread);
    return c.off_total + (c.out && t > c.out_since ? t - c.out_since : 0);
  }
  // The thread ran at t (it recorded a zone boundary): an interval it was in ends there.
  std::uint64_t ran_at(ThreadId thread, std::uint64_t t) {
    CpuState& c = cpu_for(thread);
    if (c.out) [[unlikely]]
      end_interval(thread, c, t, true);
    return c.off_total;
  }
  void end_interval(ThreadId thread, CpuState& c, std::uint64_t t, bool count) {
    c.out = false;
    if (!count) return;
    const std::uint64_t end = std::max(t, c.out_since);
    c.off_total += end - c.out_since;
    if (interval_sink_) interval_sink_(OffCpuInterval{thread, c.out_since, end, c.preempted});
  }
  RINGTRACE_NOINLINE void feed_switch(const Event& e) {
    any_switches_ = true;
    CpuState& c = cpu_for(e.thread);
    c.tracked = true;
    const bool lost = (e.value.u & SwitchBits::after_loss) != 0;
    if (e.kind == EventKind::switch_out) {
      if (c.out && !lost) return;  // an in went missing (or was never sent): the earlier out stands
      c.out = true;
      c.out_since = e.time_ns;
      c.preempted = (e.value.u & SwitchBits::preempted) != 0;
    } else if (c.out) {
      end_interval(e.thread, c, e.time_ns, !lost);
    }
  }

  // The counts of a thread's open zones, outermost first: entry i is zone i's, for the
  // zones below the deepest one a memory event reached (those above it have none yet).
  struct OpenMemory {
    ZoneMemory total;     // its own events and its closed children's
    ZoneMemory children;  // its closed children's
  };
  RINGTRACE_NOINLINE void feed_memory(const Event& e) {
    any_memory_ = true;
    const std::size_t depth = stack_for(e.thread).size();
    if (depth == 0) return;  // outside every zone
    if (e.kind == EventKind::free && (e.flags & EventFlags::size_unknown) != 0) ++zone_frees_size_unknown_;
    if (e.thread >= memory_.size()) memory_.resize(e.thread + 1);
    std::vector<OpenMemory>& m = memory_[e.thread];
    if (m.size() < depth) m.resize(depth);
    // Made in a zone sampling left out (EventFlags::sampled_out): a child's, not recorded,
    // in the zone's total and not its self part.
    const bool child = (e.flags & EventFlags::sampled_out) != 0;
    ZoneMemory one;
    if (e.kind == EventKind::alloc && (e.flags & EventFlags::restored) == 0) {
      one.allocated_bytes = e.value.u;
      one.allocations = 1;
    } else {
      one.freed_bytes = e.value.u;
      one.frees = 1;
    }
    if (e.kind == EventKind::alloc && (e.flags & EventFlags::restored) != 0) {  // a failed realloc: its free undone
      m[depth - 1].total = m[depth - 1].total.minus(one);
      if (child) m[depth - 1].children = m[depth - 1].children.minus(one);
      return;
    }
    m[depth - 1].total.add(one);
    if (child) m[depth - 1].children.add(one);
  }
  // The zone `depth` deep on `thread` closes: its counts into `closed`, and into its parent's.
  void close_memory(ThreadId thread, std::size_t depth, ClosedZone& closed) {
    if (thread >= memory_.size() || memory_[thread].size() != depth) return;  // nothing reached it
    std::vector<OpenMemory>& m = memory_[thread];
    const OpenMemory z = m.back();
    m.pop_back();
    closed.memory = z.total;
    closed.self_memory = z.total.minus(z.children);
    if (!m.empty()) {  // its parent is m.back(): depth - 1 entries are left
      m.back().total.add(z.total);
      m.back().children.add(z.total);
    }
  }

  std::vector<OpenZone>& stack_for(ThreadId thread) {
    if (thread >= stacks_.size()) [[unlikely]]
      stacks_.resize(thread + 1);
    return stacks_[thread];
  }
  std::vector<std::vector<OpenZone>> stacks_;
  std::uint64_t last_ns_ = 0;  // time of the last event fed
  bool any_switches_ = false;
  std::vector<CpuState> cpu_;  // by thread, once a switch was fed
  std::function<void(const OffCpuInterval&)> interval_sink_;
  bool any_memory_ = false;
  std::uint64_t zone_frees_size_unknown_ = 0;
  std::vector<std::vector<OpenMemory>> memory_;  // by thread, once a memory event was fed
};

}  // namespace ringtrace::detail
