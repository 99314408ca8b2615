// The drainer: one background thread per running session. Each pass it takes new
// threads' rings from the registration queue, merges every ring's published records
// into one stream ordered by time (holding back the newest `merge_grace`), converts
// ticks to nanoseconds and hands the stream to the exporters in batches.
//
// Its parts, one job each:
//   Drainer      (here)             the thread and its passes: collect, decode, merge,
//                                   deliver, persist (drainer.cpp), and the threads'
//                                   context switches (drainer_switches.cpp)
//   RingCursor   (ring_cursor.hpp)  where the drainer is in one thread's ring and stream
//   ThreadRows   (thread_rows.hpp)  the threads' rows: TraceContext::thread(), stats().threads
//   ExporterSet  (exporter_set.hpp) the exporters and raw sinks, each call isolated
// and, for the instrumented threads' slow path, drain_own_ring (below).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "clock_calibration.hpp"
#include "decoder.hpp"
#include "exporter_set.hpp"
#include "function_filter.hpp"
#include "heap.hpp"
#include "inlined_tally.hpp"
#include "merge.hpp"
#include "pipeline.hpp"
#include "ring_cursor.hpp"
#include "ring_records.hpp"
#include "ringtrace/config.hpp"
#include "ringtrace/exporter.hpp"
#include "site_table.hpp"
#include "switch_events.hpp"
#include "taps.hpp"
#include "thread_registry.hpp"
#include "thread_rows.hpp"

namespace ringtrace::detail {

// True on a drainer's own thread: inside an exporter's callback.
bool on_drainer_thread() noexcept;

// fork() while a drainer works: the prepare handler waits (at most 100 ms) until the
// drainer is between passes, so that the child's copy of every lock the drainer takes
// in a pass (the allocator's, an exporter's) is free: a pass holds a global lock that
// fork's prepare handler takes and its parent and child handlers give back. Skipped on
// the drainer thread itself (an exporter that forks). The child handler also closes the
// child's copies of the context-switch streams' descriptors (as long as one is open the
// kernel keeps tracing the parent's thread), when the drainer was between passes (or the
// drainer itself forked): docs/context-switches.md.
void drainer_fork_prepare() noexcept;
void drainer_fork_parent() noexcept;
void drainer_fork_child() noexcept;

// Config::self_drain, from a thread's slow path (thread_registry.cpp; not nested in
// another of its slow paths): if the session lets its threads empty their own rings
// (ThreadBuffer::own_drain is set) and the drainer is between passes (its pass lock is
// free: only tried, never waited for), hands the thread's published records over to the
// session's file itself and zeroes them, as a drainer pass would (Drainer::drain_own).
// `all`: every record written whole was taken; `some`: records are left that only the
// drainer can take (the file's buffer is full, or a call site is new to the file: wake
// it), part of them maybe taken; `none`: nothing was done (the session does not let the
// thread, the lock was busy, nothing to take). No allocation, no blocking lock, no
// system call.
enum class OwnDrain : std::uint8_t { none, some, all };
OwnDrain drain_own_ring(ThreadBuffer& b) noexcept;

class Drainer final : public TraceContext {
 public:
  Drainer(const Config& config, std::vector<std::shared_ptr<Exporter>> exporters, TickConverter clock,
          ClockInfo clock_info, bool use_tsc, std::uint32_t epoch);
  ~Drainer() override;

  // The session's epoch, published after construction (construction can fail).
  void set_epoch(std::uint32_t epoch) { epoch_ = epoch; }
  // Before start(): the session maps the rings from a RawSink's ring file.
  void set_rings_in_file(bool rings_in_file) { rings_in_file_ = rings_in_file; }
  void start();
  // The epoch is already retracted: drain everything, close open zones at
  // `stop_ticks`, finish the exporters, let go of every ring, join the thread.
  // `quiet_tid`: a thread that records nothing while this runs (stop()'s caller): the
  // final pass waits the merge grace for the records of the others still running.
  void finish(std::uint64_t stop_ticks, std::uint64_t quiet_tid = 0);
  SessionStats stats() const;

  // TraceContext (called by the exporters, on the drainer's thread)
  const SiteInfo& site(SiteId id) const override { return sites_.site(id); }
  std::uint32_t site_count() const override { return sites_.size(); }
  const ThreadInfo& thread(ThreadId id) const override { return rows_.info(id); }
  std::uint32_t thread_count() const override { return next_thread_; }
  const ClockInfo& clock() const override { return clock_info_; }
  const std::string& process_name() const override { return process_name_; }
  std::string_view node_id_of(std::uint32_t) const override { return node_id_; }
  std::string_view text(const Event& e) const override;
  std::uint32_t process_id() const override;

