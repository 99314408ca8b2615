// Perfetto exporter: the protobuf `Trace` format, encoded by hand (the wire format is
// varints and length-delimited fields; no protobuf library). See
// docs/formats/perfetto.md for the fields written and what trace_processor v20.1 reads.
//
// Like the Chrome exporter, zones are written when they end (their begin and end
// packets together, the begin carrying what attached to the zone: debug annotations and
// flow ids, which trace_processor v20.1 reads on a slice's begin only); trace_processor
// sorts packets by time when it loads a file. Each thread's events are on a packet
// sequence of their own: no track uuid on them (the sequence's TrackEventDefaults), and
// times on the trace clock, or with PerfettoOptions::delta_timestamps as deltas on an
// incremental clock (a zone then takes about 20 bytes instead of 30). Memory:
// the open zones per thread, the interning tables (one entry per site, a bit per name
// and thread), never the number of events.
#include "ringtrace/exporters/perfetto.hpp"

#include <unistd.h>  // getpid

#include <cmath>
#include <cstring>
#include <string>
#include <string_view>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <variant>
#include <vector>

#include "heap_counter.hpp"  // the live heap's counter track (Config::memory)
#include "output.hpp"        // OutputSink, UTF-8 repair
#include "step_zones.hpp"    // Session::step()'s zones
#include "zone_tracker.hpp"  // begin time of each zone at its end

namespace ringtrace {
namespace {

// Field numbers (protos/perfetto/trace/...).
namespace f {
constexpr unsigned trace_packet = 1;  // Trace
// TracePacket
constexpr unsigned chrome_events = 5, clock_snapshot = 6, timestamp = 8, sequence_id = 10, track_event = 11,
                   interned_data = 12, sequence_flags = 13, incremental_state_cleared = 41, timestamp_clock_id = 58,
                   trace_packet_defaults = 59, track_descriptor = 60;
// TracePacketDefaults (its timestamp_clock_id is 58 too); TrackEventDefaults' track_uuid is 11
constexpr unsigned track_event_defaults = 11;
// ClockSnapshot; ClockSnapshot.Clock
constexpr unsigned clocks = 1, clock_id = 1, clock_timestamp = 2, is_incremental = 3;
// TrackEvent
constexpr unsigned category_iids = 3, debug_annotations = 4, type = 9, name_iid = 10, track_uuid = 11, event_name = 23,
                   counter_value = 30, flow_ids_old = 36, terminating_flow_ids_old = 42, double_counter_value = 44,
                   flow_ids = 47, terminating_flow_ids = 48;
// TrackDescriptor
constexpr unsigned uuid = 1, name = 2, process = 3, thread = 4, parent_uuid = 5, counter = 8;
// CounterDescriptor: its unit, UNIT_SIZE_BYTES
constexpr unsigned counter_unit = 3, unit_size_bytes = 3;
// ProcessDescriptor / ThreadDescriptor
constexpr unsigned pid = 1, tid = 2, process_name = 6, thread_name = 5;
// InternedData; EventName / EventCategory / DebugAnnotationName
constexpr unsigned event_categories = 1, event_names = 2, debug_annotation_names = 3, iid = 1, iname = 2;
// DebugAnnotation
constexpr unsigned da_name_iid = 1, bool_value = 2, int_value = 4, double_value = 5, string_value = 6;
// ChromeEventBundle (chrome_events): its metadata, each a ChromeMetadata
constexpr unsigned bundle_metadata = 2;
namespace metadata {
constexpr unsigned name = 1, string_value = 2, int_value = 4;
}  // namespace metadata
}  // namespace f

// Sequence 1 carries the track descriptors and the session's counts; each thread's
// events are on a sequence of their own (2 + 2 * ThreadId), where they need no track uuid
// (TrackEventDefaults); with delta timestamps, a second one (3 + 2 * ThreadId) takes the
// begins written after the zones inside them.
constexpr std::uint64_t kGlobalSequence = 1;
// TracePacket.sequence_flags: the first packet of a sequence clears its incremental state
// (interned names, defaults, clocks); every later packet of a thread's sequence says it
// needs that state, as Perfetto's own producers write them (the SDK's track events), so a
// reader that lost the sequence's start skips them rather than misreading them.
constexpr std::uint32_t kIncrementalStateCleared = 1, kNeedsIncrementalState = 2;
// Clocks: the trace's (BOOTTIME in trace_processor's default; ringtrace's CLOCK_MONOTONIC
// nanoseconds are written as they are, as ever), and with delta timestamps two
// sequence-scoped ones defined by a ClockSnapshot at a thread sequence's start: 64 counts
// up by deltas from the sequence's base (the default of the sequence's packets), 65 is
// the nanoseconds since the base (for a packet earlier than the last one, which a delta
// cannot express). Perfetto UI draws every ClockSnapshot as a "Snapshot" marker on a
// "Clock Snapshots" track, so by default there are none: every time is absolute.
constexpr std::uint64_t kTraceClock = 6, kDeltaClock = 64, kSinceBaseClock = 65;
constexpr std::uint64_t kSliceBegin = 1, kSliceEnd = 2, kInstant = 3, kCounter = 4;

// A growable byte buffer without std::string's per-append bookkeeping (terminator,
// capacity checks per byte): the encoder's hottest path is writing varints into it.
class Buffer {
 public:
  std::size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  char* data() { return data_.get(); }
  const char* data() const { return data_.get(); }
  void clear() { size_ = 0; }
  void resize(std::size_t n) {  // shrinking, or growing with unspecified bytes
    reserve(n);
    size_ = n;
  }
  // Room for n more bytes; returns where they go (commit with commit()).
  RINGTRACE_ALWAYS_INLINE char* room(std::size_t n) {
    if (size_ + n > capacity_) [[unlikely]]
      grow(size_ + n);
    return data_.get() + size_;
  }
  RINGTRACE_ALWAYS_INLINE void commit(char* end) { size_ = static_cast<std::size_t>(end - data_.get()); }
  void append(std::string_view s) {
    if (!s.empty()) std::memcpy(room(s.size()), s.data(), s.size());
    size_ += s.size();
  }
  void append(const char* p, std::size_t n) { append(std::string_view(p, n)); }
  RINGTRACE_ALWAYS_INLINE void push_back(char c) { *room(1) = c, ++size_; }
  std::string_view view(std::size_t from = 0) const { return std::string_view(data_.get() + from, size_ - from); }
  void reserve(std::size_t n) {
    if (n > capacity_) grow(n);
  }

