// Binary trace file writer: a RawSink (runtime/core/raw_sink.hpp) that
// appends each thread's records as its ring held them, framed with the tables needed to
// read them. Per record it only looks at the header word, to write a call site's
// description the first time its address appears; no decoding, no merging, no
// formatting. Layout: runtime/file/trace_file_format.hpp, docs/file-format.md.
#include "ringtrace/exporters/binary_trace.hpp"

#include <unistd.h>  // getpid, gethostname

#include <algorithm>
#include <cstddef>  // offsetof: the records' layouts
#include <cstring>
#include <ctime>  // clock_gettime
#include <initializer_list>
#include <stdexcept>
#include <string>
#include <vector>

#include "crc32c.hpp"
#include "function_names.hpp"  // symbols: instrumented functions' names and modules
#include "heap.hpp"            // kSizedLeftOut
#include "node_id.hpp"         // default_node_id
#include "output.hpp"          // OutputSink
#include "packed_records.hpp"
#include "raw_sink.hpp"
#include "ring_records.hpp"
#include "ringtrace/detail/writer.hpp"  // effective_options, effective_sample_every
#include "ringtrace/site.hpp"
#include "step_zones.hpp"         // StepSites
#include "steps.hpp"              // step zones written as the step markers a ring holds
#include "trace_file_format.hpp"  // frames
#include "u64_map.hpp"            // addresses seen

namespace ringtrace {
namespace {

namespace tf = detail::trace_file;

// A thread of a stream being encoded (BinaryTraceExporter::encode_stream).
struct StreamThread {
  std::string chunk;  // packed records not yet framed: its first `used` bytes
  std::size_t used = 0;
  std::uint64_t last = 0;  // ticks of the chunk's last timed record
  bool described = false;
  std::vector<Event> switches;  // switch events not yet framed
};

// The words of a ring record being encoded (at most four; a text's bytes go after them
// elsewhere), set from a list as a vector would be, without its allocation.
struct RecordWords {
  std::uint64_t words[4] = {};
  std::size_t size = 0;
  void set(std::initializer_list<std::uint64_t> list) noexcept {
    size = 0;
    for (const std::uint64_t word : list) words[size++] = word;
  }
};

// Everything a run of the writer adds to: what the file has described so far (call
// sites, functions, modules), the run's facts, and the encoding of a stream. Made afresh
// by one assignment at on_start: nothing of a run reaches the next. A base of the
// writer, whose code names these members as its own.
struct WriterRun {
  detail::U64Map sites_;                          // address -> index
  std::uint64_t last_site_ = 0, last_index_ = 0;  // the last site packed, and its index
  std::uint64_t site_count_ = 0;
  detail::U64Map functions_;  // instrumented function address -> index
  std::uint64_t last_function_ = 0, last_function_index_ = 0;
  std::uint64_t function_count_ = 0;
  std::vector<std::uint32_t> module_indices_;  // symbols::LiveFunctions' module id -> index (0: none yet)
  std::uint64_t module_count_ = 0;
  bool memory_sites_ = false;                             // allocations with callers: the loaded modules written
  std::uint64_t modules_generation_ = ~std::uint64_t{0};  // symbols::module_generation() when last written
  std::string process_name_;
  std::string node_id_;                        // TraceContext::node_id_of(0) at the start
  std::vector<TraceMetadata> start_metadata_;  // the context's at on_start
  bool per_thread_counters_ = false;           // Config::per_thread_counters: counter sites written per-thread
  bool raw_started_ = false;                   // on_raw_start came: a live session, not a replayed stream
  // Fed a stream (windows, snapshots, replay()): its encoding state.
  bool stream_started_ = false;
  std::uint64_t stream_last_ = 0;             // the newest ticks written
  std::vector<StreamThread> stream_threads_;  // by ThreadId
  std::vector<std::uint64_t> stream_sites_;   // SiteId -> index (0: not described yet)
  detail::StepSites stream_steps_;            // the step zones' site (ringtrace::is_step_site)
  std::uint64_t stream_marker_ = 0;           // the step marker's index (0: not described yet)
};

class BinaryTraceExporter final : public Exporter, public detail::RawSink, private WriterRun {
 public:
  BinaryTraceExporter(std::string path, BinaryTraceOptions options)
      : path_(std::move(path)), options_(options), sink_(detail::OutputSink::open_file(path_)) {}

  ~BinaryTraceExporter() override {
    // A run that never finished keeps what it has in <path>.partial.
    try {
      if (sink_ && started_) {
        write_buffer();
        sink_->flush();
      }
    } catch (...) {}
  }

  std::vector<std::filesystem::path> output_paths() const override {
    if (options_.rings_in_file) return {path_, rings_path()};
    return {path_};
  }
  std::filesystem::path rings_path() const override {
    return options_.rings_in_file ? std::filesystem::path(path_ + ".rings") : std::filesystem::path();
  }
  // Rings in a file: the drainer reuses ring slots only after this returns.
  void on_raw_persist() override {
    if (!started_) return;
    write_buffer();
    sink_->flush();
  }

