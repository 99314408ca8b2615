#include "ringtrace/recorded_trace.hpp"

#include <algorithm>
#include <stdexcept>

#include "switch_events.hpp"  // the switch sites' names

namespace ringtrace {
namespace {

RecordedSite copy_site(const SiteInfo& site) {
  return RecordedSite{site.name, site.function, site.file,     site.line,
                      site.kind, site.options,  site.category, site.sample_every < 1 ? 1 : site.sample_every};
}

}  // namespace

RecordedTraceContext::RecordedTraceContext(const RecordedTrace& trace) : trace_(trace) {
  sites_.reserve(trace.sites.size());
  for (const RecordedSite& s : trace.sites) {
    sites_.push_back(SiteInfo{s.name.c_str(), s.function.c_str(), s.file.c_str(), s.line, s.kind, s.options,
                              s.category.c_str(), s.sample_every < 1 ? 1 : s.sample_every});
  }
}

std::string_view RecordedTraceContext::text(const Event& e) const {
  if ((e.kind != EventKind::arg && e.kind != EventKind::message) || (e.flags & EventFlags::text) == 0 ||
      e.value.u + e.text_size > trace_.texts.size()) {
    return {};
  }
  return std::string_view(trace_.texts).substr(e.value.u, e.text_size);
}

std::string_view RecordedTraceContext::node_id_of(std::uint32_t pid) const {
  const auto it = trace_.node_ids.find(pid);
  return it == trace_.node_ids.end() ? std::string_view{} : std::string_view(it->second);
}

void replay(const RecordedTrace& trace, Exporter& exporter, std::size_t batch_events) {
  if (batch_events == 0) batch_events = 1;
  RecordedTraceContext context(trace);
  exporter.on_start(context);
  for (std::size_t i = 0; i < trace.events.size(); i += batch_events) {
    const std::size_t n = std::min(batch_events, trace.events.size() - i);
    exporter.on_events(std::span<const Event>(trace.events.data() + i, n), context);
  }
  exporter.on_finish(context, trace.stats);
}

namespace {
ThreadInfo folded_placeholder() {
  ThreadInfo info;
  info.id = kFoldedThread;
  info.name = "(exited thread)";
  info.sort_index = kFoldedThread;
  return info;
}
}  // namespace

void MemoryExporter::on_start(const TraceContext& context) {
  std::lock_guard<std::mutex> lock(mutex_);
  trace_ = RecordedTrace{};
  trace_.process_name = context.process_name();
}

void MemoryExporter::on_events(std::span<const Event> events, const TraceContext& context) {
  std::lock_guard<std::mutex> lock(mutex_);
  const std::size_t first = trace_.events.size();
  trace_.events.insert(trace_.events.end(), events.begin(), events.end());
  for (std::size_t i = first; i < trace_.events.size(); ++i) {
    Event& e = trace_.events[i];
    // Each thread's identity from its first event: the session may fold an exited
    // thread's row before on_finish (Config::max_thread_rows).
    if (e.thread >= trace_.threads.size() || trace_.threads[e.thread].id != e.thread) [[unlikely]] {
      const ThreadInfo& live = context.thread(e.thread);
      if (e.thread >= trace_.threads.size()) trace_.threads.resize(e.thread + 1, folded_placeholder());
      if (live.id == e.thread) trace_.threads[e.thread] = live;
    }
    if ((e.kind != EventKind::arg && e.kind != EventKind::message) || (e.flags & EventFlags::text) == 0) continue;
    const std::string_view text = context.text(events[i - first]);  // the context's offset, made ours
    e.value.u = trace_.texts.size();
    e.text_size = static_cast<std::uint16_t>(text.size());
    trace_.texts.append(text);
  }
}

void MemoryExporter::on_finish(const TraceContext& context, const SessionStats& stats) {
  std::lock_guard<std::mutex> lock(mutex_);
  trace_.clock = context.clock();
  trace_.sites.clear();
  for (SiteId id = 0; id < context.site_count(); ++id) trace_.sites.push_back(copy_site(context.site(id)));
  // The live identity where the context still has it (it carries later renames), the
  // copy from the thread's first event where its row was folded.
  if (trace_.threads.size() < context.thread_count())
    trace_.threads.resize(context.thread_count(), folded_placeholder());
  for (ThreadId id = 0; id < context.thread_count(); ++id) {
    const ThreadInfo& live = context.thread(id);
    if (live.id == id) trace_.threads[id] = live;
  }
  // The node of each process seen (0: the context's own).
  for (const ThreadInfo& t : trace_.threads) {
    if (trace_.node_ids.count(t.pid) == 0) {
      const std::string_view node = context.node_id_of(t.pid);
      if (!node.empty()) trace_.node_ids.emplace(t.pid, node);
    }
  }
  if (trace_.node_ids.count(0) == 0 && !context.node_id_of(0).empty())
    trace_.node_ids.emplace(0, context.node_id_of(0));
  trace_.stats = stats;
}

RecordedTrace MemoryExporter::trace() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return trace_;
}

