// The drainer's reading state of one thread: where it is in the thread's ring (RingCursor)
// and in its context-switch stream (ThreadSwitches). A cursor is made when the drainer
// accepts the ring's registration and lives until every event of the thread is delivered
// (or the session stops).
//
// Who touches a cursor: the drainer's thread, under its pass lock (drainer.cpp). With
// Config::self_drain, also the ring's own thread (Drainer::drain_own), under the same lock,
// which it only tries (between passes): the positions, first_known and first_ticks,
// own_events.
#pragma once

#include <cstdint>
#include <memory>

#include "decoder.hpp"          // ThreadDecodeState
#include "function_filter.hpp"  // FilteredThread
#include "merge.hpp"            // MergeRun
#include "ring_records.hpp"
#include "ringtrace/event.hpp"
#include "switch_events.hpp"  // PendingSwitches
#include "switch_stream.hpp"
#include "thread_probe.hpp"  // ThreadProbe
#include "thread_registry.hpp"

namespace ringtrace::detail {

class Drainer;
struct ThreadRow;

// A thread's context switches (Config::context_switches): its perf stream and what was
// read from it and not yet delivered (drainer_switches.cpp).
struct ThreadSwitches {
  switches::SwitchStream stream;
  PendingSwitches pending;
  MergeRun run;                   // this pass's: the pending ones up to the watermark
  std::uint64_t lost = 0;         // the stream's lost and malformed records counted so far
  std::uint64_t lost_unsent = 0;  // of those, not yet told to the raw sinks
  bool exited = false;            // the stream says its thread has exited: nothing more comes
  std::uint32_t exit_passes = 0;  // passes since the thread retired and its ring was emptied
};

struct RingCursor {
  // Decoded events a thread stages for the merge of several threads (Drainer::refill).
  static constexpr std::uint32_t kStageEvents = 512;  // 16 KB per thread

  // --- Whose: set when the drainer accepts the ring.
  // The thread's buffer, or null once the cursor is detached: its thread exited with
  // records younger than the watermark, which were copied to `tail` so that the ring
  // could go back to the pool at once (Drainer::detach).
  ThreadBuffer* buffer = nullptr;
  ThreadId thread = 0;
  ThreadRow* row = nullptr;  // in the drainer's ThreadRows, which keep addresses
  // Config::self_drain: the drainer that the thread hands its own records to
  // (drain_own_ring), found through ThreadBuffer::own_drain; else null.
  Drainer* own_drainer = nullptr;

  // --- Positions in the ring, in bytes since its start (they never wrap; the ring
  // offset is a position modulo the capacity).
  std::uint64_t read_pos = 0;    // ring bytes decoded (or handed to raw sinks alone)
  std::uint64_t end = 0;         // ring bytes the thread had reserved at the pass's start
  std::uint64_t raw_pos = 0;     // records before this were handed to the raw sinks
  std::uint64_t zeroed_pos = 0;  // ring bytes before this are zeroed and given back (read_index)

  // --- What the decoder knows of the thread.
  ThreadDecodeState state;  // the decoder's: open zones, times, counts
  FilteredThread filtered;  // with Config::functions' filters: events waiting for them
  ThreadProbe probe;        // the kernel's view of the thread, for the filter (thread_probe.hpp)
  // This pass's look: every record the thread stamped at or before this time (ns) was in
  // its ring when the pass read its end; 0 if unknown.
  std::uint64_t published_ns = 0;
  std::uint32_t name_version = 0;
  bool retired = false;      // its thread had exited at the pass's start
  bool first_known = false;  // first_ticks holds the thread's first decoded record
  std::uint64_t first_ticks = 0;
  // Config::self_drain: events the thread handed over itself since the last pass
  // (drain_own), counted in its row by the next pass.
  std::uint64_t own_events = 0;

  // --- Memory of its own (the runtime allocator; freed with the cursor).
  // Decoded events waiting for the merge of several threads: `run` in stage[0,
  // kStageEvents), allocated the first time the thread is merged with another.
  Event* stage = nullptr;
  MergeRun run;
  // Detached: ring bytes [tail_from, end) copied out of the ring, and the thread's drops
  // when its buffer was let go of.
  std::uint8_t* tail = nullptr;
  std::uint64_t tail_from = 0;
  std::uint64_t detached_drops = 0;
  std::unique_ptr<ThreadSwitches> switches;  // Config::context_switches and its stream opened

  RingCursor() = default;
  RingCursor(const RingCursor&) = delete;
  RingCursor& operator=(const RingCursor&) = delete;
  ~RingCursor();

  // The records at `pos`: contiguous through the ring's second mapping (or in the
  // copy of a detached cursor), even when they run past the ring's end.
  const std::uint8_t* records_at(std::uint64_t pos) const {
    if (buffer == nullptr) return tail + (pos - tail_from);
    return buffer->ring.base + (pos & (buffer->ring.capacity - 1));
  }
  // The position of the thread's next record (written or not), from read_pos.
  std::uint64_t reserved_end() const {
    return read_pos + ((buffer->next_offset() - read_pos) & (buffer->ring.capacity - 1));
  }
  // The end of what the thread has written whole, from read_pos: its next byte, or the
  // first record being written (its header still 0).
  std::uint64_t written_end() const;
  std::uint64_t drops() const { return buffer != nullptr ? buffer->total_dropped() : detached_drops; }
  // Zeroes what has been read since the last call (the drainer stops at a header that is
  // 0, so the thread must find its next lap's bytes zeroed), then lets the thread reuse
  // it (read_index, release).
  void release_read();
};

}  // namespace ringtrace::detail
