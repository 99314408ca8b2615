// Binary trace file reader: frames in file order, each thread's records decoded as the
// drainer decodes them live (same clock segments, same pairing of zone ends with their
// begins, same handling of values, texts and drop markers), and merged across threads
// by time with the recording's merge grace, as the drainer merges. Layout:
// exporters/common/trace_file_format.hpp, docs/file-format.md.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <limits>
#include <map>
#include <memory>
#include <new>  // bad_alloc
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>

#include <sys/mman.h>  // madvise

#include "common/trace_file_format.hpp"
#include "windows.hpp"  // is_step_marker, step_zone_name
#include "ringtrace/detail/raw_sink.hpp"
#include "ringtrace/detail/ring_file.hpp"
#include "ringtrace/exporters/binary_trace.hpp"

namespace ringtrace {
namespace {

namespace tf = detail::trace_file;
using detail::Record;

// Reads fields from a frame's payload; any read past its end marks it malformed.
class Fields {
 public:
  explicit Fields(std::string_view data) : data_(data) {}
  template <typename T>
  T get() {
    T v{};
    if (at_ + sizeof(T) > data_.size()) {
      bad_ = true;
      return v;
    }
    std::memcpy(&v, data_.data() + at_, sizeof(T));
    at_ += sizeof(T);
    return v;
  }
  std::string str() {
    const auto n = get<std::uint32_t>();
    if (bad_ || n > data_.size() - at_) {
      bad_ = true;
      return {};
    }
    std::string s(data_.substr(at_, n));
    at_ += n;
    return s;
  }
  std::string_view rest() const { return data_.substr(std::min(at_, data_.size())); }
  bool bad() const { return bad_; }

 private:
  std::string_view data_;
  std::size_t at_ = 0;
  bool bad_ = false;
};

// A growable array of events, as std::vector<Event> but grown without writing the new
// slots first: the decoder and the merge write each event once where resize() would
// zero it before.
class Events {
 public:
  std::size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  Event* data() { return data_.get(); }
  const Event* data() const { return data_.get(); }
  Event& operator[](std::size_t i) { return data_[i]; }
  const Event& operator[](std::size_t i) const { return data_[i]; }
  Event& back() { return data_[size_ - 1]; }
  void clear() { size_ = 0; }
  void push_back(const Event& e) {
    if (size_ == capacity_) grow(1);
    data_[size_++] = e;
  }
  // Room for `n` more events after the last: the caller writes them there, then keeps
  // those it wrote with resize().
  Event* reserve_more(std::size_t n) {
    if (capacity_ - size_ < n) grow(n);
    return data_.get() + size_;
  }
  void resize(std::size_t n) { size_ = n; }  // n <= the room reserved
  void erase_front(std::size_t n) {
    std::memmove(data_.get(), data_.get() + n, (size_ - n) * sizeof(Event));
    size_ -= n;
  }

 private:
  // Blocks of 2 MiB and more are whole huge pages, marked for the kernel's transparent
  // huge pages: faulting one in takes a fault per 2 MiB rather than per 4 KiB page (in a
  // virtual machine a fault is dear: they took a tenth of reading 8 threads' file, 9000
  // of them). Smaller blocks grow with realloc(), which moves a block's pages rather
  // than copy them to fresh ones that fault in again.
  static constexpr std::size_t kHugePage = std::size_t{2} << 20;
  void grow(std::size_t n) {
    std::size_t capacity = std::max({size_ + n, 2 * capacity_, std::size_t{1024}});
    if (capacity * sizeof(Event) >= kHugePage) {
      const std::size_t bytes = (capacity * sizeof(Event) + kHugePage - 1) / kHugePage * kHugePage;
      auto* grown = static_cast<Event*>(std::aligned_alloc(kHugePage, bytes));
      if (grown == nullptr) throw std::bad_alloc();
#ifdef MADV_HUGEPAGE
      ::madvise(grown, bytes, MADV_HUGEPAGE);  // a hint: without it, plain pages
#endif
      if (size_ != 0) std::memcpy(grown, data_.get(), size_ * sizeof(Event));
      data_.reset(grown);
      capacity = bytes / sizeof(Event);
    } else {
      void* grown = std::realloc(data_.get(), capacity * sizeof(Event));
      if (grown == nullptr) throw std::bad_alloc();
      (void)data_.release();
      data_.reset(static_cast<Event*>(grown));
    }
    capacity_ = capacity;
  }

  struct Free {
    void operator()(Event* p) const { std::free(p); }
  };
  std::unique_ptr<Event[], Free> data_;
  std::size_t size_ = 0, capacity_ = 0;
};

struct Site {
  std::string name, function, file, category;
  SiteInfo info{};
};

// What the process sections of a file share: the tables that resolve the ids of the
// merged stream (each section adds its sites and threads with ids of the whole file).
class Tables final : public TraceContext {
 public:
  Tables() {
    Site& dropped = sites.emplace_back();  // SiteId 0, for every process
    dropped.name = "ringtrace: dropped events";
    dropped.info = SiteInfo{dropped.name.c_str(), "", "", 0, SiteKind::instant, 0, ""};
  }
  const SiteInfo& site(SiteId id) const override { return sites[id].info; }
  std::uint32_t site_count() const override { return static_cast<std::uint32_t>(sites.size()); }
  const ThreadInfo& thread(ThreadId id) const override { return threads[id]; }
  std::uint32_t thread_count() const override { return static_cast<std::uint32_t>(threads.size()); }
  const ClockInfo& clock() const override { return clock_info; }
  const std::string& process_name() const override { return name; }
  std::uint32_t process_id() const override { return pid; }
  const std::string& process_name_of(std::uint32_t p) const override {
    const auto it = process_names.find(p);
    return it == process_names.end() ? name : it->second;
  }
  std::string_view text(const Event& e) const override {
    if (e.kind != EventKind::arg || (e.flags & EventFlags::text) == 0) return {};
    const auto it = texts.find(e.value.u);
    return it == texts.end() ? std::string_view{} : std::string_view(it->second);
  }

  std::deque<Site> sites;  // a deque: SiteInfo's pointers into its strings stay valid
  std::vector<ThreadInfo> threads;
  std::unordered_map<std::uint64_t, std::string> texts;
  std::uint64_t next_text = 0;
  std::map<std::uint32_t, std::string> process_names;  // by ThreadInfo::pid (merged files)
  std::string name;
  std::uint32_t pid = 0;
  ClockInfo clock_info;
};

// Events per Exporter::on_events() call: a batch of events is handed over in spans of
// this many (the last one shorter).
constexpr std::size_t kSpan = 16384;

// Where a section can hand its deliveries when nothing merges them with another's: straight
// to the exporters (FileReplay, for a file of one process). A delivery is its threads'
// first events (by time, then thread; the time each is delivered at), then its events
// in spans of kSpan, then its end.
class Delivery {
 public:
  virtual void first_events(std::span<const std::pair<std::uint64_t, ThreadId>> firsts) = 0;
  virtual void events(std::span<const Event> span) = 0;
  virtual void end() = 0;

 protected:
  ~Delivery() = default;
};

// The frames of one recorded process (a whole version-1 file, or one section of a merged
// file), decoded and merged across its threads as the drainer merges them live, into
// `out`: time-ordered events, not yet delivered.
class Section {
 public:
  Section(Tables& tables, const std::string& path, std::uint64_t begin, std::uint64_t end, ReplayProcess meta,
          std::uint32_t header_flags)
      : tables_(tables),
        path_(path),
        begin_(begin),
        end_(end),
        offset_(begin),
        meta_(std::move(meta)),
        header_flags_(header_flags) {}
  ~Section() {
    if (file_ != nullptr) std::fclose(file_);
  }
  Section(const Section&) = delete;
  Section& operator=(const Section&) = delete;

  // Opens the section and reads its first frame, which must be the session's.
  bool open_session() {
    file_ = std::fopen(path_.c_str(), "rb");
    if (file_ == nullptr) {
      meta_.problem = std::string("cannot open: ") + std::strerror(errno);
      done_ = true;
      return false;
    }
    prescan();
    std::string payload;
    std::uint32_t type = 0;
    if (!next_frame(type, payload)) {
      if (meta_.problem.empty()) meta_.problem = "no session frame: not a complete ringtrace trace";
    } else if (type != tf::frame_session) {
      meta_.problem = "the first frame (byte " + std::to_string(frame_offset_) + ") is not the session's";
    } else if (apply(type, payload)) {
      return true;
    }
    done_ = true;
    finish();
    return false;
  }

  // Deliveries go to `to` from now on, instead of to `out` (but the last one).
  void deliver_to(Delivery* to) { direct_ = to; }

  // Called once every section's session is read: the pid and name its threads carry.
  void place(std::uint32_t pid, std::string name, bool tag_threads) {
    assigned_pid_ = tag_threads ? pid : 0;
    tables_.process_names[pid] = std::move(name);
  }

