// Context switches in the merged stream (Config::context_switches), for the live drainer
// (which reads them from each thread's perf stream, runtime/switches) and the binary
// file's reader (which reads them from switches frames): the built-in sites' names, the
// events, and a thread's switches waiting to be merged.
//
// A thread's switches are a run of their own in the merge (lane kSwitchesLane, after the
// thread's own records at the same nanosecond: merge.hpp), delivered up to the same
// watermark as the records: live, those at or before the pass's watermark; from a file,
// those of the switches frames before the pass frame (the live drainer wrote exactly
// the ones it delivered in that pass).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "merge.hpp"
#include "ringtrace/event.hpp"

namespace ringtrace::detail {

inline constexpr const char* kSwitchOutName = "ringtrace: switched out";
inline constexpr const char* kSwitchInName = "ringtrace: switched in";

// A switch event: `bits` are SwitchBits (event.hpp). Depth 0: the kernel wrote it.
inline Event switch_event(std::uint64_t time_ns, SiteId site, ThreadId thread, bool out, std::uint64_t bits) {
  Event e{time_ns, site, thread, out ? EventKind::switch_out : EventKind::switch_in, 0, 0, 0, {}};
  e.value.u = bits;
  return e;
}

// One thread's switch events not yet delivered, in time order.
class PendingSwitches {
 public:
  bool empty() const { return taken_ == events_.size(); }
  std::size_t size() const { return events_.size() - taken_; }
  // Appends in time order: a time before the last one is raised to it (a thread's
  // switches never go back, as its records never do).
  void push(Event e) {
    if (e.time_ns < last_ns_) e.time_ns = last_ns_;
    last_ns_ = e.time_ns;
    events_.push_back(e);
  }
  std::uint64_t last_ns() const { return last_ns_; }
  // The run of the pending events at or before `until_ns` (every one with the maximum).
  MergeRun run_until(std::uint64_t until_ns, ThreadId thread) const {
    const Event* first = events_.data() + taken_;
    const Event* end = events_.data() + events_.size();
    const Event* cut =
        std::upper_bound(first, end, until_ns, [](std::uint64_t w, const Event& e) { return w < e.time_ns; });
    return MergeRun{first, cut, thread, kSwitchesLane};
  }
  // The events a run taken from run_until() has given up: from the first pending one to
  // `run.next`.
  std::span<const Event> delivered(const MergeRun& run) const {
    const Event* first = events_.data() + taken_;
    return std::span<const Event>(first, static_cast<std::size_t>(run.next - first));
  }
  // Drops the first `n` pending events (delivered). Runs taken before are invalid then.
  void consume(std::size_t n) {
    taken_ += n;
    if (taken_ == events_.size()) {
      events_.clear();
      taken_ = 0;
    } else if (taken_ >= 1024 && taken_ * 2 >= events_.size()) {
      events_.erase(events_.begin(), events_.begin() + static_cast<std::ptrdiff_t>(taken_));
      taken_ = 0;
    }
  }
  void clear() {
    events_.clear();
    taken_ = 0;
  }

 private:
  std::vector<Event> events_;
  std::size_t taken_ = 0;
  std::uint64_t last_ns_ = 0;
};

}  // namespace ringtrace::detail