 private:
  RINGTRACE_NOINLINE void grow(std::size_t n) {
    const std::size_t capacity = std::max<std::size_t>(n, capacity_ * 2 + 256);
    auto bigger = std::make_unique<char[]>(capacity);
    if (size_ != 0) std::memcpy(bigger.get(), data_.get(), size_);
    data_ = std::move(bigger);
    capacity_ = capacity;
  }
  std::unique_ptr<char[]> data_;
  std::size_t size_ = 0, capacity_ = 0;
};

// Protobuf wire format into a Buffer. A nested message gets a 1-byte length when it
// begins, filled in when it ends; one of 128 bytes or more (rare: long texts, many
// annotations) then moves on to make room for its longer varint.
class Proto {
 public:
  explicit Proto(Buffer& out) : out_(out) {}
  RINGTRACE_ALWAYS_INLINE void varint(std::uint64_t v) { out_.commit(put_varint(out_.room(10), v)); }
  // An unsigned LEB128 varint at p (at most ten bytes); returns its end.
  RINGTRACE_ALWAYS_INLINE static char* put_varint(char* p, std::uint64_t v) {
    for (; v >= 0x80; v >>= 7) *p++ = static_cast<char>(v | 0x80);
    *p++ = static_cast<char>(v);
    return p;
  }
  RINGTRACE_ALWAYS_INLINE void tag(unsigned field, unsigned wire) {
    varint((static_cast<std::uint64_t>(field) << 3) | wire);
  }
  RINGTRACE_ALWAYS_INLINE void uint(unsigned field, std::uint64_t v) {
    tag(field, 0);
    varint(v);
  }
  void sint(unsigned field, std::int64_t v) { uint(field, static_cast<std::uint64_t>(v)); }  // int64: two's complement
  void fixed64(unsigned field, std::uint64_t v) {
    tag(field, 1);
    out_.append(reinterpret_cast<const char*>(&v), 8);
  }
  void dbl(unsigned field, double v) {
    std::uint64_t bits;
    std::memcpy(&bits, &v, 8);
    fixed64(field, bits);
  }
  void bytes(unsigned field, std::string_view s) {
    tag(field, 2);
    varint(s.size());
    out_.append(s);
  }
  // A string field: invalid UTF-8 repaired (protobuf strings must be UTF-8).
  void str(unsigned field, std::string_view s) {
    std::string valid;
    detail::append_valid_utf8(valid, s);
    bytes(field, valid);
  }
  std::size_t begin(unsigned field) {
    tag(field, 2);
    out_.push_back(0);
    return out_.size();
  }
  void end(std::size_t at) {
    const std::size_t n = out_.size() - at;
    if (n < 0x80) [[likely]] {
      out_.data()[at - 1] = static_cast<char>(n);
      return;
    }
    end_long(at, n);
  }

 private:
  RINGTRACE_NOINLINE void end_long(std::size_t at, std::size_t n) {
    std::size_t bytes = 1;
    for (std::size_t v = n; v >= 0x80; v >>= 7) ++bytes;
    out_.room(bytes - 1);  // may move the buffer
    char* body = out_.data() + at;
    std::memmove(body + bytes - 1, body, n);
    char* p = body - 1;
    for (; n >= 0x80; n >>= 7) *p++ = static_cast<char>((n & 0x7F) | 0x80);
    *p = static_cast<char>(n);
    out_.resize(out_.size() + bytes - 1);
  }

 public:
 private:
  Buffer& out_;
};

class PerfettoExporter final : public Exporter {
 public:
  PerfettoExporter(std::string path, PerfettoOptions options)
      : path_(std::move(path)), options_(options), sink_(detail::OutputSink::open_file(path_)) {}
  PerfettoExporter(std::ostream& stream, PerfettoOptions options)
      : stream_(&stream), options_(options), sink_(detail::OutputSink::to_stream(stream, "Perfetto stream")) {}

  ~PerfettoExporter() override {
    try {
      if (sink_ && started_) {
        flush();
        sink_->flush();
      }
    } catch (...) {}
  }

  std::vector<std::filesystem::path> output_paths() const override {
    if (stream_ != nullptr) return {};
    return {path_};
  }

  std::uint64_t output_bytes() const override { return handed_ + out_.size(); }

  void on_start(const TraceContext& context) override {
    handed_ = 0;
    if (runs_++ > 0 && stream_ == nullptr) {
      sink_.reset();
      sink_ = detail::OutputSink::open_file(path_);
    }
    started_ = true;
    run_ = Run{};
    run_.heap = detail::HeapCounter(options_.heap_interval_ns);
    run_.tracker.on_off_cpu([this](const detail::OffCpuInterval& off) { write_off_cpu(off, *context_); });
    out_.clear();
    run_.pid = options_.pid != 0 ? options_.pid : context.process_id();
    if (run_.pid == 0) run_.pid = static_cast<std::uint32_t>(::getpid());
    // The process track, and the global sequence's first packet: incremental state cleared.
    const std::size_t packet = begin_untimed(run_.global);
    Proto p(out_);
    p.uint(f::incremental_state_cleared, 1);
    p.uint(f::sequence_flags, kIncrementalStateCleared);
    const std::size_t track = p.begin(f::track_descriptor);
    p.uint(f::uuid, process_uuid());
    const std::size_t process = p.begin(f::process);
    p.uint(f::pid, run_.pid);
    p.str(f::process_name, context.process_name());
    p.end(process);
    p.end(track);
    end_packet(run_.global, packet);
  }

