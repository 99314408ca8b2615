// What is open in an ordered stream at its latest time, and the events that close it
// at a time T and open it again at T: how a filter's time range starts and ends, and how
// one piece of a split output ends and the next begins (stream_filter.cpp,
// split_output.cpp). Per thread: its open zones (a stack at most kMaxTrackedDepth deep;
// deeper ones are only counted) and whether it is off the CPU; the async spans open (by
// name, id and process; at most kMaxTrackedSpans); each counter's last sample; and, when
// asked, the values, texts and flows attached to the open zones (copied: at most
// kMaxHeldBytes). Memory: that, never the number of events.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "ringtrace/exporter.hpp"

namespace ringtrace::detail {

inline constexpr std::uint32_t kMaxTrackedDepth = std::uint32_t{1} << 16;
inline constexpr std::size_t kMaxTrackedSpans = std::size_t{1} << 20;
inline constexpr std::size_t kMaxHeldBytes = std::size_t{64} << 20;

// An event made up by OpenState, or one it kept: its text, if any, in `text` (the
// event's own text_size and value are the original's).
struct HeldEvent {
  Event event;
  std::string text;
};

class OpenState {
 public:
  // `keep_attached`: keep the args and flows of open zones, to hand them on with the
  // zones' begins again (a time range's start).
  OpenState() = default;
  explicit OpenState(bool keep_attached) : keep_attached_(keep_attached) {}

  // An event of the stream, in order. Switches, counters and attached events need the
  // context (names, processes, texts).
  void feed(const Event& e, const TraceContext& context);
  // Stop keeping attached events (and let go of those kept).
  void stop_keeping_attached();

  // Appends the events that end, at `time`, every zone and async span open (ends marked
  // closed_at_window_end, a zone's flags kept; zones innermost first, thread by thread;
  // then the spans in the order they began).
  void closing(std::uint64_t time, std::vector<HeldEvent>& out) const;
  // Appends the events that open it all again at `time`: per thread a switch_out
  // (SwitchBits::stream_start) if it is off the CPU, then its zones outermost first
  // (begins marked opened_at_window_start), each followed by its kept attached events;
  // then the spans (marked too), then each counter's last sample, in their order.
  void reopening(std::uint64_t time, std::vector<HeldEvent>& out) const;

  std::uint64_t open_zones() const { return open_zones_; }
  std::uint64_t open_spans() const { return spans_.size(); }
  // Zones past kMaxTrackedDepth on some thread (counted, not closed or reopened).
  std::uint64_t untracked_zones() const;
  // Attached events not kept: past kMaxHeldBytes.
  std::uint64_t held_lost() const { return held_lost_; }
  // Whether an async end closes a span this state holds open (it does not feed it).
  bool span_open(const Event& end, const TraceContext& context);

 private:
  struct Zone {
    SiteId site;
    std::uint8_t flags;
    std::uint64_t value;
    std::uint32_t held_mark;  // where its attached events start in the thread's `held`
  };
  struct Thread {
    std::vector<Zone> zones;
    std::uint32_t past_bound = 0;  // zones open past kMaxTrackedDepth
    bool off_cpu = false;
    std::uint64_t off_bits = 0;  // SwitchBits of the switch_out
    std::vector<HeldEvent> held;
  };
  struct SpanKey {
    std::uint32_t name, pid;
    std::uint64_t id;
    bool operator==(const SpanKey&) const = default;
  };
  struct SpanHash {
    std::size_t operator()(const SpanKey& k) const {
      return std::hash<std::uint64_t>()(k.id * 0x9e3779b97f4a7c15u ^ (std::uint64_t{k.name} << 32 | k.pid));
    }
  };
  struct Span {
    Event begin;
    std::uint64_t order;  // when it began, among the spans
  };

  Thread& thread(ThreadId t);
  SpanKey span_key(const Event& e, const TraceContext& context);
  void feed_zone(const Event& e);
  void feed_attached(const Event& e, const TraceContext& context);

  bool keep_attached_ = false;
  std::vector<Thread> threads_;
  std::uint64_t open_zones_ = 0;
  std::uint64_t held_bytes_ = 0, held_lost_ = 0;
  std::unordered_map<SpanKey, Span, SpanHash> spans_;
  std::uint64_t span_order_ = 0;
  std::vector<std::uint32_t> name_of_site_;               // by site: an index of its name (spans pair by name)
  std::unordered_map<std::string, std::uint32_t> names_;  // name -> index
  std::unordered_map<std::uint64_t, Event> counters_;     // (site, thread) -> its last sample
  SiteId switch_site_ = 0;                                // the site of switch_out events
};

}  // namespace ringtrace::detail