  void on_start(const TraceContext& context) override {
    if (runs_++ > 0) {
      sink_.reset();
      sink_ = detail::OutputSink::open_file(path_);
    }
    started_ = true;
    static_cast<WriterRun&>(*this) = WriterRun{};
    buffer_.clear();
    buffer_.reserve(options_.buffer_bytes + kInThreadRoom + 4096);  // on_raw_records_in_thread's room
    buffer_.append(tf::kMagic, sizeof tf::kMagic);
    tf::put_u32(buffer_, tf::kVersionWord);
    tf::put_u32(buffer_, 0);  // features: one process
    process_name_ = context.process_name();
    node_id_ = context.node_id_of(0);
    // Written after the session frame, which comes first in a file.
    start_metadata_.assign(context.metadata().begin(), context.metadata().end());
  }

  // In a live session the records come through the raw side (on_raw_start first) and
  // decoded events, which arrive when other exporters need them, are ignored. Fed a
  // stream instead (a window, a snapshot, replay()), it encodes the events.
  void on_events(std::span<const Event> events, const TraceContext& context) override {
    if (!raw_started_) encode_stream(events, context);
  }

  void on_flush(const TraceContext&) override {
    write_buffer();
    sink_->flush();
  }

  void on_finish(const TraceContext& context, const SessionStats& stats) override {
    if (!raw_started_) {
      if (!stream_started_) begin_stream(context);
      flush_stream_chunks();
      // The end: zones the stream closed at its stop or a window's end were left open in
      // the file (see encode_stream); the reader closes them at this time.
      std::string& stop = begin_frame(tf::frame_stop);
      tf::put_u64(stop, std::max(stream_last_, context.clock().stop_ns + 1));  // ticks: ns + 1
      end_frame();
      for (ThreadId id = 0; id < stream_threads_.size(); ++id) {
        if (stream_threads_[id].described) describe_stream_thread(id, context);  // names as they are now
      }
    }
    write_metadata(context.metadata());  // complete now (TraceContext::metadata)
    if (!stats.context_switches_unavailable.empty() || stats.threads_without_switches != 0) {
      // Why switches are missing: the session's summary in a switches frame.
      std::string& p = begin_frame(tf::frame_switches);
      tf::put_u32(p, tf::kSwitchesSummary);
      tf::put_u8(p, 0);
      tf::put_varint(p, stats.threads_without_switches);
      tf::put_str(p, stats.context_switches_unavailable);
      end_frame();
    }
    write_function_stats(stats.functions);
    write_counts(stats);
    std::string& p = begin_frame(tf::frame_stats);
    tf::put_u64(p, stats.recorded);
    tf::put_u64(p, stats.dropped);
    tf::put_u64(p, stats.late_events);
    tf::put_u64(p, stats.unbalanced_ends);
    tf::put_u64(p, stats.closed_at_stop);
    tf::put_u64(p, stats.dropped_without_ring);
    tf::put_u64(p, stats.drain_passes);
    tf::put_u32(p, static_cast<std::uint32_t>(stats.threads.size()));
    for (const ThreadStats& t : stats.threads) {
      tf::put_u32(p, t.thread);
      tf::put_u64(p, t.os_tid);
      tf::put_u64(p, t.recorded);
      tf::put_u64(p, t.dropped);
    }
    end_frame();
    begin_frame(tf::frame_end);
    end_frame();
    write_buffer();
    sink_->close();
    started_ = false;
  }

  // The calls of instrumented functions left out, if any (format 2.2's functions frame).
  void write_function_stats(const FunctionStats& f) {
    if (f.unwound == 0 && f.too_deep == 0 && f.short_calls == 0 && f.excluded == 0 && f.inlined == 0) return;
    std::string& p = begin_frame(tf::frame_functions);
    for (std::uint64_t v : {f.unwound, f.too_deep, f.short_calls, f.excluded, f.inlined}) tf::put_u64(p, v);
    tf::put_u32(p, static_cast<std::uint32_t>(f.short_by_function.size() + f.inlined_by_function.size()));
    for (const auto& [list, entries] :
         {std::pair{tf::kListShort, &f.short_by_function}, std::pair{tf::kListInlined, &f.inlined_by_function}}) {
      for (const auto& [name, calls] : *entries) {
        tf::put_u8(p, list);
        tf::put_u64(p, calls);
        tf::put_str(p, name);
      }
    }
    end_frame();
  }

  // --- RawSink ---------------------------------------------------------------------
  void on_raw_start(const detail::RawSessionInfo& info) override {
    raw_started_ = true;
    per_thread_counters_ = info.per_thread_counters;
    write_session_frame(static_cast<std::uint32_t>(::getpid()), info);
  }

  // The session frame (docs/file-format.md), for a live session or a stream.
  void write_session_frame(std::uint32_t pid, const detail::RawSessionInfo& info) {
    std::string& p = begin_frame(tf::frame_session);
    tf::put_u32(p, pid);
    tf::put_u8(p, info.tsc ? 1 : 0);
    tf::put_u8(p, info.per_thread_counters ? 1 : 0);
    tf::put_u16(p, static_cast<std::uint16_t>((info.memory ? tf::kSessionMemory : 0) |
                                              (info.memory_sized ? tf::kSessionMemorySized : 0)));
    tf::put_f64(p, info.ticks_per_second);
    tf::put_u64(p, info.start_ns);
    tf::put_u64(p, info.realtime_anchor_ns);
    tf::put_u64(p, info.monotonic_anchor_ns);
    tf::put_u64(p, info.merge_grace_ns);
    tf::put_u64(p, info.ring_bytes);
    tf::put_u64(p, info.boundary_gap_ticks);
    tf::put_str(p, process_name_);
    char host[256] = {};
    if (::gethostname(host, sizeof host - 1) != 0) host[0] = '\0';
    tf::put_str(p, host);
    end_frame();
    // A node id other than the one a reader makes from the host and pid above.
    if (!node_id_.empty() && node_id_ != detail::default_node_id(host, pid)) {
      tf::put_str(begin_frame(tf::frame_node), node_id_);
      end_frame();
    }
    if (info.memory && !info.memory_sized) {  // the heap's accounting's settings, for its reader
      std::string& m = begin_frame(tf::frame_memory);
      tf::put_u64(m, info.memory_max_blocks);
      tf::put_u64(m, info.memory_stack_bytes);
      tf::put_str(m, info.memory_stack_method);
      end_frame();
      memory_sites_ = true;
      write_loaded_modules();
    }
    write_metadata(start_metadata_);
  }