  // Reads frames up to the next pass frame, or to the end (then finishes the section).
  void step() {
    std::string& payload = payload_;
    std::uint32_t type = 0;
    while (!done_) {
      if (!next_frame(type, payload) || !apply(type, payload)) {
        done_ = true;
        if (!complete_ && have_session_ && !rings_path_.empty()) recover();
        finish();
        return;
      }
      if (type == tf::frame_pass) return;
    }
  }

  bool done() const { return done_; }
  // A version-1 file's ring file (BinaryTraceOptions::rings_in_file), read if the file
  // turns out cut short.
  void set_rings(std::string path) { rings_path_ = std::move(path); }
  // The ring file was of this recording and read.
  bool rings_read() const { return rings_read_; }
  // Every event this section delivers from now on is at or after this time.
  std::uint64_t horizon() const { return done_ ? std::numeric_limits<std::uint64_t>::max() : last_emitted_; }

  Events out;  // delivered by the section's merge, in time order
  std::size_t out_pos = 0;  // out[out_pos..] not yet handed to the exporters

  const ReplayProcess& meta() const { return meta_; }
  const ClockInfo& clock() const { return clock_; }
  const SessionStats& stats() const { return stats_; }
  bool has_session() const { return have_session_; }
  std::uint64_t bytes_read() const { return offset_ - begin_; }
  std::uint64_t realtime_start_ns() const {
    return realtime_anchor_ + (raw_start_ns_ >= monotonic_anchor_ ? raw_start_ns_ - monotonic_anchor_ : 0) -
           (raw_start_ns_ < monotonic_anchor_ ? monotonic_anchor_ - raw_start_ns_ : 0);
  }

 private:
  struct Open {
    SiteId site;
    std::uint8_t flags;
    std::uint64_t value;
  };
  struct Thread {
    ThreadId id = 0;           // in the file's tables
    // Zones open: open[0, depth). The slots above are kept for the next (decode() writes
    // them without growing the vector).
    std::vector<Open> open;
    std::size_t depth = 0;
    // Decoded, not yet delivered: pending[taken..]. In time order: decode() never lets a
    // thread's time go back.
    Events pending;
    std::size_t taken = 0;
    std::uint64_t last_ticks = 0;
    std::uint64_t last_ns = 0;
    std::uint64_t recorded = 0;
    std::uint64_t reported_drops = 0;
    bool past_stop = false;  // a record after the stop time was read: the rest are too
    // Ring slots (records, payloads and text slots) of the thread read from the file: where
    // its ring, kept in a ring file, holds what comes next.
    std::uint64_t ring_slots = 0;
    bool named = false;  // a thread frame named it
  };

  SiteId step_zone(std::uint64_t step) {
    auto [it, inserted] = step_sites_.try_emplace(step, static_cast<SiteId>(tables_.sites.size()));
    if (inserted) {
      Site& s = tables_.sites.emplace_back();
      s.name = detail::step_zone_name(step);
      s.info = SiteInfo{s.name.c_str(), s.function.c_str(), s.file.c_str(), 0, SiteKind::zone, SiteOptions::step,
                        s.category.c_str()};
    }
    return it->second;
  }

  // Walks the frame headers once (no payloads) for the stop time, which comes last in
  // the section but decides which records belong to the capture.
  void prescan() {
    std::uint64_t at = begin_;
    while (at + tf::kFrameHeaderBytes <= end_) {
      std::uint32_t h[4];
      std::fseek(file_, static_cast<long>(at), SEEK_SET);
      if (std::fread(h, 1, sizeof h, file_) != sizeof h) break;
      if (h[1] > tf::kMaxFrameBytes || at + tf::kFrameHeaderBytes + h[1] > end_) break;
      if (h[0] == tf::frame_stop && h[1] == 8) {
        std::uint64_t stop;
        if (std::fread(&stop, 1, 8, file_) == 8) {
          stop_ticks_ = stop;
          has_stop_ = true;
        }
      }
      at += tf::kFrameHeaderBytes + h[1];
    }
    std::fseek(file_, static_cast<long>(begin_), SEEK_SET);
  }

  bool next_frame(std::uint32_t& type, std::string& payload) {
    if (offset_ == end_) return false;  // clean end of data (complete_ says whether it is the end)
    std::uint32_t h[4];
    if (offset_ + tf::kFrameHeaderBytes > end_ || std::fread(h, 1, sizeof h, file_) != sizeof h) {
      meta_.problem = "file cut short at byte " + std::to_string(offset_) + " (inside a frame header)";
      return false;
    }
    if (h[1] > tf::kMaxFrameBytes) {
      meta_.problem = "frame at byte " + std::to_string(offset_) + " claims " + std::to_string(h[1]) +
                      " bytes (at most " + std::to_string(tf::kMaxFrameBytes) + "): damaged file";
      return false;
    }
    if (offset_ + tf::kFrameHeaderBytes + h[1] > end_) {
      meta_.problem = "file cut short at byte " + std::to_string(offset_) + " (a frame of " + std::to_string(h[1]) +
                      " bytes, " + std::to_string(end_ - offset_ - tf::kFrameHeaderBytes) + " left)";
      return false;
    }
    payload.resize(h[1]);
    if (h[1] != 0 && std::fread(payload.data(), 1, h[1], file_) != h[1]) {
      meta_.problem = "read error at byte " + std::to_string(offset_);
      return false;
    }
    if (tf::checksum(payload.data(), payload.size(), header_flags_) != h[2]) {
      meta_.problem = "checksum mismatch in the frame at byte " + std::to_string(offset_) + " (type " +
                      std::to_string(h[0]) + "): damaged file, read up to there";
      return false;
    }
    frame_offset_ = offset_;
    offset_ += tf::kFrameHeaderBytes + h[1];
    type = h[0];
    return true;
  }

  bool malformed(const char* what) {
    meta_.problem = std::string("malformed ") + what + " frame at byte " + std::to_string(frame_offset_);
    return false;
  }

  bool apply(std::uint32_t type, const std::string& payload) {
    Fields f(payload);
    switch (type) {
      case tf::frame_session: {
        if (have_session_) return malformed("second session");
        meta_.pid = f.get<std::uint32_t>();
        clock_.tsc = f.get<std::uint8_t>() != 0;
        f.get<std::uint8_t>();
        f.get<std::uint16_t>();
        clock_.ticks_per_second = f.get<double>();
        raw_start_ns_ = f.get<std::uint64_t>();
        realtime_anchor_ = f.get<std::uint64_t>();
        monotonic_anchor_ = f.get<std::uint64_t>();
        grace_ns_ = f.get<std::uint64_t>();
        f.get<std::uint64_t>();  // ring size: informational
        meta_.name = f.str();
        meta_.host = f.str();
        if (f.bad()) return malformed("session");
        // Files written before boundaries were spaced end here: read as they were live.
        boundary_gap_ = f.rest().size() >= 8 ? f.get<std::uint64_t>() : 0;
        clock_.start_ns = shift(raw_start_ns_);
        have_session_ = true;
        return true;
      }
      case tf::frame_segment: {
        detail::ClockSegment s;
        s.base_ticks = f.get<std::uint64_t>();
        s.base_ns = f.get<std::uint64_t>();
        s.mult = f.get<std::uint64_t>();
        if (f.bad()) return malformed("clock segment");
        segments_.push_back(s);
        clock_.recalibrations = segments_.size() > 1 ? static_cast<std::uint32_t>(segments_.size() - 1) : 0;
        return true;
      }
      case tf::frame_site: {
        const auto address = f.get<std::uint64_t>();
        const auto kind = f.get<std::uint8_t>();
        const auto options = f.get<std::uint8_t>();
        const auto every = f.get<std::uint16_t>();  // sampling rate (0 in files before it: 1)
        const auto line = f.get<std::uint32_t>();
        Site s;
        s.name = f.str();
        s.function = f.str();
        s.file = f.str();
        s.category = f.str();
        if (f.bad() || kind > static_cast<std::uint8_t>(SiteKind::async_end)) return malformed("call site");
        Site& stored = tables_.sites.emplace_back(std::move(s));
        stored.info = SiteInfo{stored.name.c_str(), stored.function.c_str(), stored.file.c_str(), line,
                               static_cast<SiteKind>(kind), options, stored.category.c_str(),
                               every == 0 ? 1u : static_cast<std::uint32_t>(every)};
        site_by_index_.push_back(static_cast<SiteId>(tables_.sites.size() - 1));  // index = position + 1
        index_by_address_.emplace(address, site_by_index_.size());  // for records read from a ring file
        return true;
      }
      case tf::frame_thread: {
        const auto id = f.get<std::uint32_t>();
        const auto os_tid = f.get<std::uint64_t>();
        std::string name = f.str();
        if (f.bad()) return malformed("thread");
        Thread& t = thread_of(id);
        t.named = true;
        ThreadInfo& info = tables_.threads[t.id];
        info.os_tid = os_tid;
        info.name = std::move(name);
        return true;
      }
      case tf::frame_chunk: {
        const auto id = f.get<std::uint32_t>();
        const auto encoding = f.get<std::uint32_t>();
        if (f.bad()) return malformed("chunk");
        if (encoding != tf::kPackedRecords) {
          meta_.problem = "chunk at byte " + std::to_string(frame_offset_) + " has encoding " +
                          std::to_string(encoding) + ", which this reader does not know";
          return false;
        }
        return decode(thread_of(id), f.rest());
      }
      case tf::frame_pass: {
        const auto complete = f.get<std::uint64_t>();
        if (f.bad()) return malformed("pass");
        deliver(to_ns(complete));
        return true;
      }
      case tf::frame_stop:
        return true;  // read by prescan()
      case tf::frame_stats: {
        SessionStats s;
        s.recorded = f.get<std::uint64_t>();
        s.dropped = f.get<std::uint64_t>();
        s.late_events = f.get<std::uint64_t>();
        s.unbalanced_ends = f.get<std::uint64_t>();
        s.closed_at_stop = f.get<std::uint64_t>();
        s.dropped_without_ring = f.get<std::uint64_t>();
        s.drain_passes = f.get<std::uint64_t>();
        const auto n = f.get<std::uint32_t>();
        if (f.bad() || n > payload.size() / 28) return malformed("stats");
        for (std::uint32_t i = 0; i < n; ++i) {
          ThreadStats t;
          t.thread = f.get<std::uint32_t>();
          t.os_tid = f.get<std::uint64_t>();
          t.recorded = f.get<std::uint64_t>();
          t.dropped = f.get<std::uint64_t>();
          s.threads.push_back(std::move(t));
        }
        if (f.bad()) return malformed("stats");
        footer_ = std::move(s);
        has_footer_ = true;
        return true;
      }
      case tf::frame_end:
        complete_ = true;
        return true;
      case tf::frame_process:
        return malformed("process section header inside a process section: damaged");
      default:
        return true;  // a frame type of a later minor revision: skipped
    }
  }