  // In a fork child (drainer_fork_child): closes the child's copies of the streams.
  void release_switches_in_child() noexcept;
  // Config::self_drain: c's thread hands its own records over (drain_own_ring, under
  // the pass lock, between passes). What a pass does for one ring of a raw-only session.
  OwnDrain drain_own(RingCursor& c) noexcept;
  // Exporters that join the running session and leave it (taps.hpp): only a session that
  // decodes events (not one whose exporters all take the rings' records undecoded).
  Taps& taps() { return taps_; }
  bool decodes() const { return !exporters_.raw_only(); }

 private:
  // The decoder's policies (decoder.hpp) for live rings: call sites by address through
  // the session's site table, texts into the pass's arena.
  struct LiveSites {
    SiteTable& table;
    Drainer& drainer;
    SiteId site(std::uint64_t header) {
      return table.id_of(reinterpret_cast<const SiteInfo*>(header & kRecordSiteMask));
    }
    const SiteInfo& info(SiteId id) const { return table.site(id); }
    SiteId step_site() { return table.step_site(); }
    ThreadId steps_thread() { return drainer.steps_thread(); }
    SiteId function(std::uint64_t header) { return table.function_site(header >> kRecordAddressShift); }
    SiteId named(std::uint64_t header, std::string_view name) { return table.named(site(header), name); }
    SiteId dropped() { return table.id_of(&kDroppedSite); }
    SiteId memory(ExtendedKind subtype) { return table.id_of(subtype == extended_alloc ? &kAllocSite : &kFreeSite); }
  };
  struct LiveTexts {
    std::string& arena;
    std::uint64_t store(const char* text, std::size_t size) {
      const std::uint64_t at = arena.size();
      arena.append(text, size);
      return at;
    }
    std::uint64_t memory(std::uint64_t address, std::uint64_t size) {
      const std::uint64_t words[2] = {address, size};
      return store(reinterpret_cast<const char*>(words), sizeof words);
    }
  };

  // --- The thread: the exporters' start, then a pass every drain_interval or when woken,
  // then the final pass.
  void run();
  void start_exporters();

  // --- A pass, step by step (drainer.cpp). Its watermark is the time up to which it
  // delivers: `now - merge_grace` (now for a pass on demand, the stop time for the last).
  void pass(bool final);
  // pass(), and a failed allocation of the drainer's own survived: counted, the threads
  // told to drop rather than wait while it lasts (never std::terminate in the host).
  void pass_or_note_failure(bool final);
  // After a failed allocation broke a pass: the events it had decoded and not delivered
  // (the batch, the threads' staged runs) let go of and counted (drainer_events_lost), so
  // that the next pass starts from a whole state.
  void let_go_of_undelivered() noexcept;
  // Collect: the new rings, the watermark, and where each thread's records end.
  std::uint64_t collect(bool final, std::uint64_t requested);
  void accept_registrations();
  std::uint64_t take_watermark(bool final, std::uint64_t requested);
  // At the final pass: a thread other than finish()'s quiet one may still be writing a
  // record stamped before the stop (its ring is registered and its thread alive).
  bool writers_may_be_busy() const;
  // With Config::functions' filter: every thread's records up to the watermark decoded
  // into its FilteredThread, what the kernel tells of the threads applied, and the time
  // up to which this pass releases (filter_limit_: before the oldest undecided call).
  void fill_filters(std::uint64_t watermark, bool final);
  std::uint64_t look_at_thread(RingCursor& c);
  // Decode: c's records up to the watermark into out[n, capacity) (through the function
  // filter when one is active: what fill_filters decoded and the filter released), with
  // the core's decoder.
  DecodeStop decode(RingCursor& c, Event* out, std::size_t& n, std::size_t capacity, std::uint64_t watermark);
  DecodeStop decode_ring(RingCursor& c, Event* out, std::size_t& n, std::size_t capacity, std::uint64_t watermark);
  bool refill(RingCursor& c, std::uint64_t watermark);
  // Merge: every thread's events and switches up to the watermark, by time, into the batch.
  void merge(std::uint64_t watermark, std::uint64_t switches_until_ns);
  // Raw sinks alone: in place of decode and merge, the records go to them as they are.
  void hand_over_raw(std::uint64_t switches_until_ns);
  // Threads that are gone and emptied (every thread, at the end): their open zones
  // closed, their ring let go of.
  void retire_threads(bool final);
  void close_step_at_stop();
  // Deliver: the batch to the exporters (late events raised), then persist.
  Event& next_event();
  void deliver();
  // Persist: what was read goes to the raw sinks (and, rings in a file, to the OS), then
  // the rings' bytes are zeroed and given back to their threads.
  void persist();
  void persist_raw();  // every raw sink hands what it holds to the OS
  // The pass's end: the raw sinks' pass frame, on_flush, the clock, the stats; at the
  // end, on_finish.
  void complete(bool final, std::uint64_t watermark, std::uint64_t requested);

