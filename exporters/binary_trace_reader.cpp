// Binary trace file reader: frames in file order, each thread's records decoded as the
// drainer decodes them live (same clock segments, same pairing of zone ends with their
// begins, same handling of values, texts and drop markers), and merged across threads
// by time with the recording's merge grace, as the drainer merges. Layout:
// exporters/common/trace_file_format.hpp, docs/file-format.md.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <deque>
#include <limits>
#include <map>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/trace_file_format.hpp"
#include "windows.hpp"  // is_step_marker, step_zone_name
#include "ringtrace/detail/raw_sink.hpp"
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

class FileReplay final : public TraceContext {
 public:
  FileReplay(const std::filesystem::path& path, std::span<Exporter* const> exporters)
      : path_(path.string()), exporters_(exporters) {}
  ~FileReplay() override {
    if (file_ != nullptr) std::fclose(file_);
  }

  ReplayResult run() {
    open();
    prescan();
    std::string payload;
    std::uint32_t type = 0;
    // The exporters start once the session frame (process name, pid, clock) is read.
    bool started = false;
    while (next_frame(type, payload)) {
      const bool ok = apply(type, payload);
      if (have_session_ && !started) {
        for (Exporter* x : exporters_) x->on_start(*this);
        started = true;
      }
      if (!ok) break;
    }
    if (!started) {
      if (result_.problem.empty()) result_.problem = "no session frame: not a complete ringtrace trace";
      for (Exporter* x : exporters_) x->on_start(*this);
    }
    finish();
    result_.complete = complete_ && result_.problem.empty();
    result_.host = host_;
    result_.pid = pid_;
    result_.bytes = size_;
    result_.realtime_start_ns =
        realtime_anchor_ + (clock_.start_ns >= monotonic_anchor_ ? clock_.start_ns - monotonic_anchor_ : 0) -
        (clock_.start_ns < monotonic_anchor_ ? monotonic_anchor_ - clock_.start_ns : 0);
    if (!complete_ && result_.problem.empty()) {
      result_.problem = "file cut short at byte " + std::to_string(offset_) + " (the recording did not stop)";
    }
    return result_;
  }

  // TraceContext
  const SiteInfo& site(SiteId id) const override { return sites_[id].info; }
  std::uint32_t site_count() const override { return static_cast<std::uint32_t>(sites_.size()); }
  const ThreadInfo& thread(ThreadId id) const override { return threads_[id].info; }
  std::uint32_t thread_count() const override { return static_cast<std::uint32_t>(threads_.size()); }
  const ClockInfo& clock() const override { return clock_; }
  const std::string& process_name() const override { return process_name_; }
  std::uint32_t process_id() const override { return pid_; }
  std::string_view text(const Event& e) const override {
    if (e.kind != EventKind::arg || (e.flags & EventFlags::text) == 0) return {};
    const auto it = texts_.find(e.value.u);
    return it == texts_.end() ? std::string_view{} : std::string_view(it->second);
  }

 private:
  struct Site {
    std::string name, function, file, category;
    SiteInfo info{};
  };
  struct Open {
    SiteId site;
    std::uint8_t flags;
    std::uint64_t value;
  };
  SiteId step_zone(std::uint64_t step) {
    auto [it, inserted] = step_sites_.try_emplace(step, static_cast<SiteId>(sites_.size()));
    if (inserted) {
      Site& s = sites_.emplace_back();
      s.name = detail::step_zone_name(step);
      s.info = SiteInfo{s.name.c_str(), s.function.c_str(), s.file.c_str(), 0, SiteKind::zone, SiteOptions::step,
                        s.category.c_str()};
    }
    return it->second;
  }
  std::unordered_map<std::uint64_t, SiteId> step_sites_;
  struct Thread {
    ThreadInfo info;
    std::vector<Record> tail;  // records not yet complete (a record split across chunks)
    std::vector<Open> open;
    std::deque<Event> pending;  // decoded, not yet delivered; in time order
    std::uint64_t last_ticks = 0;
    std::uint64_t last_ns = 0;
    std::uint64_t recorded = 0;
    std::uint64_t reported_drops = 0;
    bool seen = false;  // a first event was delivered
    bool past_stop = false;  // a record after the stop time was read: the rest are too
    bool placed = false;
  };