  Thread& thread_of(std::uint32_t file_id) {
    auto [it, inserted] = thread_ids_.try_emplace(file_id, threads_.size());
    if (inserted) {
      Thread& t = threads_.emplace_back();
      t.id = static_cast<ThreadId>(tables_.threads.size());
      ThreadInfo& info = tables_.threads.emplace_back();
      info.id = t.id;
      info.sort_index = std::numeric_limits<std::uint32_t>::max();
      info.pid = assigned_pid_;
      file_thread_.push_back(file_id);
    }
    return threads_[it->second];
  }

  // The section's CLOCK_MONOTONIC nanoseconds on the file's timeline.
  std::uint64_t shift(std::uint64_t ns) const { return shift(ns, meta_.offset_ns); }
  static std::uint64_t shift(std::uint64_t ns, std::int64_t offset) {
    if (offset >= 0) return ns + static_cast<std::uint64_t>(offset);
    const auto back = static_cast<std::uint64_t>(-offset);
    return ns > back ? ns - back : 0;
  }
  // Ticks since a segment's base in nanoseconds (the segment's 32.32 fixed-point scale).
  static std::uint64_t scale(std::uint64_t d, std::uint64_t m) {
    return static_cast<std::uint64_t>((static_cast<unsigned __int128>(d) * m) >> 32);
  }

  // The clock segment a live drainer would have used: the newest one (of those read so
  // far) whose base is not after `ticks`, else the oldest.
  std::uint64_t to_ns(std::uint64_t ticks) const {
    if (ticks == std::numeric_limits<std::uint64_t>::max()) return ticks;
    if (segments_.empty()) return shift(ticks);
    std::size_t i = segments_.size() - 1;
    while (i > 0 && ticks < segments_[i].base_ticks) --i;
    const detail::ClockSegment& s = segments_[i];
    if (ticks >= s.base_ticks) return shift(s.base_ns + scale(ticks - s.base_ticks, s.mult));
    const std::uint64_t back = scale(s.base_ticks - ticks, s.mult);
    return shift(back > s.base_ns ? 0 : s.base_ns - back);
  }

  // A packed record's site index (1 for the first call-site frame, ...) as the file's
  // SiteId; 0xFFFFFFFF for an index no call-site frame gave.
  SiteId site_id(std::uint64_t index) const {
    return index == 0 || index > site_by_index_.size() ? SiteId{0xFFFFFFFFu} : site_by_index_[index - 1];
  }

  // One packed record of a chunk (docs/file-format.md).
  struct Packed {
    std::uint64_t kind;
    std::uint64_t site;     // the call site's index
    std::uint64_t ticks;    // 0 for a record without a time
    std::uint64_t payload;  // kinds 3 to 6; kind 7: the text's size | truncated << 63
    const unsigned char* text;  // kind 7: the text's bytes

    // The ring slots it took: a header, a payload, a text's bytes.
    std::uint64_t ring_slots() const {
      if (kind <= detail::record_instant) return 1;
      if (kind != detail::record_text) return 2;
      return 2 + ((payload & ~(std::uint64_t{1} << 63)) + sizeof(Record) - 1) / sizeof(Record);
    }
  };

  // An unsigned LEB128 varint; false at the chunk's end or past ten bytes. Most are one
  // byte (headers of the first sites, deltas of nearby ticks): that case first.
  static bool varint(const unsigned char*& p, const unsigned char* end, std::uint64_t& v) {
    if (p != end && *p < 0x80) [[likely]] {
      v = *p++;
      return true;
    }
    v = 0;
    for (unsigned shift = 0; shift < 64; shift += 7) {
      if (p == end) return false;
      const unsigned char b = *p++;
      v |= static_cast<std::uint64_t>(b & 0x7F) << shift;
      if ((b & 0x80) == 0) return true;
    }
    return false;
  }
  static std::uint64_t unzigzag(std::uint64_t v) { return (v >> 1) ^ (~(v & 1) + 1); }

  // Reads the record at p and moves p past it; `last` is the ticks of the chunk's
  // previous record that had a time (deltas are from it). False if malformed.
  static bool read_packed(const unsigned char*& p, const unsigned char* end, std::uint64_t& last, Packed& r) {
    std::uint64_t header;
    if (!varint(p, end, header)) return false;
    r.kind = header & detail::record_kind_mask;
    r.site = header >> 4;
    r.ticks = 0;
    if ((header & 8) == 0) {
      std::uint64_t delta;
      if (!varint(p, end, delta)) return false;
      r.ticks = last + unzigzag(delta);
      last = r.ticks;
    }
    if (r.kind <= detail::record_instant) return true;
    if (r.kind == detail::record_value_double) {
      if (end - p < 8) return false;
      std::memcpy(&r.payload, p, 8);
      p += 8;
    } else if (r.kind == detail::record_text) {
      std::uint64_t original;  // the size before truncation: not kept
      if (!varint(p, end, r.payload) || !varint(p, end, original)) return false;
      const std::uint64_t bytes = r.payload & ~(std::uint64_t{1} << 63);
      if (bytes > 0xFFFF || static_cast<std::uint64_t>(end - p) < bytes) return false;
      r.text = p;
      p += bytes;
    } else {
      if (!varint(p, end, r.payload)) return false;
      r.payload = unzigzag(r.payload);
    }
    return true;
  }

  // What decoding a chunk changes, kept to undo it: a chunk that does not unpack whole
  // is malformed and gives nothing, though its records decode as they are read.
  struct Undo {
    std::size_t pending, sites, depth;
    std::uint64_t last_ticks, last_ns, recorded, reported_drops, unbalanced, next_text, ring_slots;
    bool past_stop;
  };
  Undo mark(const Thread& t) {
    open_before_.assign(t.open.begin(), t.open.begin() + static_cast<std::ptrdiff_t>(t.depth));
    return Undo{t.pending.size(), tables_.sites.size(), t.depth, t.last_ticks, t.last_ns, t.recorded,
                t.reported_drops, unbalanced_, tables_.next_text, t.ring_slots, t.past_stop};
  }
  void undo(Thread& t, const Undo& u) {
    t.pending.resize(u.pending);
    std::copy(open_before_.begin(), open_before_.end(), t.open.begin());
    t.depth = u.depth;
    t.last_ticks = u.last_ticks;
    t.last_ns = u.last_ns;
    t.recorded = u.recorded;
    t.reported_drops = u.reported_drops;
    t.ring_slots = u.ring_slots;
    t.past_stop = u.past_stop;
    unbalanced_ = u.unbalanced;
    for (std::uint64_t id = u.next_text; id < tables_.next_text; ++id) tables_.texts.erase(id);
    tables_.next_text = u.next_text;
    if (tables_.sites.size() > u.sites) {  // step zones named by the chunk
      std::erase_if(step_sites_, [&](const auto& step) { return step.second >= u.sites; });
      tables_.sites.resize(u.sites);
    }
  }

