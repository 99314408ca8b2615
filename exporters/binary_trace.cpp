// Binary trace file writer: a RawSink (include/ringtrace/detail/raw_sink.hpp) that
// appends each thread's records as its ring held them, framed with the tables needed to
// read them. Per record it only looks at the header word, to write a call site's
// description the first time its address appears; no decoding, no merging, no
// formatting. Layout: exporters/common/trace_file_format.hpp, docs/file-format.md.
#include "ringtrace/exporters/binary_trace.hpp"

#include <unistd.h>  // getpid, gethostname

#include <algorithm>
#include <cstring>
#include <ctime>  // clock_gettime
#include <stdexcept>
#include <string>
#include <vector>

#include "common/output.hpp"             // OutputSink
#include "common/trace_file_format.hpp"  // frames
#include "common/u64_map.hpp"            // addresses seen
#include "ringtrace/detail/raw_sink.hpp"
#include "ringtrace/site.hpp"

namespace ringtrace {
namespace {

namespace tf = detail::trace_file;
using detail::Record;

class BinaryTraceExporter final : public Exporter, public detail::RawSink {
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
    } catch (...) {
    }
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
    raw_started_ = false;
    stream_started_ = false;
    stream_last_ = 0;
    stream_threads_.clear();
    stream_sites_.clear();
    sites_.clear();
    last_site_ = last_index_ = 0;
    site_count_ = 0;
    buffer_.clear();
    buffer_.reserve(options_.buffer_bytes + 4096);
    buffer_.append(tf::kMagic, sizeof tf::kMagic);
    tf::put_u32(buffer_, tf::kVersion);
    tf::put_u32(buffer_, tf::kFlagChecksum2);
    process_name_ = context.process_name();
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
    tf::put_u8(p, 0);
    tf::put_u8(p, 0);
    tf::put_u8(p, 0);
    tf::put_f64(p, info.ticks_per_second);
    tf::put_u64(p, info.start_ns);
    tf::put_u64(p, info.realtime_anchor_ns);
    tf::put_u64(p, info.monotonic_anchor_ns);
    tf::put_u64(p, info.merge_grace_ns);
    tf::put_u64(p, info.ring_records);
    tf::put_str(p, process_name_);
    char host[256] = {};
    if (::gethostname(host, sizeof host - 1) != 0) host[0] = '\0';
    tf::put_str(p, host);
    tf::put_u64(p, info.boundary_gap_ticks);
    end_frame();
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