  // Allocations carry their callers' addresses (and sampled stacks theirs): the modules
  // loaded, so that a reader names them, each once; again at each pass when the loader's
  // list changed (a dlopen).
  void write_loaded_modules() {
    const std::uint64_t generation = symbols::module_generation();
    if (generation == modules_generation_) return;
    modules_generation_ = generation;
    symbols::LiveFunctions& live = symbols::LiveFunctions::instance();
    for (const symbols::Module& m : symbols::loaded_modules()) {
      if (m.high <= m.low) continue;
      if (const std::uint32_t id = live.module_of(m.low); id != 0) module_index(id);
    }
  }

  // What the session counted and did not record (docs/file-format.md, "Counts").
  void write_counts(const SessionStats& stats) {
    std::vector<std::pair<std::string, std::uint64_t>> counts;
    std::vector<std::pair<std::string, std::string>> texts;
    if (memory_sites_) {
      const std::pair<const char*, const MemoryStats::LeftOut*> causes[] = {
          {"memory.nested", &stats.memory.nested},
          {"memory.after_exit", &stats.memory.after_exit},
          {"memory.dropped", &stats.memory.dropped}};
      for (const auto& [key, left_out] : causes) {
        const std::string k = key;
        counts.emplace_back(k + ".allocations", left_out->allocations);
        counts.emplace_back(k + ".frees", left_out->frees);
        counts.emplace_back(k + ".bytes", left_out->bytes);
      }
    }
    if (stats.drainer_out_of_memory != 0) counts.emplace_back("drainer.out_of_memory", stats.drainer_out_of_memory);
    if (stats.drainer_events_lost != 0) counts.emplace_back("drainer.events_lost", stats.drainer_events_lost);
    if (!stats.rings_unavailable.empty()) texts.emplace_back("rings_unavailable", stats.rings_unavailable);
    if (counts.empty() && texts.empty()) return;
    std::string& p = begin_frame(tf::frame_counts);
    tf::put_u32(p, static_cast<std::uint32_t>(counts.size()));
    for (const auto& [key, value] : counts) {
      tf::put_str(p, key);
      tf::put_u64(p, value);
    }
    tf::put_u32(p, static_cast<std::uint32_t>(texts.size()));
    for (const auto& [key, text] : texts) {
      tf::put_str(p, key);
      tf::put_str(p, text);
    }
    end_frame();
  }

  // The trace's facts (TraceContext::metadata), one frame each: written after the session
  // frame and again at the end (the last value of a key wins), so a killed run keeps the
  // first.
  void write_metadata(std::span<const TraceMetadata> metadata) {
    for (const TraceMetadata& m : metadata) {
      std::string& p = begin_frame(tf::frame_metadata);
      tf::put_str(p, m.key);
      if (const auto* i = std::get_if<std::int64_t>(&m.value)) {
        tf::put_u8(p, 0);
        tf::put_u64(p, static_cast<std::uint64_t>(*i));
      } else {
        tf::put_u8(p, 1);
        tf::put_str(p, std::get<std::string>(m.value));
      }
      end_frame();
    }
  }

  void on_raw_segment(const detail::ClockSegment& s) override {
    std::string& p = begin_frame(tf::frame_segment);
    tf::put_u64(p, s.base_ticks);
    tf::put_u64(p, s.base_ns);
    tf::put_u64(p, s.mult);
    end_frame();
  }

  void on_raw_thread(ThreadId thread, std::uint64_t os_tid, std::string_view name) override {
    std::string& p = begin_frame(tf::frame_thread);
    tf::put_u32(p, thread);
    tf::put_u64(p, os_tid);
    tf::put_str(p, name);
    end_frame();
  }