  // Decodes a chunk's packed records straight into t.pending, as the drainer decodes a
  // ring's records live. This is the reader's hot path: the thread's state is in locals
  // while it runs (stores of events could alias its fields), put back at the end; zone
  // begins and ends, the bulk of a trace, have a loop of their own that calls nothing,
  // so that the compiler keeps that state in registers; whatever stops the decoding
  // early is handled after the loops.
  bool decode(Thread& t, std::string_view chunk) {
    const auto* p = reinterpret_cast<const unsigned char*>(chunk.data());
    const auto* const end = p + chunk.size();
    const Undo before = mark(t);
    const ThreadId thread = t.id;
    std::uint64_t last_ticks = t.last_ticks, last_ns = t.last_ns, recorded = t.recorded;
    std::uint64_t ring_slots = t.ring_slots;  // of the records read (the whole chunk, unless malformed)
    std::size_t depth = t.depth;
    const std::uint64_t gap = boundary_gap_;
    const std::uint64_t stop = has_stop_ ? stop_ticks_ : std::numeric_limits<std::uint64_t>::max();
    // Ticks from the newest clock segment's base to the stop time (nearly all) convert
    // here, the section's offset added to the base (when it is not negative, as to_ns()
    // would add it): `fast` if there are such ticks, those within fast_span of the base.
    // to_ns() converts the others.
    const detail::ClockSegment newest = segments_.empty() ? detail::ClockSegment{} : segments_.back();
    const std::uint64_t fast_last = std::min(stop, std::numeric_limits<std::uint64_t>::max() - 1);
    const bool fast = !segments_.empty() && meta_.offset_ns >= 0 && newest.base_ticks <= fast_last;
    const std::uint64_t fast_span = fast ? fast_last - newest.base_ticks : 0;
    const std::uint64_t fast_base_ns =
        newest.base_ns + static_cast<std::uint64_t>(std::max<std::int64_t>(meta_.offset_ns, 0));
    enum class Stopped { no, malformed, past_stop, unknown_site };
    Stopped stopped = t.past_stop ? Stopped::past_stop : Stopped::no;
    std::uint64_t last = 0;
    Packed rec{};
    while (stopped == Stopped::no && p < end) {
      // Room for the events of the records that start in the next block of bytes (a
      // record packs into a byte at least); blocks, as a damaged frame may claim 64 MiB.
      const auto* const block_end = p + std::min<std::size_t>(static_cast<std::size_t>(end - p), std::size_t{1} << 16);
      Event* out = t.pending.reserve_more(static_cast<std::size_t>(block_end - p));
      while (p < block_end) {
        // Zone begins and ends of the first 7 sites with a time (a one-byte header), at
        // most as deep as the thread has been: decoded here, as the loop below would.
        // Any other record, or one that stops the decoding, goes to that loop.
        Event* const zones_from = out;
        Open* const open = t.open.data();
        const std::size_t open_slots = t.open.size();
        const SiteId* const sites = site_by_index_.data();
        const std::size_t site_count = site_by_index_.size();
        while (fast && p < block_end) {
          const unsigned header = *p;
          if ((header & 0x8E) != 0) break;  // more than a byte, no time, or another kind
          const auto* q = p + 1;
          std::uint64_t delta;
          if (!varint(q, end, delta)) break;
          const std::uint64_t record_ticks = last + unzigzag(delta);
          const std::uint64_t ticks = std::max(record_ticks, last_ticks + gap);
          if (ticks - newest.base_ticks > fast_span) break;
          const bool zone_end = (header & 1) != 0;
          const std::size_t index = header >> 4;  // from 1 (0 wraps below)
          if (zone_end ? depth == 0 : depth == open_slots || index - 1 >= site_count) break;
          p = q;
          last = record_ticks;
          last_ticks = ticks;
          last_ns = std::max(fast_base_ns + scale(ticks - newest.base_ticks, newest.mult), last_ns);
          if (zone_end) {
            const Open zone = open[--depth];
            *out = Event{last_ns, zone.site, thread, EventKind::zone_end, zone.flags, 0,
                         static_cast<std::uint32_t>(depth), {}};
            out->value.u = zone.value;
          } else {
            const SiteId site = sites[index - 1];
            open[depth] = Open{site, 0, 0};
            *out = Event{last_ns, site, thread, EventKind::zone_begin, 0, 0, static_cast<std::uint32_t>(depth), {}};
            out->value.u = 0;
            ++depth;
          }
          ++out;
        }
        recorded += static_cast<std::size_t>(out - zones_from);
        ring_slots += static_cast<std::size_t>(out - zones_from);  // a slot each
        if (p >= block_end) break;

        // Any record.
        if (!read_packed(p, end, last, rec)) {
          stopped = Stopped::malformed;
          break;
        }
        ring_slots += rec.ring_slots();
        const std::uint64_t kind = rec.kind;
        // Never back in time, zone boundaries boundary_gap_ apart: as the drainer decodes.
        const bool boundary = kind <= detail::record_zone_end || kind == detail::record_region_begin;
        const std::uint64_t ticks = std::max(rec.ticks, last_ticks + (boundary ? gap : 0));
        // Past the stop time: not part of the capture (a live session delivers nothing
        // stamped after it), nor anything after it (values and texts go with their zone).
        if (ticks > stop) {
          stopped = Stopped::past_stop;
          break;
        }
        last_ticks = ticks;
        std::uint64_t ns = fast && ticks - newest.base_ticks <= fast_span
                               ? fast_base_ns + scale(ticks - newest.base_ticks, newest.mult)
                               : to_ns(ticks);
        ns = std::max(ns, last_ns);  // a thread's time never goes back
        last_ns = ns;
        Event e;
        if (kind == detail::record_zone_end) {
          if (depth == 0) {
            ++unbalanced_;
            continue;
          }
          const Open zone = t.open[--depth];
          e = Event{ns, zone.site, thread, EventKind::zone_end, zone.flags, 0, static_cast<std::uint32_t>(depth), {}};
          e.value.u = zone.value;
        } else {
          const SiteId site = kind == detail::record_dropped ? 0 : site_id(rec.site);
          if (site == 0xFFFFFFFFu) {
            stopped = Stopped::unknown_site;
            break;
          }
          e = Event{ns, site, thread, EventKind::instant, 0, 0, static_cast<std::uint32_t>(depth), {}};
          e.value.u = 0;
          switch (kind) {
            case detail::record_zone_begin:
            case detail::record_region_begin:
              e.kind = EventKind::zone_begin;
              if (kind == detail::record_region_begin) {
                e.flags = EventFlags::region;
                e.value.u = rec.payload;
                if (detail::is_step_marker(tables_.sites[site].info)) [[unlikely]] {
                  e.site = step_zone(e.value.u);  // as the live drainer names Session::step()'s zones
                  e.flags = 0;
                  e.value.u = 0;
                }
              }
              if (depth == t.open.size()) t.open.emplace_back();
              t.open[depth++] = Open{e.site, e.flags, e.value.u};
              break;
            case detail::record_instant:
              break;
            case detail::record_value_int:
            case detail::record_value_double:
              switch (tables_.sites[site].info.kind) {
                case SiteKind::value: e.kind = EventKind::arg; break;
                case SiteKind::flow_out: e.kind = EventKind::flow_out; break;
                case SiteKind::flow_in: e.kind = EventKind::flow_in; break;
                case SiteKind::async_begin: e.kind = EventKind::async_begin; break;
                case SiteKind::async_end: e.kind = EventKind::async_end; break;
                default: e.kind = EventKind::counter; break;
              }
              if (kind == detail::record_value_double) e.flags = EventFlags::value_double;
              e.value.u = rec.payload;
              break;
            case detail::record_text: {
              const std::uint64_t bytes = rec.payload & ~(std::uint64_t{1} << 63);
              e.kind = EventKind::arg;
              e.flags = EventFlags::text | ((rec.payload >> 63) != 0 ? EventFlags::truncated : 0);
              e.text_size = static_cast<std::uint16_t>(bytes);
              e.value.u = tables_.next_text;
              tables_.texts.emplace(tables_.next_text++, std::string(reinterpret_cast<const char*>(rec.text), bytes));
              break;
            }
            default:  // record_dropped
              e.kind = EventKind::dropped;
              e.value.u = rec.payload;
              t.reported_drops += e.value.u;
              break;
          }
        }
        if (kind != detail::record_dropped) ++recorded;  // a marker is not a recorded event
        *out++ = e;
      }
      t.pending.resize(static_cast<std::size_t>(out - t.pending.data()));
    }
    t.last_ticks = last_ticks;
    t.last_ns = last_ns;
    t.recorded = recorded;
    t.ring_slots = ring_slots;
    t.depth = depth;
    if (stopped == Stopped::past_stop) t.past_stop = true;
    // The whole chunk unpacks before its records count: malformed, if the rest does not.
    if (stopped == Stopped::past_stop || stopped == Stopped::unknown_site) {
      while (p < end) {
        if (!read_packed(p, end, last, rec)) {
          stopped = Stopped::malformed;
          break;
        }
        t.ring_slots += rec.ring_slots();
      }
    }
    if (stopped == Stopped::malformed) {
      undo(t, before);
      return malformed("chunk");
    }
    if (stopped == Stopped::unknown_site) {
      meta_.problem = "a record refers to a call site the file never described (chunk ending at byte " +
                      std::to_string(offset_) + "): damaged file";
      return false;
    }
    return true;
  }

