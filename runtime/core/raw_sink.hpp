// The drainer's raw hand-off, for an exporter that stores the rings' records as they are
// (the binary trace file) instead of the decoded, merged event stream. Internal: the
// record format (detail/writer.hpp) is not part of the public exporter interface.
//
// An exporter that also implements RawSink gets, from the drainer thread, in order:
// on_raw_start, then any number of on_raw_thread / on_raw_segment / on_raw_records, all
// before the matching Exporter::on_flush and on_finish. Records reach it before the
// drainer lets the producing thread reuse their slots, each batch whole (a record's
// payload and text slots with it). When every exporter of a session is a RawSink that
// wants no events, the drainer neither decodes nor merges: its cost per event is what
// on_raw_records does.
#pragma once

#include <cstddef>
#include <cstdint>
#include <ctime>  // clock_gettime: read_clock_anchors
#include <filesystem>
#include <span>
#include <string>
#include <string_view>

#include "clock_calibration.hpp"  // ClockSegment
#include "ringtrace/event.hpp"    // ThreadId

namespace ringtrace::detail {

struct RawSessionInfo {
  bool tsc = false;  // ticks are TSC cycles (else CLOCK_MONOTONIC ns)
  double ticks_per_second = 0;
  std::uint64_t start_ns = 0;             // CLOCK_MONOTONIC at start()
  std::uint64_t realtime_anchor_ns = 0;   // CLOCK_REALTIME read next to...
  std::uint64_t monotonic_anchor_ns = 0;  // ...this CLOCK_MONOTONIC reading
  std::uint64_t merge_grace_ns = 0;       // how late a record may be published (Config::merge_grace)
  std::uint64_t ring_bytes = 0;           // bytes per ring (Config::buffer_records * 16, rounded as the rings are)
  std::uint64_t boundary_gap_ticks = 0;   // boundary_gap_ticks() of the session
  bool per_thread_counters = false;       // Config::per_thread_counters
  bool memory = false;                    // Config::memory
  bool memory_sized = false;              // a stream's file: memory records with sizes, no addresses
  std::uint64_t memory_max_blocks = 0;    // Config::memory_max_blocks (with memory)
  std::uint64_t memory_stack_bytes = 0;   // Config::memory_stack_bytes (with memory)
  std::string memory_stack_method;        // how the sampled stacks are taken
};

// CLOCK_REALTIME and CLOCK_MONOTONIC read together: a session frame's anchors, from which
// a reader places a process of another host or boot on its timeline.
inline void read_clock_anchors(RawSessionInfo& info) noexcept {
  timespec real{}, mono{};
  clock_gettime(CLOCK_REALTIME, &real);
  clock_gettime(CLOCK_MONOTONIC, &mono);
  info.realtime_anchor_ns =
      static_cast<std::uint64_t>(real.tv_sec) * 1000000000u + static_cast<std::uint64_t>(real.tv_nsec);
  info.monotonic_anchor_ns =
      static_cast<std::uint64_t>(mono.tv_sec) * 1000000000u + static_cast<std::uint64_t>(mono.tv_nsec);
}

// Zone boundaries (begins and ends) of one thread are at least this many ticks apart
// once decoded: a boundary read within that of the thread's previous event is placed
// there. It keeps every zone boundary of a thread in a nanosecond of its own on CPUs
// whose TSC advances in coarse steps (two reads a few cycles apart can return the same
// value), so that no reader has to guess the nesting of a zone that begins, or ends, in
// the same nanosecond as the zone around it or before it. A clock with nanosecond
// ticks needs 1; a TSC needs a little over one nanosecond's worth.
inline std::uint64_t boundary_gap_ticks(bool tsc, double ticks_per_second) noexcept {
  if (!tsc || !(ticks_per_second > 0) || ticks_per_second > 1e12) return 1;
  const double per_ns = ticks_per_second * 1.001 / 1e9;  // a re-fit moves the rate by ppm
  const auto whole = static_cast<std::uint64_t>(per_ns);
  return whole + (static_cast<double>(whole) < per_ns ? 1 : 0);
}

class RawSink {
 public:
  virtual ~RawSink() = default;
  // False: this exporter wants no Exporter::on_events (the drainer may skip decoding).
  virtual bool wants_events() const { return false; }
  virtual void on_raw_start(const RawSessionInfo& info) = 0;
  // A clock segment: the first at start, one more at every re-fit. Records after this
  // call convert with it (or an older one, for ticks before its base).
  virtual void on_raw_segment(const ClockSegment& segment) = 0;
  // A thread's first records are coming, or its name changed.
  virtual void on_raw_thread(ThreadId thread, std::uint64_t os_tid, std::string_view name) = 0;
  // Whole ring records of one thread (include/ringtrace/detail/record.hpp), in ring order,
  // contiguous (the ring is mapped twice, so a record that runs past its end is whole).
  // Returns how many events they hold (for the session's stats).
  virtual std::uint64_t on_raw_records(ThreadId thread, std::span<const std::uint8_t> records) = 0;
  // End of a drainer pass: every record stamped at or before `complete_ticks` has been
  // handed over (the pass's time minus the merge grace, as the live merge holds back).
  // A reader can order and deliver everything up to it.
  virtual void on_raw_pass(std::uint64_t complete_ticks) = 0;
  // Config::self_drain: a recording thread whose ring is past its high-water mark hands
  // its own records over, between two drainer passes (no other call of this sink runs
  // meanwhile), when this is the session's only exporter. The thread may be inside a
  // signal handler or an allocator hook: no allocation, no lock, no system call, no
  // exception. Takes a prefix of `records` (records in ring order, as on_raw_records,
  // but up to the thread's next byte: the sink stops at a header that is 0, a record not
  // written yet), adds the events it holds to `events` and returns its bytes; 0 (the
  // default) takes nothing, and the drainer hands the rest over in its next pass.
  virtual std::size_t on_raw_records_in_thread(ThreadId /*thread*/, std::span<const std::uint8_t> /*records*/,
                                               std::uint64_t& /*events*/) noexcept {
    return 0;
  }
  // At stop: the time after which nothing is delivered live (the reader applies it),
  // before Exporter::on_finish.
  virtual void on_raw_stop(std::uint64_t stop_ticks) = 0;
  // Config::context_switches: a thread's switch events (switch_out / switch_in, times in
  // CLOCK_MONOTONIC ns, in time order) that the drainer delivered in this pass, before
  // the pass's on_raw_pass; `lost`: switch records the kernel dropped for the thread since
  // the last call. The times are as read (a late one is raised by the reader's merge as
  // it was by the live one).
  virtual void on_raw_switches(ThreadId /*thread*/, std::span<const Event> /*switches*/, std::uint64_t /*lost*/) {}

  // Rings in a file mapping: a sink that returns a path here (asked once, at start())
  // makes the session map every thread's ring from that file (runtime/live/ring_file.hpp),
  // so that a process killed before the drainer wrote its last records leaves them on
  // disk. At most one sink of a session may ask. Empty: rings on the heap.
  virtual std::filesystem::path rings_path() const { return {}; }
  // With rings in a file mapping, the drainer calls this before it lets a thread reuse
  // ring slots it has handed over (and once after on_raw_start): everything handed so
  // far must then be in the OS's hands (written to the file), so that no record is ever
  // in neither the file nor the ring.
  virtual void on_raw_persist() {}
};

}  // namespace ringtrace::detail