  void on_events(std::span<const Event> events, const TraceContext& context) override {
    context_ = &context;  // for the off-CPU intervals the tracker hands over
    for (const Event& e : events) {
      switch (e.kind) {
        case EventKind::zone_begin: {
          see_thread(e.thread, context, e.time_ns);
          // An off-CPU interval it ends is written before it (not one made up at a window's start).
          if ((e.flags & EventFlags::opened_at_window_start) == 0) run_.tracker.ran(e.thread, e.time_ns);
          Event begin = e;
          begin.time_ns = begin_boundary(e.thread, e.time_ns);
          run_.tracker.feed(
              begin, [](const detail::ClosedZone&, std::span<const detail::OpenZone>) {},
              static_cast<std::uint32_t>(attached(e.thread).args.size()));
          break;
        }
        case EventKind::zone_end:
          run_.tracker.feed(e, [&](const detail::ClosedZone& zone, std::span<const detail::OpenZone> outer) {
            close_zone(zone, outer, context);
          });
          break;
        case EventKind::instant:
          write_instant(e, context, {});
          break;
        case EventKind::dropped:
          write_instant(e, context, "count");
          break;
        case EventKind::counter:
          write_counter(e, context);
          break;
        case EventKind::arg:
          add_arg(e, context);
          break;
        case EventKind::flow_out:
        case EventKind::flow_in:
          if (run_.tracker.open(e.thread).empty()) {
            ++run_.args_without_zone;
          } else {
            attached(e.thread).flows.push_back(Flow{e.value.u, e.depth, e.kind == EventKind::flow_out});
          }
          break;
        case EventKind::async_begin:
        case EventKind::async_end:
          write_async(e, context);
          break;
        case EventKind::message:
          write_message(e, context);
          break;
        case EventKind::switch_out:
        case EventKind::switch_in:
          // The thread's CPU state: its off-CPU intervals are written as they end
          // (write_off_cpu), its zones get their on-CPU time.
          run_.tracker.feed(e, [](const detail::ClosedZone&, std::span<const detail::OpenZone>) {});
          break;
        case EventKind::alloc:
        case EventKind::free:
          // The zone's bytes (ZoneTracker), and the process's live heap.
          run_.tracker.feed(e, [](const detail::ClosedZone&, std::span<const detail::OpenZone>) {});
          run_.heap.feed(e, thread_pid(e.thread, context),
                         [&](const detail::HeapCounter::Sample& s) { write_heap(s, context); });
          break;
      }
      if (out_.size() >= options_.buffer_bytes) flush();
    }
  }

  void on_flush(const TraceContext& context) override {
    write_renamed_threads(context);
    flush();
    sink_->flush();
  }

  void on_finish(const TraceContext& context, const SessionStats& stats) override {
    context_ = &context;
    run_.tracker.close_open(context.clock().stop_ns,
                            [&](const detail::ClosedZone& zone, std::span<const detail::OpenZone> outer) {
                              close_zone(zone, outer, context);
                            });
    run_.tracker.end_off_cpu(context.clock().stop_ns);  // threads off the CPU at the end
    run_.heap.finish([&](const detail::HeapCounter::Sample& s) { write_heap(s, context); });
    for (ThreadId t = 0; t < context.thread_count(); ++t) {
      if (context.thread(t).id == t)
        see_thread(t, context, context.clock().stop_ns);  // not a folded thread without events
    }
    write_renamed_threads(context);
    // The session's counts, and what whoever fed the stream says about it, as trace
    // metadata (ChromeEventBundle's, which trace_processor puts in its `metadata` table as
    // `cr-<name>` and Perfetto UI lists under "Info and stats"): no track, no slice.
    // No timestamp: trace_processor v20.1 counts a clock_sync_failure for a timed one.
    const std::size_t packet = begin_untimed(run_.global);
    Proto p(out_);
    const std::size_t bundle = p.begin(f::chrome_events);
    const auto count = [&](std::string_view name, std::uint64_t value) {
      metadata(p, std::string("ringtrace_session.").append(name), static_cast<std::int64_t>(value));
    };
    metadata(p, "ringtrace_session.clock", std::string(stats.clock.tsc ? "tsc" : "monotonic"));
    count("clock_start_ns", context.clock().start_ns);
    count("clock_stop_ns", context.clock().stop_ns);
    count("recorded_events", stats.recorded);
    count("dropped_events", stats.dropped);
    count("late_events", stats.late_events);
    count("unbalanced_ends", stats.unbalanced_ends);
    count("closed_at_stop", stats.closed_at_stop);
    count("args_without_zone", run_.args_without_zone);
    if (stats.context_switches != 0 || !stats.context_switches_unavailable.empty()) {
      count("context_switches", stats.context_switches);
      count("context_switches_lost", stats.context_switches_lost);
      if (!stats.context_switches_unavailable.empty()) {
        metadata(p, "ringtrace_session.context_switches_unavailable", stats.context_switches_unavailable);
      }
    }
    for (const TraceMetadata& m : context.metadata()) metadata(p, "ringtrace_metadata." + m.key, m.value);
    p.end(bundle);
    end_packet(run_.global, packet);
    flush();
    sink_->close();
    started_ = false;
  }

 private:
  // One ChromeMetadata entry of a ChromeEventBundle.
  static void metadata(Proto& p, std::string_view name, const std::variant<std::int64_t, std::string>& value) {
    const std::size_t entry = p.begin(f::bundle_metadata);
    p.str(f::metadata::name, name);
    if (const auto* number = std::get_if<std::int64_t>(&value)) {
      p.sint(f::metadata::int_value, *number);
    } else {
      p.str(f::metadata::string_value, std::get<std::string>(value));
    }
    p.end(entry);
  }

  struct Flow {
    std::uint64_t id;
    std::uint32_t depth;
    bool out;
  };
  struct Attached {
    Buffer args;  // encoded DebugAnnotation fields (field 4 of TrackEvent), innermost zone's last
    std::vector<Flow> flows;
  };
  // What a sequence's incremental state holds so far, as written.
  struct Sequence {
    std::uint64_t id = 0;
    bool started = false;                // its first packet (state cleared, defaults, clocks) is out
    std::uint64_t last = 0;              // clock 64's value: the last delta-stamped packet's time
    std::vector<std::uint64_t> defined;  // a bit per iid: defined on this sequence
    Buffer pending;                      // InternedData entries for its next packet
  };
  struct ThreadOut {
    bool described = false;
    std::string name;                            // the name in its last descriptor
    Sequence seq;                                // its events, in the order written
    Sequence back;                               // the begins of zones written after the zones inside them
    std::uint64_t base = 0;                      // its first event's time: where both sequences' clocks start
    std::uint64_t next_begin = 0, next_end = 0;  // the earliest times of its next zone begin and end
  };

  // Track uuids, small so that their varints are short: the process 1, then threads,
  // counter tracks and async tracks interleaved by the low two bits.
  static std::uint64_t process_uuid() { return 1; }
  static std::uint64_t thread_uuid(ThreadId t) { return 4 + std::uint64_t{t} * 4; }
  static std::uint64_t counter_uuid(std::size_t n) { return 5 + std::uint64_t{n} * 4; }
  static std::uint64_t async_uuid(std::size_t n) { return 6 + std::uint64_t{n} * 4; }
  static std::uint64_t other_process_uuid(std::size_t n) { return 7 + std::uint64_t{n} * 4; }