  // Delivers every pending event at or before `watermark` (a pass frame's time, before
  // which every record is in the file already; everything at the end), ordered by time
  // across threads, as the live merge does: ties in thread order, then each thread's
  // own. To `direct_` if the section has one (but at its end, where the section's last
  // events follow in the same batch), else to `out`.
  void deliver(std::uint64_t watermark, bool at_end = false) {
    runs_.clear();
    std::size_t total = 0;
    for (std::size_t i = 0; i < threads_.size(); ++i) {
      Thread& t = threads_[i];
      Event* first = t.pending.data() + t.taken;
      Event* end = t.pending.data() + t.pending.size();
      Event* cut =
          std::upper_bound(first, end, watermark, [](std::uint64_t w, const Event& e) { return w < e.time_ns; });
      if (cut == first) continue;
      runs_.push_back(Run{first, cut, i});
      total += static_cast<std::size_t>(cut - first);
    }
    if (total == 0) return;
    const std::uint64_t floor = last_emitted_;  // what comes before it is raised to it
    std::uint64_t last = 0;
    if (direct_ == nullptr || at_end) {
      const std::size_t from = out.size();
      Event* const merged = out.reserve_more(total);
      start_merge();
      merge(merged, total);
      out.resize(from + total);
      raise(merged, merged + total, floor);
      last = out.back().time_ns;
    } else {
      // Each thread's first event, in the order the merge gives them (by time, then
      // thread), at the time it is delivered: where its thread is placed.
      firsts_.clear();
      for (const Run& r : runs_) firsts_.emplace_back(r.next->time_ns, threads_[r.thread].id);
      std::stable_sort(firsts_.begin(), firsts_.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
      for (auto& f : firsts_) f.first = std::max(f.first, floor);
      direct_->first_events(firsts_);
      if (runs_.size() == 1) {
        // One thread's events are in order already: handed over from where they are.
        const Run& r = runs_.front();
        for (Event* e = r.first; e != r.end;) {
          Event* const part_end = e + std::min<std::ptrdiff_t>(kSpan, r.end - e);
          raise(e, part_end, floor);
          direct_->events(std::span<const Event>(e, part_end));
          e = part_end;
        }
        last = (r.end - 1)->time_ns;
      } else {
        // A span's worth at a time, in a buffer that stays in the cache while the
        // exporters read it.
        Event* const part = span_.reserve_more(kSpan);
        start_merge();
        for (std::size_t left = total; left != 0;) {
          const std::size_t n = std::min(left, kSpan);
          merge(part, n);
          raise(part, part + n, floor);
          direct_->events(std::span<const Event>(part, n));
          last = part[n - 1].time_ns;
          left -= n;
        }
      }
      direct_->end();
    }
    for (const Run& r : runs_) consume(threads_[r.thread], static_cast<std::size_t>(r.end - r.first));
    last_emitted_ = last;
  }

  // Published later than the grace allows: raised, as live. The events being in time
  // order, only a first stretch of a delivery can be before the last delivered.
  void raise(Event* e, Event* end, std::uint64_t floor) {
    for (; e != end && e->time_ns < floor; ++e) {
      e->time_ns = floor;
      // Values, texts and flows carry no time of their own (they take their thread's
      // previous one): raised silently, as live.
      if (e->kind != EventKind::arg && e->kind != EventKind::flow_out && e->kind != EventKind::flow_in) {
        e->flags |= EventFlags::late;
        ++late_;
      }
    }
  }

  // One thread's events in a delivery: [first, end) of its pending ones, [next, end)
  // not merged yet.
  struct Run {
    Event* first;
    Event* end;
    std::size_t thread;  // in threads_
    Event* next = first;
  };
  struct Head {  // merge(): a run's next time
    std::uint64_t time;
    std::size_t run;
  };
  struct Later {  // the heap's order: the run whose next event comes first on top
    bool operator()(const Head& a, const Head& b) const { return a.time != b.time ? a.time > b.time : a.run > b.run; }
  };

  void start_merge() {
    heads_.clear();
    for (std::size_t i = 0; i < runs_.size(); ++i) heads_.push_back(Head{runs_[i].next->time_ns, i});
    std::make_heap(heads_.begin(), heads_.end(), Later{});
  }

  // Merges the next `n` events of runs_ (in thread order) into `to`, by time, then run.
  // The two runs whose next events come first (a heap of the runs' next times gives
  // them) merge together, up to the next event of any other: threads take turns on the
  // CPUs, so two of them at a time interleave finely (runs of three events, reading 8
  // threads on 2 cores) and the others wait, mostly.
  void merge(Event* to, std::size_t n) {
    Event* const stop = to + n;
    while (to != stop) {
      if (heads_.size() == 1) {  // one run left
        Run& r = runs_[heads_.front().run];
        const auto k = static_cast<std::size_t>(stop - to);
        std::memcpy(to, r.next, k * sizeof(Event));
        r.next += k;
        return;
      }
      std::pop_heap(heads_.begin(), heads_.end(), Later{});
      std::pop_heap(heads_.begin(), heads_.end() - 1, Later{});
      std::size_t waiting = heads_.size() - 2;
      const std::size_t first = heads_[waiting + 1].run, second = heads_[waiting].run;
      // Up to the next waiting run's first event; a run before it in thread order goes
      // first on a tie (and one after it has an earlier next event: no underflow).
      std::uint64_t first_until = std::numeric_limits<std::uint64_t>::max(), second_until = first_until;
      if (waiting != 0) {
        const Head& next = heads_.front();
        first_until = first < next.run ? next.time : next.time - 1;
        second_until = second < next.run ? next.time : next.time - 1;
      }
      Run& a = runs_[first];
      Run& b = runs_[second];
      const bool a_wins_ties = first < second;
      Event* pa = a.next;
      Event* pb = b.next;
      for (bool more = true; more;) {
        // So many events leave neither run empty nor `to` full: no check in between.
        std::size_t n = std::min({static_cast<std::size_t>(a.end - pa), static_cast<std::size_t>(b.end - pb),
                                  static_cast<std::size_t>(stop - to)});
        for (; n != 0; --n) {
          const bool take_a = pa->time_ns < pb->time_ns || (a_wins_ties && pa->time_ns == pb->time_ns);
          const Event* e = take_a ? pa : pb;
          if (e->time_ns > (take_a ? first_until : second_until)) break;
          *to++ = *e;
          pa += take_a ? 1 : 0;
          pb += take_a ? 0 : 1;
        }
        more = n == 0 && pa != a.end && pb != b.end && to != stop;
      }
      a.next = pa;
      b.next = pb;
      // Back into the heap, the two runs that have events left.
      if (pb != b.end) {
        heads_[waiting++] = Head{pb->time_ns, second};
        std::push_heap(heads_.begin(), heads_.begin() + static_cast<std::ptrdiff_t>(waiting), Later{});
      }
      if (pa != a.end) {
        heads_[waiting++] = Head{pa->time_ns, first};
        std::push_heap(heads_.begin(), heads_.begin() + static_cast<std::ptrdiff_t>(waiting), Later{});
      }
      heads_.resize(waiting);
    }
  }

  // Drops a thread's first `n` pending events (delivered); the rest moves to the front
  // once it is no longer than what went, so that a thread's events move about once.
  static void consume(Thread& t, std::size_t n) {
    t.taken += n;
    if (t.taken == t.pending.size()) {
      t.pending.clear();
      t.taken = 0;
    } else if (t.taken >= t.pending.size() - t.taken) {
      t.pending.erase_front(t.taken);
      t.taken = 0;
    }
  }

  // The end of the section: everything pending delivered, zones left open closed at the
  // stop time (or, in a cut file, the last time read), flagged closed_at_stop, drops not
  // yet reported by a marker last; then the section's counts.
  void finish() {
    if (!have_session_) {
      meta_.complete = false;
      return;
    }
    deliver(std::numeric_limits<std::uint64_t>::max(), true);
    const std::uint64_t end_ns =
        std::max(has_stop_ ? to_ns(stop_ticks_) : 0, std::max(last_emitted_, clock_.start_ns));
    clock_.stop_ns = end_ns;
    for (Thread& t : threads_) {
      while (t.depth > 0) {
        const Open open = t.open[--t.depth];
        Event e{end_ns, open.site, t.id, EventKind::zone_end,
                static_cast<std::uint8_t>(open.flags | EventFlags::closed_at_stop), 0,
                static_cast<std::uint32_t>(t.depth), {}};
        e.value.u = open.value;
        out.push_back(e);
        ++closed_at_stop_;
      }
      std::uint64_t dropped = std::max(t.reported_drops, footer_drops(t));
      if (dropped > t.reported_drops) {
        Event e{end_ns, 0, t.id, EventKind::dropped, 0, 0, 0, {}};
        e.value.u = dropped - t.reported_drops;
        out.push_back(e);
      }
    }
    if (!out.empty()) last_emitted_ = std::max(last_emitted_, out.back().time_ns);
    SessionStats& stats = stats_;
    if (has_footer_) stats = footer_;
    stats.threads.clear();
    stats.recorded = 0;
    std::uint64_t dropped_total = 0;
    for (const Thread& t : threads_) {
      const ThreadInfo& info = tables_.threads[t.id];
      ThreadStats s{t.id, info.os_tid, info.name, t.recorded, std::max(t.reported_drops, footer_drops(t)), info.pid};
      stats.recorded += s.recorded;
      dropped_total += s.dropped;
      stats.threads.push_back(std::move(s));
    }
    stats.dropped = dropped_total + (has_footer_ ? footer_.dropped_without_ring : 0);
    // Drops of threads whose rows the session folded (Config::max_thread_rows) are in the
    // footer's total, not in any row this file names.
    if (has_footer_) stats.dropped = std::max(stats.dropped, footer_.dropped);
    stats.late_events = late_;
    stats.unbalanced_ends = unbalanced_;
    stats.closed_at_stop = closed_at_stop_;
    stats.clock = clock_;
    meta_.complete = complete_ && meta_.problem.empty();
    if (!complete_ && meta_.problem.empty()) {
      meta_.problem = "file cut short at byte " + std::to_string(offset_) + " (the recording did not stop)";
    }
    meta_.recovered = recovered_;
    if (!rings_note_.empty()) meta_.problem += (meta_.problem.empty() ? "" : "; ") + rings_note_;
  }

  // Reads the rings a recording kept in a file (runtime/ring_file.hpp, docs/file-format.md)
  // after the trace file ended early: each thread's records from where the file's end
  // (its ring position: the slots read for it) to the write index the thread published,
  // decoded like the file's. A ring whose slots from there on have been overwritten
  // (more than a ring's worth behind: the file lost data) is left alone and named.
  void recover() {
    namespace rf = detail::ring_file;
    std::FILE* file = std::fopen(rings_path_.c_str(), "rb");
    if (file == nullptr) return;  // no ring file: nothing to add
    struct Closer {
      std::FILE* f;
      ~Closer() { std::fclose(f); }
    } closer{file};
    const auto ignored = [&](const std::string& why) { rings_note_ = "ring file " + rings_path_ + " ignored: " + why; };
    std::fseek(file, 0, SEEK_END);
    const auto size = static_cast<std::uint64_t>(std::ftell(file));
    char header[48] = {};
    std::fseek(file, 0, SEEK_SET);
    if (std::fread(header, 1, sizeof header, file) != sizeof header || std::memcmp(header, rf::kMagic, 8) != 0) {
      return ignored("not a ringtrace ring file");
    }
    const auto field = [](const char* at, auto value) {
      std::memcpy(&value, at, sizeof value);
      return value;
    };
    if (field(header + 8, std::uint32_t{}) != rf::kVersion) return ignored("a ring file version this reader does not know");
    if (field(header + rf::kHeaderPidOffset, std::uint32_t{}) != meta_.pid ||
        field(header + rf::kHeaderStartOffset, std::uint64_t{}) != raw_start_ns_) {
      return ignored("it belongs to another recording");
    }
    const auto records = field(header + rf::kHeaderRingRecordsOffset, std::uint64_t{});
    const auto slot_bytes = field(header + rf::kHeaderSlotBytesOffset, std::uint64_t{});
    if (records < 64 || records > (std::uint64_t{1} << 30) || (records & (records - 1)) != 0 ||
        slot_bytes != rf::slot_bytes(records)) {
      return ignored("malformed header");
    }
    rings_read_ = true;
    const std::uint64_t slots = std::min(field(header + rf::kHeaderSlotsOffset, std::uint64_t{}),
                                         size < rf::kPage ? 0 : (size - rf::kPage) / slot_bytes);
    const std::uint64_t mask = records - 1;
    std::vector<Record> ring;  // sized when a slot is read: the file is then at least that long
    std::uint64_t left_out = 0, overwritten = 0;
    for (std::uint64_t k = 0; k < slots; ++k) {
      const std::uint64_t at = rf::kPage + k * slot_bytes;
      char slot[rf::kSlotWriteIndexOffset + 8];
      std::fseek(file, static_cast<long>(at), SEEK_SET);
      if (std::fread(slot, 1, sizeof slot, file) != sizeof slot) break;
      if (field(slot + rf::kSlotStateOffset, std::uint32_t{}) != rf::kSlotBound) continue;
      const auto id = field(slot + rf::kSlotThreadOffset, std::uint32_t{});
      const auto write = field(slot + rf::kSlotWriteIndexOffset, std::uint64_t{});
      // A thread the drainer had not seen yet: an id no thread of the file has.
      Thread& t = thread_of(id != rf::kUnknownThread ? id : 0x80000000u + static_cast<std::uint32_t>(k));
      if (!t.named) {
        ThreadInfo& info = tables_.threads[t.id];
        info.os_tid = field(slot + rf::kSlotTidOffset, std::uint64_t{});
        const auto bytes = std::min<std::uint32_t>(field(slot + rf::kSlotNameBytesOffset, std::uint32_t{}),
                                                   static_cast<std::uint32_t>(rf::kMaxName));
        info.name.assign(slot + rf::kSlotNameOffset, bytes);
        t.named = true;
      }
      const std::uint64_t from = t.ring_slots;
      if (write <= from) continue;
      if (write - from > records) {
        ++overwritten;
        continue;
      }
      if (ring.empty()) ring.resize(records);
      std::fseek(file, static_cast<long>(at + rf::kPage), SEEK_SET);
      if (std::fread(ring.data(), sizeof(Record), records, file) != records) break;
      // The records packed as a chunk's, decoded as one (a text too long for a chunk
      // ends what is decoded, reported as a chunk's would be).
      std::string chunk;
      std::uint64_t last = 0, bad_text = 0;
      std::uint64_t pos = from;
      while (pos < write) {
        const Record& r = ring[pos & mask];
        const std::uint64_t kind = r.word & detail::record_kind_mask;
        const std::uint64_t n = detail::record_slots(ring.data(), mask, pos);
        if (n > records || pos + n > write) break;  // a torn header: nothing after it is whole
        std::uint64_t index = 0;
        if (kind != detail::record_dropped) {
          index = site_index(r.word & ~detail::record_kind_mask, kind);
          if (index == 0) {  // a value or text of a call site the file never described
            ++left_out;
            pos += n;
            continue;
          }
        }
        if (kind == detail::record_text && bad_text == 0) {
          const std::uint64_t bytes = ring[(pos + 1) & mask].ticks & ~(std::uint64_t{1} << 63);
          if (bytes > 0xFFFF) bad_text = bytes;
        }
        if (bad_text == 0) pack(ring.data(), mask, pos, index, last, chunk);
        pos += n;
      }
      const std::uint64_t before = t.recorded;
      const bool decoded = decode(t, chunk);
      t.ring_slots = pos;
      if (!decoded) return;
      if (bad_text != 0) {  // as a chunk's decoding fails there (what came before it is not counted)
        meta_.problem = "text record of " + std::to_string(bad_text) + " bytes in the chunk ending at byte " +
                        std::to_string(offset_) + ": damaged file";
        return;
      }
      recovered_ += t.recorded - before;
    }
    rings_note_ = std::to_string(recovered_) + " events recovered from " + rings_path_;
    if (left_out > 0) {
      rings_note_ += " (" + std::to_string(left_out) +
                     " values or texts of call sites first used after the last drainer pass left out)";
    }
    if (overwritten > 0) {
      rings_note_ += "; " + std::to_string(overwritten) + " ring(s) no longer held what the file lacks";
    }
  }

  // Appends the ring record at `pos` (of a ring of mask + 1 slots) to `out` packed as
  // the file's writer packs it (docs/file-format.md), with the site index `index`;
  // `last` is the previous record's ticks that had any.
  static void pack(const Record* ring, std::uint64_t mask, std::uint64_t pos, std::uint64_t index,
                   std::uint64_t& last, std::string& out) {
    const auto put = [&](std::uint64_t v) {
      char bytes[10];
      out.append(bytes, static_cast<std::size_t>(tf::put_varint(bytes, v) - bytes));
    };
    const auto zigzag = [](std::uint64_t v) { return tf::zigzag(static_cast<std::int64_t>(v)); };
    const Record& r = ring[pos & mask];
    const std::uint64_t kind = r.word & detail::record_kind_mask;
    put(kind | (r.ticks == 0 ? 8u : 0u) | (index << 4));
    if (r.ticks != 0) {
      put(zigzag(r.ticks - last));
      last = r.ticks;
    }
    if (kind <= detail::record_instant) return;
    const Record& payload = ring[(pos + 1) & mask];
    if (kind == detail::record_value_double) {
      out.append(reinterpret_cast<const char*>(&payload.ticks), 8);
    } else if (kind == detail::record_text) {
      put(payload.ticks);  // size | truncated << 63
      put(payload.word);   // the size before truncation
      std::uint64_t bytes = payload.ticks & ~(std::uint64_t{1} << 63);
      for (std::uint64_t slot = pos + 2; bytes != 0; ++slot) {
        const std::uint64_t n = std::min<std::uint64_t>(bytes, sizeof(Record));
        out.append(reinterpret_cast<const char*>(&ring[slot & mask]), n);
        bytes -= n;
      }
    } else {
      put(zigzag(payload.ticks));
    }
  }

  // The site index of a call site's address, for a record read from a ring. A zone or
  // instant of a call site that the file never described (first used after the
  // drainer's last pass: its name was in the dead process's memory) gets a placeholder
  // named after its address; a value or text of one gets 0 (it cannot be interpreted).
  std::uint64_t site_index(std::uint64_t address, std::uint64_t kind) {
    const auto it = index_by_address_.find(address);
    if (it != index_by_address_.end()) return it->second;
    const bool zone = kind == detail::record_zone_begin || kind == detail::record_zone_end ||
                      kind == detail::record_region_begin;
    if (!zone && kind != detail::record_instant) return 0;
    char name[64];
    std::snprintf(name, sizeof name, "(call site 0x%llx)", static_cast<unsigned long long>(address));
    Site& s = tables_.sites.emplace_back();
    s.name = name;
    s.info = SiteInfo{s.name.c_str(), s.function.c_str(), s.file.c_str(), 0,
                      zone ? SiteKind::zone : SiteKind::instant, 0, s.category.c_str()};
    site_by_index_.push_back(static_cast<SiteId>(tables_.sites.size() - 1));
    index_by_address_.emplace(address, site_by_index_.size());
    return site_by_index_.size();
  }

  // The drops the footer counts for a thread (its row carries the file's thread id).
  std::uint64_t footer_drops(const Thread& t) const {
    if (!has_footer_) return 0;
    const std::uint32_t file_id = file_thread_[static_cast<std::size_t>(&t - threads_.data())];
    for (const ThreadStats& s : footer_.threads) {
      if (s.thread == file_id) return s.dropped;
    }
    return 0;
  }

  Tables& tables_;
  std::string path_;
  std::uint64_t begin_, end_;
  std::FILE* file_ = nullptr;
  std::uint64_t offset_ = 0;
  std::uint64_t frame_offset_ = 0;
  ReplayProcess meta_;
  std::uint32_t header_flags_ = 0;  // the file's: which checksum its frames carry
  std::string payload_;
  bool have_session_ = false;
  bool complete_ = false;
  bool done_ = false;
  bool has_stop_ = false;
  bool has_footer_ = false;
  std::uint64_t stop_ticks_ = 0;
  SessionStats footer_;
  SessionStats stats_;
  std::uint32_t assigned_pid_ = 0;

  std::uint64_t raw_start_ns_ = 0;
  std::uint64_t realtime_anchor_ = 0, monotonic_anchor_ = 0;
  std::uint64_t grace_ns_ = 0;
  std::uint64_t boundary_gap_ = 0;  // detail::boundary_gap_ticks() of the recording
  ClockInfo clock_;
  std::vector<detail::ClockSegment> segments_;
  std::vector<SiteId> site_by_index_;  // by site frame order - 1
  std::unordered_map<std::uint64_t, std::uint64_t> index_by_address_;  // call site address -> index
  std::string rings_path_;   // the ring file to read if the section is cut short
  std::string rings_note_;   // what reading it gave, for the problem line
  bool rings_read_ = false;
  std::uint64_t recovered_ = 0;
  std::vector<Thread> threads_;
  std::vector<std::uint32_t> file_thread_;  // threads_[i]'s id in the file
  std::unordered_map<std::uint32_t, std::size_t> thread_ids_;  // file id -> threads_ index
  std::unordered_map<std::uint64_t, SiteId> step_sites_;
  std::uint64_t last_emitted_ = 0;
  std::vector<Open> open_before_;  // decode(): the thread's open zones before the chunk
  std::vector<Run> runs_;  // deliver()'s, in thread order
  std::vector<Head> heads_;
  Delivery* direct_ = nullptr;
  Events span_;  // deliver(): a span of merged events on their way to direct_
  std::vector<std::pair<std::uint64_t, ThreadId>> firsts_;  // deliver(): each thread's first event
  std::uint64_t late_ = 0, unbalanced_ = 0, closed_at_stop_ = 0;
};

// A whole file: its process sections (one, or several in a merged file) read side by
// side, their streams merged by time, delivered to the exporters.
class FileReplay final : private Delivery {
 public:
  FileReplay(const std::filesystem::path& path, std::span<Exporter* const> exporters, const ReplayOptions& options)
      : path_(path.string()), exporters_(exporters), progress_(options.progress) {
    if (options.recover_rings) rings_ = options.rings.empty() ? default_rings(path_) : options.rings.string();
  }