std::size_t MemoryExporter::event_count() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return trace_.events.size();
}

TraceBuilder::TraceBuilder(std::string process_name) {
  trace_.process_name = std::move(process_name);
  trace_.sites.push_back(RecordedSite{"ringtrace: dropped events", "", "", 0, SiteKind::instant, 0, "", 1});
}

SiteId TraceBuilder::site(std::string name, SiteKind kind, std::string file, std::uint32_t line, std::string function,
                          std::string category, std::uint8_t options, std::uint32_t sample_every) {
  if (sample_every > 1) options |= SiteOptions::sampled;
  trace_.sites.push_back(RecordedSite{std::move(name), std::move(function), std::move(file), line, kind, options,
                                      std::move(category), sample_every < 1 ? 1 : sample_every});
  return static_cast<SiteId>(trace_.sites.size() - 1);
}

ThreadId TraceBuilder::thread(std::string name, std::uint64_t os_tid) {
  ThreadInfo info;
  info.id = static_cast<ThreadId>(trace_.threads.size());
  info.os_tid = os_tid != 0 ? os_tid : info.id + 1;
  info.name = std::move(name);
  info.sort_index = info.id;
  trace_.threads.push_back(std::move(info));
  state_.emplace_back();
  trace_.stats.threads.push_back(
      ThreadStats{trace_.threads.back().id, trace_.threads.back().os_tid, trace_.threads.back().name, 0, 0});
  return trace_.threads.back().id;
}

void TraceBuilder::check(ThreadId thread, std::uint64_t time_ns, const char* what) {
  if (thread >= state_.size()) throw std::logic_error(std::string("TraceBuilder::") + what + ": unknown thread");
  if (time_ns < state_[thread].last_ns) {
    throw std::logic_error(std::string("TraceBuilder::") + what + ": time goes backwards on thread " +
                           std::to_string(thread));
  }
  state_[thread].last_ns = time_ns;
}

Event& TraceBuilder::add(ThreadId thread, std::uint64_t time_ns, EventKind kind, SiteId site) {
  Event e{time_ns, site, thread, kind, 0, 0, static_cast<std::uint32_t>(state_[thread].open.size()), {}};
  e.value.u = 0;
  pending_.push_back(e);
  return pending_.back();
}

TraceBuilder& TraceBuilder::begin(ThreadId thread, SiteId site, std::uint64_t time_ns, std::int64_t region_id) {
  check(thread, time_ns, "begin");
  if (site >= trace_.sites.size()) throw std::logic_error("TraceBuilder::begin: unknown site");
  Event& e = add(thread, time_ns, EventKind::zone_begin, site);
  if (trace_.sites[site].kind == SiteKind::region) {
    e.flags = EventFlags::region;
    e.value.i = region_id;
  } else if ((trace_.sites[site].options & SiteOptions::step) != 0) {
    e.value.i = region_id;  // the step's number
  }
  state_[thread].open.emplace_back(site, e.value.i);
  trace_.stats.threads[thread].recorded += 1;
  return *this;
}