  // The pid a thread's tracks carry: the session's (or PerfettoOptions::pid), or in a
  // stream of several processes (a merged file) the thread's own.
  std::uint32_t thread_pid(ThreadId thread, const TraceContext& context) const {
    const std::uint32_t pid = context.thread(thread).pid;
    return pid == 0 || pid == context.process_id() ? run_.pid : pid;
  }
  // The track of a thread's process; another process's is described the first time.
  std::uint64_t process_track(ThreadId thread, const TraceContext& context) {
    const std::uint32_t pid = thread_pid(thread, context);
    if (pid == run_.pid) return process_uuid();
    for (std::size_t i = 0; i < run_.other_processes.size(); ++i) {
      if (run_.other_processes[i] == pid) return other_process_uuid(i);
    }
    const std::uint64_t uuid = other_process_uuid(run_.other_processes.size());
    run_.other_processes.push_back(pid);
    const std::size_t packet = begin_untimed(run_.global);
    Proto p(out_);
    const std::size_t track = p.begin(f::track_descriptor);
    p.uint(f::uuid, uuid);
    const std::size_t process = p.begin(f::process);
    p.uint(f::pid, pid);
    p.str(f::process_name, context.process_name_of(pid));
    p.end(process);
    p.end(track);
    end_packet(run_.global, packet);
    return uuid;
  }
  // A key's suffix that keeps two processes' tracks of one name apart.
  std::string process_key(ThreadId thread, const TraceContext& context) const {
    const std::uint32_t pid = thread_pid(thread, context);
    std::string key;
    if (pid != run_.pid) key.append(1, '\x02').append(std::to_string(pid));
    return key;
  }

  Attached& attached(ThreadId thread) {
    if (thread >= run_.attached.size()) run_.attached.resize(thread + 1);
    return run_.attached[thread];
  }

  // A thread's sequence, begun at its first timed packet: incremental state cleared,
  // the thread's track as every event's default, and the clocks: 64 (deltas, the
  // default) and 65 (since the base) both at the thread's first event time.
  Sequence& sequence(ThreadId thread, bool back = false) {
    Sequence& s = back ? run_.threads[thread].back : run_.threads[thread].seq;
    if (!s.started) [[unlikely]]
      start_sequence(thread, s, back);
    return s;
  }
  RINGTRACE_NOINLINE void start_sequence(ThreadId thread, Sequence& s, bool back) {
    s.id = 2 + 2 * std::uint64_t{thread} + (back ? 1 : 0);
    s.started = true;
    const std::uint64_t base = run_.threads[thread].base;
    s.last = base;
    Proto p(out_);
    const std::size_t packet = p.begin(f::trace_packet);
    p.uint(f::sequence_id, s.id);
    p.uint(f::incremental_state_cleared, 1);
    p.uint(f::sequence_flags, kIncrementalStateCleared);
    const std::size_t defaults = p.begin(f::trace_packet_defaults);
    if (options_.delta_timestamps) p.uint(f::timestamp_clock_id, kDeltaClock);
    const std::size_t track_defaults = p.begin(f::track_event_defaults);
    p.uint(f::track_uuid, thread_uuid(thread));
    p.end(track_defaults);
    p.end(defaults);
    if (!options_.delta_timestamps) {  // times on the trace clock: nothing to define
      p.end(packet);
      return;
    }
    const std::size_t snapshot = p.begin(f::clock_snapshot);
    for (const auto& [clock, value, incremental] :
         {std::tuple{kDeltaClock, base, true}, std::tuple{kSinceBaseClock, std::uint64_t{0}, false},
          std::tuple{kTraceClock, base, false}}) {
      const std::size_t c = p.begin(f::clocks);
      p.uint(f::clock_id, clock);
      p.uint(f::clock_timestamp, value);
      if (incremental) p.uint(f::is_incremental, 1);
      p.end(c);
    }
    p.end(snapshot);
    p.end(packet);
  }

  // A TracePacket (field 1 of Trace) at time_ns on one of a thread's two sequences,
  // returned in `on`: on the main one, the delta from its last packet; a time before
  // that (the begin of a zone, written after the zones inside it) on the second one, the
  // delta from its own last packet; a time before both (a zone begun before its outer
  // one's begin was written) on the main one with clock 65, the time since the base.
  std::size_t begin_packet(ThreadId thread, std::uint64_t time_ns, Sequence*& on) {
    Sequence* s = &sequence(thread);
    if (!options_.delta_timestamps) {  // the time itself, on the trace clock
      Proto p(out_);
      const std::size_t at = p.begin(f::trace_packet);
      p.uint(f::timestamp, time_ns);
      p.uint(f::sequence_id, s->id);
      p.uint(f::sequence_flags, kNeedsIncrementalState);
      on = s;
      return at;
    }
    const std::uint64_t base = run_.threads[thread].base;
    std::uint64_t clock = kDeltaClock;
    if (time_ns < s->last) [[unlikely]] {
      Sequence& back = sequence(thread, true);
      if (time_ns >= back.last) {
        s = &back;
      } else {
        clock = time_ns >= base ? kSinceBaseClock : kTraceClock;
      }
    }
    Proto p(out_);
    const std::size_t at = p.begin(f::trace_packet);
    if (clock == kDeltaClock) [[likely]] {
      p.uint(f::timestamp, time_ns - s->last);
      s->last = time_ns;
    } else {
      p.uint(f::timestamp, clock == kSinceBaseClock ? time_ns - base : time_ns);
      p.uint(f::timestamp_clock_id, clock);
    }
    p.uint(f::sequence_id, s->id);
    p.uint(f::sequence_flags, kNeedsIncrementalState);
    on = s;
    return at;
  }
  // A packet without a time (descriptors, definitions).
  std::size_t begin_untimed(Sequence& s) {
    Proto p(out_);
    const std::size_t at = p.begin(f::trace_packet);
    p.uint(f::sequence_id, s.id);
    return at;
  }
  void end_packet(Sequence& s, std::size_t at) {
    if (!s.pending.empty()) [[unlikely]] {
      // Names this packet is the first on its sequence to use: its own InternedData.
      Proto p(out_);
      p.bytes(f::interned_data, s.pending.view());
      s.pending.clear();
    }
    Proto(out_).end(at);
  }

