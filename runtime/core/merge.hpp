// The one k-way merge of threads' decoded events into one stream ordered by time, and
// the rule for late events, for the live drainer and the binary file's reader.
//
// Order: by time, then by thread id, then by lane (each run is one thread's events of one
// lane, already in order: lane 0 what the thread recorded, lane 1 its context switches,
// which the kernel wrote), so that the live stream and a file's read back are the same
// stream: a thread's own event and a switch of the same nanosecond come in that order.
//
// Late events: a thread preempted for longer than the merge grace between its clock read
// and its publish hands in events older than some already delivered. They are raised to
// the last time delivered (the stream stays ordered, zones stay nested) and flagged
// `late`, counted; values, texts and flows, which take their time from the thread's
// previous record, are raised without the flag.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "ringtrace/event.hpp"

namespace ringtrace::detail {

// One thread's events waiting to be merged: [next, end), in time order.
struct MergeRun {
  const Event* next = nullptr;
  const Event* end = nullptr;
  ThreadId thread = 0;
  std::uint8_t lane = 0;  // 0: the thread's records; 1: its context switches
  bool empty() const { return next == end; }
  std::uint64_t order() const { return std::uint64_t{thread} << 1 | lane; }
};

// The lanes of a thread's runs.
inline constexpr std::uint8_t kRecordsLane = 0;
inline constexpr std::uint8_t kSwitchesLane = 1;

class Merger {
 public:
  // Merges `runs` into out[0, room) by time, then thread. Returns how many events it wrote;
  // it stops when `out` is full or one of the runs is empty (its thread may have more
  // events to come that are older than the others' next: the caller refills that run,
  // or drops it from the merge, and calls again).
  std::size_t merge(std::vector<MergeRun>& runs, Event* out, std::size_t room);

 private:
  struct Head {  // a run's next time
    std::uint64_t time;
    std::uint64_t thread;  // MergeRun::order(): thread, then lane
    std::size_t run;
  };
  std::vector<Head> heads_;
};

// Raises the events of [first, last) (in time order, the merge's output) that are older
// than `floor` to it, flagging and counting those that have a time of their own; returns
// the time of the last event (the next call's floor), or `floor` if there is none.
inline std::uint64_t raise_late(Event* first, Event* last, std::uint64_t floor, std::uint64_t& late) {
  if (first == last) return floor;
  for (Event* e = first; e != last && e->time_ns < floor; ++e) {
    e->time_ns = floor;
    if (e->kind != EventKind::arg && e->kind != EventKind::flow_out && e->kind != EventKind::flow_in) {
      e->flags |= EventFlags::late;
      ++late;
    }
  }
  return (last - 1)->time_ns;
}

}  // namespace ringtrace::detail
