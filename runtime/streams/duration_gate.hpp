// --min-duration (stream_filter.cpp): an ordered stream less its zones shorter than a
// bound and the values, texts and flows attached to them; every other event passes, in
// the stream's order. A zone's begin is held until its thread's stream or any other
// reaches begin + bound (kept) or the zone ends before that (left out); everything after
// a held begin waits behind it, so the output stays in time order. Memory: the events of
// the last `bound` of the stream (at most kMaxHeldEvents: past that the oldest held zone
// is handed on undecided, counted), never the number of events.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <vector>

#include "ringtrace/event.hpp"

namespace ringtrace::detail {

inline constexpr std::size_t kMaxHeldEvents = std::size_t{1} << 21;

// An event on its way: its text (arg or message with EventFlags::text) is the stream's
// (text_id < 0: valid during the call that delivered it) or the filter's copy number
// text_id.
struct GateEvent {
  Event event;
  std::int64_t text_id = -1;
  bool made_up = false;  // made by the filter (a cut at the time range's edges)
};

class DurationGate {
 public:
  // `keep_text(event)`: copies the text of an event the gate holds past the call that
  // delivered it; returns its number.
  DurationGate(std::uint64_t min_ns, std::function<std::int64_t(const Event&)> keep_text)
      : min_ns_(min_ns), keep_text_(std::move(keep_text)) {}

  // The next event of the stream (whose zones nest per thread); appends to `out` what
  // can go now, in order.
  void feed(const GateEvent& e, std::vector<GateEvent>& out);
  // The stream ended at `stop_ns`: zones still held are kept if they had lasted the
  // bound by then (their ends, if any, are made up downstream); everything goes.
  void finish(std::uint64_t stop_ns, std::vector<GateEvent>& out);

  std::uint64_t short_zones() const { return short_zones_; }
  std::uint64_t attached_dropped() const { return attached_dropped_; }
  std::uint64_t forced() const { return forced_; }
  const std::vector<std::uint64_t>& short_by_site() const { return short_by_site_; }

 private:
  enum class State : std::uint8_t { ready, held, dropped };
  struct Item {
    GateEvent e;
    State state;
  };
  struct Open {
    std::uint64_t serial;
    std::uint64_t begin_item;             // its begin's number in the queue
    bool held;                            // undecided
    std::vector<std::uint64_t> attached;  // held: the numbers of its attached events
  };
  struct Deadline {
    std::uint64_t at_ns;
    ThreadId thread;
    std::uint32_t index;  // in the thread's stack
    std::uint64_t serial;
  };

  void decide_until(std::uint64_t now_ns);
  // The zone a deadline was set for, if it is still open and undecided; null otherwise.
  Open* held_zone(const Deadline& d);
  void keep(Open& open);
  void drop(Open& open);
  void force_oldest();
  void release(std::vector<GateEvent>& out);
  Item& item(std::uint64_t number) { return queue_[number - first_item_]; }
  std::uint64_t push(const GateEvent& e, State state);

  std::uint64_t min_ns_;
  std::function<std::int64_t(const Event&)> keep_text_;
  std::vector<std::vector<Open>> stacks_;  // per thread
  std::deque<Item> queue_;
  std::uint64_t first_item_ = 0;  // the number of queue_.front()
  std::deque<Deadline> deadlines_;
  std::uint64_t next_serial_ = 0;
  std::uint64_t short_zones_ = 0, attached_dropped_ = 0, forced_ = 0;
  std::vector<std::uint64_t> short_by_site_;
};

}  // namespace ringtrace::detail