  // A name's iid (one number on every sequence); its definition goes into the next
  // packet of `s` the first time s uses it.
  std::uint64_t intern(Sequence& s, std::unordered_map<std::string, std::uint64_t>& table, unsigned field,
                       std::string_view text) {
    const auto it = table.find(std::string(text));
    if (it != table.end()) return use(s, it->second);
    const std::uint64_t iid = run_.next_iid++;
    table.emplace(std::string(text), iid);
    Buffer entry_bytes;
    Proto p(entry_bytes);
    const std::size_t entry = p.begin(field);
    p.uint(f::iid, iid);
    p.str(f::iname, text);
    p.end(entry);
    run_.definitions.emplace_back(entry_bytes.view());
    return use(s, iid);
  }
  std::uint64_t use(Sequence& s, std::uint64_t iid) {
    const std::size_t word = iid >> 6;
    if (word >= s.defined.size()) [[unlikely]]
      s.defined.resize(word + 1, 0);
    const std::uint64_t bit = std::uint64_t{1} << (iid & 63);
    if ((s.defined[word] & bit) == 0) [[unlikely]] {
      s.defined[word] |= bit;
      s.pending.append(run_.definitions[iid]);
    }
    return iid;
  }
  std::uint64_t site_name_iid(Sequence& s, SiteId site, const TraceContext& context) {
    if (site >= run_.site_iids.size()) run_.site_iids.resize(context.site_count(), 0);
    if (run_.site_iids[site] == 0)
      return run_.site_iids[site] = intern(s, run_.name_iids, f::event_names, context.site(site).name);
    return use(s, run_.site_iids[site]);
  }
  // "region" or the site's category, interned once per site; 0 for a zone without a
  // category, which carries none here (two bytes a zone; the Chrome trace, whose events
  // have a "cat" by convention, says "zone").
  std::uint64_t site_category_iid(Sequence& s, SiteId site, bool region, const TraceContext& context) {
    constexpr std::uint64_t kNone = ~std::uint64_t{0};
    if (site >= run_.site_categories.size()) run_.site_categories.resize(context.site_count(), 0);
    std::uint64_t& iid = run_.site_categories[site];
    if (iid == 0) [[unlikely]] {
      const SiteInfo& info = context.site(site);
      if (!region && (info.category == nullptr || info.category[0] == '\0')) {
        iid = kNone;
        return 0;
      }
      return iid = category_iid(s, region ? std::string_view("region") : std::string_view(info.category));
    }
    return iid == kNone ? 0 : use(s, iid);
  }
  // An arg's key, interned once per site.
  std::uint64_t site_key_iid(Sequence& s, SiteId site, const TraceContext& context) {
    if (site >= run_.site_keys.size()) run_.site_keys.resize(context.site_count(), 0);
    std::uint64_t& iid = run_.site_keys[site];
    if (iid == 0) return iid = intern(s, run_.key_iids, f::debug_annotation_names, context.site(site).name);
    return use(s, iid);
  }
  std::uint64_t category_iid(Sequence& s, std::string_view category) {
    return intern(s, run_.category_iids, f::event_categories, category);
  }

  void annotate_uint(Sequence& s, Proto& p, std::string_view key, std::uint64_t v) {
    const std::size_t a = p.begin(f::debug_annotations);
    p.uint(f::da_name_iid, intern(s, run_.key_iids, f::debug_annotation_names, key));
    p.uint(f::int_value, v);
    p.end(a);
  }

  // A thread's first sight: its track described; its sequences' base is its first event
  // time (events of a thread come in time order).
  void see_thread(ThreadId thread, const TraceContext& context, std::uint64_t time_ns) {
    if (thread >= run_.threads.size()) run_.threads.resize(thread + 1);
    ThreadOut& out = run_.threads[thread];
    if (!out.described) [[unlikely]] {
      out.base = time_ns;
      describe_thread(thread, context);
    }
  }
  void describe_thread(ThreadId thread, const TraceContext& context) {
    const ThreadInfo& info = context.thread(thread);
    ThreadOut& out = run_.threads[thread];
    out.described = true;
    out.name = info.name.empty() ? "thread " + std::to_string(info.os_tid) : info.name;
    const std::uint64_t parent = process_track(thread, context);
    const std::size_t packet = begin_untimed(run_.global);
    Proto p(out_);
    const std::size_t track = p.begin(f::track_descriptor);
    p.uint(f::uuid, thread_uuid(thread));
    p.uint(f::parent_uuid, parent);
    const std::size_t td = p.begin(f::thread);
    p.uint(f::pid, thread_pid(thread, context));
    p.uint(f::tid, info.os_tid);
    p.str(f::thread_name, out.name);
    p.end(td);
    p.end(track);
    end_packet(run_.global, packet);
  }
  void write_renamed_threads(const TraceContext& context) {
    for (ThreadId t = 0; t < run_.threads.size(); ++t) {
      if (!run_.threads[t].described) continue;
      const ThreadInfo& info = context.thread(t);
      if (info.id != t) continue;  // folded: described at its first event
      if (!info.name.empty() && info.name != run_.threads[t].name) describe_thread(t, context);
    }
  }

  // trace_processor orders the events of one time as it likes, and a slice's end closes
  // whichever slice is innermost then. So a zone's begin comes at least 1 ns after the
  // thread's previous begin or end (else it could nest the wrong way, or open inside the
  // zone that ended then), and an end at least 1 ns after the previous begin; ends may
  // share a time. A boundary that would break this (a coarse clock in a stream built by
  // hand or converted from elsewhere; live sessions never have one, the drainer keeps
  // them apart) moves that much later.
  std::uint64_t begin_boundary(ThreadId thread, std::uint64_t time_ns) {
    ThreadOut& t = run_.threads[thread];
    if (time_ns < t.next_begin) [[unlikely]]
      time_ns = t.next_begin;
    t.next_begin = t.next_end = time_ns + 1;
    return time_ns;
  }
  void close_zone(const detail::ClosedZone& zone, std::span<const detail::OpenZone>, const TraceContext& context) {
    ThreadOut& t = run_.threads[zone.thread];
    if (zone.end_ns < t.next_end) [[unlikely]] {
      detail::ClosedZone z = zone;
      z.end_ns = t.next_end;
      t.next_begin = z.end_ns + 1;
      write_zone(z, context);
      return;
    }
    t.next_begin = zone.end_ns + 1;
    t.next_end = zone.end_ns;
    write_zone(zone, context);
  }

