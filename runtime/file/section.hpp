// One recorded process of a trace file (a whole file of one process, or one section of a
// merged file): its frames read in order, each thread's chunks unpacked into ring
// records and decoded by the one decoder (runtime/core/decoder.hpp), and at each pass
// frame the threads' events up to it merged by the one merge (merge.hpp), as the live
// drainer did. A file cut short reads up to its last good frame, then, when the
// recording kept its rings in a file, what the rings held beyond (ring_recovery.cpp).
#pragma once

#include <cstdint>
#include <cstdio>
#include <limits>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "clock_calibration.hpp"
#include "decoder.hpp"
#include "frame_reader.hpp"
#include "heap.hpp"
#include "merge.hpp"
#include "packed_records.hpp"
#include "pipeline.hpp"
#include "replay_tables.hpp"
#include "ringtrace/exporters/binary_trace.hpp"
#include "runtime_names.hpp"
#include "switch_events.hpp"
#include "symbolizer.hpp"  // symbols: naming functions the recording left unnamed

namespace ringtrace::detail {

class Section {
 public:
  Section(ReplayTables& tables, std::string path, std::uint64_t begin, std::uint64_t end, ReplayProcess meta,
          FileHeader header)
      : tables_(tables), path_(std::move(path)), begin_(begin), end_(end), meta_(std::move(meta)), header_(header) {}
  ~Section();
  Section(const Section&) = delete;
  Section& operator=(const Section&) = delete;

  // Opens the section and reads its first frame, which must be the session's.
  bool open_session();
  // Deliveries go to `to` from now on, instead of to `out` (but the last one).
  void deliver_to(Delivery* to) { direct_ = to; }
  // Called once every section's session is read: the pid and name its threads carry.
  void place(std::uint32_t pid, std::string name, bool tag_threads);
  // Reads frames up to the next pass frame, or to the end (then finishes the section).
  void step();
  bool done() const { return done_; }
  // Where copies of the recorded modules' files may be (ReplayOptions::symbol_paths).
  void set_symbol_paths(std::vector<std::string> paths) { symbol_paths_ = std::move(paths); }
  // A ring file (BinaryTraceOptions::rings_in_file) to read if the section turns out cut short.
  void set_rings(std::string path) { rings_path_ = std::move(path); }
  bool rings_read() const { return rings_read_; }  // the ring file was of this recording and read
  // Every event this section delivers from now on is at or after this time.
  std::uint64_t horizon() const { return done_ ? std::numeric_limits<std::uint64_t>::max() : pipeline_.delivered_ns(); }

  Events out;               // delivered by the section's merge, in time order
  std::size_t out_pos = 0;  // out[out_pos..] not yet handed to the exporters

  const ReplayProcess& meta() const { return meta_; }
  const ClockInfo& clock() const { return clock_; }
  const SessionStats& stats() const { return stats_; }
  bool has_session() const { return have_session_; }
  std::uint64_t bytes_read() const { return frames_ ? frames_->offset() - begin_ : 0; }
  std::uint64_t realtime_start_ns() const;

 private:
  struct Thread {
    ThreadDecodeState state;  // the decoder's: open zones, times, counts
    // Decoded, not yet delivered: pending[taken..]. In time order: the decoder never lets
    // a thread's time go back.
    Events pending;
    std::size_t taken = 0;
    // Ring bytes of the thread's records read from the file: the ring position where its
    // ring, kept in a ring file, holds what comes next.
    std::uint64_t ring_bytes = 0;
    std::uint32_t file_id = 0;  // its id in the file's frames
    bool named = false;         // a thread frame named it
    // Its context switches read from switches frames, not yet delivered (all of them go
    // at the next pass frame: the live drainer wrote the ones it delivered in that pass).
    PendingSwitches switches;
    std::uint64_t switches_delivered = 0, switches_lost = 0;
  };