  // The bulk of a trace, zone ends and the begins of one call site, packed by a loop of
  // their own whose state stays in registers (the bytes pack_record writes for them):
  // from `at` until another record, `end`, or `p` at `limit`. Returns the new `p`. Not
  // inlined: inlined into pack_chunk, whose own state is live around it, g++ 12 kept the
  // event count on the stack (an add to memory per event, 3.2 to 3.8 ns per event
  // against 2.3 to 3.2 in the same minutes).
  RINGTRACE_NOINLINE static char* pack_zones(const std::uint8_t*& at_ref, const std::uint8_t* end, char* p,
                                             const char* limit, std::uint64_t& last_ref, std::uint64_t begin_header,
                                             std::uint64_t begin_code, std::uint64_t& events_ref) noexcept {
    const std::uint8_t* at = at_ref;
    std::uint64_t last = last_ref, events = events_ref;
    while (at < end && p < limit) {
      const std::uint64_t header = detail::word_at(at, 0);
      std::uint64_t ticks;
      if ((header & detail::kRecordEndBit) != 0) {  // a zone end: one slot
        ticks = header >> 1;
        *p++ = detail::record_zone_end;
        at += sizeof(detail::EndRecord);
      } else if (header == begin_header && end - at >= static_cast<std::ptrdiff_t>(sizeof(detail::TimedRecord))) {
        ticks = detail::field_at(at, offsetof(detail::TimedRecord, ticks));
        p = tf::put_varint(p, begin_code);
        at += sizeof(detail::TimedRecord);
      } else {
        break;
      }
      p = tf::put_time(p, ticks, last);
      ++events;
    }
    at_ref = at;
    last_ref = last;
    events_ref = events;
    return p;
  }

  // Encodes the records into packed chunks (docs/file-format.md): a varint header
  // (kind, "no time", the call site's index), the time as a varint delta from the
  // thread's previous record, then the payload. A zone's begin or end takes 2 to 4 bytes
  // instead of the ring's 16 and 8: on this machine, writing new file pages costs far
  // more per byte than encoding them, so fewer bytes is what makes recording cheap.
  std::uint64_t on_raw_records(ThreadId thread, std::span<const std::uint8_t> records) override {
    Packing k{records.data(), records.data() + records.size()};
    while (k.at < k.end) {
      const Stop stop = pack_chunk(thread, k, false);
      if (stop.unreadable) {
        // The drainer hands whole records only (raw_sink.hpp): an exporter error, not a
        // read past the records handed over. The records before it are in the file.
        throw std::runtime_error("binary trace: a ring record it cannot read (header " +
                                 std::to_string(detail::word_at(k.at, 0)) + ") at byte " +
                                 std::to_string(k.at - records.data()) + " of " + std::to_string(records.size()) +
                                 " handed over");
      }
      if (stop.new_site != 0) describe_site(stop.new_site);
      if (stop.new_function != 0) describe_function(stop.new_function);
    }
    return k.events;
  }

  // A recording thread packs its own ring's records (raw_sink.hpp): as on_raw_records,
  // into the room the buffer was given at the start (no allocation, no write to the OS),
  // up to the first record of a call site or function not described yet (describing it
  // allocates), or not written yet (its header 0 reads as a record of no size). The
  // drainer writes the buffer out at the end of its next pass.
  std::size_t on_raw_records_in_thread(ThreadId thread, std::span<const std::uint8_t> records,
                                       std::uint64_t& events) noexcept override {
    if (!raw_started_ || !started_) return 0;
    Packing k{records.data(), records.data() + records.size()};
    while (k.at < k.end && buffer_.capacity() - buffer_.size() >= kInThreadRoom) {
      const Stop stop = pack_chunk(thread, k, true);
      if (stop.unreadable || stop.new_site != 0 || stop.new_function != 0) break;
    }
    events += k.events;
    return static_cast<std::size_t>(k.at - records.data());
  }

  // A thread's switches delivered in this pass (docs/file-format.md, "Switches").
  void on_raw_switches(ThreadId thread, std::span<const Event> switches, std::uint64_t lost) override {
    write_switches_frame(thread, switches, lost);
  }

  void on_raw_pass(std::uint64_t complete_ticks) override {
    if (memory_sites_) write_loaded_modules();
    std::string& p = begin_frame(tf::frame_pass);
    tf::put_u64(p, complete_ticks);
    end_frame();
  }

  void on_raw_stop(std::uint64_t stop_ticks) override {
    std::string& p = begin_frame(tf::frame_stop);
    tf::put_u64(p, stop_ticks);
    end_frame();
  }

 private:
  std::string& begin_frame(std::uint32_t type) {
    frame_at_ = buffer_.size();
    tf::put_u32(buffer_, type);
    tf::put_u32(buffer_, 0);  // payload bytes, set by end_frame
    tf::put_u32(buffer_, 0);  // CRC32C, set by end_frame
    tf::put_u32(buffer_, 0);  // flags
    return buffer_;
  }
  // Closes the frame begun last and writes the buffer out once it holds buffer_bytes.
  void end_frame() {
    close_frame();
    if (buffer_.size() >= options_.buffer_bytes) write_buffer();
  }
  // Its length and CRC, in its header.
  void close_frame() noexcept {
    const std::size_t payload = frame_at_ + tf::kFrameHeaderBytes;
    const auto bytes = static_cast<std::uint32_t>(buffer_.size() - payload);
    std::memcpy(buffer_.data() + frame_at_ + 4, &bytes, 4);
    // Over the header (its CRC field 0) and the payload: a flipped type or length is caught.
    const std::uint32_t crc = detail::crc32c(buffer_.data() + frame_at_, buffer_.size() - frame_at_);
    std::memcpy(buffer_.data() + frame_at_ + 8, &crc, 4);
  }

  static constexpr std::size_t kChunkBytes = std::size_t{1} << 20;
  static constexpr std::size_t kStepRecords = 2048;
  static constexpr std::size_t kStepBytes = kStepRecords * tf::kMaxPackedBytes;  // more than a text can take
  // The buffer's room for packing in a recording thread: a chunk frame's header and
  // one step. The buffer is reserved with that much beyond buffer_bytes at the start.
  static constexpr std::size_t kInThreadRoom = tf::kFrameHeaderBytes + 4 + kStepBytes;