  // A zone's begin and end packets, on its thread's sequence, whose defaults give them
  // the thread's track.
  void write_zone(const detail::ClosedZone& zone, const TraceContext& context) {
    Attached& a = attached(zone.thread);
    const std::string_view args = zone.tag < a.args.size() ? a.args.view(zone.tag) : std::string_view{};
    const bool region = (zone.flags & EventFlags::region) != 0;
    Sequence* on = nullptr;
    std::size_t packet = begin_packet(zone.thread, zone.begin_ns, on);
    Sequence& s = *on;
    const bool step = run_.steps.is_step(zone.site, context);
    const std::uint64_t name = step ? 0 : site_name_iid(s, zone.site, context);
    const std::uint64_t category = site_category_iid(s, zone.site, region, context);
    Proto p(out_);
    std::size_t event = p.begin(f::track_event);
    p.uint(f::type, kSliceBegin);
    if (step) [[unlikely]] {
      p.str(f::event_name, detail::step_zone_label(zone.value));  // "step #N", not interned: one per step
    } else {
      p.uint(f::name_iid, name);
    }
    if (category != 0) p.uint(f::category_iids, category);
    out_.append(args);
    if (region) {
      const std::size_t d = p.begin(f::debug_annotations);
      p.uint(f::da_name_iid, intern(s, run_.key_iids, f::debug_annotation_names, "region_id"));
      p.sint(f::int_value, zone.value);
      p.end(d);
    }
    if (zone.on_cpu_known) annotate_uint(s, p, "on_cpu_ns", zone.on_cpu_ns());  // Config::context_switches
    if (zone.memory.allocations != 0) {  // Config::memory: in the zone and its children
      annotate_uint(s, p, "alloc_bytes", zone.memory.allocated_bytes);
      annotate_uint(s, p, "allocs", zone.memory.allocations);
    }
    for (const auto& [flag, key] : {std::pair{EventFlags::closed_at_stop, "closed_at_stop"},
                                    std::pair{EventFlags::closed_at_window_end, "closed_at_window_end"},
                                    std::pair{EventFlags::opened_at_window_start, "opened_at_window_start"}}) {
      if ((zone.flags & flag) == 0) continue;
      const std::size_t d = p.begin(f::debug_annotations);
      p.uint(f::da_name_iid, intern(s, run_.key_iids, f::debug_annotation_names, key));
      p.uint(f::bool_value, 1);
      p.end(d);
    }
    // Flows: the old uint64 fields (trace_processor before 2022 reads only those) and
    // the fixed64 ones documented today.
    while (!a.flows.empty() && a.flows.back().depth == zone.depth + 1) {
      const Flow flow = a.flows.back();
      a.flows.pop_back();
      p.uint(flow.out ? f::flow_ids_old : f::terminating_flow_ids_old, flow.id);
      p.fixed64(flow.out ? f::flow_ids : f::terminating_flow_ids, flow.id);
    }
    p.end(event);
    end_packet(s, packet);
    if (zone.tag < a.args.size()) a.args.resize(zone.tag);
    if (write_end_fast(zone.thread, zone.end_ns)) [[likely]]
      return;
    packet = begin_packet(zone.thread, zone.end_ns, on);
    event = p.begin(f::track_event);
    p.uint(f::type, kSliceEnd);
    p.end(event);
    end_packet(*on, packet);
  }

  // An interval the thread spent off the CPU, as a slice on its track, named by why
  // ("off-CPU (preempted)": runnable, waiting for a CPU; "off-CPU (blocked)": sleep,
  // lock, I/O), category "ringtrace.sched": it lies between two zone boundaries of the
  // thread (ZoneTracker), so it nests in the zone that waited. Its begin and end keep
  // the thread's boundary rules (begin_boundary).
  void write_off_cpu(const detail::OffCpuInterval& off, const TraceContext& context) {
    see_thread(off.thread, context, off.begin_ns);
    ThreadOut& t = run_.threads[off.thread];
    const std::uint64_t begin = std::max(off.begin_ns, t.next_begin);
    if (off.end_ns <= begin) return;
    t.next_begin = off.end_ns + 1;
    t.next_end = off.end_ns;
    Sequence* on = nullptr;
    std::size_t packet = begin_packet(off.thread, begin, on);
    Sequence& s = *on;
    const std::uint64_t name =
        intern(s, run_.name_iids, f::event_names, off.preempted ? "off-CPU (preempted)" : "off-CPU (blocked)");
    const std::uint64_t category = category_iid(s, "ringtrace.sched");
    Proto p(out_);
    std::size_t event = p.begin(f::track_event);
    p.uint(f::type, kSliceBegin);
    p.uint(f::name_iid, name);
    p.uint(f::category_iids, category);
    p.end(event);
    end_packet(s, packet);
    if (write_end_fast(off.thread, off.end_ns)) return;
    packet = begin_packet(off.thread, off.end_ns, on);
    event = p.begin(f::track_event);
    p.uint(f::type, kSliceEnd);
    p.end(event);
    end_packet(*on, packet);
  }

  // The end packet of a zone, the most common packet, written with one check of room:
  // when nothing is pending to be defined on the thread's main sequence and its time is
  // absolute or a delta there (else false: the general path writes it). The same bytes
  // as the general path: packet {timestamp, sequence_id, sequence_flags, track_event {type}}.
  bool write_end_fast(ThreadId thread, std::uint64_t time_ns) {
    Sequence& s = sequence(thread);
    const bool delta = options_.delta_timestamps;
    if ((delta && time_ns < s.last) || !s.pending.empty()) [[unlikely]]
      return false;
    static_assert(f::trace_packet < 16 && f::timestamp < 16 && f::sequence_id < 16 && f::sequence_flags < 16 &&
                      f::track_event < 16 && f::type < 16 && kSliceEnd < 128 && kNeedsIncrementalState < 128,
                  "one-byte tags");
    char* const start = out_.room(48);  // tags, two varints of 10 bytes at most, the flags, the event
    char* p = start;
    *p++ = static_cast<char>(f::trace_packet << 3 | 2);
    char* const length = p++;
    *p++ = static_cast<char>(f::timestamp << 3);
    p = put_varint(p, delta ? time_ns - s.last : time_ns);
    if (delta) s.last = time_ns;
    *p++ = static_cast<char>(f::sequence_id << 3);
    p = put_varint(p, s.id);
    *p++ = static_cast<char>(f::sequence_flags << 3);
    *p++ = static_cast<char>(kNeedsIncrementalState);
    *p++ = static_cast<char>(f::track_event << 3 | 2);
    *p++ = 2;
    *p++ = static_cast<char>(f::type << 3);
    *p++ = static_cast<char>(kSliceEnd);
    *length = static_cast<char>(p - length - 1);  // under 128 bytes
    out_.commit(p);
    return true;
  }
  static char* put_varint(char* p, std::uint64_t v) { return Proto::put_varint(p, v); }