  // The decoder's policies (decoder.hpp) for a file: call sites by their index in the
  // file (where a ring record has an address), texts kept in the tables, the section's
  // clock segments on the file's timeline.
  struct Sites {
    Section& s;
    SiteId site(std::uint64_t header) const {
      const std::uint64_t index = header >> trace_file::kIndexShift;
      return index == 0 || index > s.site_by_index_.size() ? kInvalidSite : s.site_by_index_[index - 1];
    }
    const SiteInfo& info(SiteId id) const { return s.tables_.sites[id].info; }
    SiteId step_site() { return s.step_site(); }
    ThreadId steps_thread() { return s.steps_thread(); }
    SiteId function(std::uint64_t header) const {
      const std::uint64_t index = header >> trace_file::kIndexShift;
      return index == 0 || index > s.function_by_index_.size() ? kInvalidSite : s.function_by_index_[index - 1];
    }
    SiteId named(std::uint64_t header, std::string_view name) {
      const SiteId where = site(header);
      return where == kInvalidSite ? kInvalidSite : s.named(where, name);
    }
    SiteId dropped() const { return 0; }
    SiteId memory(ExtendedKind subtype) { return s.tables_.memory_site(subtype == extended_alloc); }
  };
  struct Texts {
    ReplayTables& tables;
    std::uint64_t store(const char* text, std::size_t size) {
      tables.texts.emplace(tables.next_text, std::string(text, size));
      return tables.next_text++;
    }
  };
  struct Clock {
    const SegmentClock& segments;
    std::int64_t offset;  // the section's place on the file's timeline
    std::uint64_t to_ns(std::uint64_t ticks) const {
      const std::uint64_t ns = segments.empty() ? ticks : segments.to_ns(ticks);
      return shift(ns, offset);
    }
    // The newest segment with the offset in its base (a monotonic-clock session's: the
    // identity); when the offset would take its base below 0, none (to_ns() for all).
    ClockSegment fast() const {
      ClockSegment s = segments.empty() ? ClockSegment{0, 0, std::uint64_t{1} << 32} : segments.newest();
      if (offset >= 0) {
        s.base_ns += static_cast<std::uint64_t>(offset);
      } else if (const auto back = static_cast<std::uint64_t>(-offset); s.base_ns >= back) {
        s.base_ns -= back;
      } else if (segments.empty()) {
        s.base_ticks = back;  // ticks - back from there on
      } else {
        s.base_ticks = ~std::uint64_t{0};
      }
      return s;
    }
  };

  // The step zones' site and the steps track (steps.hpp), made at the first step marker.
  SiteId step_site();
  ThreadId steps_thread();
  SiteId named(SiteId where, std::string_view name);
  // An instrumented function's zone site: named as the recording named it, or from its
  // module's file (`module` 0: none).
  SiteId function_site(std::uint64_t address, std::uint32_t module, std::string name, std::string file,
                       std::uint32_t line, bool named, bool resolved);
  bool apply(const Frame& frame);
  void prepare(Event* first, Event* last);  // the pipeline's raise and account, with the file's payloads
  bool read_counts(const Frame& frame);
  void memory_stats(MemoryStats& m) const;
  bool malformed(const Frame& frame, const char* what);
  Thread& thread_of(std::uint32_t file_id);
  // Unpacks and decodes a chunk's records (or a ring file's, translated) into t.pending.
  bool decode_records(Thread& t, trace_file::RingWords& ring, std::uint64_t frame_offset);
  bool read_switches(const Frame& frame, std::string_view payload);  // a switches frame
  void deliver(std::uint64_t watermark, bool at_end = false);
  std::size_t take_runs(std::uint64_t watermark);
  void deliver_direct(std::size_t total);
  void give_up_runs();
  void bound_pending();
  static void consume(Thread& t, std::size_t n);
  void finish();
  std::uint64_t footer_drops(const Thread& t) const;
  void recover();  // ring_recovery.cpp

  // The section's CLOCK_MONOTONIC nanoseconds on the file's timeline.
  std::uint64_t shift(std::uint64_t ns) const { return shift(ns, meta_.offset_ns); }
  static std::uint64_t shift(std::uint64_t ns, std::int64_t offset) {
    if (offset >= 0) return ns + static_cast<std::uint64_t>(offset);
    const auto back = static_cast<std::uint64_t>(-offset);
    return ns > back ? ns - back : 0;
  }
  std::uint64_t to_ns(std::uint64_t ticks) const {
    if (ticks == std::numeric_limits<std::uint64_t>::max()) return ticks;
    return Clock{segments_, meta_.offset_ns}.to_ns(ticks);
  }