  // Where packing is in the records handed over, and the events packed so far.
  struct Packing {
    const std::uint8_t* at;
    const std::uint8_t* end;
    std::uint64_t events = 0;
  };
  // Why a chunk ended before the records did: a call site or function to describe
  // first, or a record whose size cannot be read (at k.at in both cases).
  struct Stop {
    std::uint64_t new_site = 0;
    std::uint64_t new_function = 0;
    bool unreadable = false;
  };

  // One chunk: about kChunkBytes of packed records at most; its first time is a delta
  // from 0, so that every chunk decodes on its own. The records are written through a
  // raw pointer into room made beforehand, so that the loop checks little of its own. A
  // record whose call site is new ends the chunk: the site's frame goes between it and
  // the next. `in_thread`: the buffer never grows past its capacity and is never written
  // to the OS (on_raw_records_in_thread).
  Stop pack_chunk(ThreadId thread, Packing& k, bool in_thread) {
    begin_chunk(thread);
    const std::size_t start = buffer_.size();
    const std::uint8_t* at = k.at;
    const std::uint8_t* const end = k.end;
    std::uint64_t events = k.events;
    std::uint64_t last = 0;
    std::size_t used = start;
    Stop stop;
    // The chunk grows in steps of room for kStepRecords records (more than the longest
    // text), which stay in the core's cache: room for a whole pass at once (up to a
    // megabyte, zero-filled by std::string and then written over) cost more than the
    // packing itself.
    while (at < end && stop.new_site == 0 && stop.new_function == 0 && !stop.unreadable && used - start < kChunkBytes &&
           (!in_thread || buffer_.capacity() - used >= kStepBytes)) {
      buffer_.resize(used + kStepBytes);
      char* p = buffer_.data() + used;
      char* const room_end = buffer_.data() + buffer_.size();
      // A begin of the call site of the last site-bearing record (a loop's zones): its
      // packed header is that site's, computed once (the bytes pack_record writes). In
      // locals: stores through `p` (a char*) could alias the members. ~0 matches no
      // header (bit 0 set is a zone end, taken first).
      std::uint64_t begin_header =
          last_site_ != 0 ? last_site_ | (std::uint64_t{detail::record_zone_begin} << detail::kRecordKindShift)
                          : ~std::uint64_t{0};
      std::uint64_t begin_code = tf::packed_header(detail::record_zone_begin, last_index_);
      char* const zones_limit = room_end - tf::kMaxPackedBytes;
      for (;;) {
        p = pack_zones(at, end, p, zones_limit, last, begin_header, begin_code, events);
        if (at >= end || p >= zones_limit) break;  // done, or the next step
        // Any other record.
        const std::uint64_t header = detail::word_at(at, 0);
        const detail::RecordKind kind = detail::kind_of(header);
        const std::uint64_t bytes = detail::ring_record_bytes(header, at, static_cast<std::uint64_t>(end - at));
        if (bytes == 0) [[unlikely]] {  // not a whole record: never packed (its size is not one)
          stop.unreadable = true;
          break;
        }
        // A text, or an allocation's stack (its frames' varints up to ten bytes each, their
        // slots eight): the next step.
        if (static_cast<std::size_t>(room_end - p) < bytes + bytes / 4 + tf::kMaxPackedBytes) break;
        std::uint64_t index = 0;
        if (kind == detail::record_function_entry) {  // an instrumented function: its own table
          const std::uint64_t address = header >> detail::kRecordAddressShift;
          if (address == last_function_) [[likely]] {
            index = last_function_index_;
          } else {
            index = functions_.find(address, 0);
            if (index == 0) [[unlikely]] {
              stop.new_function = address;
              break;
            }
            last_function_ = address;
            last_function_index_ = index;
          }
          ++events;
        } else if (kind != detail::record_dropped && kind != detail::record_extended) {
          const std::uint64_t site = header & detail::kRecordSiteMask;
          if (site == last_site_) [[likely]] {  // a zone's begins, a loop's records
            index = last_index_;
          } else {
            index = sites_.find(site, 0);
            if (index == 0) [[unlikely]] {
              stop.new_site = site;
              break;
            }
            last_site_ = site;
            last_index_ = index;
            begin_header = site | (std::uint64_t{detail::record_zone_begin} << detail::kRecordKindShift);
            begin_code = tf::packed_header(detail::record_zone_begin, index);
          }
          ++events;
          if (kind == detail::record_region_begin && site == step_marker_) [[unlikely]] {
            // A step marker is the events it stands for, as the decoder gives them: the
            // step that ends (not step 0) and the one that begins (a format-1 marker, with
            // neither flag, is one zone).
            const std::uint64_t v = detail::field_at(at, offsetof(detail::TimedValueRecord, value));
            const std::uint64_t n = ((v & detail::kStepEnds) != 0 && (v & detail::kStepNumberMask) != 0 ? 1u : 0u) +
                                    ((v & detail::kStepBegins) != 0 ? 1u : 0u);
            if ((v & (detail::kStepEnds | detail::kStepBegins)) != 0) events = events - 1 + n;  // the ++ above
          }
        }
        if (kind == detail::record_extended) {  // an allocation or a free is an event (the decoder's count)
          const std::uint64_t subtype = detail::extended_subtype(header);
          if (subtype == detail::extended_alloc || subtype == detail::extended_free) ++events;
        }
        std::uint64_t chunk_last = last;  // `last` itself never has its address taken: it stays in a register
        p = tf::pack_record(at, index, chunk_last, p);
        last = chunk_last;
        at += bytes;
      }
      used = static_cast<std::size_t>(p - buffer_.data());
    }
    if (used == start) {
      buffer_.resize(frame_at_);  // nothing in it: no frame
    } else {
      buffer_.resize(used);
      if (in_thread) {
        close_frame();
      } else {
        end_frame();
      }
    }
    k.at = at;
    k.events = events;
    return stop;
  }