  // Encodes the records into packed chunks (docs/file-format.md): a varint header
  // (kind, "no time", the call site's index), the time as a varint delta from the
  // thread's previous record, then the payload. A zone's begin or end takes 2 to 4 bytes
  // instead of the ring's 16: on this machine, writing new file pages costs far more per
  // byte than encoding them, so fewer bytes is what makes recording cheap.
  std::uint64_t on_raw_records(ThreadId thread, std::span<const Record> first,
                               std::span<const Record> second) override {
    std::uint64_t events = 0;
    const std::size_t n = first.size() + second.size();
    const auto at = [&](std::size_t i) -> const Record& {
      return i < first.size() ? first[i] : second[i - first.size()];
    };
    std::size_t i = 0;
    while (i < n) {
      // One chunk: about kChunkBytes of packed records at most; its first time is a
      // delta from 0, so that every chunk decodes on its own. The common records are
      // written through a raw pointer into room made beforehand (one packs into at most
      // 30 bytes), so that the loop checks no capacity of its own. A record whose call
      // site is new, or a text, ends the chunk and is handled on its own.
      begin_chunk(thread);
      const std::size_t start = buffer_.size();
      std::uint64_t last = 0;
      std::uint64_t new_site = 0;
      bool stopped = false;  // at a text or a new call site
      std::size_t used = start;
      // The chunk grows in steps of room for kStepRecords records (30 bytes each at
      // most), which stay in the core's cache: room for a whole pass at once (up to a
      // megabyte, zero-filled by std::string and then written over) cost more than the
      // packing itself.
      while (!stopped && i < n && used - start < kChunkBytes) {
        const std::size_t step = std::min(kStepRecords, n - i);
        buffer_.resize(used + step * kMaxPackedRecord);
        char* p = buffer_.data() + used;
        const std::size_t end = i + step;
        while (i < end) {
          const Record& r = at(i);
          const std::uint64_t kind = r.word & detail::record_kind_mask;
          if (kind == detail::record_text) [[unlikely]] {
            stopped = true;
            break;
          }
          std::uint64_t index = 0;
          if (kind != detail::record_dropped) {
            const std::uint64_t site = r.word & ~detail::record_kind_mask;
            if (site == last_site_) [[likely]] {  // a zone's begin and end, a loop's records
              index = last_index_;
            } else {
              index = sites_.find(site, 0);
              if (index == 0) [[unlikely]] {
                new_site = site;
                stopped = true;
                break;
              }
              last_site_ = site;
              last_index_ = index;
            }
            ++events;
          }
          const bool no_time = r.ticks == 0;
          p = tf::put_varint(p, kind | (no_time ? 8u : 0u) | (index << 4));
          if (!no_time) {
            p = tf::put_varint(p, tf::zigzag(static_cast<std::int64_t>(r.ticks - last)));
            last = r.ticks;
          }
          if (kind <= detail::record_instant) {
            i += 1;
            continue;
          }
          const std::uint64_t payload = at(i + 1).ticks;
          if (kind == detail::record_value_double) {
            std::memcpy(p, &payload, 8);
            p += 8;
          } else {  // integer values, region ids, drop counts
            p = tf::put_varint(p, tf::zigzag(static_cast<std::int64_t>(payload)));
          }
          i += 2;
        }
        used = static_cast<std::size_t>(p - buffer_.data());
      }
      char* const base = buffer_.data();
      char* const p = base + used;
      if (p == base + start) {
        buffer_.resize(frame_at_);  // nothing in it: no frame
      } else {
        buffer_.resize(static_cast<std::size_t>(p - base));
        end_frame();
      }
      if (new_site != 0) {
        describe_site(new_site);
      } else if (i < n && (at(i).word & detail::record_kind_mask) == detail::record_text) {
        i = write_text(thread, at, i, events);
      }
    }
    return events;
  }

  void on_raw_pass(std::uint64_t complete_ticks) override {
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
    tf::put_u32(buffer_, 0);  // checksum, set by end_frame
    tf::put_u32(buffer_, 0);
    return buffer_;
  }
  void end_frame() {
    const std::size_t payload = frame_at_ + tf::kFrameHeaderBytes;
    const auto bytes = static_cast<std::uint32_t>(buffer_.size() - payload);
    const std::uint32_t sum = tf::checksum(buffer_.data() + payload, bytes);
    std::memcpy(buffer_.data() + frame_at_ + 4, &bytes, 4);
    std::memcpy(buffer_.data() + frame_at_ + 8, &sum, 4);
    if (buffer_.size() >= options_.buffer_bytes) write_buffer();
  }

  static constexpr std::size_t kChunkBytes = std::size_t{1} << 20;
  static constexpr std::size_t kMaxPackedRecord = 30;  // three varints of 10 bytes at most
  static constexpr std::size_t kStepRecords = 2048;

  void begin_chunk(ThreadId thread) {
    begin_frame(tf::frame_chunk);
    tf::put_u32(buffer_, thread);
    tf::put_u32(buffer_, tf::kPackedRecords);
  }
  void put_varint(std::uint64_t v) {
    char bytes[10];
    buffer_.append(bytes, static_cast<std::size_t>(tf::put_varint(bytes, v) - bytes));
  }

