// The filters that decide an event by what it is and where it lies in its thread's
// nesting (stream_filter.cpp): --thread, --exclude, --zone, --max-depth. Per thread a
// stack of the open zones' verdicts (at most kMaxTrackedDepth deep; past that zones are
// left out and counted), each zone's name matched once per call site.
#pragma once

#include <cstdint>
#include <regex>
#include <string>
#include <vector>

#include "open_state.hpp"  // kMaxTrackedDepth
#include "ringtrace/exporter.hpp"
#include "ringtrace/stream_filter.hpp"

namespace ringtrace::detail {

// Why a zone (or another event) is left out; the order is the order reasons are counted in.
enum class LeftOut : std::uint8_t { no, thread, time, exclude, zone, depth, duration, past_bound };

class ZoneSelection {
 public:
  // Throws std::invalid_argument naming a pattern that is no regular expression.
  explicit ZoneSelection(const FilterOptions& options);

  // Whether thread `t`'s events are kept (the --thread filter; every thread without it).
  // Decided at its first event, or later when it is given a name that selects it.
  bool selected(ThreadId t, const TraceContext& context) {
    if (threads_.empty()) return true;
    if (t < verdicts_.size() && verdicts_[t].state == kYes) [[likely]]
      return true;
    return select_slow(t, context);
  }
  // Whether thread `t` was selected (for the context's thread listing; false if never seen).
  bool was_selected(ThreadId t) const {
    return threads_.empty() || (t < verdicts_.size() && verdicts_[t].state == kYes);
  }
  bool filters_threads() const { return !threads_.empty(); }

  // A zone begin or end, or an event that belongs to a zone (arg, flow) or lies in one
  // (instant, message, counter, alloc, free), of a selected thread: why it is left out
  // (LeftOut::no: kept). A begin's verdict is kept for its end, with `counted` (whether
  // the caller counted it at its begin); an end returns its begin's.
  struct Verdict {
    LeftOut why = LeftOut::no;
    bool counted = false;
  };
  RINGTRACE_ALWAYS_INLINE Verdict zone_begin(const Event& e, const TraceContext& context, bool count_now);
  RINGTRACE_ALWAYS_INLINE Verdict zone_end(const Event& e);
  LeftOut attached(const Event& e) const;  // arg, flow_out, flow_in
  LeftOut inside(const Event& e) const;    // instant, message, counter, alloc, free
  // The zones of an unselected thread open now (so a thread selected later pairs their ends).
  void unselected(const Event& e);

  // Every zone open and left out that its begin did not count: `count(why)` for each
  // (a time range's end, or the stream's).
  template <class Count>
  void count_open(Count&& count) {
    for (Thread& t : stacks_) {
      for (Entry& entry : t.entries) {
        if (entry.why != LeftOut::no && !entry.counted) count(entry.why);
        entry.counted = true;
      }
    }
  }

 private:
  struct Entry {
    LeftOut why;
    bool counted;
    bool in_zone;         // inside (or is) a zone --zone selects (true without --zone)
    bool excluded;        // inside (or is) a zone --exclude names
    std::uint32_t depth;  // kept zones outside it: its depth in the output, if kept
  };
  struct Thread {
    std::vector<Entry> entries;
    std::uint32_t past_bound = 0;
    std::uint32_t unselected_open = 0;  // zones open while the thread was not selected
  };
  static constexpr std::uint8_t kUnknown = 0, kYes = 1, kNo = 2;
  struct ThreadVerdict {
    std::uint8_t state = kUnknown;
    std::string name;  // the name it was refused under (a later name may select it)
  };

  bool select_slow(ThreadId t, const TraceContext& context);
  bool matches(const ThreadInfo& info, const TraceContext& context) const;
  // Whether a pattern finds site's name: looked up once per site, then cached.
  bool site_matches(std::vector<std::uint8_t>& cache, const std::vector<std::regex>& patterns, SiteId site,
                    const TraceContext& context) {
    if (site < cache.size() && cache[site] != 0) [[likely]]
      return cache[site] == 1;
    return match_site(cache, patterns, site, context);
  }
  bool match_site(std::vector<std::uint8_t>& cache, const std::vector<std::regex>& patterns, SiteId site,
                  const TraceContext& context);
  Thread& stack(ThreadId t) {
    if (t >= stacks_.size()) [[unlikely]]
      stacks_.resize(t + 1);
    return stacks_[t];
  }
  const Entry* top(ThreadId t) const {
    return t < stacks_.size() && !stacks_[t].entries.empty() ? &stacks_[t].entries.back() : nullptr;
  }

  std::vector<std::string> threads_;
  std::vector<std::regex> zones_, excludes_;
  std::uint32_t max_depth_;
  std::vector<ThreadVerdict> verdicts_;
  std::vector<Thread> stacks_;
  std::vector<std::uint8_t> zone_cache_, exclude_cache_;  // by site: 0 unknown, 1 matches, 2 does not
};

// The per-event verdicts, inline: the filter's hot path (stream_filter.cpp).
inline ZoneSelection::Verdict ZoneSelection::zone_begin(const Event& e, const TraceContext& context, bool count_now) {
  Thread& s = stack(e.thread);
  if (s.past_bound != 0 || s.entries.size() >= kMaxTrackedDepth) [[unlikely]] {
    ++s.past_bound;
    return {LeftOut::past_bound, true};
  }
  const Entry* parent = s.entries.empty() ? nullptr : &s.entries.back();
  const bool excluded = (parent != nullptr && parent->excluded) ||
                        (!excludes_.empty() && site_matches(exclude_cache_, excludes_, e.site, context));
  const bool in_zone =
      zones_.empty() || (parent != nullptr && parent->in_zone) || site_matches(zone_cache_, zones_, e.site, context);
  const std::uint32_t depth = parent == nullptr ? 0 : parent->depth + (parent->why == LeftOut::no ? 1 : 0);
  LeftOut why = LeftOut::no;
  if (excluded) {
    why = LeftOut::exclude;
  } else if (!in_zone) {
    why = LeftOut::zone;
  } else if (max_depth_ != 0 && depth >= max_depth_) {
    why = LeftOut::depth;
  }
  const bool counted = count_now && why != LeftOut::no;
  s.entries.push_back(Entry{why, counted, in_zone, excluded, depth});
  return {why, counted};
}

inline ZoneSelection::Verdict ZoneSelection::zone_end(const Event& e) {
  Thread& s = stack(e.thread);
  if (s.past_bound != 0) [[unlikely]] {
    --s.past_bound;
    return {LeftOut::past_bound, true};
  }
  if (s.entries.empty()) return {};  // an end without a begin: handed on, as unfiltered
  const Entry entry = s.entries.back();
  s.entries.pop_back();
  return {entry.why, entry.counted};
}

inline LeftOut ZoneSelection::attached(const Event& e) const {
  if (e.thread < stacks_.size() && stacks_[e.thread].past_bound != 0) return LeftOut::past_bound;
  const Entry* t = top(e.thread);
  if (t == nullptr) return zones_.empty() ? LeftOut::no : LeftOut::zone;
  return t->why;
}

inline LeftOut ZoneSelection::inside(const Event& e) const {
  const Entry* t = top(e.thread);
  if (t == nullptr) return zones_.empty() ? LeftOut::no : LeftOut::zone;
  if (t->excluded) return LeftOut::exclude;
  return t->in_zone ? LeftOut::no : LeftOut::zone;
}

}  // namespace ringtrace::detail
