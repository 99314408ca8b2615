// The live heap of each process, as its alloc and free events say (Config::memory,
// docs/memory.md), as the samples of a counter track (the Chrome trace's and Perfetto's
// "ringtrace: heap (bytes)"): the bytes allocated in the session and not freed yet.
// Events flagged EventFlags::untracked (blocks the heap's accounting does not hold: freed
// but allocated before the session, or past Config::memory_max_blocks) are left out, so
// the value is MemoryStats::live_bytes at every moment and its highest value is
// MemoryStats::peak_live_bytes, at peak_time_ns (both differ only when events were
// dropped: an allocation whose free was lost).
//
// A sample per alloc and free would write as many counter events as the program made
// allocations. Samples are coalesced by time instead, per process:
// - a change at least `interval_ns` after the last sample written is written at once
//   (it opens an interval);
// - the changes inside the interval are held; when the next change past it comes (or the
//   stream ends), the interval gives at most two more samples: its highest value at the
//   time it was first reached, when that is above the interval's first sample, then the
//   value it ended with, at its time, when that differs from the last sample written.
// So every sample is a value the heap had at that time, the highest value of every
// interval is kept exactly (the peak with it, to the nanosecond), the value at the end of
// every interval is exact, and a process writes at most three samples per interval.
// Short dips and lesser rises inside an interval are not drawn. interval_ns 0: every
// change. Memory: a few words per process.
#pragma once

#include <cstdint>
#include <vector>

#include "ringtrace/event.hpp"

namespace ringtrace::detail {

class HeapCounter {
 public:
  struct Sample {
    std::uint32_t pid;
    ThreadId thread;  // whose event brought the heap to this value
    std::uint64_t time_ns;
    std::uint64_t bytes;
  };

  HeapCounter() = default;  // every change
  explicit HeapCounter(std::uint64_t interval_ns) : interval_ns_(interval_ns) {}

  // An alloc or free event of a thread of process `pid`; emit(const Sample&) for the
  // samples it completes, in time order per process.
  template <class Emit>
  void feed(const Event& e, std::uint32_t pid, Emit&& emit) {
    if ((e.flags & EventFlags::untracked) != 0) return;
    Process& p = process(pid);
    if (e.kind == EventKind::alloc) {
      p.live += e.value.u;
    } else {
      p.live -= e.value.u < p.live ? e.value.u : p.live;
    }
    const Sample now{pid, e.thread, e.time_ns, p.live};
    if (!p.written || e.time_ns >= p.opened_ns + interval_ns_ || interval_ns_ == 0) {
      flush(p, emit);
      if (p.written && now.bytes == p.shown) return;  // no change since the last sample
      write(p, now, emit);
      p.opened_ns = now.time_ns;
      return;
    }
    p.held = true;
    p.last = now;
    if (now.bytes > p.high.bytes || !p.high_set) {
      p.high = now;
      p.high_set = true;
    }
  }

  // The end of the stream: what the processes' last intervals hold.
  template <class Emit>
  void finish(Emit&& emit) {
    for (Process& p : processes_) flush(p, emit);
  }

  bool any() const { return !processes_.empty(); }

 private:
  struct Process {
    std::uint32_t pid = 0;
    std::uint64_t live = 0;
    bool written = false;     // a sample was written
    std::uint64_t shown = 0;  // the last sample's value
    std::uint64_t first = 0;  // the value of the sample that opened the interval
    std::uint64_t opened_ns = 0;
    bool held = false;  // changes inside the interval not written yet
    bool high_set = false;
    Sample last{}, high{};
  };

  Process& process(std::uint32_t pid) {
    for (Process& p : processes_) {
      if (p.pid == pid) return p;
    }
    Process& p = processes_.emplace_back();
    p.pid = pid;
    return p;
  }

  template <class Emit>
  void write(Process& p, const Sample& s, Emit& emit) {
    emit(s);
    p.written = true;
    p.shown = s.bytes;
    p.first = s.bytes;
  }

  template <class Emit>
  void flush(Process& p, Emit& emit) {
    if (!p.held) return;
    const std::uint64_t first = p.first;
    // The highest value, at the time it was first reached (also when the interval ends
    // at that value again, after a dip).
    if (p.high.bytes > first && (p.high.bytes > p.last.bytes || p.high.time_ns < p.last.time_ns)) {
      write(p, p.high, emit);
    }
    if (p.last.bytes != p.shown) write(p, p.last, emit);
    p.held = false;
    p.high_set = false;
  }

  std::uint64_t interval_ns_ = 0;
  std::vector<Process> processes_;
};

}  // namespace ringtrace::detail