  // --- Threads and their rings.
  // The steps track (steps.hpp): a thread of its own, made at the first step marker.
  ThreadId steps_thread();
  // A retired thread whose last records are younger than the watermark: they go to the
  // raw sinks and are copied out, and the ring goes back to the pool now.
  void detach(RingCursor& c);
  void let_go(ThreadBuffer& b);
  void close_thread(RingCursor& c, std::uint64_t at_ticks, std::uint8_t flags);
  void update_names(RingCursor& c);
  // Gives threads whose first event is now known their place in ThreadInfo::sort_index:
  // by the time of that event, ties by OS thread id. Runs before every delivery, so an
  // exporter sees a thread's index with its first event.
  void assign_sort_indices();
  // The first records of c's thread handed over: its first time, for its sort index.
  void note_first_records(RingCursor& c, const std::uint8_t* records);

  // --- Raw sinks: hands c's records [raw_pos, read_pos) (or [raw_pos, to)) over;
  // returns the events they hold.
  std::uint64_t hand_raw(RingCursor& c) { return hand_raw(c, c.read_pos); }
  std::uint64_t hand_raw(RingCursor& c, std::uint64_t to);
  void raw_segment();
  void raw_thread(const RingCursor& c);

  // --- Context switches (drainer_switches.cpp): a new thread's stream (its first event,
  // then what it has), a pass's reading of every stream, and the hand-off of what the
  // merge delivered.
  void open_switches(RingCursor& c);
  void read_switches(RingCursor& c);
  void push_switch(RingCursor& c, std::uint64_t time_ns, bool out, std::uint64_t bits);
  void deliver_switches(RingCursor& c, std::size_t n);
  bool switches_done(RingCursor& c);  // a retired thread's stream has given everything

  // The clock's fits (clock_calibration.hpp), at a pass's start before it converts or
  // hands over any record: the first pass's (the line through the anchor and now), a
  // forward re-fit when the run has doubled since the last fit (at most once a second),
  // the final pass's (from the last pass's end through now).
  void fit_clock(bool final);
  // `lists`: the per-function lists too (stats().functions' short_by_function and
  // inlined_by_function: names resolved and sorted), not every pass (kListsPeriodNs).
  void update_stats(bool lists = true);
  void keep_held_texts();
  void name_leaks();

  // Every field, by who touches it. "Pass lock": the process's lock a drainer holds
  // while it works (drainer.cpp), never while it sleeps.

  // --- Set before the thread starts (constructor, set_epoch, set_rings_in_file), read
  // only after.
  const Config config_;
  const std::string process_name_;
  const std::string node_id_;  // Config::node_id, RINGTRACE_NODE_ID or host:pid
  const bool use_tsc_;
  std::uint32_t epoch_;
  // The rings are in a file mapping (RawSink::rings_path): read positions are published
  // only once the raw sinks hold the records in the OS (persist_raw), and a ring slot's
  // header names the thread as the trace file does.
  bool rings_in_file_ = false;
  std::uint64_t grace_ticks_;
  std::uint64_t boundary_gap_;  // boundary_gap_ticks(): zone boundaries of a thread this far apart
  std::uint64_t refit_period_ticks_;
  std::uint64_t manual_ends_base_;  // g_unbalanced_manual_ends at construction
  Registry& registry_;

  // --- Drainer thread, under the pass lock: what the exporters see (TraceContext).
  SiteTable sites_;
  ThreadRows rows_;
  ThreadId next_thread_ = 0;
  static constexpr ThreadId kNoThread = ~ThreadId{0};
  ThreadId steps_thread_ = kNoThread;
  TickConverter converter_;
  ClockInfo clock_info_;
  std::uint64_t last_fit_ticks_ = 0;  // the sample of the last fit (the anchor before the first)
  // Every record converted or handed to a raw sink so far was stamped at or before this
  // (read at each pass's end): a segment from here on changes no time already given.
  std::uint64_t converted_until_ = 0;
  bool fitted_ = false;              // the provisional line of start() is replaced
  std::uint64_t last_lists_ns_ = 0;  // when update_stats() last made the per-function lists
  // Texts of the arg events decoded in this pass (Event::value.u is an offset here):
  // kept until the pass has delivered them, at most what the rings held.
  std::string texts_;
  std::string kept_texts_;  // keep_held_texts()'s scratch
  // Config::memory: what the heap's accounting (the pipeline's) found at stop (the
  // leaks, named), and what the runtime left out.
  MemoryStats::LeftOut memory_left_out_base_[kMemoryLeftOutCauses];  // g_memory_left_out at construction
  MemoryStats named_memory_;  // the leaks, sites and stacks named at the final pass (name_leaks)