  // A text record (its site described first if new), as a chunk of its own.
  template <typename At>
  RINGTRACE_NOINLINE std::size_t write_text(ThreadId thread, const At& at, std::size_t i, std::uint64_t& events) {
    const Record& r = at(i);
    const std::uint64_t address = r.word & ~detail::record_kind_mask;
    std::uint64_t index = sites_.find(address, 0);
    if (index == 0) index = describe_site(address);
    ++events;
    const std::uint64_t header = at(i + 1).ticks;
    const std::uint64_t bytes = header & ~(std::uint64_t{1} << 63);
    begin_chunk(thread);
    put_varint(detail::record_text | (r.ticks == 0 ? 8u : 0u) | (index << 4));
    if (r.ticks != 0) put_varint(tf::zigzag(static_cast<std::int64_t>(r.ticks)));
    put_varint(header);
    put_varint(at(i + 1).word);
    for (std::size_t k = 0; k < bytes; k += sizeof(Record)) {
      const Record& data = at(i + 2 + k / sizeof(Record));
      buffer_.append(reinterpret_cast<const char*>(&data), std::min<std::size_t>(sizeof(Record), bytes - k));
    }
    end_frame();
    return i + 2 + (bytes + sizeof(Record) - 1) / sizeof(Record);
  }

  // Describes a call site the first time its address appears; returns its index (1, 2,
  // ... in the order of the site frames).
  RINGTRACE_NOINLINE std::uint64_t describe_site(std::uint64_t address) {
    const auto index = static_cast<std::uint32_t>(++site_count_);
    sites_.find_or_insert(address, index);
    const auto* site = reinterpret_cast<const SiteInfo*>(address);
    write_site_frame(address, *site, detail::effective_options(*site, per_thread_counters_),
                     detail::effective_sample_every(*site));
    return index;
  }

  void write_site_frame(std::uint64_t address, const SiteInfo& site, std::uint8_t options, std::uint32_t every) {
    std::string& p = begin_frame(tf::frame_site);
    tf::put_u64(p, address);
    tf::put_u8(p, static_cast<std::uint8_t>(site.kind));
    tf::put_u8(p, options);
    every = std::clamp<std::uint32_t>(every, 1, 0xFFFF);  // u16, little-endian
    tf::put_u8(p, static_cast<std::uint8_t>(every & 0xFF));
    tf::put_u8(p, static_cast<std::uint8_t>(every >> 8));
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
  struct StreamThread {
    std::string chunk;   // packed records not yet framed
    std::uint64_t last = 0;  // ticks of the chunk's last timed record
    bool described = false;
  };

  void begin_stream(const TraceContext& context) {
    stream_started_ = true;
    detail::RawSessionInfo info;  // ticks are nanoseconds; no merge grace (the stream is
    info.tsc = false;             // ordered), no ring, no boundary gap (its times kept)
    info.ticks_per_second = 1e9;
    info.start_ns = context.clock().start_ns;
    timespec real{}, mono{};
    clock_gettime(CLOCK_REALTIME, &real);
    clock_gettime(CLOCK_MONOTONIC, &mono);
    info.realtime_anchor_ns = static_cast<std::uint64_t>(real.tv_sec) * 1000000000u + static_cast<std::uint64_t>(real.tv_nsec);
    info.monotonic_anchor_ns = static_cast<std::uint64_t>(mono.tv_sec) * 1000000000u + static_cast<std::uint64_t>(mono.tv_nsec);
    info.boundary_gap_ticks = 0;
    write_session_frame(context.process_id() != 0 ? context.process_id() : static_cast<std::uint32_t>(::getpid()), info);
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
      write_site_frame(id, site, site.options, site.sample_every);
    }
    return stream_sites_[id];
  }