  // One thread's switch events, in time order (docs/file-format.md, "Switches").
  void write_switches_frame(ThreadId thread, std::span<const Event> switches, std::uint64_t lost) {
    std::string& p = begin_frame(tf::frame_switches);
    tf::put_u32(p, thread);
    tf::put_u8(p, 0);  // fields: none beyond the records' own
    tf::put_varint(p, lost);
    tf::put_varint(p, switches.size());
    std::uint64_t last = 0;
    for (const Event& e : switches) {
      const std::uint64_t time = std::max(e.time_ns, last);  // a thread's switches never go back
      const std::uint64_t bits = e.value.u & tf::kSwitchBitsMask;
      tf::put_varint(p,
                     (time - last) << tf::kSwitchTimeShift | bits << 1 | (e.kind == EventKind::switch_out ? 1u : 0u));
      last = time;
    }
    end_frame();
  }

  void begin_chunk(ThreadId thread) {
    begin_frame(tf::frame_chunk);
    tf::put_u32(buffer_, thread);
  }

  // Describes a call site the first time its address appears; returns its index (1, 2,
  // ... in the order of the site frames).
  RINGTRACE_NOINLINE std::uint64_t describe_site(std::uint64_t address) {
    const auto index = static_cast<std::uint32_t>(++site_count_);
    sites_.find_or_insert(address, index);
    const auto* site = reinterpret_cast<const SiteInfo*>(address);
    write_site_frame(index, address, *site, detail::effective_options(*site, per_thread_counters_),
                     detail::effective_sample_every(*site));
    return index;
  }

  // Describes an instrumented function the first time its address appears (after its
  // module's frame, the first time one of its functions does); returns its index (1, 2,
  // ... in the order of the function frames). docs/functions.md, "File frames".
  RINGTRACE_NOINLINE std::uint64_t describe_function(std::uint64_t address) {
    const auto index = static_cast<std::uint32_t>(++function_count_);
    functions_.find_or_insert(address, index);
    symbols::LiveFunctions& live = symbols::LiveFunctions::instance();
    const symbols::LiveFunction named = options_.name_functions ? live.resolve(address) : symbols::LiveFunction{};
    const std::uint32_t module_id = options_.name_functions ? named.module : live.module_of(address);
    const std::uint32_t module = module_id != 0 ? module_index(module_id) : 0;
    std::string& p = begin_frame(tf::frame_function);
    tf::put_u32(p, index);
    tf::put_u32(p, module);
    tf::put_u64(p, address);
    const symbols::Symbol* symbol = named.symbol;
    tf::put_u32(p, symbol != nullptr ? symbol->line : 0);
    std::uint8_t flags = 0;
    if (symbol != nullptr) flags |= tf::kFunctionNamed | (symbol->resolved ? tf::kFunctionResolved : 0);
    tf::put_u8(p, flags);
    tf::put_u8(p, 0);
    tf::put_u16(p, 0);
    tf::put_str(p, symbol != nullptr ? symbol->function : "");
    tf::put_str(p, symbol != nullptr ? symbol->file : "");
    end_frame();
    return index;
  }

  // The file's index of a module (symbols::LiveFunctions' id), its frame written the first
  // time.
  std::uint32_t module_index(std::uint32_t id) {
    if (id >= module_indices_.size()) module_indices_.resize(id + 1, 0);
    if (module_indices_[id] != 0) return module_indices_[id];
    const symbols::Module module = symbols::LiveFunctions::instance().module(id);
    const auto index = static_cast<std::uint32_t>(++module_count_);
    module_indices_[id] = index;
    std::string& p = begin_frame(tf::frame_module);
    tf::put_u32(p, index);
    tf::put_u32(p, 0);
    tf::put_u64(p, module.base);
    tf::put_u64(p, module.low);
    tf::put_u64(p, module.high);
    tf::put_str(p, module.build_id);
    tf::put_str(p, module.path);
    end_frame();
    return index;
  }

  void write_site_frame(std::uint64_t index, std::uint64_t address, const SiteInfo& site, std::uint8_t options,
                        std::uint32_t every) {
    std::string& p = begin_frame(tf::frame_site);
    tf::put_u32(p, static_cast<std::uint32_t>(index));
    tf::put_u64(p, address);
    tf::put_u8(p, static_cast<std::uint8_t>(site.kind));
    tf::put_u8(p, options);
    tf::put_u16(p, static_cast<std::uint16_t>(std::clamp<std::uint32_t>(every, 1, 0xFFFF)));
    tf::put_u32(p, site.line);
    tf::put_str(p, site.name != nullptr ? site.name : "");
    tf::put_str(p, site.function != nullptr ? site.function : "");
    tf::put_str(p, site.file != nullptr ? site.file : "");
    tf::put_str(p, site.category != nullptr ? site.category : "");
    end_frame();
  }

