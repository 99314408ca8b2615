// A recorded stream: what MemoryExporter keeps, what TraceBuilder makes by hand, and
// what replay() feeds to any exporter (so every exporter works on a live session and
// on a recorded stream through the same interface).
#pragma once

#include <cstddef>      // batch sizes
#include <cstdint>      // times
#include <map>          // node ids by process
#include <mutex>        // MemoryExporter is read from other threads
#include <string>       // owned names
#include <string_view>  // texts
#include <vector>       // events, sites, threads

#include "ringtrace/detail/platform.hpp"  // RINGTRACE_API
#include "ringtrace/exporter.hpp"         // Exporter, TraceContext, ThreadInfo

namespace ringtrace {

struct RecordedSite {
  std::string name;
  std::string function;
  std::string file;
  std::uint32_t line = 0;
  SiteKind kind = SiteKind::zone;
  std::uint8_t options = 0;        // SiteOptions bits
  std::string category;            // "" for none
  std::uint32_t sample_every = 1;  // a sampled site's rate (SiteInfo::sample_every)
};

// SiteId 0 is always the site of `dropped` events ("ringtrace: dropped events").
struct RecordedTrace {
  std::string process_name = "ringtrace";
  ClockInfo clock;
  std::vector<RecordedSite> sites;  // index: SiteId
  std::vector<ThreadInfo> threads;  // index: ThreadId
  std::vector<Event> events;        // ordered by time_ns
  std::string texts;                // arg and message texts: an event's value.u is its offset here
  // Node ids by process (TraceContext::node_id_of): key 0 for the trace's own process,
  // else a ThreadInfo::pid. A process not here has none ("").
  std::map<std::uint32_t, std::string> node_ids;
  SessionStats stats;
};

// A TraceContext over a RecordedTrace (what replay() hands to exporters); for code that
// drives an exporter itself. Keeps a reference: the trace must outlive it.
class RINGTRACE_API RecordedTraceContext final : public TraceContext {
 public:
  explicit RecordedTraceContext(const RecordedTrace& trace);
  // Declared only to carry RINGTRACE_NO_INSTRUMENT, as the implicit ones were (the
  // assignments stay deleted: a reference member).
  RINGTRACE_NO_INSTRUMENT RecordedTraceContext(const RecordedTraceContext&) = default;
  RINGTRACE_NO_INSTRUMENT RecordedTraceContext(RecordedTraceContext&&) = default;
  RINGTRACE_NO_INSTRUMENT ~RecordedTraceContext() override = default;
  RINGTRACE_NO_INSTRUMENT const SiteInfo& site(SiteId id) const override { return sites_.at(id); }
  RINGTRACE_NO_INSTRUMENT std::uint32_t site_count() const override {
    return static_cast<std::uint32_t>(sites_.size());
  }
  RINGTRACE_NO_INSTRUMENT const ThreadInfo& thread(ThreadId id) const override { return trace_.threads.at(id); }
  RINGTRACE_NO_INSTRUMENT std::uint32_t thread_count() const override {
    return static_cast<std::uint32_t>(trace_.threads.size());
  }
  RINGTRACE_NO_INSTRUMENT const ClockInfo& clock() const override { return trace_.clock; }
  RINGTRACE_NO_INSTRUMENT const std::string& process_name() const override { return trace_.process_name; }
  std::string_view text(const Event& e) const override;
  std::string_view node_id_of(std::uint32_t pid) const override;

 private:
  const RecordedTrace& trace_;
  std::vector<SiteInfo> sites_;  // views of trace_.sites' strings
};

// Feeds a recorded stream to an exporter: on_start, on_events in batches, on_finish.
// Exceptions from the exporter reach the caller.
RINGTRACE_API void replay(const RecordedTrace& trace, Exporter& exporter, std::size_t batch_events = 4096);

// Keeps every event in memory: for tests and small captures (memory grows with the
// capture, unlike the file exporters).
class RINGTRACE_API MemoryExporter final : public Exporter {
 public:
  // Declared only to carry RINGTRACE_NO_INSTRUMENT (not copyable or movable: a mutex).
  RINGTRACE_NO_INSTRUMENT MemoryExporter() = default;
  RINGTRACE_NO_INSTRUMENT ~MemoryExporter() override = default;
  void on_start(const TraceContext& context) override;
  void on_events(std::span<const Event> events, const TraceContext& context) override;
  void on_finish(const TraceContext& context, const SessionStats& stats) override;

  // A copy of what was captured; complete once the session's stop() has returned.
  RecordedTrace trace() const;
  std::size_t event_count() const;

