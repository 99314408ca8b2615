#include "merge.hpp"

#include <algorithm>
#include <cstring>
#include <limits>

namespace ringtrace::detail {
namespace {

// The heap's order: the run whose next event comes first (time, then thread) on top.
struct Later {
  template <typename H>
  bool operator()(const H& a, const H& b) const {
    return a.time != b.time ? a.time > b.time : a.thread > b.thread;
  }
};

}  // namespace

// The two runs whose next events come first (a heap of the runs' next times gives them)
// merge together, event by event and without a branch on which side goes next (a coin
// toss when threads interleave), up to the next event of any other run: threads take
// turns on the CPUs, so two of them at a time interleave finely and the others wait,
// mostly. One run left, or one run only: a copy.
std::size_t Merger::merge(std::vector<MergeRun>& runs, Event* out, std::size_t room) {
  std::size_t written = 0;
  if (runs.empty()) return 0;
  heads_.clear();
  for (std::size_t i = 0; i < runs.size(); ++i) {
    if (runs[i].empty()) return 0;  // the caller refills or drops it first
    heads_.push_back(Head{runs[i].next->time_ns, runs[i].order(), i});
  }
  std::make_heap(heads_.begin(), heads_.end(), Later{});
  while (written < room) {
    if (heads_.size() == 1) {
      MergeRun& r = runs[heads_.front().run];
      const auto k = std::min(room - written, static_cast<std::size_t>(r.end - r.next));
      std::memcpy(out + written, r.next, k * sizeof(Event));
      r.next += k;
      return written + k;
    }
    std::pop_heap(heads_.begin(), heads_.end(), Later{});
    std::pop_heap(heads_.begin(), heads_.end() - 1, Later{});
    const std::size_t waiting = heads_.size() - 2;
    const Head first = heads_[waiting + 1], second = heads_[waiting];
    // Up to the next waiting run's first event: a run of a lower thread goes first on a
    // tie (and one of a higher thread has an earlier next event: no underflow).
    std::uint64_t first_until = std::numeric_limits<std::uint64_t>::max(), second_until = first_until;
    if (waiting != 0) {
      const Head& next = heads_.front();
      first_until = first.thread < next.thread ? next.time : next.time - 1;
      second_until = second.thread < next.thread ? next.time : next.time - 1;
    }
    MergeRun& a = runs[first.run];
    MergeRun& b = runs[second.run];
    const bool a_wins_ties = first.thread < second.thread;
    const Event* pa = a.next;
    const Event* pb = b.next;
    Event* to = out + written;
    Event* const stop = out + room;
    for (bool more = true; more;) {
      // So many events leave neither run empty nor `out` full: no check in between.
      std::size_t n = std::min({static_cast<std::size_t>(a.end - pa), static_cast<std::size_t>(b.end - pb),
                                static_cast<std::size_t>(stop - to)});
      for (; n != 0; --n) {
        const bool take_a = pa->time_ns < pb->time_ns || (a_wins_ties && pa->time_ns == pb->time_ns);
        const Event* e = take_a ? pa : pb;
        if (e->time_ns > (take_a ? first_until : second_until)) break;
        *to++ = *e;
        pa += take_a ? 1 : 0;
        pb += take_a ? 0 : 1;
      }
      more = n == 0 && pa != a.end && pb != b.end && to != stop;
    }
    a.next = pa;
    b.next = pb;
    written = static_cast<std::size_t>(to - out);
    if (pa == a.end || pb == b.end) return written;  // a run is empty: the caller's turn
    heads_[waiting] = Head{pb->time_ns, second.thread, second.run};
    std::push_heap(heads_.begin(), heads_.begin() + static_cast<std::ptrdiff_t>(waiting + 1), Later{});
    heads_[waiting + 1] = Head{pa->time_ns, first.thread, first.run};
    std::push_heap(heads_.begin(), heads_.end(), Later{});
  }
  return written;
}

}  // namespace ringtrace::detail