  void encode_stream(std::span<const Event> events, const TraceContext& context) {
    if (!stream_started_) begin_stream(context);
    char record[32];
    for (const Event& e : events) {
      if (e.thread >= stream_threads_.size()) stream_threads_.resize(e.thread + 1);
      StreamThread& t = stream_threads_[e.thread];
      if (!t.described) {
        describe_stream_thread(e.thread, context);
        t.described = true;
      }
      const std::uint64_t ticks = e.time_ns + 1;
      stream_last_ = std::max(stream_last_, ticks);
      std::uint64_t kind = 0;
      bool timed = true;
      bool payload = false;
      switch (e.kind) {
        case EventKind::zone_begin:
          kind = (e.flags & EventFlags::region) != 0 ? detail::record_region_begin : detail::record_zone_begin;
          payload = kind == detail::record_region_begin;
          break;
        case EventKind::zone_end:
          if ((e.flags & (EventFlags::closed_at_stop | EventFlags::closed_at_window_end)) != 0) continue;
          kind = detail::record_zone_end;
          break;
        case EventKind::instant:
          kind = detail::record_instant;
          break;
        case EventKind::counter:
        case EventKind::async_begin:
        case EventKind::async_end:
          kind = (e.flags & EventFlags::value_double) != 0 ? detail::record_value_double : detail::record_value_int;
          payload = true;
          break;
        case EventKind::dropped:
          kind = detail::record_dropped;
          payload = true;
          break;
        case EventKind::arg:
          if ((e.flags & EventFlags::text) != 0) {
            stream_text(t, e, context);
            continue;
          }
          kind = (e.flags & EventFlags::value_double) != 0 ? detail::record_value_double : detail::record_value_int;
          timed = false;
          payload = true;
          break;
        case EventKind::flow_out:
        case EventKind::flow_in:
          kind = detail::record_value_int;
          timed = false;
          payload = true;
          break;
        default:
          continue;
      }
      const std::uint64_t index = kind == detail::record_dropped ? 0 : stream_site(e.site, context);
      char* p = record;
      p = tf::put_varint(p, kind | (timed ? 0u : 8u) | (index << 4));
      if (timed) {
        p = tf::put_varint(p, tf::zigzag(static_cast<std::int64_t>(ticks - t.last)));
        t.last = ticks;
      }
      if (payload) {
        if (kind == detail::record_value_double) {
          std::memcpy(p, &e.value.u, 8);
          p += 8;
        } else {
          p = tf::put_varint(p, tf::zigzag(e.value.i));
        }
      }
      t.chunk.append(record, static_cast<std::size_t>(p - record));
      if (t.chunk.size() >= kChunkBytes) flush_stream_chunk(e.thread);
    }
    flush_stream_chunks();
    std::string& pass = begin_frame(tf::frame_pass);
    tf::put_u64(pass, stream_last_);
    end_frame();
  }

  void stream_text(StreamThread& t, const Event& e, const TraceContext& context) {
    const std::string_view text = context.text(e);
    const std::size_t bytes = std::min<std::size_t>(text.size(), 0xFFFF);  // what a reader accepts
    const bool cut = bytes < text.size() || (e.flags & EventFlags::truncated) != 0;
    char head[32];
    char* p = head;
    p = tf::put_varint(p, detail::record_text | 8u | (stream_site(e.site, context) << 4));
    p = tf::put_varint(p, bytes | (cut ? std::uint64_t{1} << 63 : 0));
    p = tf::put_varint(p, std::max<std::uint64_t>(text.size(), e.text_size));
    t.chunk.append(head, static_cast<std::size_t>(p - head));
    t.chunk.append(text.substr(0, bytes));
  }

  void flush_stream_chunk(ThreadId id) {
    StreamThread& t = stream_threads_[id];
    if (t.chunk.empty()) return;
    begin_chunk(id);
    buffer_.append(t.chunk);
    end_frame();
    t.chunk.clear();
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
  detail::U64Map sites_;       // address -> index
  std::uint64_t last_site_ = 0, last_index_ = 0;  // the last site packed, and its index
  std::uint64_t site_count_ = 0;
  std::string process_name_;
  std::uint64_t runs_ = 0;
  bool started_ = false;
  bool per_thread_counters_ = false;  // Config::per_thread_counters: counter sites written per-thread
  bool raw_started_ = false;  // on_raw_start came: a live session, not a replayed stream
  // Fed a stream (windows, snapshots, replay()): its encoding state.
  bool stream_started_ = false;
  std::uint64_t stream_last_ = 0;  // the newest ticks written
  std::vector<StreamThread> stream_threads_;  // by ThreadId
  std::vector<std::uint64_t> stream_sites_;   // SiteId -> index (0: not described yet)
};

}  // namespace

std::shared_ptr<Exporter> binary_trace_exporter(const std::filesystem::path& path, BinaryTraceOptions options) {
  return std::make_shared<BinaryTraceExporter>(path.string(), options);
}

}  // namespace ringtrace
