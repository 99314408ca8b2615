// The one way from decoded runs to the exporters, for the live drainer and the binary
// file's reader alike (issue 43): each side decodes its threads' records into runs (the
// drainer from the rings, the reader from the file's frames) and hands them here; what is
// done to them on the way to the exporters is done once, in this order:
//
//   merge    the runs of the threads' records and of their context switches, by time
//            (merge.hpp's Merger and order); a run that empties is handed back to its
//            owner, which refills it (the drainer decodes more of the ring) or lets it
//            leave the merge (the reader: nothing more up to the watermark);
//   raise    events older than the last one delivered raised to it, flagged late and
//            counted (merge.hpp's raise_late);
//   account  the heap's accounting of alloc and free events (heap.hpp), when the session
//            recorded allocations: each gets its size before an exporter sees it.
//
// What stays each side's own: where runs come from and when (rings and their wake-ups;
// frames, the pass frames' watermarks and recovery), and whom the prepared events go to
// (the drainer's ExporterSet, each call isolated; the reader's spans to its exporters).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "heap.hpp"
#include "merge.hpp"
#include "ringtrace/event.hpp"

namespace ringtrace::detail {

class Pipeline {
 public:
  // --- Merge. The runs of one merge, each the caller's own (advanced in place, so that
  // the caller knows at any time what each run has left); `owner` is handed back when
  // the run empties.
  void clear_runs() { runs_.clear(); }
  void add_run(MergeRun& run, std::size_t owner) { runs_.push_back(Taken{&run, owner}); }
  std::size_t runs() const { return runs_.size(); }
  // The one run left (runs() == 1) and its owner.
  MergeRun& only_run() const { return *runs_.front().run; }
  std::size_t only_owner() const { return runs_.front().owner; }

  // Merges the runs into out[0, room) by time (merge.hpp's order); returns how many events
  // it wrote. Every run that is empty after it is handed to `refill(owner)`, which makes it
  // whole again (true: its run has events) or lets it go (false: it leaves the merge).
  template <class Refill>
  std::size_t merge(Event* out, std::size_t room, Refill&& refill) {
    scratch_.clear();
    for (const Taken& t : runs_) scratch_.push_back(*t.run);
    const std::size_t written = merger_.merge(scratch_, out, room);
    for (std::size_t i = 0; i < runs_.size();) {
      *runs_[i].run = scratch_[i];
      if (!scratch_[i].empty() || refill(runs_[i].owner)) {
        ++i;
        continue;
      }
      runs_[i] = runs_.back();
      runs_.pop_back();
      scratch_[i] = scratch_.back();
      scratch_.pop_back();
    }
    return written;
  }
  // Merges exactly `n` events into `out` from runs that hold at least that many and are
  // not refilled (a run that empties leaves the merge).
  void merge_exactly(Event* out, std::size_t n) {
    for (std::size_t done = 0; done < n;) done += merge(out + done, n - done, [](std::size_t) { return false; });
  }

  // --- Raise and account: the merged events [first, last), in time order, made ready
  // for the exporters. `payload(e)` gives a memory event's payload as the side's decoder
  // stored it (HeapTracker::account).
  template <class Payload>
  void prepare(Event* first, Event* last, Payload&& payload) {
    delivered_ns_ = raise_late(first, last, delivered_ns_, late_);
    if (memory_) heap_.account(first, last, payload);
  }
  // The time of the last event prepared: later events older than it are raised to it.
  std::uint64_t delivered_ns() const { return delivered_ns_; }
  // Events delivered past the merge (zones closed at the stop): the floor follows them.
  void delivered_at(std::uint64_t ns) {
    if (ns > delivered_ns_) delivered_ns_ = ns;
  }
  std::uint64_t late() const { return late_; }

  // The heap's accounting: on when the session recorded allocations (with heap()'s
  // tracker, which the side sets up: the live session's bound, a file's).
  void set_accounts_memory(bool on) { memory_ = on; }
  bool accounts_memory() const { return memory_; }
  HeapTracker& heap() { return heap_; }
  const HeapTracker& heap() const { return heap_; }

 private:
  struct Taken {  // a run in the merge, and whose it is
    MergeRun* run;
    std::size_t owner;
  };
  Merger merger_;
  std::vector<Taken> runs_;
  std::vector<MergeRun> scratch_;  // merge()'s copy of the runs, for Merger::merge
  std::uint64_t delivered_ns_ = 0;
  std::uint64_t late_ = 0;
  bool memory_ = false;
  HeapTracker heap_;
};

}  // namespace ringtrace::detail