  [[noreturn]] void fail(const std::string& what) const { throw std::runtime_error(path_ + ": " + what); }

  void open() {
    file_ = std::fopen(path_.c_str(), "rb");
    if (file_ == nullptr) fail(std::string("cannot open: ") + std::strerror(errno));
    std::fseek(file_, 0, SEEK_END);
    size_ = static_cast<std::uint64_t>(std::ftell(file_));
    std::fseek(file_, 0, SEEK_SET);
    char header[tf::kHeaderBytes];
    if (size_ < tf::kHeaderBytes || std::fread(header, 1, sizeof header, file_) != sizeof header) {
      fail(size_ == 0 ? "empty file, not a ringtrace trace" : "too short for a ringtrace trace");
    }
    if (std::memcmp(header, tf::kMagic, sizeof tf::kMagic) != 0) fail("not a ringtrace trace file (bad magic)");
    std::uint32_t version;
    std::memcpy(&version, header + 8, 4);
    if (version != tf::kVersion) {
      fail("file format version " + std::to_string(version) + ", this reader knows version " +
           std::to_string(tf::kVersion));
    }
    offset_ = tf::kHeaderBytes;
  }

  // Walks the frame headers once (no payloads) for the stop time, which comes last in
  // the file but decides which records belong to the capture.
  void prescan() {
    std::uint64_t at = tf::kHeaderBytes;
    while (at + tf::kFrameHeaderBytes <= size_) {
      std::uint32_t h[4];
      std::fseek(file_, static_cast<long>(at), SEEK_SET);
      if (std::fread(h, 1, sizeof h, file_) != sizeof h) break;
      if (h[1] > tf::kMaxFrameBytes || at + tf::kFrameHeaderBytes + h[1] > size_) break;
      if (h[0] == tf::frame_stop && h[1] == 8) {
        std::uint64_t stop;
        if (std::fread(&stop, 1, 8, file_) == 8) {
          stop_ticks_ = stop;
          has_stop_ = true;
        }
      }
      at += tf::kFrameHeaderBytes + h[1];
    }
    std::fseek(file_, static_cast<long>(tf::kHeaderBytes), SEEK_SET);
  }

  bool next_frame(std::uint32_t& type, std::string& payload) {
    if (offset_ == size_) return false;  // clean end of data (complete_ says whether it is the end)
    std::uint32_t h[4];
    if (offset_ + tf::kFrameHeaderBytes > size_ || std::fread(h, 1, sizeof h, file_) != sizeof h) {
      result_.problem = "file cut short at byte " + std::to_string(offset_) + " (inside a frame header)";
      return false;
    }
    if (h[1] > tf::kMaxFrameBytes) {
      result_.problem = "frame at byte " + std::to_string(offset_) + " claims " + std::to_string(h[1]) +
                        " bytes (at most " + std::to_string(tf::kMaxFrameBytes) + "): damaged file";
      return false;
    }
    if (offset_ + tf::kFrameHeaderBytes + h[1] > size_) {
      result_.problem = "file cut short at byte " + std::to_string(offset_) + " (a frame of " + std::to_string(h[1]) +
                        " bytes, " + std::to_string(size_ - offset_ - tf::kFrameHeaderBytes) + " left)";
      return false;
    }
    payload.resize(h[1]);
    if (h[1] != 0 && std::fread(payload.data(), 1, h[1], file_) != h[1]) {
      result_.problem = "read error at byte " + std::to_string(offset_);
      return false;
    }
    if (tf::checksum(payload.data(), payload.size()) != h[2]) {
      result_.problem = "checksum mismatch in the frame at byte " + std::to_string(offset_) + " (type " +
                        std::to_string(h[0]) + "): damaged file, read up to there";
      return false;
    }
    frame_offset_ = offset_;
    offset_ += tf::kFrameHeaderBytes + h[1];
    type = h[0];
    return true;
  }

