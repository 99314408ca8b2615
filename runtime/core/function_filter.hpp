// Leaving out instrumented functions' zones after they are decoded, for the live drainer
// (Config::functions): zones of functions the name filters exclude (decided once per
// function), and calls shorter than a minimum duration (decided per call). A zone left out
// goes whole: its begin, its end, and the values, texts and flows attached to it; what was
// inside it moves up a level (its events' depth). Only zones of SiteOptions::function
// sites are ever left out.
//
// Per thread, decoded events wait in a FilteredThread until every call begun before them
// is decided. A timed call (min_duration) is decided when its end arrives, however late
// (a thread preempted between reading the clock for the end and publishing it publishes
// an end older than events already decoded), or when it is proven long before that:
//   - the thread's own stream: an event of the thread stamped at or after the call's
//     begin + min_duration (the end comes after it in the thread's order);
//   - prove(t), from the caller: every end the thread stamped at or before t has been
//     decoded (the drainer knows it from the thread's state: docs/functions.md), so a call
//     still open with begin + min_duration <= t is long.
// release(limit) hands over the events stamped at or before `limit` up to the first
// undecided call; undecided_since() tells the caller that call's begin, so that it holds
// every other thread's events back to before it (the stream stays in time order).
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <regex>
#include <string>
#include <utility>
#include <vector>

#include "ringtrace/config.hpp"
#include "ringtrace/event.hpp"
#include "ringtrace/site.hpp"

namespace ringtrace::detail {

// The settings and what was decided per call site; one per session (or file section).
class FunctionFilter {
 public:
  FunctionFilter() = default;
  // Throws std::invalid_argument for a pattern that is not an ECMAScript regular expression.
  explicit FunctionFilter(const FunctionOptions& options);

  // Whether any zone can be left out: without it, events need not pass through at all.
  bool active() const { return active_; }
  std::uint64_t min_ns() const { return min_ns_; }

  enum Decision : std::uint8_t { unknown = 0, keep = 1, exclude = 2, timed = 3 };
  // What becomes of `site`'s zones: kept, excluded (a function the patterns leave out),
  // or timed (a function whose short calls are left out).
  Decision decide(SiteId site, const std::function<const SiteInfo&(SiteId)>& info) {
    if (site < decisions_.size() && decisions_[site] != unknown) [[likely]]
      return static_cast<Decision>(decisions_[site]);
    return decide_slow(site, info(site));
  }

  void count_short(SiteId site);
  void count_excluded() { ++excluded_; }
  std::uint64_t short_calls() const { return short_calls_; }
  std::uint64_t excluded() const { return excluded_; }
  // Short calls per function, most first (names from `info`).
  std::vector<std::pair<std::string, std::uint64_t>> short_by_function(
      const std::function<const SiteInfo&(SiteId)>& info) const;

 private:
  Decision decide_slow(SiteId site, const SiteInfo& info);

  bool active_ = false;
  std::uint64_t min_ns_ = 0;
  std::vector<std::regex> include_, exclude_;
  std::vector<std::uint8_t> decisions_;       // by SiteId
  std::vector<std::uint64_t> short_by_site_;  // by SiteId
  std::uint64_t short_calls_ = 0, excluded_ = 0;
};

// One thread's events on their way through the filter.
class FilteredThread {
 public:
  // Takes `n` decoded events of the thread, in order.
  void add(const Event* events, std::size_t n, FunctionFilter& filter,
           const std::function<const SiteInfo&(SiteId)>& info);
  // Every end the thread stamped at or before `t` (ns) has been added: its open calls begun
  // at or before t - min_duration are long. prove(~0): the thread adds nothing more.
  void prove(std::uint64_t t) { proven_ns_ = std::max(proven_ns_, t); }
  // The begin time of the outermost call not decided yet (its end not added, not proven
  // long), or ~0 if every call is decided. Nothing at or after it is released.
  std::uint64_t undecided_since() const;
  // Moves the decided events stamped at or before `limit` to out[0, capacity), leaving out
  // what the filter removed, up to the first undecided call; returns how many it wrote.
  std::size_t release(std::uint64_t limit, Event* out, std::size_t capacity);
  bool empty() const { return next_ == held_.size(); }
  std::size_t held() const { return held_.size() - next_; }
  // Calls `f(Event&)` on every event not released yet (its owner moves their texts).
  template <class F>
  void each_held(F&& f) {
    for (std::size_t i = next_; i < held_.size(); ++i) f(held_[i]);
  }

 private:
  struct Open {
    std::uint64_t seq;  // the begin's place in the thread's stream
    std::uint64_t begin_ns;
    SiteId site;
    FunctionFilter::Decision decision;
    bool removed;
  };
  // The first open call that is timed, kept so far and neither ended nor proven long, or null.
  const Open* first_undecided() const;
  Event& at(std::uint64_t seq) { return held_[static_cast<std::size_t>(seq - first_seq_)]; }
  void remove(std::uint64_t seq) { removed_[static_cast<std::size_t>(seq - first_seq_)] = 1; }

  std::vector<Event> held_;            // held_[next_..] not released yet
  std::vector<std::uint8_t> removed_;  // beside held_
  std::size_t next_ = 0;
  std::uint64_t first_seq_ = 0;      // the stream place of held_[0]
  std::vector<Open> open_;           // the zones open at the last event added
  std::uint32_t removed_depth_ = 0;  // zones left out that are open at the next event released
  std::uint64_t min_ns_ = 0;         // the filter's, from the last add()
  // Open calls begun at or before proven_ns_ - min_ns_ are long: an event of the thread,
  // or the caller's prove(), showed it.
  std::uint64_t proven_ns_ = 0;
};

}  // namespace ringtrace::detail