TraceBuilder& TraceBuilder::end(ThreadId thread, std::uint64_t time_ns) {
  check(thread, time_ns, "end");
  auto& open = state_[thread].open;
  if (open.empty()) throw std::logic_error("TraceBuilder::end: no open zone on thread " + std::to_string(thread));
  const auto [site, value] = open.back();
  open.pop_back();
  Event& e = add(thread, time_ns, EventKind::zone_end, site);
  e.value.i = value;
  if (trace_.sites[site].kind == SiteKind::region) e.flags = EventFlags::region;
  trace_.stats.threads[thread].recorded += 1;
  return *this;
}

TraceBuilder& TraceBuilder::instant(ThreadId thread, SiteId site, std::uint64_t time_ns) {
  check(thread, time_ns, "instant");
  if (site >= trace_.sites.size()) throw std::logic_error("TraceBuilder::instant: unknown site");
  add(thread, time_ns, EventKind::instant, site);
  trace_.stats.threads[thread].recorded += 1;
  return *this;
}

TraceBuilder& TraceBuilder::counter(ThreadId thread, SiteId site, std::uint64_t time_ns, std::int64_t value) {
  check(thread, time_ns, "counter");
  if (site >= trace_.sites.size()) throw std::logic_error("TraceBuilder::counter: unknown site");
  add(thread, time_ns, EventKind::counter, site).value.i = value;
  trace_.stats.threads[thread].recorded += 1;
  return *this;
}

TraceBuilder& TraceBuilder::counter(ThreadId thread, SiteId site, std::uint64_t time_ns, double value) {
  check(thread, time_ns, "counter");
  if (site >= trace_.sites.size()) throw std::logic_error("TraceBuilder::counter: unknown site");
  Event& e = add(thread, time_ns, EventKind::counter, site);
  e.flags = EventFlags::counter_double;
  e.value.d = value;
  trace_.stats.threads[thread].recorded += 1;
  return *this;
}

TraceBuilder& TraceBuilder::dropped(ThreadId thread, std::uint64_t time_ns, std::uint64_t count) {
  check(thread, time_ns, "dropped");
  add(thread, time_ns, EventKind::dropped, 0).value.u = count;
  trace_.stats.threads[thread].dropped += count;
  return *this;
}

TraceBuilder& TraceBuilder::value(ThreadId thread, SiteId site, std::uint64_t time_ns, std::int64_t value) {
  check(thread, time_ns, "value");
  if (site >= trace_.sites.size()) throw std::logic_error("TraceBuilder::value: unknown site");
  add(thread, time_ns, EventKind::arg, site).value.i = value;
  trace_.stats.threads[thread].recorded += 1;
  return *this;
}

TraceBuilder& TraceBuilder::value(ThreadId thread, SiteId site, std::uint64_t time_ns, double value) {
  check(thread, time_ns, "value");
  if (site >= trace_.sites.size()) throw std::logic_error("TraceBuilder::value: unknown site");
  Event& e = add(thread, time_ns, EventKind::arg, site);
  e.flags = EventFlags::value_double;
  e.value.d = value;
  trace_.stats.threads[thread].recorded += 1;
  return *this;
}

TraceBuilder& TraceBuilder::text(ThreadId thread, SiteId site, std::uint64_t time_ns, std::string_view text,
                                 bool truncated) {
  check(thread, time_ns, "text");
  if (site >= trace_.sites.size()) throw std::logic_error("TraceBuilder::text: unknown site");
  if (text.size() > 0xFFFF) throw std::logic_error("TraceBuilder::text: longer than 65535 bytes");
  Event& e = add(thread, time_ns, EventKind::arg, site);
  e.flags = static_cast<std::uint8_t>(EventFlags::text | (truncated ? EventFlags::truncated : 0));
  e.value.u = trace_.texts.size();
  e.text_size = static_cast<std::uint16_t>(text.size());
  trace_.texts.append(text);
  trace_.stats.threads[thread].recorded += 1;
  return *this;
}

SiteId TraceBuilder::flow_site(EventKind kind) {
  SiteId& id = kind == EventKind::flow_out ? flow_out_site_ : flow_in_site_;
  if (id == 0) id = site("flow", kind == EventKind::flow_out ? SiteKind::flow_out : SiteKind::flow_in);
  return id;
}