  ReplayResult run() {
    find_sections();
    if (version_ == tf::kVersion && !rings_.empty()) sections_.front()->set_rings(rings_);
    for (auto& s : sections_) s->open_session();
    name_processes();
    // A file of one process: its deliveries go to the exporters as the merge gives them.
    if (sections_.size() == 1) sections_.front()->deliver_to(this);
    for (Exporter* x : exporters_) x->on_start(tables_);
    for (;;) {
      Section* next = nullptr;
      for (auto& s : sections_) {
        if (!s->done() && (next == nullptr || s->horizon() < next->horizon())) next = s.get();
      }
      if (next != nullptr) next->step();
      flush();
      if (next == nullptr) break;
      if (progress_) {
        std::uint64_t done = size_ - bytes_in_sections_;
        for (auto& s : sections_) done += s->bytes_read();
        progress_(done, size_);
      }
    }
    if (progress_) progress_(size_, size_);
    return finish();
  }

 private:
  [[noreturn]] void fail(const std::string& what) const { throw std::runtime_error(path_ + ": " + what); }

  // run.rtrace or run.rtrace.partial: run.rtrace.rings (BinaryTraceExporter::rings_path).
  static std::string default_rings(const std::string& path) {
    const std::string_view partial = ".partial";
    std::string base = path;
    if (base.size() > partial.size() && base.compare(base.size() - partial.size(), partial.size(), partial) == 0) {
      base.resize(base.size() - partial.size());
    }
    return base + ".rings";
  }