 private:
  mutable std::mutex mutex_;
  RecordedTrace trace_;
};

// Builds a RecordedTrace by hand, for tests with known answers and for converting
// other sources. Events may be added in any order across threads but in time order
// within a thread; build() merges them as the drainer does and fills the stats.
class RINGTRACE_API TraceBuilder {
 public:
  explicit TraceBuilder(std::string process_name = "ringtrace");
  // Declared only to carry RINGTRACE_NO_INSTRUMENT, as the implicit ones were.
  RINGTRACE_NO_INSTRUMENT TraceBuilder(const TraceBuilder&) = default;
  RINGTRACE_NO_INSTRUMENT TraceBuilder(TraceBuilder&&) = default;
  RINGTRACE_NO_INSTRUMENT TraceBuilder& operator=(const TraceBuilder&) = default;
  RINGTRACE_NO_INSTRUMENT TraceBuilder& operator=(TraceBuilder&&) = default;
  RINGTRACE_NO_INSTRUMENT ~TraceBuilder() = default;

  SiteId site(std::string name, SiteKind kind = SiteKind::zone, std::string file = {}, std::uint32_t line = 0,
              std::string function = {}, std::string category = {}, std::uint8_t options = 0,
              std::uint32_t sample_every = 1);
  ThreadId thread(std::string name = {}, std::uint64_t os_tid = 0);

  // Throws std::logic_error on misuse: unknown ids, time going backwards on a thread,
  // an end with no open zone. `region_id`: a region's id, or a step zone's number (a
  // zone-kind site with SiteOptions::step, as the session's "step" site).
  TraceBuilder& begin(ThreadId thread, SiteId site, std::uint64_t time_ns, std::int64_t region_id = 0);
  TraceBuilder& end(ThreadId thread, std::uint64_t time_ns);
  TraceBuilder& instant(ThreadId thread, SiteId site, std::uint64_t time_ns);
  TraceBuilder& counter(ThreadId thread, SiteId site, std::uint64_t time_ns, std::int64_t value);
  TraceBuilder& counter(ThreadId thread, SiteId site, std::uint64_t time_ns, double value);
  TraceBuilder& dropped(ThreadId thread, std::uint64_t time_ns, std::uint64_t count);
  // Rich events. value() and text() take a site of kind SiteKind::value (its name is the
  // key) and attach to the thread's innermost open zone, as do the flows; the async
  // span's site is of kind async_begin / async_end.
  TraceBuilder& value(ThreadId thread, SiteId site, std::uint64_t time_ns, std::int64_t value);
  TraceBuilder& value(ThreadId thread, SiteId site, std::uint64_t time_ns, double value);
  TraceBuilder& text(ThreadId thread, SiteId site, std::uint64_t time_ns, std::string_view text,
                     bool truncated = false);
  TraceBuilder& flow_out(ThreadId thread, std::uint64_t time_ns, std::uint64_t id);
  TraceBuilder& flow_in(ThreadId thread, std::uint64_t time_ns, std::uint64_t id);
  TraceBuilder& async_begin(ThreadId thread, SiteId site, std::uint64_t time_ns, std::uint64_t id);
  TraceBuilder& async_end(ThreadId thread, SiteId site, std::uint64_t time_ns, std::uint64_t id);
  // Context switches of the thread (EventKind::switch_out / switch_in), as a session with
  // Config::context_switches delivers them; `bits` are SwitchBits. Their sites
  // ("ringtrace: switched out" / "in") are made on first use.
  TraceBuilder& switch_out(ThreadId thread, std::uint64_t time_ns, std::uint64_t bits = 0);
  TraceBuilder& switch_in(ThreadId thread, std::uint64_t time_ns, std::uint64_t bits = 0);

  // Zones still open are closed at `stop_ns` (or the last event's time if later),
  // flagged closed_at_stop, as a live session does at stop().
  RecordedTrace build(std::uint64_t stop_ns = 0) const;

 private:
  struct ThreadState {
    // Declared only to carry RINGTRACE_NO_INSTRUMENT, as the implicit ones were (the
    // library only default-constructs it).
    RINGTRACE_NO_INSTRUMENT ThreadState() = default;
    RINGTRACE_NO_INSTRUMENT ThreadState(const ThreadState&) = default;
    RINGTRACE_NO_INSTRUMENT ThreadState(ThreadState&&) = default;
    RINGTRACE_NO_INSTRUMENT ThreadState& operator=(const ThreadState&) = default;
    RINGTRACE_NO_INSTRUMENT ThreadState& operator=(ThreadState&&) = default;
    RINGTRACE_NO_INSTRUMENT ~ThreadState() = default;
    std::vector<std::pair<SiteId, std::int64_t>> open;
    std::uint64_t last_ns = 0;
  };
  void check(ThreadId thread, std::uint64_t time_ns, const char* what);
  Event& add(ThreadId thread, std::uint64_t time_ns, EventKind kind, SiteId site);

  SiteId flow_site(EventKind kind);

  RecordedTrace trace_;
  std::vector<ThreadState> state_;
  TraceBuilder& add_switch(ThreadId thread, std::uint64_t time_ns, bool out, std::uint64_t bits);
  SiteId flow_out_site_ = 0, flow_in_site_ = 0;      // made on first use
  SiteId switch_out_site_ = 0, switch_in_site_ = 0;  // made on first use
  std::vector<Event> pending_;                       // in the order added; build() stable-sorts by time
};

}  // namespace ringtrace