  // A value or text on the innermost open zone: encoded now as a DebugAnnotation.
  void add_arg(const Event& e, const TraceContext& context) {
    if (run_.tracker.open(e.thread).empty()) {
      ++run_.args_without_zone;
      return;
    }
    Buffer& out = attached(e.thread).args;
    if (out.size() > (std::size_t{1} << 20)) return;  // bounded, as the Chrome exporter
    // Interned key names go into the next packet of the thread's sequence; the
    // annotation keeps the iid. Packets are written at the zone's end, after any
    // definition: the key's definition may end up in an earlier packet of the sequence,
    // which is what incremental state allows.
    // With delta timestamps, defined on both of the thread's sequences: the zone's begin
    // may go on either.
    Sequence& s = sequence(e.thread);
    const std::string_view key = context.site(e.site).name;
    const std::uint64_t key_iid = use_on_back(e.thread, site_key_iid(s, e.site, context));
    Proto p(out);
    const std::size_t d = p.begin(f::debug_annotations);
    p.uint(f::da_name_iid, key_iid);
    if ((e.flags & EventFlags::text) != 0) {
      p.str(f::string_value, context.text(e));
    } else if ((e.flags & EventFlags::value_double) != 0) {
      p.dbl(f::double_value, e.value.d);
    } else {
      p.sint(f::int_value, e.value.i);
    }
    p.end(d);
    if ((e.flags & EventFlags::truncated) != 0) {
      const std::size_t t = p.begin(f::debug_annotations);
      p.uint(f::da_name_iid, use_on_back(e.thread, intern(s, run_.key_iids, f::debug_annotation_names,
                                                          std::string(key) + ".truncated")));
      p.uint(f::bool_value, 1);
      p.end(t);
    }
  }

  // An iid defined on a thread's second sequence too, when it has one (delta timestamps).
  std::uint64_t use_on_back(ThreadId thread, std::uint64_t iid) {
    return options_.delta_timestamps ? use(sequence(thread, true), iid) : iid;
  }

  void write_instant(const Event& e, const TraceContext& context, std::string_view count_key) {
    see_thread(e.thread, context, e.time_ns);
    Sequence* on = nullptr;
    const std::size_t packet = begin_packet(e.thread, e.time_ns, on);
    Sequence& s = *on;
    Proto p(out_);
    const std::size_t event = p.begin(f::track_event);
    p.uint(f::type, kInstant);
    p.uint(f::name_iid, site_name_iid(s, e.site, context));
    // The Chrome trace's categories: "instant", "ringtrace" for a count of dropped events.
    p.uint(f::category_iids, category_iid(s, count_key.empty() ? "instant" : "ringtrace"));
    if (!count_key.empty()) annotate_uint(s, p, count_key, e.value.u);
    p.end(event);
    end_packet(s, packet);
  }

  // A message (RINGTRACE_MESSAGE): an instant on the thread's track named by its text (a
  // name of its own, not interned: messages rarely repeat), category "message", the text
  // again as the annotation "message" (and "truncated" when it was cut at recording).
  void write_message(const Event& e, const TraceContext& context) {
    see_thread(e.thread, context, e.time_ns);
    Sequence* on = nullptr;
    const std::size_t packet = begin_packet(e.thread, e.time_ns, on);
    Sequence& s = *on;
    const std::string_view text = context.text(e);  // Proto::str repairs invalid UTF-8
    Proto p(out_);
    const std::size_t event = p.begin(f::track_event);
    p.uint(f::type, kInstant);
    p.str(f::event_name, text);
    p.uint(f::category_iids, category_iid(s, "message"));
    const std::size_t a = p.begin(f::debug_annotations);
    p.uint(f::da_name_iid, intern(s, run_.key_iids, f::debug_annotation_names, "message"));
    p.str(f::string_value, text);
    p.end(a);
    if ((e.flags & EventFlags::truncated) != 0) annotate_uint(s, p, "truncated", 1);
    p.end(event);
    end_packet(s, packet);
  }

  std::uint64_t counter_track(const Event& e, const TraceContext& context) {
    const SiteInfo& site = context.site(e.site);
    const bool per_thread = options_.per_thread_counters || (site.options & SiteOptions::per_thread_track) != 0;
    // One track per name (process-wide) or per name and thread.
    std::string key = site.name;
    if (per_thread)
      key.append("\x01").append(std::to_string(e.thread));
    else
      key.append(process_key(e.thread, context));
    const auto it = run_.counter_tracks.find(key);
    if (it != run_.counter_tracks.end()) return it->second;
    const std::uint64_t uuid = counter_uuid(run_.counter_tracks.size());
    run_.counter_tracks.emplace(key, uuid);
    const std::uint64_t parent = per_thread ? thread_uuid(e.thread) : process_track(e.thread, context);
    const std::size_t packet = begin_untimed(run_.global);
    Proto p(out_);
    const std::size_t track = p.begin(f::track_descriptor);
    p.uint(f::uuid, uuid);
    p.uint(f::parent_uuid, parent);
    std::string name = site.name;
    if (per_thread) name.append(" (tid ").append(std::to_string(context.thread(e.thread).os_tid)).append(")");
    p.str(f::name, name);
    const std::size_t counter = p.begin(f::counter);
    p.end(counter);
    p.end(track);
    end_packet(run_.global, packet);
    return uuid;
  }

