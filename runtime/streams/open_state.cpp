#include "open_state.hpp"

#include <algorithm>

namespace ringtrace::detail {

OpenState::Thread& OpenState::thread(ThreadId t) {
  if (t >= threads_.size()) [[unlikely]]
    threads_.resize(t + 1);
  return threads_[t];
}

OpenState::SpanKey OpenState::span_key(const Event& e, const TraceContext& context) {
  if (e.site >= name_of_site_.size())
    name_of_site_.resize(std::max<std::size_t>(e.site + 1, context.site_count()), ~0u);
  std::uint32_t& name = name_of_site_[e.site];
  if (name == ~0u)
    name = names_.emplace(context.site(e.site).name, static_cast<std::uint32_t>(names_.size())).first->second;
  return SpanKey{name, context.thread(e.thread).pid, e.value.u};
}

bool OpenState::span_open(const Event& end, const TraceContext& context) {
  return spans_.count(span_key(end, context)) != 0;
}

void OpenState::feed(const Event& e, const TraceContext& context) {
  switch (e.kind) {
    case EventKind::zone_begin:
    case EventKind::zone_end:
      feed_zone(e);
      break;
    case EventKind::arg:
    case EventKind::flow_out:
    case EventKind::flow_in:
      if (keep_attached_) feed_attached(e, context);
      break;
    case EventKind::switch_out:
    case EventKind::switch_in: {
      Thread& t = thread(e.thread);
      t.off_cpu = e.kind == EventKind::switch_out;
      t.off_bits = e.value.u & SwitchBits::preempted;
      if (t.off_cpu) switch_site_ = e.site;
      break;
    }
    case EventKind::counter:
      counters_[std::uint64_t{e.site} << 32 | e.thread] = e;
      break;
    case EventKind::async_begin: {
      if (spans_.size() >= kMaxTrackedSpans) break;
      spans_[span_key(e, context)] = Span{e, span_order_++};
      break;
    }
    case EventKind::async_end:
      spans_.erase(span_key(e, context));
      break;
    default:
      break;
  }
}

void OpenState::feed_zone(const Event& e) {
  Thread& t = thread(e.thread);
  t.off_cpu = false;  // the thread recorded it: it runs (ZoneTracker's rule)
  if (e.kind == EventKind::zone_begin) {
    if (t.zones.size() >= kMaxTrackedDepth) {
      ++t.past_bound;
      return;
    }
    t.zones.push_back(Zone{e.site, static_cast<std::uint8_t>(e.flags & EventFlags::region), e.value.u,
                           static_cast<std::uint32_t>(t.held.size())});
    ++open_zones_;
    return;
  }
  if (t.past_bound != 0) {
    --t.past_bound;
    return;
  }
  if (t.zones.empty()) return;
  const std::uint32_t mark = t.zones.back().held_mark;
  t.zones.pop_back();
  --open_zones_;
  if (mark < t.held.size()) {
    for (std::size_t i = mark; i < t.held.size(); ++i) held_bytes_ -= t.held[i].text.size() + sizeof(HeldEvent);
    t.held.resize(mark);
  }
}

void OpenState::feed_attached(const Event& e, const TraceContext& context) {
  Thread& t = thread(e.thread);
  if (t.zones.empty() || t.past_bound != 0) return;  // belongs to no zone kept here
  const std::string_view text = context.text(e);
  if (held_bytes_ + text.size() + sizeof(HeldEvent) > kMaxHeldBytes) {
    ++held_lost_;
    return;
  }
  held_bytes_ += text.size() + sizeof(HeldEvent);
  t.held.push_back(HeldEvent{e, std::string(text)});
}

void OpenState::stop_keeping_attached() {
  keep_attached_ = false;
  for (Thread& t : threads_) {
    for (Zone& z : t.zones) z.held_mark = 0;
    t.held.clear();
    t.held.shrink_to_fit();
  }
  held_bytes_ = 0;
}

std::uint64_t OpenState::untracked_zones() const {
  std::uint64_t n = 0;
  for (const Thread& t : threads_) n += t.past_bound;
  return n;
}

void OpenState::closing(std::uint64_t time, std::vector<HeldEvent>& out) const {
  for (ThreadId id = 0; id < threads_.size(); ++id) {
    const std::vector<Zone>& zones = threads_[id].zones;
    for (std::size_t depth = zones.size(); depth-- > 0;) {
      const Zone& z = zones[depth];
      Event end{time,
                z.site,
                id,
                EventKind::zone_end,
                static_cast<std::uint8_t>(z.flags | EventFlags::closed_at_window_end),
                0,
                static_cast<std::uint32_t>(depth),
                {}};
      end.value.u = z.value;
      out.push_back(HeldEvent{end, {}});
    }
  }
  std::vector<const Span*> spans;
  for (const auto& [key, span] : spans_) spans.push_back(&span);
  std::sort(spans.begin(), spans.end(), [](const Span* a, const Span* b) { return a->order < b->order; });
  for (const Span* s : spans) {
    Event end = s->begin;
    end.time_ns = time;
    end.kind = EventKind::async_end;
    end.flags = EventFlags::closed_at_window_end;
    out.push_back(HeldEvent{end, {}});
  }
}

void OpenState::reopening(std::uint64_t time, std::vector<HeldEvent>& out) const {
  for (ThreadId id = 0; id < threads_.size(); ++id) {
    const Thread& t = threads_[id];
    if (t.off_cpu) {
      Event out_event{time, 0, id, EventKind::switch_out, 0, 0, 0, {}};
      out_event.value.u = SwitchBits::stream_start | t.off_bits;
      out_event.site = switch_site_;  // the built-in "ringtrace: switched out"
      out.push_back(HeldEvent{out_event, {}});
    }
    for (std::size_t depth = 0; depth < t.zones.size(); ++depth) {
      const Zone& z = t.zones[depth];
      Event begin{time,
                  z.site,
                  id,
                  EventKind::zone_begin,
                  static_cast<std::uint8_t>(z.flags | EventFlags::opened_at_window_start),
                  0,
                  static_cast<std::uint32_t>(depth),
                  {}};
      begin.value.u = z.value;
      out.push_back(HeldEvent{begin, {}});
      const std::size_t end = depth + 1 < t.zones.size() ? t.zones[depth + 1].held_mark : t.held.size();
      for (std::size_t i = z.held_mark; i < end && i < t.held.size(); ++i) {
        HeldEvent h = t.held[i];
        h.event.time_ns = time;
        h.event.depth = static_cast<std::uint32_t>(depth + 1);
        out.push_back(std::move(h));
      }
    }
  }
  std::vector<const Span*> spans;
  for (const auto& [key, span] : spans_) spans.push_back(&span);
  std::sort(spans.begin(), spans.end(), [](const Span* a, const Span* b) { return a->order < b->order; });
  for (const Span* s : spans) {
    Event begin = s->begin;
    begin.time_ns = time;
    begin.flags = EventFlags::opened_at_window_start;
    out.push_back(HeldEvent{begin, {}});
  }
  std::vector<const Event*> counters;
  for (const auto& [key, sample] : counters_) counters.push_back(&sample);
  std::sort(counters.begin(), counters.end(), [](const Event* a, const Event* b) {
    return a->time_ns != b->time_ns
               ? a->time_ns < b->time_ns
               : (std::uint64_t{a->site} << 32 | a->thread) < (std::uint64_t{b->site} << 32 | b->thread);
  });
  for (const Event* c : counters) {
    Event sample = *c;
    sample.time_ns = time;
    sample.depth =
        sample.thread < threads_.size() ? static_cast<std::uint32_t>(threads_[sample.thread].zones.size()) : 0;
    sample.flags &= EventFlags::counter_double;
    out.push_back(HeldEvent{sample, {}});
  }
}

}  // namespace ringtrace::detail
