// The filter stage (ringtrace/stream_filter.hpp): one pass over the ordered stream, in
// three steps per event:
//  1. time: before the range's start events only update what is open (open_state.hpp);
//     at its start what is open begins again, cut and marked; past its end what is open
//     ends, cut and marked, and nothing more goes on;
//  2. what the event is and where it lies (zone_selection.hpp: --thread, --exclude,
//     --zone, --max-depth), from a per-thread stack of the open zones' verdicts;
//  3. --min-duration (duration_gate.hpp), which holds a zone's begin until it is known to
//     last the bound, and what comes after it with it.
// Then each event gets its depth in the output (zones kept outside it on its thread) and
// goes to the exporters in batches, through a context that adds the filters' counts as
// trace metadata. Linear in the events whatever the nesting: each step is a constant
// amount of work per event (a stack push or pop, a cached verdict per call site).
#include <algorithm>
#include <deque>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "stream_filter_impl.hpp"

namespace ringtrace {

using detail::DurationGate;
using detail::GateEvent;
using detail::has_text;
using detail::HeldEvent;
using detail::LeftOut;
using detail::OpenState;
using detail::ZoneSelection;

namespace {

constexpr std::size_t kBatch = 4096;

}  // namespace

void StreamFilter::Impl::start(const TraceContext& c) {
  base = &c;
  run = Run{};
  selection.emplace(prototype);
  const std::uint64_t start_ns = c.clock().start_ns;
  const auto resolve = [&](const TimeBound& b) { return b.from_start ? start_ns + b.ns : b.ns; };
  run.has_from = options.from.has_value();
  run.has_to = options.to.has_value();
  if (run.has_from) run.from_ns = resolve(*options.from);
  if (run.has_to) run.to_ns = resolve(*options.to);
  run.phase = run.has_from ? Phase::before : Phase::open;
  run.track_all = run.has_to;
  run.track_spans = run.has_from || run.has_to || selection->filters_threads();
  run.open = OpenState(run.has_from);
  if (options.min_duration_ns != 0) {
    run.gate.emplace(options.min_duration_ns, [this](const Event& e) { return keep_text(base->text(e)); });
  }
}

void StreamFilter::Impl::count(LeftOut why) {
  FilterCounts& n = run.counts;
  switch (why) {
    case LeftOut::thread:
      ++n.by_thread;
      break;
    case LeftOut::time:
      ++n.by_time;
      break;
    case LeftOut::exclude:
      ++n.by_exclude;
      break;
    case LeftOut::zone:
      ++n.by_zone;
      break;
    case LeftOut::depth:
      ++n.by_depth;
      break;
    case LeftOut::duration:
      ++n.by_duration;
      break;
    case LeftOut::past_bound:
      ++n.past_bound;
      break;
    case LeftOut::no:
      break;
  }
}

// Step 2: why the event is left out, whatever its time (LeftOut::no: it is not). Zone
// begins are counted now when `count_now` (else at their end: they began before the
// time range, which may yet leave them out).
inline ZoneSelection::Verdict StreamFilter::Impl::judge(const Event& e, bool count_now) {
  ZoneSelection& s = *selection;
  if (e.kind == EventKind::async_end && run.track_spans) {  // where its begin went
    return {run.open.span_open(e, *base) ? LeftOut::no : LeftOut::thread, true};
  }
  if (!s.selected(e.thread, *base)) {
    s.unselected(e);
    return {LeftOut::thread, true};
  }
  switch (e.kind) {
    case EventKind::zone_begin:
      return s.zone_begin(e, *base, count_now);
    case EventKind::zone_end:
      return s.zone_end(e);
    case EventKind::arg:
    case EventKind::flow_out:
    case EventKind::flow_in:
      return {s.attached(e), true};
    case EventKind::instant:
    case EventKind::message:
    case EventKind::counter:
    case EventKind::alloc:
    case EventKind::free:
      return {s.inside(e), true};
    default:  // drops, switches, async begins: the thread's, wherever they lie
      return {};
  }
}

// Before the range: a zone that ends here lies wholly before it.
void StreamFilter::Impl::note_before(const Event& e, const ZoneSelection::Verdict& v) {
  if (e.kind == EventKind::zone_begin) {
    if (v.counted) count(v.why);  // another thread's, or past the bound
  } else if (e.kind == EventKind::zone_end) {
    if (!v.counted) ++run.counts.by_time;
  } else {
    ++run.counts.other_events;
  }
}

void StreamFilter::Impl::note_left_out(const Event& e, const ZoneSelection::Verdict& v) {
  if (e.kind == EventKind::zone_begin || e.kind == EventKind::zone_end) {
    if (e.kind == EventKind::zone_begin ? v.counted : !v.counted) count(v.why);
  } else {
    ++run.counts.other_events;
  }
}

// An event in the time range (or with none), the common case: steps 2 and 3.
void StreamFilter::Impl::feed(const Event& e) {
  Run& r = run;
  ++r.counts.events_in;
  if (e.kind == EventKind::zone_begin) ++r.counts.zones_in;
  if (r.phase != Phase::open || (r.has_to && e.time_ns > r.to_ns)) [[unlikely]] {
    feed_at_edges(e);
    return;
  }
  const ZoneSelection::Verdict v = judge(e, true);
  if (v.why != LeftOut::no) {
    note_left_out(e, v);
    return;
  }
  if (r.track_all || (r.track_spans && (e.kind == EventKind::async_begin || e.kind == EventKind::async_end))) {
    r.open.feed(e, *base);
  }
  pass(GateEvent{e, -1, false});
}

// Step 1: before the range, at its start, past its end.
void StreamFilter::Impl::feed_at_edges(const Event& e) {
  Run& r = run;
  if (r.phase == Phase::after) {
    after_to(e);
    return;
  }
  if (r.has_to && e.time_ns > r.to_ns) {
    close_at_to();
    after_to(e);
    return;
  }
  if (e.time_ns >= r.from_ns) {  // the range's start (phase before)
    open_at_from();
    const ZoneSelection::Verdict v = judge(e, true);
    if (v.why != LeftOut::no) {
      note_left_out(e, v);
      return;
    }
    if (r.track_all || (r.track_spans && (e.kind == EventKind::async_begin || e.kind == EventKind::async_end)))
      r.open.feed(e, *base);
    pass(GateEvent{e, -1, false});
    return;
  }
  const ZoneSelection::Verdict v = judge(e, false);
  note_before(e, v);
  if (v.why == LeftOut::no) r.open.feed(e, *base);  // what will be open at `from`
}

// The range begins: what is open (and kept) begins again at its start, marked.
void StreamFilter::Impl::open_at_from() {
  Run& r = run;
  r.phase = Phase::open;
  r.made.clear();
  r.open.reopening(r.from_ns, r.made);
  r.counts.held_lost += r.open.held_lost();
  r.open.stop_keeping_attached();
  for (const HeldEvent& h : r.made) {
    GateEvent g{h.event, -1, true};
    if (has_text(h.event)) g.text_id = keep_text(h.text);
    pass(g);
  }
}

// Past the range: what is open ends at its end, marked; nothing more goes on.
void StreamFilter::Impl::close_at_to() {
  Run& r = run;
  selection->count_open([this](LeftOut why) { count(why); });
  r.made.clear();
  r.open.closing(r.to_ns, r.made);
  for (const HeldEvent& h : r.made) pass(GateEvent{h.event, -1, true});
  r.phase = Phase::after;
}

void StreamFilter::Impl::after_to(const Event& e) {
  if (e.kind == EventKind::zone_begin) {
    count(selection->selected(e.thread, *base) ? LeftOut::time : LeftOut::thread);
  } else if (e.kind != EventKind::zone_end) {
    ++run.counts.other_events;
  }
}

// Step 3, then the output.
inline void StreamFilter::Impl::pass(const GateEvent& g) {
  if (!run.gate) {
    deliver(g);
    return;
  }
  run.released.clear();
  run.gate->feed(g, run.released);
  for (const GateEvent& out : run.released) deliver(out);
}

inline void StreamFilter::Impl::deliver(const GateEvent& g) {
  Run& r = run;
  Event e = g.event;
  if (e.thread >= r.out.size()) [[unlikely]]
    r.out.resize(e.thread + 1);
  Run::OutThread& thread = r.out[e.thread];
  thread.handed_on = 1;
  std::uint32_t& depth = thread.depth;
  switch (e.kind) {
    case EventKind::zone_begin:
      e.depth = depth++;
      ++r.counts.zones_out;
      if (g.made_up) ++r.counts.cut_at_start;
      break;
    case EventKind::zone_end:
      if (depth > 0) --depth;
      e.depth = depth;
      if (g.made_up) ++r.counts.cut_at_end;
      break;
    case EventKind::switch_out:
    case EventKind::switch_in:
      e.depth = 0;  // the kernel's
      break;
    default:
      e.depth = depth;
      break;
  }
  ++r.counts.events_out;
  if (has_text(e)) [[unlikely]] {
    const TextSource source = g.text_id >= 0 ? TextSource::own : TextSource::stream;
    if (r.batch_texts != TextSource::none && r.batch_texts != source) flush();
    r.batch_texts = source;
    if (source == TextSource::own) e.value.u = static_cast<std::uint64_t>(g.text_id);
  }
  r.batch.push_back(e);
  if (r.batch.size() >= kBatch) flush();
}

void StreamFilter::Impl::flush() {
  Run& r = run;
  if (r.batch.empty()) return;
  r.delivering = r.batch_texts;
  for (const auto& x : downstream) x->on_events(r.batch, context);
  if (r.delivering == TextSource::own) {
    std::uint64_t last = 0;
    for (const Event& e : r.batch) {
      if (has_text(e)) last = e.value.u;
    }
    while (!r.texts.empty() && r.texts_base <= last) {
      r.texts.pop_front();
      ++r.texts_base;
    }
  }
  r.delivering = TextSource::none;
  r.batch_texts = TextSource::none;
  r.batch.clear();
}

void StreamFilter::Impl::finish(const TraceContext& c, const SessionStats& stats) {
  base = &c;
  Run& r = run;
  const std::uint64_t stop = c.clock().stop_ns;
  if (r.phase == Phase::open && r.has_to && stop > r.to_ns) close_at_to();
  if (r.phase == Phase::before) {  // the stream ended before the range
    selection->count_open([this](LeftOut) { ++run.counts.by_time; });
  } else {
    selection->count_open([this](LeftOut why) { count(why); });
  }
  if (r.gate) {
    r.released.clear();
    r.gate->finish(r.has_to ? std::min(stop, r.to_ns) : stop, r.released);
    for (const GateEvent& out : r.released) deliver(out);
    r.short_by_site = r.gate->short_by_site();
  }
  flush();
  // Most first, then by name.
  r.counts.short_by_name.clear();
  for (SiteId s = 0; s < r.short_by_site.size(); ++s) {
    if (r.short_by_site[s] != 0) r.counts.short_by_name.emplace_back(c.site(s).name, r.short_by_site[s]);
  }
  std::sort(r.counts.short_by_name.begin(), r.counts.short_by_name.end(), [](const auto& a, const auto& b) {
    return a.second != b.second ? a.second > b.second : a.first < b.first;
  });
  SessionStats out = stats;
  out.clock = context.clock();
  if (selection->filters_threads()) {
    std::erase_if(out.threads, [&](const ThreadStats& t) { return !listed(t.thread); });
  }
  for (const auto& x : downstream) x->on_finish(context, out);
}

}  // namespace ringtrace