  // Version 1: the file is one process. Version 2 (`ringtrace merge`): a process frame,
  // then that process's frames, for each process.
  void find_sections() {
    std::FILE* file = std::fopen(path_.c_str(), "rb");
    if (file == nullptr) fail(std::string("cannot open: ") + std::strerror(errno));
    struct Closer {
      std::FILE* f;
      ~Closer() { std::fclose(f); }
    } closer{file};
    std::fseek(file, 0, SEEK_END);
    size_ = static_cast<std::uint64_t>(std::ftell(file));
    std::fseek(file, 0, SEEK_SET);
    char header[tf::kHeaderBytes];
    if (size_ < tf::kHeaderBytes || std::fread(header, 1, sizeof header, file) != sizeof header) {
      fail(size_ == 0 ? "empty file, not a ringtrace trace" : "too short for a ringtrace trace");
    }
    if (std::memcmp(header, tf::kMagic, sizeof tf::kMagic) != 0) fail("not a ringtrace trace file (bad magic)");
    std::memcpy(&version_, header + 8, 4);
    std::memcpy(&flags_, header + 12, 4);
    if (version_ == tf::kVersion) {
      sections_.push_back(std::make_unique<Section>(tables_, path_, tf::kHeaderBytes, size_, ReplayProcess{}, flags_));
      bytes_in_sections_ = size_ - tf::kHeaderBytes;
      return;
    }
    if (version_ != tf::kVersionMerged) {
      fail("file format version " + std::to_string(version_) + ", this reader knows versions 1 and 2");
    }
    std::uint64_t at = tf::kHeaderBytes;
    std::string payload;
    while (at < size_) {
      std::uint32_t h[4];
      std::fseek(file, static_cast<long>(at), SEEK_SET);
      if (at + tf::kFrameHeaderBytes > size_ || std::fread(h, 1, sizeof h, file) != sizeof h) {
        problem_ = "file cut short at byte " + std::to_string(at) + " (inside a process frame's header)";
        break;
      }
      if (h[0] != tf::frame_process || h[1] > tf::kMaxFrameBytes || h[1] < tf::kProcessFrameFixedBytes + 4 ||
          at + tf::kFrameHeaderBytes + h[1] > size_) {
        problem_ = "no process frame at byte " + std::to_string(at) + " of a merged file: damaged or cut short";
        break;
      }
      payload.resize(h[1]);
      if (std::fread(payload.data(), 1, h[1], file) != h[1] || tf::checksum(payload.data(), h[1], flags_) != h[2]) {
        problem_ = "checksum mismatch in the process frame at byte " + std::to_string(at) + ": damaged file";
        break;
      }
      Fields f(payload);
      const auto bytes = f.get<std::uint64_t>();
      ReplayProcess meta;
      meta.offset_ns = f.get<std::int64_t>();
      meta.realtime_aligned = (f.get<std::uint8_t>() & 1) != 0;
      for (int i = 0; i < 7; ++i) f.get<std::uint8_t>();
      meta.source = f.str();
      if (f.bad()) {
        problem_ = "malformed process frame at byte " + std::to_string(at);
        break;
      }
      const std::uint64_t begin = at + tf::kFrameHeaderBytes + h[1];
      const std::uint64_t end = bytes > size_ - begin ? size_ : begin + bytes;
      sections_.push_back(std::make_unique<Section>(tables_, path_, begin, end, std::move(meta), flags_));
      bytes_in_sections_ += end - begin;
      at = end;
    }
    if (sections_.empty() && problem_.empty()) problem_ = "a merged file with no process in it";
  }