  // A counter track's sample at `time` on `thread`'s sequence: `value(p)` writes its value.
  template <class Value>
  void write_counter_sample(ThreadId thread, std::uint64_t time, std::uint64_t track, Value&& value) {
    Sequence* on = nullptr;
    const std::size_t packet = begin_packet(thread, time, on);
    Proto p(out_);
    const std::size_t event = p.begin(f::track_event);
    p.uint(f::type, kCounter);
    p.uint(f::track_uuid, track);
    value(p);
    p.end(event);
    end_packet(*on, packet);
  }

  void write_counter(const Event& e, const TraceContext& context) {
    see_thread(e.thread, context, e.time_ns);
    write_counter_sample(e.thread, e.time_ns, counter_track(e, context), [&](Proto& p) {
      if ((e.flags & EventFlags::value_double) != 0) {
        p.dbl(f::double_counter_value, e.value.d);
      } else {
        p.sint(f::counter_value, e.value.i);
      }
    });
  }

  // The live heap's counter track of a thread's process (Config::memory), described the
  // first time: "ringtrace: heap (bytes)", unit bytes.
  std::uint64_t heap_track(ThreadId thread, const TraceContext& context) {
    const std::string key = std::string("\x03heap") + process_key(thread, context);
    const auto it = run_.counter_tracks.find(key);
    if (it != run_.counter_tracks.end()) return it->second;
    const std::uint64_t uuid = counter_uuid(run_.counter_tracks.size());
    run_.counter_tracks.emplace(key, uuid);
    const std::uint64_t parent = process_track(thread, context);
    const std::size_t packet = begin_untimed(run_.global);
    Proto p(out_);
    const std::size_t track = p.begin(f::track_descriptor);
    p.uint(f::uuid, uuid);
    p.uint(f::parent_uuid, parent);
    p.str(f::name, "ringtrace: heap (bytes)");
    const std::size_t counter = p.begin(f::counter);
    p.uint(f::counter_unit, f::unit_size_bytes);
    p.end(counter);
    p.end(track);
    end_packet(run_.global, packet);
    return uuid;
  }

  // A sample of the live heap (heap_counter.hpp says which are written), on the sequence
  // of the thread whose event brought the heap to it.
  void write_heap(const detail::HeapCounter::Sample& sample, const TraceContext& context) {
    see_thread(sample.thread, context, sample.time_ns);
    write_counter_sample(sample.thread, sample.time_ns, heap_track(sample.thread, context),
                         [&](Proto& p) { p.sint(f::counter_value, static_cast<std::int64_t>(sample.bytes)); });
  }

  // Async spans: a track per span name and id (its begin and end may be on different
  // threads), under the process.
  void write_async(const Event& e, const TraceContext& context) {
    const std::string_view name = context.site(e.site).name;
    std::string key(name);
    key.append("\x01").append(std::to_string(e.value.u)).append(process_key(e.thread, context));
    auto it = run_.async_tracks.find(key);
    if (it == run_.async_tracks.end()) {
      const std::uint64_t parent = process_track(e.thread, context);
      const std::uint64_t uuid = async_uuid(run_.async_tracks.size());
      it = run_.async_tracks.emplace(key, uuid).first;
      const std::size_t packet = begin_untimed(run_.global);
      Proto p(out_);
      const std::size_t track = p.begin(f::track_descriptor);
      p.uint(f::uuid, uuid);
      p.uint(f::parent_uuid, parent);
      p.str(f::name, name);
      p.end(track);
      end_packet(run_.global, packet);
    }
    see_thread(e.thread, context, e.time_ns);
    Sequence* on = nullptr;
    const std::size_t packet = begin_packet(e.thread, e.time_ns, on);
    Sequence& s = *on;
    Proto p(out_);
    const std::size_t event = p.begin(f::track_event);
    p.uint(f::type, e.kind == EventKind::async_begin ? kSliceBegin : kSliceEnd);
    p.uint(f::track_uuid, it->second);
    if (e.kind == EventKind::async_begin) {
      p.uint(f::name_iid, site_name_iid(s, e.site, context));
      p.uint(f::category_iids, category_iid(s, "async"));
      if ((e.flags & EventFlags::opened_at_window_start) != 0) {
        const std::size_t d = p.begin(f::debug_annotations);
        p.uint(f::da_name_iid, intern(s, run_.key_iids, f::debug_annotation_names, "opened_at_window_start"));
        p.uint(f::bool_value, 1);
        p.end(d);
      }
    }
    p.end(event);
    end_packet(s, packet);
  }

  void flush() {
    if (out_.empty()) return;
    sink_->write(out_.view());
    handed_ += out_.size();
    out_.clear();
  }

  std::string path_;
  std::ostream* stream_ = nullptr;
  PerfettoOptions options_;
  std::unique_ptr<detail::OutputSink> sink_;
  std::uint64_t runs_ = 0;
  bool started_ = false;
  Buffer out_;
  std::uint64_t handed_ = 0;  // bytes of this run given to the sink
  // Everything a run adds to, made afresh by one assignment at on_start: nothing of a run
  // reaches the next (site and thread ids, iids and sequences are a run's own).
  struct Run {
    detail::ZoneTracker tracker;
    std::uint32_t pid = 0;
    Sequence global = {kGlobalSequence, true, 0, {}, {}};  // sequence 1: descriptors, the session's counts
    std::vector<std::string> definitions = std::vector<std::string>(1);  // by iid: its encoded InternedData entry
    std::vector<std::uint64_t> site_iids, site_categories, site_keys;
    detail::StepSites steps;  // Session::step()'s zones (named "step #N" one by one)
    std::unordered_map<std::string, std::uint64_t> name_iids, category_iids, key_iids;
    std::uint64_t next_iid = 1;
    std::vector<ThreadOut> threads;
    std::unordered_map<std::string, std::uint64_t> counter_tracks, async_tracks;
    std::vector<Attached> attached;
    std::vector<std::uint32_t> other_processes;  // pids of other_process_uuid(0, 1, ...)
    std::uint64_t args_without_zone = 0;
    detail::HeapCounter heap;  // the processes' live heaps (Config::memory)
  };
  Run run_;
  const TraceContext* context_ = nullptr;  // the context of the call being served
};

}  // namespace

std::shared_ptr<Exporter> perfetto_exporter(const std::filesystem::path& path, PerfettoOptions options) {
  return std::make_shared<PerfettoExporter>(path.string(), options);
}

std::shared_ptr<Exporter> perfetto_exporter(std::ostream& stream, PerfettoOptions options) {
  return std::make_shared<PerfettoExporter>(stream, options);
}

}  // namespace ringtrace