  // --- A stream (no live rings): the events encoded as the records a ring would have
  // held, on a clock whose ticks are nanoseconds plus one (ticks 0 means "no time", the
  // time of the thread's previous record, as values and flows have in a ring), with no
  // boundary spacing (the stream's times are kept exactly). Each on_events call becomes
  // chunks per thread and a pass frame. Ends that the stream made up (closed at its stop
  // or at a window's end) are not written: the reader closes those zones at the stop
  // frame's time, flagged closed_at_stop.
  void begin_stream(const TraceContext& context) {
    stream_started_ = true;
    detail::RawSessionInfo info;  // ticks are nanoseconds; no merge grace (the stream is
    info.tsc = false;             // ordered), no ring, no boundary gap (its times kept)
    // A file's reader knows its node once its first frames are read.
    node_id_ = context.node_id_of(0);
    info.ticks_per_second = 1e9;
    info.start_ns = context.clock().start_ns;
    detail::read_clock_anchors(info);
    info.boundary_gap_ticks = 0;
    info.memory_sized = true;  // alloc and free events, if any, as sizes (HeapTracker::sized)
    write_session_frame(context.process_id() != 0 ? context.process_id() : static_cast<std::uint32_t>(::getpid()),
                        info);
    on_raw_segment(detail::ClockSegment{1, 0, std::uint64_t{1} << 32});  // ns = ticks - 1
  }

  void describe_stream_thread(ThreadId id, const TraceContext& context) {
    const ThreadInfo& info = context.thread(id);
    if (info.pid != 0 && context.process_id() != 0 && info.pid != context.process_id()) {
      throw std::logic_error("binary_trace_exporter(" + path_ +
                             "): a stream of several processes; write each process's file and merge them "
                             "(ringtrace merge)");
    }
    on_raw_thread(id, info.os_tid, info.name);
  }

  std::uint64_t stream_site(SiteId id, const TraceContext& context) {
    if (id >= stream_sites_.size()) stream_sites_.resize(id + 1, 0);
    if (stream_sites_[id] == 0) {
      const SiteInfo& site = context.site(id);
      stream_sites_[id] = ++site_count_;
      write_site_frame(stream_sites_[id], id, site, site.options, site.sample_every);
    }
    return stream_sites_[id];
  }