  // The file's process is its first one; in a merged file every thread carries its
  // process's pid, a pid seen twice (two hosts, or reused) made unique and the process
  // named after where it came from.
  void name_processes() {
    const bool several = sections_.size() > 1;
    std::map<std::uint32_t, bool> used;
    std::uint32_t next_free = 4194305;  // above Linux's largest pid_max
    bool first = true;
    for (auto& s : sections_) {
      const ReplayProcess& m = s->meta();
      std::uint32_t pid = m.pid;
      std::string name = m.name;
      if (several && (pid == 0 || used.count(pid) != 0)) {
        while (used.count(next_free) != 0) ++next_free;
        name += " (pid " + std::to_string(m.pid) + (m.host.empty() ? "" : " on " + m.host) + ")";
        pid = next_free++;
      }
      used[pid] = true;
      s->place(pid, name, several);
      if (first && s->has_session()) {
        tables_.name = name;
        tables_.pid = pid;
        tables_.clock_info = s->clock();
        first = false;
      }
    }
    for (auto& s : sections_) {
      if (s->has_session()) tables_.clock_info.start_ns = std::min(tables_.clock_info.start_ns, s->clock().start_ns);
    }
  }

  // Hands the exporters every event that no section can precede any more, by time.
  void flush() {
    if (sections_.size() == 1) {
      Section& s = *sections_.front();
      if (s.out.empty()) return;
      emit(std::span<const Event>(s.out.data(), s.out.size()));
      s.out.clear();
      return;
    }
    std::uint64_t horizon = std::numeric_limits<std::uint64_t>::max();
    for (auto& s : sections_) horizon = std::min(horizon, s->horizon());
    batch_.clear();
    for (;;) {
      Section* best = nullptr;
      for (auto& s : sections_) {
        if (s->out_pos < s->out.size() && s->out[s->out_pos].time_ns <= horizon &&
            (best == nullptr || s->out[s->out_pos].time_ns < best->out[best->out_pos].time_ns)) {
          best = s.get();
        }
      }
      if (best == nullptr) break;
      batch_.push_back(best->out[best->out_pos++]);
    }
    for (auto& s : sections_) {
      if (s->out_pos == s->out.size()) {
        s->out.clear();
        s->out_pos = 0;
      }
    }
    if (!batch_.empty()) emit(batch_);
  }

  void emit(std::span<const Event> events) {
    place_threads(events);
    for (std::size_t i = 0; i < events.size(); i += kSpan) {
      hand_over(std::span<const Event>(events.data() + i, std::min(kSpan, events.size() - i)));
    }
    forget_texts();
  }

  // The same, from the section of a file of one process, as its merge goes.
  void first_events(std::span<const std::pair<std::uint64_t, ThreadId>> firsts) override {
    if (seen_count_ == tables_.threads.size()) return;
    fresh_.clear();
    for (const auto& [time, thread] : firsts) note_first(time, thread);
    place_fresh();
  }
  void events(std::span<const Event> span) override { hand_over(span); }
  void end() override { forget_texts(); }

  void hand_over(std::span<const Event> span) {
    for (Exporter* x : exporters_) x->on_events(span, tables_);
    result_.events += span.size();
    // Texts are kept until the batch of their event is handed over (a trace without
    // texts skips the pass).
    if (tables_.texts.empty()) return;
    for (const Event& e : span) {
      if (e.kind == EventKind::arg && (e.flags & EventFlags::text) != 0) handed_texts_.push_back(e.value.u);
    }
  }
  void forget_texts() {
    for (const std::uint64_t id : handed_texts_) tables_.texts.erase(id);
    handed_texts_.clear();
  }

  // Sort indices, as live: by the time of each thread's first event, ties by OS tid.
  // Once every thread known has had an event, no event can be a thread's first.
  void place_threads(std::span<const Event> events) {
    if (seen_count_ == tables_.threads.size()) return;
    fresh_.clear();
    for (const Event& e : events) note_first(e.time_ns, e.thread);
    place_fresh();
  }
  void note_first(std::uint64_t time, ThreadId thread) {
    if (seen_.size() < tables_.threads.size()) seen_.resize(tables_.threads.size(), 0);
    if (seen_[thread] != 0) return;
    seen_[thread] = 1;
    ++seen_count_;
    fresh_.emplace_back(time, thread);
  }
  void place_fresh() {
    std::sort(fresh_.begin(), fresh_.end(), [&](const auto& a, const auto& b) {
      return a.first != b.first ? a.first < b.first : tables_.threads[a.second].os_tid < tables_.threads[b.second].os_tid;
    });
    for (const auto& [time, id] : fresh_) tables_.threads[id].sort_index = next_sort_index_++;
  }

  ReplayResult finish() {
    // Threads that recorded nothing still get a place.
    seen_.resize(tables_.threads.size(), 0);
    for (ThreadId t = 0; t < tables_.threads.size(); ++t) {
      if (seen_[t] == 0) tables_.threads[t].sort_index = next_sort_index_++;
    }
    SessionStats stats;
    bool first = true;
    std::uint64_t stop_ns = 0;
    for (auto& s : sections_) {
      if (!s->has_session()) continue;
      const SessionStats& p = s->stats();
      if (first) {
        stats = p;
        first = false;
      } else {
        stats.threads.insert(stats.threads.end(), p.threads.begin(), p.threads.end());
        stats.recorded += p.recorded;
        stats.dropped += p.dropped;
        stats.dropped_without_ring += p.dropped_without_ring;
        stats.late_events += p.late_events;
        stats.unbalanced_ends += p.unbalanced_ends;
        stats.closed_at_stop += p.closed_at_stop;
        stats.drain_passes += p.drain_passes;
        stats.folded_threads += p.folded_threads;
      }
      stop_ns = std::max(stop_ns, s->clock().stop_ns);
    }
    std::stable_sort(stats.threads.begin(), stats.threads.end(), [&](const ThreadStats& a, const ThreadStats& b) {
      return tables_.threads[a.thread].sort_index < tables_.threads[b.thread].sort_index;
    });
    tables_.clock_info.stop_ns = std::max(stop_ns, tables_.clock_info.start_ns);
    stats.clock = tables_.clock_info;
    for (Exporter* x : exporters_) x->on_finish(tables_, stats);

    ReplayResult r;
    r.events = result_.events;
    r.bytes = size_;
    r.version = version_;
    r.complete = problem_.empty() && !sections_.empty();
    r.problem = problem_;
    for (auto& s : sections_) {
      const ReplayProcess& m = s->meta();
      r.processes.push_back(m);
      r.recovered += m.recovered;
      if (s->rings_read()) r.rings = rings_;
      if (!m.complete) r.complete = false;
      if (r.problem.empty() && !m.problem.empty()) {
        r.problem = sections_.size() == 1 ? m.problem
                                          : "process " + std::to_string(m.pid) +
                                                (m.source.empty() ? "" : " (from " + m.source + ")") + ": " + m.problem;
      }
      if (s->has_session() && (r.realtime_start_ns == 0 || s->realtime_start_ns() < r.realtime_start_ns)) {
        r.realtime_start_ns = s->realtime_start_ns();
      }
    }
    if (!sections_.empty()) {
      r.host = sections_.front()->meta().host;
      r.pid = sections_.front()->meta().pid;
    }
    return r;
  }

  std::string path_;
  std::string rings_;  // the ring file to read if the file is cut short ("" never)
  std::span<Exporter* const> exporters_;
  ProgressFunction progress_;
  std::uint64_t size_ = 0;
  std::uint64_t bytes_in_sections_ = 0;  // of size_: the rest (headers) counts as done
  std::uint32_t version_ = 0;
  std::uint32_t flags_ = 0;  // the header's (tf::kFlagChecksum2)
  std::string problem_;
  Tables tables_;
  std::vector<std::unique_ptr<Section>> sections_;
  std::vector<Event> batch_;
  std::vector<char> seen_;
  std::size_t seen_count_ = 0;  // of seen_, set
  std::vector<std::pair<std::uint64_t, ThreadId>> fresh_;  // place_threads(): threads first seen, by first event
  std::vector<std::uint64_t> handed_texts_;  // texts of the events handed over in the batch so far
  std::uint32_t next_sort_index_ = 0;
  ReplayResult result_;
};

}  // namespace

ReplayResult replay_file(const std::filesystem::path& path, std::span<Exporter* const> exporters,
                         const ReplayOptions& options) {
  FileReplay replay(path, exporters, options);
  return replay.run();
}

ReplayResult replay_file(const std::filesystem::path& path, std::span<Exporter* const> exporters) {
  return replay_file(path, exporters, ReplayOptions{});
}

ReplayResult replay_file(const std::filesystem::path& path, Exporter& exporter) {
  Exporter* const one[] = {&exporter};
  return replay_file(path, std::span<Exporter* const>(one));
}

}  // namespace ringtrace