  // --- Drainer thread, under the pass lock; with Config::self_drain, the threads that
  // pack their own rings too (drain_own, under the same lock): the exporters (their
  // failures), the cursors, and what a pass owes the sinks.
  ExporterSet exporters_;
  Taps taps_;
  std::vector<std::unique_ptr<RingCursor>> cursors_;
  bool unsorted_threads_ = false;   // a thread's first event is known, its index not yet
  bool delivered_in_pass_ = false;  // on_flush and on_raw_pass are called after passes that delivered events
  // Config::self_drain and a session it applies to (set by the thread before its first
  // pass): block mode, one exporter, a raw sink with its rings on the heap (a ring in a
  // file must stay there until its records are written).
  bool self_drain_ = false;

  // --- Drainer thread, under the pass lock: decoding and merging.
  // The one pipeline (pipeline.hpp): the merge of the threads' runs, late events (raised
  // to the last time delivered), the heap's accounting (Config::memory).
  Pipeline pipeline_;
  DecodeCounts counts_;  // unbalanced ends, extended records skipped, the steps track
  // Config::functions: instrumented functions' zones left out (their name, their length).
  FunctionFilter filter_;
  std::uint64_t filter_limit_ = 0;  // this pass releases filtered events stamped up to this (ns)
  // Events a thread's FilteredThread holds before its ring waits (unless its own undecided
  // call needs them decoded): a ring's worth (Config::buffer_records).
  std::size_t filter_held_cap_ = 0;
  std::vector<Event> filter_scratch_;
  // The batch being filled, handed to the exporters by deliver().
  Event* batch_ = nullptr;
  std::size_t batch_capacity_ = 0;
  std::size_t batch_size_ = 0;
  // The highest watermark of a pass before the final one: what it may have delivered. A
  // pass that began after stop() read its clock but before it told the drainer delivers
  // up to its own watermark, so the final pass stops at the later of the two.
  std::uint64_t passed_watermark_ = 0;

  // --- Drainer thread, under the pass lock: counts for the stats.
  std::uint64_t passes_ = 0;
  std::uint64_t out_of_memory_ = 0;          // passes a failed allocation ended (stats' drainer_out_of_memory)
  std::uint64_t events_lost_ = 0;            // decoded by those passes, never delivered (drainer_events_lost)
  std::uint64_t test_stage_failures_ = 0;    // RINGTRACE_TEST_DRAINER_ALLOC_FAILURES: stages refused, for tests
  std::uint64_t test_deliver_failures_ = 0;  // RINGTRACE_TEST_DRAINER_DELIVER_FAILURES: deliveries refused
  std::uint64_t closed_at_stop_ = 0;
  std::uint64_t unreadable_ = 0;      // records of a kind or size this drainer cannot read (none, by construction)
  std::uint64_t self_drained_ = 0;    // events the threads handed over themselves (SessionStats::self_drained)
  std::uint64_t inlined_let_go_ = 0;  // FunctionOptions::inlined: the left-out calls counted in the rings let go of
  InlinedTally inlined_let_go_by_function_;  // and per function

  // --- Drainer thread, under the pass lock: context switches. Still opened for new
  // threads (the kernel has not refused for the process), why they are missing, the
  // counts; the switch sites' ids (made at the first stream, so that a session without
  // switches has the same site table as before).
  bool switches_wanted_;
  std::string switches_unavailable_;
  std::uint64_t switches_ = 0, switches_lost_ = 0, threads_without_switches_ = 0;
  SiteId switch_out_site_ = 0, switch_in_site_ = 0;
  std::vector<switches::Switch> switch_scratch_;

  // --- The stats: written by the drainer thread (update_stats), read by any (stats()),
  // under stats_mutex_.
  mutable std::mutex stats_mutex_;
  SessionStats stats_;

  // --- The session's thread (start, finish, the destructor) tells the drainer to stop.
  std::atomic<bool> stop_{false};
  std::atomic<std::uint64_t> stop_ticks_{0};  // set by finish() before stop_; raised by the final pass
  std::atomic<std::uint64_t> quiet_tid_{0};   // set by finish() before stop_
  std::thread thread_;
};

}  // namespace ringtrace::detail
