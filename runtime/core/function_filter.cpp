#include "function_filter.hpp"

#include <algorithm>
#include <stdexcept>

namespace ringtrace::detail {

namespace {
// What attaches to the innermost open zone (and goes with it).
bool attached(EventKind kind) {
  return kind == EventKind::arg || kind == EventKind::flow_out || kind == EventKind::flow_in;
}
}  // namespace

FunctionFilter::FunctionFilter(const FunctionOptions& options) {
  min_ns_ = static_cast<std::uint64_t>(std::max<std::int64_t>(options.min_duration.count(), 0));
  const auto compile = [](std::vector<std::regex>& out, const std::vector<std::string>& patterns, const char* which) {
    for (const std::string& p : patterns) {
      try {
        out.emplace_back(p, std::regex::ECMAScript | std::regex::optimize);
      } catch (const std::regex_error& e) {
        throw std::invalid_argument(std::string("ringtrace: functions.") + which + ": '" + p +
                                    "' is no regular expression (" + e.what() + ")");
      }
    }
  };
  compile(include_, options.include, "include");
  compile(exclude_, options.exclude, "exclude");
  active_ = min_ns_ != 0 || !include_.empty() || !exclude_.empty();
}

FunctionFilter::Decision FunctionFilter::decide_slow(SiteId site, const SiteInfo& info) {
  if (site >= decisions_.size()) decisions_.resize(site + 1, unknown);
  Decision d = keep;
  if ((info.options & SiteOptions::function) != 0) {
    const char* name = info.name != nullptr ? info.name : "";
    bool kept = include_.empty();
    for (const std::regex& r : include_) kept = kept || std::regex_search(name, r);
    for (const std::regex& r : exclude_) kept = kept && !std::regex_search(name, r);
    d = !kept ? exclude : (min_ns_ != 0 ? timed : keep);
  }
  decisions_[site] = d;
  return d;
}

void FunctionFilter::count_short(SiteId site) {
  if (site >= short_by_site_.size()) short_by_site_.resize(site + 1, 0);
  ++short_by_site_[site];
  ++short_calls_;
}

std::vector<std::pair<std::string, std::uint64_t>> FunctionFilter::short_by_function(
    const std::function<const SiteInfo&(SiteId)>& info) const {
  std::vector<std::pair<std::string, std::uint64_t>> rows;
  for (SiteId s = 0; s < short_by_site_.size(); ++s) {
    if (short_by_site_[s] != 0) rows.emplace_back(info(s).name, short_by_site_[s]);
  }
  std::stable_sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  return rows;
}

void FilteredThread::add(const Event* events, std::size_t n, FunctionFilter& filter,
                         const std::function<const SiteInfo&(SiteId)>& info) {
  const std::uint64_t min_ns = filter.min_ns();
  min_ns_ = min_ns;
  for (std::size_t i = 0; i < n; ++i) {
    const Event& e = events[i];
    const std::uint64_t seq = first_seq_ + held_.size();
    held_.push_back(e);
    removed_.push_back(0);
    // The thread's ends come after this event: a call open here and begun at or before
    // e.time_ns - min_ns is long (an event of a call that is left out counts too: the
    // thread was there).
    proven_ns_ = std::max(proven_ns_, e.time_ns);
    if (e.kind == EventKind::zone_begin) {
      const FunctionFilter::Decision d = filter.decide(e.site, info);
      const bool excluded = d == FunctionFilter::exclude;
      if (excluded) {
        remove(seq);
        filter.count_excluded();
      }
      open_.push_back(Open{seq, e.time_ns, e.site, d, excluded});
    } else if (e.kind == EventKind::zone_end) {
      if (open_.empty()) continue;  // the decoder pairs every end; nothing to undo here
      const Open o = open_.back();
      open_.pop_back();
      if (o.removed) {
        remove(seq);
      } else if (o.decision == FunctionFilter::timed && o.seq >= first_seq_ + next_ &&
                 e.time_ns - at(o.seq).time_ns < min_ns) {
        // A short call, its begin still here: left out whole, with what attached to it
        // (the events between that are one level inside it).
        const std::uint32_t inside = at(o.seq).depth + 1;
        remove(o.seq);
        remove(seq);
        for (std::uint64_t k = o.seq + 1; k < seq; ++k) {
          if (attached(at(k).kind) && at(k).depth == inside) remove(k);
        }
        filter.count_short(o.site);
      }
    } else if (attached(e.kind) && !open_.empty() && open_.back().removed) {
      remove(seq);
    }
  }
}

const FilteredThread::Open* FilteredThread::first_undecided() const {
  for (const Open& o : open_) {
    if (o.decision != FunctionFilter::timed || o.removed || o.seq < first_seq_ + next_) continue;
    if (o.begin_ns > proven_ns_ || proven_ns_ - o.begin_ns < min_ns_) return &o;
  }
  return nullptr;
}

std::uint64_t FilteredThread::undecided_since() const {
  const Open* o = first_undecided();
  return o != nullptr ? o->begin_ns : ~std::uint64_t{0};
}

std::size_t FilteredThread::release(std::uint64_t limit, Event* out, std::size_t capacity) {
  const Open* undecided = first_undecided();
  const std::uint64_t stop = undecided != nullptr ? undecided->seq : ~std::uint64_t{0};
  std::size_t n = 0;
  while (next_ < held_.size() && n < capacity && first_seq_ + next_ < stop) {
    const Event& e = held_[next_];
    if (e.time_ns > limit) break;
    if (removed_[next_] != 0) {
      if (e.kind == EventKind::zone_begin) ++removed_depth_;
      if (e.kind == EventKind::zone_end) --removed_depth_;
    } else {
      Event& o = out[n++];
      o = e;
      o.depth -= removed_depth_;
    }
    ++next_;
  }
  // What was released goes once it is no less than what is left.
  if (next_ != 0 && next_ >= held_.size() - next_) {
    held_.erase(held_.begin(), held_.begin() + static_cast<std::ptrdiff_t>(next_));
    removed_.erase(removed_.begin(), removed_.begin() + static_cast<std::ptrdiff_t>(next_));
    first_seq_ += next_;
    next_ = 0;
  }
  return n;
}

}  // namespace ringtrace::detail