TraceBuilder& TraceBuilder::flow_out(ThreadId thread, std::uint64_t time_ns, std::uint64_t id) {
  check(thread, time_ns, "flow_out");
  add(thread, time_ns, EventKind::flow_out, flow_site(EventKind::flow_out)).value.u = id;
  trace_.stats.threads[thread].recorded += 1;
  return *this;
}

TraceBuilder& TraceBuilder::flow_in(ThreadId thread, std::uint64_t time_ns, std::uint64_t id) {
  check(thread, time_ns, "flow_in");
  add(thread, time_ns, EventKind::flow_in, flow_site(EventKind::flow_in)).value.u = id;
  trace_.stats.threads[thread].recorded += 1;
  return *this;
}

TraceBuilder& TraceBuilder::async_begin(ThreadId thread, SiteId site, std::uint64_t time_ns, std::uint64_t id) {
  check(thread, time_ns, "async_begin");
  if (site >= trace_.sites.size()) throw std::logic_error("TraceBuilder::async_begin: unknown site");
  add(thread, time_ns, EventKind::async_begin, site).value.u = id;
  trace_.stats.threads[thread].recorded += 1;
  return *this;
}

TraceBuilder& TraceBuilder::async_end(ThreadId thread, SiteId site, std::uint64_t time_ns, std::uint64_t id) {
  check(thread, time_ns, "async_end");
  if (site >= trace_.sites.size()) throw std::logic_error("TraceBuilder::async_end: unknown site");
  add(thread, time_ns, EventKind::async_end, site).value.u = id;
  trace_.stats.threads[thread].recorded += 1;
  return *this;
}

TraceBuilder& TraceBuilder::switch_out(ThreadId thread, std::uint64_t time_ns, std::uint64_t bits) {
  return add_switch(thread, time_ns, true, bits);
}

TraceBuilder& TraceBuilder::switch_in(ThreadId thread, std::uint64_t time_ns, std::uint64_t bits) {
  return add_switch(thread, time_ns, false, bits);
}

TraceBuilder& TraceBuilder::add_switch(ThreadId thread, std::uint64_t time_ns, bool out, std::uint64_t bits) {
  check(thread, time_ns, out ? "switch_out" : "switch_in");
  SiteId& site = out ? switch_out_site_ : switch_in_site_;
  if (site == 0) site = this->site(out ? detail::kSwitchOutName : detail::kSwitchInName, SiteKind::instant);
  Event& e = add(thread, time_ns, out ? EventKind::switch_out : EventKind::switch_in, site);
  e.value.u = bits;
  e.depth = 0;  // the kernel's: outside the thread's zones
  trace_.stats.threads[thread].switches += 1;
  trace_.stats.context_switches += 1;
  return *this;
}

RecordedTrace TraceBuilder::build(std::uint64_t stop_ns) const {
  RecordedTrace out = trace_;
  std::vector<Event> events = pending_;
  std::uint64_t last = stop_ns;
  for (const Event& e : events) last = std::max(last, e.time_ns);
  for (ThreadId t = 0; t < state_.size(); ++t) {
    auto open = state_[t].open;
    while (!open.empty()) {
      const auto [site, value] = open.back();
      open.pop_back();
      Event e{
          last, site, t, EventKind::zone_end, EventFlags::closed_at_stop, 0, static_cast<std::uint32_t>(open.size()),
          {}};
      e.value.i = value;
      if (out.sites[site].kind == SiteKind::region) e.flags |= EventFlags::region;
      events.push_back(e);
      out.stats.closed_at_stop += 1;
    }
  }
  std::stable_sort(events.begin(), events.end(), [](const Event& a, const Event& b) { return a.time_ns < b.time_ns; });
  out.events = std::move(events);
  out.stats.recorded = 0;
  out.stats.dropped = 0;
  for (const ThreadStats& s : out.stats.threads) {
    out.stats.recorded += s.recorded;
    out.stats.dropped += s.dropped;
  }
  if (!out.events.empty()) {
    out.clock.start_ns = out.events.front().time_ns;
    out.clock.stop_ns = last;
  }
  return out;
}

}  // namespace ringtrace