  ReplayTables& tables_;
  std::string path_;
  std::uint64_t begin_, end_;
  ReplayProcess meta_;
  FileHeader header_;
  std::FILE* file_ = nullptr;
  std::unique_ptr<FrameReader> frames_;
  Frame frame_;
  std::uint32_t assigned_pid_ = 0;
  std::uint32_t placed_pid_ = 0;  // place()'s pid: the key of the process's name and node id in the tables
  bool have_session_ = false, complete_ = false, done_ = false, has_footer_ = false, has_stop_ = false;
  std::uint64_t stop_ticks_ = std::numeric_limits<std::uint64_t>::max();
  SessionStats footer_, stats_;
  FunctionStats functions_;  // the functions frame's (format 2.2)
  std::uint64_t raw_start_ns_ = 0, realtime_anchor_ = 0, monotonic_anchor_ = 0, grace_ns_ = 0, boundary_gap_ = 0;
  ClockInfo clock_;
  SegmentClock segments_;
  std::uint32_t segments_read_ = 0;
  std::vector<SiteId> site_by_index_;                                  // by site index - 1
  std::unordered_map<std::uint64_t, std::uint64_t> index_by_address_;  // call site address -> index
  std::vector<symbols::Module> modules_;                               // by module index - 1
  std::vector<std::unique_ptr<symbols::Symbolizer>> symbolizers_;      // by module index - 1, made when first needed
  std::vector<std::string> symbol_paths_;
  std::vector<SiteId> function_by_index_;                                       // by function index - 1
  std::unordered_map<std::uint64_t, std::uint64_t> function_index_by_address_;  // for a ring file's records
  std::string rings_path_;  // the ring file to read if the section is cut short
  std::string rings_note_;  // what reading it gave, for the problem line
  bool rings_read_ = false;
  std::uint64_t recovered_ = 0;
  std::vector<Thread> threads_;
  std::unordered_map<std::uint32_t, std::size_t> thread_ids_;  // file id -> threads_ index
  SiteId step_site_ = kInvalidSite;
  ThreadId steps_thread_ = kNoThread;
  bool steps_thread_in_file_ = false;  // the file described it (a stream's), with its row
  static constexpr ThreadId kNoThread = ~ThreadId{0};
  RuntimeNames runtime_names_;  // zones named at run time: their sites (the live bound's default)
  SiteId runtime_overflow_ = kInvalidSite;
  trace_file::RingWords ring_;  // a chunk unpacked into ring records
  // deliver()'s: each thread's events up to the watermark (what each gives up), their
  // threads_ index and lane (merge.hpp: records or switches); the merge's copies of them.
  std::vector<MergeRun> runs_;
  std::vector<std::size_t> run_threads_;
  std::vector<std::uint8_t> run_lanes_;
  std::vector<MergeRun> merging_;
  std::uint64_t threads_without_switches_ = 0;  // the session's switches summary
  std::string switches_unavailable_;
  // The one pipeline (pipeline.hpp): the merge, late events (raised to the last time
  // delivered: horizon()), the heap's accounting of a session that recorded allocations.
  Pipeline pipeline_;
  DecodeCounts counts_;
  Delivery* direct_ = nullptr;
  // bound_pending(): events read and not delivered, at most; the times it delivered
  // before a pass frame; whether step() returns (so a merged file's reader hands them on).
  static constexpr std::size_t kMaxPendingEvents = std::size_t{1} << 22;
  std::uint64_t early_deliveries_ = 0;
  bool delivered_early_ = false;
  Events span_;  // deliver(): a span of merged events on their way to direct_
  std::vector<std::pair<std::uint64_t, ThreadId>> firsts_;  // deliver(): each thread's first event
  std::uint64_t closed_at_stop_ = 0;
  std::string memory_payload_;  // the payload the heap's accounting reads now (taken out of tables_.texts)
  std::string stack_method_;    // frame_memory's
  // frame_counts: what the session counted and did not record, by key (docs/file-format.md, "Counts").
  std::unordered_map<std::string, std::uint64_t> counts_read_;
  std::unordered_map<std::string, std::string> count_texts_;
};

}  // namespace ringtrace::detail