  // Each event as the ring record that would have carried it, packed as the live records
  // are (packed_records.hpp); only the record kind of a header matters to the packing,
  // its call site goes as `index`.
  void encode_stream(std::span<const Event> events, const TraceContext& context) {
    if (!stream_started_) begin_stream(context);
    namespace rd = detail;
    const auto header = [](rd::RecordKind kind) { return std::uint64_t{kind} << rd::kRecordKindShift; };
    for (const Event& e : events) {
      if (e.thread >= stream_threads_.size()) stream_threads_.resize(e.thread + 1);
      StreamThread& t = stream_threads_[e.thread];
      if (!t.described) {
        describe_stream_thread(e.thread, context);
        t.described = true;
      }
      const std::uint64_t ticks = e.time_ns + 1;
      stream_last_ = std::max(stream_last_, ticks);
      const bool is_double = (e.flags & EventFlags::value_double) != 0;
      RecordWords w;  // the record's words but a text's bytes: no allocation an event
      std::string_view text;
      bool has_text = false;
      std::uint64_t index = 0;  // the record's call site in the file (0: the event's own)
      if ((e.kind == EventKind::zone_begin || e.kind == EventKind::zone_end) &&
          stream_steps_.is_step(e.site, context)) {
        // A step's zone (on the steps track): the marker Session::step() records, which
        // the reader turns back into this zone on its steps track (steps.hpp).
        if ((e.flags & (EventFlags::closed_at_stop | EventFlags::closed_at_window_end)) != 0) continue;
        const std::uint64_t marker = e.kind == EventKind::zone_begin
                                         ? (e.value.u & rd::kStepNumberMask) | rd::kStepBegins
                                         : ((e.value.u + 1) & rd::kStepNumberMask) | rd::kStepEnds;
        w.set({header(rd::record_region_begin), ticks, marker});
        index = stream_marker_index();
      } else {
        switch (e.kind) {
          case EventKind::zone_begin:
            if ((e.flags & EventFlags::region) != 0) {
              w.set({header(rd::record_region_begin), ticks, e.value.u});
            } else {
              w.set({header(rd::record_zone_begin), ticks});
            }
            break;
          case EventKind::zone_end:
            if ((e.flags & (EventFlags::closed_at_stop | EventFlags::closed_at_window_end)) != 0) continue;
            w.set({rd::end_slot(ticks)});
            break;
          case EventKind::instant:
            w.set({header(rd::record_instant), ticks});
            break;
          case EventKind::counter:
          case EventKind::async_begin:
          case EventKind::async_end:
            w.set({header(is_double ? rd::record_timed_double : rd::record_timed_int), ticks, e.value.u});
            break;
          case EventKind::dropped:
            w.set({header(rd::record_dropped), ticks, e.value.u});
            break;
          case EventKind::arg:
            if ((e.flags & EventFlags::text) == 0) {
              w.set({header(is_double ? rd::record_arg_double : rd::record_arg_int), e.value.u});
              break;
            }
            text = context.text(e);
            has_text = true;
            w.set({header(rd::record_arg_text), 0});
            break;
          case EventKind::message:
            text = context.text(e);
            has_text = true;
            w.set({header(rd::record_message), ticks, 0});
            break;
          case EventKind::flow_out:
          case EventKind::flow_in:
            w.set({header(rd::record_arg_int), e.value.u});
            break;
          case EventKind::switch_out:
          case EventKind::switch_in:
            t.switches.push_back(e);  // a switches frame of their own, before the pass frame
            continue;
          case EventKind::alloc:  // no address: the size as it was resolved (0: unknown)
          case EventKind::free: {
            // kSizedLeftOut: what the accounting left out of the live heap (heap.hpp).
            const std::uint64_t left_out = (e.flags & EventFlags::untracked) != 0 ? detail::kSizedLeftOut : 0;
            // The flags (format 2.4) as the records had them: a sampled-out zone's, a restore.
            const std::uint64_t flags =
                ((e.flags & EventFlags::sampled_out) != 0 ? rd::kMemorySampledOut : 0) |
                (e.kind == EventKind::alloc && (e.flags & EventFlags::restored) != 0 ? rd::kMemoryRestore : 0);
            if (e.kind == EventKind::alloc) {
              w.set({rd::kMemoryHeader<rd::extended_alloc> | flags, ticks, left_out, e.value.u});
            } else {
              w.set({rd::kMemoryHeader<rd::extended_free> | flags, ticks, left_out,
                     (e.flags & EventFlags::size_unknown) != 0 ? 0 : e.value.u});
            }
            break;
          }
          default:
            continue;
        }
      }
      const std::uint64_t* words = w.words;
      std::size_t count = w.size;
      if (has_text) {  // its size in the record's last word, then its bytes
        const std::size_t bytes = std::min<std::size_t>(text.size(), 0xFFFF);  // what a reader takes
        const bool cut = bytes < text.size() || (e.flags & EventFlags::truncated) != 0;
        w.words[w.size - 1] = bytes | (cut ? detail::kTextTruncated : 0);
        std::vector<std::uint64_t>& with_text = stream_record_;
        with_text.assign(w.words, w.words + w.size);
        with_text.resize(w.size + (bytes + 7) / 8, 0);
        if (bytes != 0) std::memcpy(with_text.data() + w.size, text.data(), bytes);
        words = with_text.data();
        count = with_text.size();
      }
      const rd::RecordKind kind = rd::kind_of(words[0]);
      if (index == 0 && kind != rd::record_zone_end && kind != rd::record_dropped && kind != rd::record_extended)
        index = stream_site(e.site, context);
      // The chunk grows as a vector would, and only its `used` bytes count: no zeroing
      // of the room a record might take, event by event.
      const std::size_t room = t.used + tf::kMaxPackedBytes + count * 8;
      if (t.chunk.size() < room) t.chunk.resize(std::max(room, 2 * t.chunk.size()));
      char* const p =
          tf::pack_record(reinterpret_cast<const std::uint8_t*>(words), index, t.last, t.chunk.data() + t.used);
      t.used = static_cast<std::size_t>(p - t.chunk.data());
      if (t.used >= kChunkBytes) flush_stream_chunk(e.thread);
    }
    flush_stream_chunks();
    std::string& pass = begin_frame(tf::frame_pass);
    tf::put_u64(pass, stream_last_);
    end_frame();
  }

  // The step marker's site in the file, described at its first use.
  std::uint64_t stream_marker_index() {
    if (stream_marker_ == 0) {
      const SiteInfo& marker = *detail::step_marker_site();
      stream_marker_ = ++site_count_;
      write_site_frame(stream_marker_, reinterpret_cast<std::uintptr_t>(&marker), marker, marker.options, 1);
    }
    return stream_marker_;
  }

  void flush_stream_chunk(ThreadId id) {
    StreamThread& t = stream_threads_[id];
    if (!t.switches.empty()) {
      write_switches_frame(id, t.switches, 0);
      t.switches.clear();
    }
    if (t.used == 0) return;
    begin_chunk(id);
    buffer_.append(t.chunk.data(), t.used);
    end_frame();
    t.used = 0;
    t.last = 0;  // every chunk decodes on its own
  }
  void flush_stream_chunks() {
    for (ThreadId id = 0; id < stream_threads_.size(); ++id) flush_stream_chunk(id);
  }

  void write_buffer() {
    if (buffer_.empty()) return;
    sink_->write(buffer_);
    buffer_.clear();
  }

  std::string path_;
  BinaryTraceOptions options_;
  std::unique_ptr<detail::OutputSink> sink_;
  std::string buffer_;
  std::size_t frame_at_ = 0;
  // The step marker site's address (Session::step()): its records count as their events.
  const std::uint64_t step_marker_ =
      static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(detail::step_marker_site()));
  std::uint64_t runs_ = 0;
  bool started_ = false;
  std::vector<std::uint64_t> stream_record_;  // the ring record of the event being encoded
  // The run's state: WriterRun, a base.
};

}  // namespace

std::shared_ptr<Exporter> binary_trace_exporter(const std::filesystem::path& path, BinaryTraceOptions options) {
  return std::make_shared<BinaryTraceExporter>(path.string(), options);
}

}  // namespace ringtrace