  bool malformed(const char* what) {
    result_.problem = std::string("malformed ") + what + " frame at byte " + std::to_string(frame_offset_);
    return false;
  }

  bool apply(std::uint32_t type, const std::string& payload) {
    Fields f(payload);
    if (type != tf::frame_session && !have_session_) {
      result_.problem = "the first frame (byte " + std::to_string(frame_offset_) + ") is not the session's";
      return false;
    }
    switch (type) {
      case tf::frame_session: {
        pid_ = f.get<std::uint32_t>();
        clock_.tsc = f.get<std::uint8_t>() != 0;
        f.get<std::uint8_t>();
        f.get<std::uint16_t>();
        clock_.ticks_per_second = f.get<double>();
        clock_.start_ns = f.get<std::uint64_t>();
        realtime_anchor_ = f.get<std::uint64_t>();
        monotonic_anchor_ = f.get<std::uint64_t>();
        grace_ns_ = f.get<std::uint64_t>();
        f.get<std::uint64_t>();  // ring size: informational
        process_name_ = f.str();
        host_ = f.str();
        if (f.bad()) return malformed("session");
        have_session_ = true;
        Site& dropped = sites_.emplace_back();
        dropped.name = "ringtrace: dropped events";
        dropped.info = SiteInfo{dropped.name.c_str(), "", "", 0, SiteKind::instant, 0, ""};
        return true;
      }
      case tf::frame_segment: {
        detail::ClockSegment s;
        s.base_ticks = f.get<std::uint64_t>();
        s.base_ns = f.get<std::uint64_t>();
        s.mult = f.get<std::uint64_t>();
        if (f.bad()) return malformed("clock segment");
        segments_.push_back(s);
        clock_.recalibrations = segments_.size() > 1 ? segments_.size() - 1 : 0;
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
        (void)address;  // informational: chunks refer to sites by index
        Site& stored = sites_.emplace_back(std::move(s));
        stored.info = SiteInfo{stored.name.c_str(), stored.function.c_str(), stored.file.c_str(), line,
                               static_cast<SiteKind>(kind), options, stored.category.c_str(),
                               every == 0 ? 1u : static_cast<std::uint32_t>(every)};
        site_by_index_.push_back(static_cast<SiteId>(sites_.size() - 1));  // index = position + 1
        return true;
      }
      case tf::frame_thread: {
        const auto id = f.get<std::uint32_t>();
        const auto os_tid = f.get<std::uint64_t>();
        std::string name = f.str();
        if (f.bad()) return malformed("thread");
        Thread& t = thread_of(id);
        t.info.os_tid = os_tid;
        t.info.name = std::move(name);
        return true;
      }
      case tf::frame_chunk: {
        const auto id = f.get<std::uint32_t>();
        const auto encoding = f.get<std::uint32_t>();
        if (f.bad()) return malformed("chunk");
        if (encoding != tf::kPackedRecords) {
          result_.problem = "chunk at byte " + std::to_string(frame_offset_) + " has encoding " +
                            std::to_string(encoding) + ", which this reader does not know";
          return false;
        }
        Thread& t = thread_of(id);
        if (!unpack(f.rest(), t.tail)) return malformed("chunk");
        return decode(t);
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
      default:
        return true;  // a frame type of a later minor revision: skipped
    }
  }

  Thread& thread_of(std::uint32_t file_id) {
    auto [it, inserted] = thread_ids_.try_emplace(file_id, static_cast<ThreadId>(threads_.size()));
    if (inserted) {
      Thread& t = threads_.emplace_back();
      t.info.id = it->second;
      t.info.sort_index = std::numeric_limits<std::uint32_t>::max();
    }
    return threads_[it->second];
  }

  // The clock segment a live drainer would have used: the newest one (of those read so
  // far) whose base is not after `ticks`, else the oldest.
  std::uint64_t to_ns(std::uint64_t ticks) const {
    if (segments_.empty()) return ticks;
    std::size_t i = segments_.size() - 1;
    while (i > 0 && ticks < segments_[i].base_ticks) --i;
    const detail::ClockSegment& s = segments_[i];
    const auto scale = [](std::uint64_t d, std::uint64_t m) {
      return static_cast<std::uint64_t>((static_cast<unsigned __int128>(d) * m) >> 32);
    };
    if (ticks >= s.base_ticks) return s.base_ns + scale(ticks - s.base_ticks, s.mult);
    const std::uint64_t back = scale(s.base_ticks - ticks, s.mult);
    return back > s.base_ns ? 0 : s.base_ns - back;
  }

  // Unpacked records carry the site's index (1, 2, ...) where the ring had its address.
  SiteId site_id(std::uint64_t word) const {
    const std::uint64_t index = word >> 3;
    return index == 0 || index > site_by_index_.size() ? SiteId{0xFFFFFFFFu} : site_by_index_[index - 1];
  }

  // Packed records (docs/file-format.md) back into ring records. False if malformed.
  static bool unpack(std::string_view in, std::vector<Record>& out) {
    const auto* p = reinterpret_cast<const unsigned char*>(in.data());
    const auto* const end = p + in.size();
    const auto varint = [&](std::uint64_t& v) {
      v = 0;
      for (unsigned shift = 0; shift < 64; shift += 7) {
        if (p == end) return false;
        const unsigned char b = *p++;
        v |= static_cast<std::uint64_t>(b & 0x7F) << shift;
        if ((b & 0x80) == 0) return true;
      }
      return false;
    };
    const auto unzigzag = [](std::uint64_t v) { return (v >> 1) ^ (~(v & 1) + 1); };
    std::uint64_t last = 0;
    while (p < end) {
      std::uint64_t header, ticks = 0;
      if (!varint(header)) return false;
      const std::uint64_t kind = header & 7;
      if ((header & 8) == 0) {
        std::uint64_t delta;
        if (!varint(delta)) return false;
        ticks = last + unzigzag(delta);
        last = ticks;
      }
      out.push_back(Record{ticks, ((header >> 4) << 3) | kind});
      if (kind <= detail::record_instant) continue;
      std::uint64_t payload;
      if (kind == detail::record_value_double) {
        if (end - p < 8) return false;
        std::memcpy(&payload, p, 8);
        p += 8;
        out.push_back(Record{payload, 0});
      } else if (kind == detail::record_text) {
        std::uint64_t original;
        if (!varint(payload) || !varint(original)) return false;
        const std::uint64_t bytes = payload & ~(std::uint64_t{1} << 63);
        if (bytes > 0xFFFF || static_cast<std::uint64_t>(end - p) < bytes) return false;
        out.push_back(Record{payload, original});
        const std::size_t at = out.size();
        out.resize(at + (bytes + sizeof(Record) - 1) / sizeof(Record), Record{0, 0});
        if (bytes != 0) std::memcpy(out.data() + at, p, bytes);
        p += bytes;
      } else {
        if (!varint(payload)) return false;
        out.push_back(Record{unzigzag(payload), 0});
      }
    }
    return true;
  }

  // Decodes t's complete records into t.pending; keeps an incomplete last record.
  bool decode(Thread& t) {
    const Record* r = t.tail.data();
    const std::size_t n = t.tail.size();
    std::size_t i = 0;
    const ThreadId thread = t.info.id;
    while (i < n) {
      const std::uint64_t kind = r[i].word & detail::record_kind_mask;
      std::size_t slots = kind <= detail::record_instant ? 1 : 2;
      if (kind == detail::record_text) {
        if (i + 1 >= n) break;
        const std::uint64_t bytes = r[i + 1].ticks & ~(std::uint64_t{1} << 63);
        if (bytes > 0xFFFF) {
          result_.problem = "text record of " + std::to_string(bytes) + " bytes in the chunk ending at byte " +
                            std::to_string(offset_) + ": damaged file";
          return false;
        }
        slots = 2 + (bytes + sizeof(Record) - 1) / sizeof(Record);
      }
      if (i + slots > n) break;  // the rest is in the thread's next chunk
      const Record& rec = r[i];
      const std::size_t at = i;
      i += slots;
      // Past the stop time: not part of the capture (a live session delivers nothing
      // stamped after it); values and texts carry no time and go with their zone.
      if (has_stop_ && (t.past_stop || rec.ticks > stop_ticks_)) {
        t.past_stop = true;
        continue;
      }
      const std::uint64_t ticks = rec.ticks < t.last_ticks ? t.last_ticks : rec.ticks;
      t.last_ticks = ticks;
      Event e{to_ns(ticks), 0, thread, EventKind::instant, 0, 0, static_cast<std::uint32_t>(t.open.size()), {}};
      e.value.u = 0;
      if (e.time_ns < t.last_ns) e.time_ns = t.last_ns;  // a thread's time never goes back
      t.last_ns = e.time_ns;
      const auto unknown_site = [&] {
        result_.problem = "a record refers to a call site the file never described (chunk ending at byte " +
                          std::to_string(offset_) + "): damaged file";
        return false;
      };
      switch (kind) {
        case detail::record_zone_begin:
        case detail::record_region_begin: {
          e.site = site_id(rec.word);
          if (e.site == 0xFFFFFFFFu) return unknown_site();
          e.kind = EventKind::zone_begin;
          if (kind == detail::record_region_begin) {
            e.flags = EventFlags::region;
            e.value.u = r[at + 1].ticks;
            if (detail::is_step_marker(sites_[e.site].info)) [[unlikely]] {
              e.site = step_zone(e.value.u);  // as the live drainer names Session::step()'s zones
              e.flags = 0;
              e.value.u = 0;
            }
          }
          t.open.push_back(Open{e.site, e.flags, e.value.u});
          break;
        }
        case detail::record_zone_end: {
          if (t.open.empty()) {
            ++unbalanced_;
            continue;
          }
          const Open open = t.open.back();
          t.open.pop_back();
          e.kind = EventKind::zone_end;
          e.site = open.site;
          e.flags = open.flags;
          e.value.u = open.value;
          e.depth = static_cast<std::uint32_t>(t.open.size());
          break;
        }
        case detail::record_instant:
          e.site = site_id(rec.word);
          if (e.site == 0xFFFFFFFFu) return unknown_site();
          break;
        case detail::record_value_int:
        case detail::record_value_double: {
          e.site = site_id(rec.word);
          if (e.site == 0xFFFFFFFFu) return unknown_site();
          switch (sites_[e.site].info.kind) {
            case SiteKind::value: e.kind = EventKind::arg; break;
            case SiteKind::flow_out: e.kind = EventKind::flow_out; break;
            case SiteKind::flow_in: e.kind = EventKind::flow_in; break;
            case SiteKind::async_begin: e.kind = EventKind::async_begin; break;
            case SiteKind::async_end: e.kind = EventKind::async_end; break;
            default: e.kind = EventKind::counter; break;
          }
          if (kind == detail::record_value_double) e.flags = EventFlags::value_double;
          e.value.u = r[at + 1].ticks;
          break;
        }
        case detail::record_text: {
          e.site = site_id(rec.word);
          if (e.site == 0xFFFFFFFFu) return unknown_site();
          const std::uint64_t header = r[at + 1].ticks;
          const std::uint64_t bytes = header & ~(std::uint64_t{1} << 63);
          e.kind = EventKind::arg;
          e.flags = EventFlags::text | ((header >> 63) != 0 ? EventFlags::truncated : 0);
          e.text_size = static_cast<std::uint16_t>(bytes);
          e.value.u = next_text_;
          texts_.emplace(next_text_++, std::string(reinterpret_cast<const char*>(&r[at + 2]), bytes));
          break;
        }
        case detail::record_dropped:
          e.kind = EventKind::dropped;
          e.value.u = r[at + 1].ticks;
          t.reported_drops += e.value.u;
          break;
        default:
          continue;
      }
      if (e.kind != EventKind::dropped) ++t.recorded;
      t.pending.push_back(e);
    }
    t.tail.erase(t.tail.begin(), t.tail.begin() + static_cast<std::ptrdiff_t>(std::min(i, n)));
    return true;
  }

  // Delivers every pending event at or before `watermark` (a pass frame's time, before
  // which every record is in the file already; everything at the end), ordered by time
  // across threads, as the live merge does.
  void deliver(std::uint64_t watermark) {
    batch_.clear();
    for (Thread& t : threads_) {
      while (!t.pending.empty() && t.pending.front().time_ns <= watermark) {
        batch_.push_back(t.pending.front());
        t.pending.pop_front();
      }
    }
    if (batch_.empty()) return;
    std::stable_sort(batch_.begin(), batch_.end(), [](const Event& a, const Event& b) { return a.time_ns < b.time_ns; });
    for (Event& e : batch_) {
      if (e.time_ns < last_emitted_) {  // published later than the grace allows: raised, as live
        e.time_ns = last_emitted_;
        // Values, texts and flows carry no time of their own (they take their thread's
        // previous one): raised silently, as live.
        if (e.kind != EventKind::arg && e.kind != EventKind::flow_out && e.kind != EventKind::flow_in) {
          e.flags |= EventFlags::late;
          ++late_;
        }
      }
      last_emitted_ = e.time_ns;
    }
    place_threads();
    emit(batch_);
    for (const Event& e : batch_) {
      if (e.kind == EventKind::arg && (e.flags & EventFlags::text) != 0) texts_.erase(e.value.u);
    }
  }

  // Sort indices, as live: by the time of each thread's first event, ties by OS tid.
  void place_threads() {
    std::vector<std::pair<std::uint64_t, ThreadId>> fresh;
    for (const Event& e : batch_) {
      Thread& t = threads_[e.thread];
      if (!t.seen) {
        t.seen = true;
        fresh.emplace_back(e.time_ns, e.thread);
      }
    }
    std::sort(fresh.begin(), fresh.end(), [&](const auto& a, const auto& b) {
      return a.first != b.first ? a.first < b.first : threads_[a.second].info.os_tid < threads_[b.second].info.os_tid;
    });
    for (const auto& [time, id] : fresh) threads_[id].info.sort_index = next_sort_index_++;
  }

  void emit(const std::vector<Event>& events) {
    for (std::size_t i = 0; i < events.size(); i += 16384) {
      const std::span<const Event> part(events.data() + i, std::min<std::size_t>(16384, events.size() - i));
      for (Exporter* x : exporters_) x->on_events(part, *this);
      result_.events += part.size();
    }
  }

  void finish() {
    deliver(std::numeric_limits<std::uint64_t>::max());
    // Zones left open are closed at the stop time (or, in a cut file, the last time
    // read), flagged closed_at_stop; drops not yet reported by a marker come last.
    const std::uint64_t end_ns =
        std::max(has_stop_ ? to_ns(stop_ticks_) : 0, std::max(last_emitted_, clock_.start_ns));
    clock_.stop_ns = end_ns;
    batch_.clear();
    for (Thread& t : threads_) {
      while (!t.open.empty()) {
        const Open open = t.open.back();
        t.open.pop_back();
        Event e{end_ns, open.site, t.info.id, EventKind::zone_end,
                static_cast<std::uint8_t>(open.flags | EventFlags::closed_at_stop), 0,
                static_cast<std::uint32_t>(t.open.size()), {}};
        e.value.u = open.value;
        batch_.push_back(e);
        ++closed_at_stop_;
      }
      std::uint64_t dropped = t.reported_drops;
      if (has_footer_) {
        for (const ThreadStats& s : footer_.threads) {
          if (s.thread == t.info.id) dropped = std::max(dropped, s.dropped);
        }
      }
      if (dropped > t.reported_drops) {
        Event e{end_ns, 0, t.info.id, EventKind::dropped, 0, 0, 0, {}};
        e.value.u = dropped - t.reported_drops;
        batch_.push_back(e);
      }
    }
    // Threads that recorded nothing still get a place.
    for (Thread& t : threads_) {
      if (!t.seen) {
        t.seen = true;
        t.info.sort_index = next_sort_index_++;
      }
    }
    if (!batch_.empty()) emit(batch_);
    SessionStats stats;
    if (has_footer_) stats = footer_;
    stats.threads.clear();
    stats.recorded = 0;
    std::uint64_t dropped_total = 0;
    std::vector<ThreadId> order(threads_.size());
    for (ThreadId i = 0; i < order.size(); ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(),
                     [&](ThreadId a, ThreadId b) { return threads_[a].info.sort_index < threads_[b].info.sort_index; });
    for (ThreadId id : order) {
      const Thread& t = threads_[id];
      ThreadStats s{t.info.id, t.info.os_tid, t.info.name, t.recorded, t.reported_drops};
      if (has_footer_) {
        for (const ThreadStats& f : footer_.threads) {
          if (f.thread == id) s.dropped = std::max(s.dropped, f.dropped);
        }
      }
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
    for (Exporter* x : exporters_) x->on_finish(*this, stats);
  }

  std::string path_;
  std::span<Exporter* const> exporters_;
  std::FILE* file_ = nullptr;
  std::uint64_t size_ = 0;
  std::uint64_t offset_ = 0;
  std::uint64_t frame_offset_ = 0;
  ReplayResult result_;
  bool have_session_ = false;
  bool complete_ = false;
  bool has_stop_ = false;
  bool has_footer_ = false;
  std::uint64_t stop_ticks_ = 0;
  SessionStats footer_;

  std::uint32_t pid_ = 0;
  std::string process_name_;
  std::string host_;
  std::uint64_t realtime_anchor_ = 0, monotonic_anchor_ = 0;
  std::uint64_t grace_ns_ = 0;
  ClockInfo clock_;
  std::vector<detail::ClockSegment> segments_;
  std::deque<Site> sites_;  // a deque: SiteInfo's pointers into its strings stay valid
  std::vector<SiteId> site_by_index_;  // by site frame order - 1
  std::vector<Thread> threads_;
  std::unordered_map<std::uint32_t, ThreadId> thread_ids_;
  std::unordered_map<std::uint64_t, std::string> texts_;
  std::uint64_t next_text_ = 0;
  std::vector<Event> batch_;
  std::uint64_t last_emitted_ = 0;
  std::uint64_t late_ = 0, unbalanced_ = 0, closed_at_stop_ = 0;
  std::uint32_t next_sort_index_ = 0;
};

}  // namespace

ReplayResult replay_file(const std::filesystem::path& path, std::span<Exporter* const> exporters) {
  FileReplay replay(path, exporters);
  return replay.run();
}

ReplayResult replay_file(const std::filesystem::path& path, Exporter& exporter) {
  Exporter* const one[] = {&exporter};
  return replay_file(path, std::span<Exporter* const>(one));
}

}  // namespace ringtrace
