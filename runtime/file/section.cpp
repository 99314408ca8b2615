#include "section.hpp"
#include "memory_names.hpp"  // symbols: memory sites named

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "file_paths.hpp"    // open_input
#include "memory_names.hpp"  // symbols: memory sites named
#include "node_id.hpp"       // default_node_id
#include "packed_records.hpp"
#include "steps.hpp"
#include "trace_file_format.hpp"

namespace ringtrace::detail {

namespace tf = trace_file;

namespace {

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

}  // namespace

Section::~Section() {
  if (file_ != nullptr) std::fclose(file_);
}

std::uint64_t Section::realtime_start_ns() const {
  return realtime_anchor_ + (raw_start_ns_ >= monotonic_anchor_ ? raw_start_ns_ - monotonic_anchor_ : 0) -
         (raw_start_ns_ < monotonic_anchor_ ? monotonic_anchor_ - raw_start_ns_ : 0);
}

bool Section::open_session() {
  try {
    file_ = ::fdopen(open_input(path_), "rb");  // a regular file, never a FIFO that blocks
  } catch (const std::exception& e) {
    meta_.problem = e.what();
    done_ = true;
    return false;
  }
  if (file_ == nullptr) {
    meta_.problem = std::string("cannot open: ") + std::strerror(errno);
    done_ = true;
    return false;
  }
  frames_ = std::make_unique<FrameReader>(file_, begin_, end_, header_);
  // The stop time comes last in the section but decides which records belong to the capture.
  std::string stop;
  if (frames_->peek_last(tf::frame_stop, 8, stop)) {
    std::memcpy(&stop_ticks_, stop.data(), 8);
    has_stop_ = true;
  }
  if (!frames_->next(frame_)) {
    meta_.problem =
        frames_->problem().empty() ? "no session frame: not a complete ringtrace trace" : frames_->problem();
  } else if (frame_.type != tf::frame_session) {
    meta_.problem = "the first frame (byte " + std::to_string(frame_.offset) + ") is not the session's";
  } else if (apply(frame_)) {
    return true;
  }
  done_ = true;
  finish();
  return false;
}

void Section::place(std::uint32_t pid, std::string name, bool tag_threads) {
  assigned_pid_ = tag_threads ? pid : 0;
  meta_.stream_pid = assigned_pid_;
  placed_pid_ = pid;
  tables_.process_names[pid] = std::move(name);
  tables_.node_ids[pid] = meta_.node_id.empty() ? default_node_id(meta_.host, meta_.pid) : meta_.node_id;
}

void Section::step() {
  while (!done_) {
    if (!frames_->next(frame_) || !apply(frame_)) {
      if (meta_.problem.empty()) meta_.problem = frames_->problem();
      done_ = true;
      if (!complete_ && have_session_ && !rings_path_.empty()) recover();
      finish();
      return;
    }
    if (frame_.type == tf::frame_pass || delivered_early_) {
      delivered_early_ = false;
      return;
    }
  }
}

SiteId Section::step_site() {
  if (step_site_ == kInvalidSite) {
    ReplaySite s;
    s.name = kStepSiteName;
    step_site_ = tables_.add_site(std::move(s), 0, SiteKind::zone, SiteOptions::step, 1);
  }
  return step_site_;
}

ThreadId Section::steps_thread() {
  if (steps_thread_ == kNoThread) {
    steps_thread_ = static_cast<ThreadId>(tables_.threads.size());
    ThreadInfo& info = tables_.threads.emplace_back();
    info.id = steps_thread_;
    info.name = kStepsThreadName;
    info.sort_index = std::numeric_limits<std::uint32_t>::max();
    info.pid = assigned_pid_;
  }
  return steps_thread_;
}

SiteId Section::named(SiteId where, std::string_view name) {
  return runtime_names_.find(
      where, name,
      [&](SiteId at, std::string_view text) {
        ReplaySite s;
        s.name.assign(text);
        const SiteId id = tables_.add_site(std::move(s), 0, SiteKind::zone, 0, 1);
        // The call site's strings are shared (a deque's elements never move).
        const SiteInfo& w = tables_.sites[at].info;
        SiteInfo& info = tables_.sites[id].info;
        info = SiteInfo{info.name, w.function, w.file, w.line, SiteKind::zone, w.options, w.category, 1};
        return std::pair<SiteId, std::string_view>(id, tables_.sites[id].name);
      },
      [&] {
        if (runtime_overflow_ == kInvalidSite) {
          ReplaySite s;
          s.name = kRuntimeNamesOverflow;
          runtime_overflow_ = tables_.add_site(std::move(s), 0, SiteKind::zone, 0, 1);
        }
        return runtime_overflow_;
      });
}

SiteId Section::function_site(std::uint64_t address, std::uint32_t module, std::string name, std::string file,
                              std::uint32_t line, bool named, bool resolved) {
  // Named from the module's file when the recording did not name it, or only as
  // `module+0x...` and there are other places to look (a debug file, a copy with symbols).
  if (module != 0 && (!named || (!resolved && !symbol_paths_.empty()))) {
    std::unique_ptr<symbols::Symbolizer>& symbolizer = symbolizers_[module - 1];
    if (!symbolizer)
      symbolizer =
          std::make_unique<symbols::Symbolizer>(std::vector<symbols::Module>{modules_[module - 1]}, symbol_paths_);
    const symbols::Symbol& symbol = symbolizer->resolve(address);
    if (!named || symbol.resolved) {
      name = symbol.function;
      file = symbol.file;
      line = symbol.line;
    }
  } else if (!named) {
    char hex[24];
    std::snprintf(hex, sizeof hex, "0x%llx", static_cast<unsigned long long>(address));
    name = hex;
  }
  ReplaySite site;
  site.function = name;
  site.name = std::move(name);
  site.file = std::move(file);
  return tables_.add_site(std::move(site), line, SiteKind::zone, SiteOptions::function, 1);
}

bool Section::malformed(const Frame& frame, const char* what) {
  meta_.problem = std::string("malformed ") + what + " frame at byte " + std::to_string(frame.offset);
  return false;
}

// Format 1's frames differ from format 2's in the session (no per-thread-counters byte,
// the boundary gap last and optional, the ring in records), the call site (no index: the
// frames' order gives it) and the chunk (an encoding word before the records); the rest
// is the same.
bool Section::apply(const Frame& frame) {
  Fields f(frame.payload);
  const bool v1 = header_.major == 1;
  switch (frame.type) {
    case tf::frame_session: {
      if (have_session_) return malformed(frame, "second session");
      meta_.pid = f.get<std::uint32_t>();
      clock_.tsc = f.get<std::uint8_t>() != 0;
      f.get<std::uint8_t>();  // per-thread counters (the sites' options already say)
      const std::uint16_t flags = f.get<std::uint16_t>();
      pipeline_.set_accounts_memory((flags & (tf::kSessionMemory | tf::kSessionMemorySized)) != 0);
      if ((flags & tf::kSessionMemorySized) != 0) pipeline_.heap() = HeapTracker::sized();
      clock_.ticks_per_second = f.get<double>();
      raw_start_ns_ = f.get<std::uint64_t>();
      realtime_anchor_ = f.get<std::uint64_t>();
      monotonic_anchor_ = f.get<std::uint64_t>();
      grace_ns_ = f.get<std::uint64_t>();
      f.get<std::uint64_t>();  // ring size: informational
      if (!v1) boundary_gap_ = f.get<std::uint64_t>();
      meta_.name = f.str();
      meta_.host = f.str();
      if (f.bad()) return malformed(frame, "session");
      // Format-1 files written before boundaries were spaced end here: read as they were live.
      if (v1) boundary_gap_ = f.rest().size() >= 8 ? f.get<std::uint64_t>() : 0;
      clock_.start_ns = shift(raw_start_ns_);
      have_session_ = true;
      return true;
    }
    case tf::frame_segment: {
      ClockSegment s;
      s.base_ticks = f.get<std::uint64_t>();
      s.base_ns = f.get<std::uint64_t>();
      s.mult = f.get<std::uint64_t>();
      if (f.bad()) return malformed(frame, "clock segment");
      segments_.push(s);
      ++segments_read_;
      clock_.recalibrations = segments_read_ - 1;
      // The session frame's rate is start()'s provisional one: the segments are fitted.
      if (clock_.tsc && s.mult != 0) clock_.ticks_per_second = 4294967296.0 * 1e9 / static_cast<double>(s.mult);
      return true;
    }
    case tf::frame_site: {
      const std::uint32_t index = v1 ? static_cast<std::uint32_t>(site_by_index_.size() + 1) : f.get<std::uint32_t>();
      const auto address = f.get<std::uint64_t>();
      const auto kind = f.get<std::uint8_t>();
      const auto options = f.get<std::uint8_t>();
      const auto every = f.get<std::uint16_t>();  // sampling rate (0 in format-1 files before it: 1)
      const auto line = f.get<std::uint32_t>();
      ReplaySite s;
      s.name = f.str();
      s.function = f.str();
      s.file = f.str();
      s.category = f.str();
      if (f.bad() || kind > static_cast<std::uint8_t>(SiteKind::async_end)) return malformed(frame, "call site");
      // Indices come in order, each once (1, 2, ...).
      if (index != site_by_index_.size() + 1) return malformed(frame, "call site (out of order)");
      site_by_index_.push_back(tables_.add_site(std::move(s), line, static_cast<SiteKind>(kind), options, every));
      index_by_address_.emplace(address, index);  // for records read from a ring file
      return true;
    }
    case tf::frame_module: {
      const auto index = f.get<std::uint32_t>();
      f.get<std::uint32_t>();
      symbols::Module m;
      m.base = f.get<std::uint64_t>();
      m.low = f.get<std::uint64_t>();
      m.high = f.get<std::uint64_t>();
      m.build_id = f.str();
      m.path = f.str();
      if (f.bad()) return malformed(frame, "module");
      if (index != modules_.size() + 1) return malformed(frame, "module (out of order)");
      modules_.push_back(std::move(m));
      symbolizers_.emplace_back();
      return true;
    }
    case tf::frame_function: {
      const auto index = f.get<std::uint32_t>();
      const auto module = f.get<std::uint32_t>();
      const auto address = f.get<std::uint64_t>();
      const auto line = f.get<std::uint32_t>();
      const auto flags = f.get<std::uint8_t>();
      f.get<std::uint8_t>();
      f.get<std::uint16_t>();
      std::string name = f.str();
      std::string file = f.str();
      if (f.bad() || module > modules_.size()) return malformed(frame, "function");
      if (index != function_by_index_.size() + 1) return malformed(frame, "function (out of order)");
      function_by_index_.push_back(function_site(address, module, std::move(name), std::move(file), line,
                                                 (flags & tf::kFunctionNamed) != 0,
                                                 (flags & tf::kFunctionResolved) != 0));
      function_index_by_address_.emplace(address, index);  // for records read from a ring file
      return true;
    }
    case tf::frame_thread: {
      const auto id = f.get<std::uint32_t>();
      const auto os_tid = f.get<std::uint64_t>();
      std::string name = f.str();
      if (f.bad()) return malformed(frame, "thread");
      Thread& t = thread_of(id);
      t.named = true;
      ThreadInfo& info = tables_.threads[t.state.thread];
      info.os_tid = os_tid;
      info.name = std::move(name);
      if (os_tid == 0 && info.name == kStepsThreadName && steps_thread_ == kNoThread) {
        steps_thread_ = t.state.thread;  // a stream's steps track: its markers' zones go there
        steps_thread_in_file_ = true;
      }
      return true;
    }
    case tf::frame_chunk: {
      const auto id = f.get<std::uint32_t>();
      if (v1 && f.get<std::uint32_t>() != 1 && !f.bad()) {
        meta_.problem = "chunk at byte " + std::to_string(frame.offset) + " has an encoding this reader does not know";
        return false;
      }
      if (f.bad()) return malformed(frame, "chunk");
      const std::string_view packed = f.rest();
      std::string error;
      ring_.clear();
      const std::span<const unsigned char> bytes(reinterpret_cast<const unsigned char*>(packed.data()), packed.size());
      if (!(v1 ? tf::unpack_chunk_v1(bytes, ring_, error) : tf::unpack_chunk(bytes, ring_, error))) {
        meta_.problem = "malformed chunk frame at byte " + std::to_string(frame.offset) + ": " + error;
        return false;
      }
      Thread& t = thread_of(id);
      t.ring_bytes += ring_.size() * 8;  // the unpacked records are the ring's, byte for byte
      if (!decode_records(t, ring_, frame.offset)) return false;
      bound_pending();
      return true;
    }
    case tf::frame_pass: {
      const auto complete = f.get<std::uint64_t>();
      if (f.bad()) return malformed(frame, "pass");
      deliver(to_ns(complete));
      return true;
    }
    case tf::frame_stop:
      return true;  // read by open_session()
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
      if (f.bad() || n > frame.payload.size() / 28) return malformed(frame, "stats");
      for (std::uint32_t i = 0; i < n; ++i) {
        ThreadStats t;
        t.thread = f.get<std::uint32_t>();
        t.os_tid = f.get<std::uint64_t>();
        t.recorded = f.get<std::uint64_t>();
        t.dropped = f.get<std::uint64_t>();
        s.threads.push_back(std::move(t));
      }
      if (f.bad()) return malformed(frame, "stats");
      footer_ = std::move(s);
      has_footer_ = true;
      return true;
    }
    case tf::frame_functions: {
      if (v1) break;
      FunctionStats s;
      s.unwound = f.get<std::uint64_t>();
      s.too_deep = f.get<std::uint64_t>();
      s.short_calls = f.get<std::uint64_t>();
      s.excluded = f.get<std::uint64_t>();
      s.inlined = f.get<std::uint64_t>();
      const auto n = f.get<std::uint32_t>();
      if (f.bad() || n > frame.payload.size() / tf::kFunctionsEntryMinBytes) return malformed(frame, "functions");
      for (std::uint32_t i = 0; i < n; ++i) {
        const auto list = f.get<std::uint8_t>();
        const auto calls = f.get<std::uint64_t>();
        std::string name = f.str();
        if (f.bad() || list > tf::kListInlined) return malformed(frame, "functions");
        (list == tf::kListShort ? s.short_by_function : s.inlined_by_function).emplace_back(std::move(name), calls);
      }
      functions_ = std::move(s);
      return true;
    }
    case tf::frame_end:
      complete_ = true;
      return true;
    case tf::frame_process:
      return malformed(frame, "process section header inside a process section: damaged");
    case tf::frame_metadata: {
      if (v1) return true;
      TraceMetadata m;
      m.key = f.str();
      const auto type = f.get<std::uint8_t>();
      if (type == 0) {
        m.value = static_cast<std::int64_t>(f.get<std::uint64_t>());
      } else {
        m.value = f.str();
      }
      if (f.bad() || type > 1) return malformed(frame, "metadata");
      tables_.add_fact(std::move(m));
      return true;
    }
    case tf::frame_switches:
      if (v1) break;
      return read_switches(frame, frame.payload);
    case tf::frame_memory: {
      if (v1) break;
      const auto max_blocks = f.get<std::uint64_t>();
      const auto stack_bytes = f.get<std::uint64_t>();
      std::string method = f.str();
      if (f.bad()) return malformed(frame, "memory");
      HeapTracker& heap = pipeline_.heap();
      if (heap.has_blocks() && !heap.seen()) heap = HeapTracker(static_cast<std::size_t>(max_blocks));
      heap.set_stack_bytes(stack_bytes);
      stack_method_ = std::move(method);
      return true;
    }
    case tf::frame_counts:
      if (v1) break;
      return read_counts(frame);
    case tf::frame_node: {
      if (v1) break;
      std::string node = f.str();
      if (f.bad()) return malformed(frame, "node");
      meta_.node_id = std::move(node);
      tables_.node_ids[placed_pid_] = meta_.node_id;  // place() came before any frame but the session's
      return true;
    }
    default:
      break;
  }
  // A frame type of a later minor version: skipped, and said.
  meta_.skipped_frames += 1;
  return true;
}

// docs/file-format.md, "Counts".
bool Section::read_counts(const Frame& frame) {
  Fields f(frame.payload);
  const auto n = f.get<std::uint32_t>();
  if (f.bad() || n > frame.payload.size() / tf::kCountEntryMinBytes) return malformed(frame, "counts");
  for (std::uint32_t i = 0; i < n; ++i) {
    std::string key = f.str();
    const auto value = f.get<std::uint64_t>();
    if (f.bad()) return malformed(frame, "counts");
    counts_read_[std::move(key)] = value;
  }
  const auto m = f.get<std::uint32_t>();
  if (f.bad() || m > frame.payload.size() / tf::kTextEntryMinBytes) return malformed(frame, "counts");
  for (std::uint32_t i = 0; i < m; ++i) {
    std::string key = f.str();
    std::string text = f.str();
    if (f.bad()) return malformed(frame, "counts");
    count_texts_[std::move(key)] = std::move(text);
  }
  return true;
}

// docs/file-format.md, "Switches". Times are the recording session's
// CLOCK_MONOTONIC nanoseconds, placed on the file's timeline like the records'.
bool Section::read_switches(const Frame& frame, std::string_view payload) {
  Fields f(payload);
  const auto id = f.get<std::uint32_t>();
  const auto fields = f.get<std::uint8_t>();
  if (f.bad()) return malformed(frame, "switches");
  if (fields != 0) {  // a layout of a later minor version
    meta_.skipped_frames += 1;
    return true;
  }
  const std::string_view rest = f.rest();
  const auto* p = reinterpret_cast<const unsigned char*>(rest.data());
  const auto* const end = p + rest.size();
  if (id == tf::kSwitchesSummary) {
    std::uint64_t without = 0;
    if (!tf::get_varint(p, end, without)) return malformed(frame, "switches summary");
    Fields text(std::string_view(reinterpret_cast<const char*>(p), static_cast<std::size_t>(end - p)));
    std::string why = text.str();
    if (text.bad() || !text.rest().empty()) return malformed(frame, "switches summary");
    threads_without_switches_ = without;
    switches_unavailable_ = std::move(why);
    return true;
  }
  std::uint64_t lost = 0, count = 0;
  if (!tf::get_varint(p, end, lost) || !tf::get_varint(p, end, count) ||
      count > static_cast<std::uint64_t>(end - p)) {  // a record takes a byte at least
    return malformed(frame, "switches");
  }
  Thread& t = thread_of(id);
  t.switches_lost += lost;
  std::uint64_t time = 0;
  for (std::uint64_t i = 0; i < count; ++i) {
    std::uint64_t record = 0;
    if (!tf::get_varint(p, end, record)) return malformed(frame, "switches");
    time += record >> tf::kSwitchTimeShift;
    const bool out = (record & 1) != 0;
    t.switches.push(
        switch_event(shift(time), tables_.switch_site(out), t.state.thread, out, (record >> 1) & tf::kSwitchBitsMask));
  }
  if (p != end) return malformed(frame, "switches (bytes after its records)");
  return true;
}

Section::Thread& Section::thread_of(std::uint32_t file_id) {
  auto [it, inserted] = thread_ids_.try_emplace(file_id, threads_.size());
  if (inserted) {
    Thread& t = threads_.emplace_back();
    t.state.thread = static_cast<ThreadId>(tables_.threads.size());
    t.file_id = file_id;
    ThreadInfo& info = tables_.threads.emplace_back();
    info.id = t.state.thread;
    info.sort_index = std::numeric_limits<std::uint32_t>::max();
    info.pid = assigned_pid_;
  }
  return threads_[it->second];
}

bool Section::decode_records(Thread& t, trace_file::RingWords& ring, std::uint64_t frame_offset) {
  std::span<const std::uint8_t> records(reinterpret_cast<const std::uint8_t*>(ring.data()), ring.size() * 8);
  Sites sites{*this};
  Texts texts{tables_};
  const Clock clock{segments_, meta_.offset_ns};
  RingDecoder<Sites, Texts, Clock> decoder(sites, texts, clock, boundary_gap_, counts_);
  // An event takes a word of the ring at least.
  t.pending.reserve_more(ring.size());
  std::size_t n = t.pending.size();
  const DecodeStop why =
      decoder.decode(t.state, records, t.pending.data(), n, n + ring.size(), {~std::uint64_t{0}, stop_ticks_}, false);
  t.pending.resize(n);
  switch (why) {
    case DecodeStop::no_site:
      meta_.problem = "a record refers to a call site the file never described (chunk at byte " +
                      std::to_string(frame_offset) + "): damaged file";
      return false;
    case DecodeStop::unknown:
      meta_.problem = "a record this reader cannot read (chunk at byte " + std::to_string(frame_offset) + ")";
      return false;
    case DecodeStop::too_large:
      meta_.problem = "a memory record of " + std::to_string(counts_.too_large_bytes) +
                      " bytes, more than a process can allocate (2^47, x86-64's user address space; chunk at byte " +
                      std::to_string(frame_offset) + "): damaged file";
      return false;
    default:
      return true;  // every record, or up to the stop time
  }
}

// Delivers every pending event at or before `watermark` (a pass frame's time, before
// which every record is in the file already; everything at the end), merged across
// threads by the pipeline as the live drainer merges them. To `direct_` if the section
// has one (but at its end, where the section's last events follow in the same batch),
// else to `out`.
void Section::deliver(std::uint64_t watermark, bool at_end) {
  const std::size_t total = take_runs(watermark);
  if (total == 0) return;
  if (direct_ == nullptr || at_end) {
    const std::size_t from = out.size();
    Event* const merged = out.reserve_more(total);
    pipeline_.merge_exactly(merged, total);
    out.resize(from + total);
    prepare(merged, merged + total);
  } else {
    deliver_direct(total);
  }
  give_up_runs();
}

// Each thread's pending events up to `watermark`, and its context switches (every one
// read: the live drainer delivered them in the pass the next pass frame ends), as the
// pipeline's runs; returns how many events they hold.
std::size_t Section::take_runs(std::uint64_t watermark) {
  runs_.clear();
  run_threads_.clear();
  run_lanes_.clear();
  std::size_t total = 0;
  for (std::size_t i = 0; i < threads_.size(); ++i) {
    Thread& t = threads_[i];
    Event* first = t.pending.data() + t.taken;
    Event* end = t.pending.data() + t.pending.size();
    Event* cut = std::upper_bound(first, end, watermark, [](std::uint64_t w, const Event& e) { return w < e.time_ns; });
    if (cut != first) {
      runs_.push_back(MergeRun{first, cut, t.state.thread});
      run_threads_.push_back(i);
      run_lanes_.push_back(kRecordsLane);
      total += static_cast<std::size_t>(cut - first);
    }
    if (!t.switches.empty()) {
      const MergeRun run = t.switches.run_until(~std::uint64_t{0}, t.state.thread);
      runs_.push_back(run);
      run_threads_.push_back(i);
      run_lanes_.push_back(kSwitchesLane);
      total += static_cast<std::size_t>(run.end - run.next);
    }
  }
  merging_.assign(runs_.begin(), runs_.end());
  pipeline_.clear_runs();
  for (std::size_t i = 0; i < merging_.size(); ++i) pipeline_.add_run(merging_[i], i);
  return total;
}

// The merged events to `direct_`: each thread's first event, in the order the merge gives
// them (by time, then thread), at the time it is delivered (where its thread is placed),
// then the events a span at a time.
void Section::deliver_direct(std::size_t total) {
  const std::uint64_t floor = pipeline_.delivered_ns();  // what comes before it is raised to it
  firsts_.clear();
  for (const MergeRun& r : merging_) firsts_.emplace_back(std::max(r.next->time_ns, floor), r.thread);
  std::sort(firsts_.begin(), firsts_.end());
  direct_->first_events(firsts_);
  if (pipeline_.runs() == 1) {
    // One thread's events are in order already: handed over from where they are.
    const MergeRun& r = pipeline_.only_run();
    Event* e = const_cast<Event*>(r.next);
    Event* const end = const_cast<Event*>(r.end);
    while (e != end) {
      Event* const part_end = e + std::min<std::ptrdiff_t>(kSpan, end - e);
      prepare(e, part_end);
      direct_->events(std::span<const Event>(e, part_end));
      e = part_end;
    }
  } else {
    // A span's worth at a time, in a buffer that stays in the cache while the exporters
    // read it.
    Event* const part = span_.reserve_more(kSpan);
    for (std::size_t left = total; left != 0;) {
      const std::size_t n = std::min(left, kSpan);
      pipeline_.merge_exactly(part, n);
      prepare(part, part + n);
      direct_->events(std::span<const Event>(part, n));
      left -= n;
    }
  }
  direct_->end();
}

// What each run held is delivered: its thread gives it up.
void Section::give_up_runs() {
  for (std::size_t i = 0; i < runs_.size(); ++i) {
    Thread& t = threads_[run_threads_[i]];
    const auto n = static_cast<std::size_t>(runs_[i].end - runs_[i].next);
    if (run_lanes_[i] == kSwitchesLane) {
      t.switches.consume(n);
      t.switches_delivered += n;
    } else {
      consume(t, n);
    }
  }
}

// The events read and not yet delivered stay under kMaxPendingEvents, whatever the file:
// pass frames far apart (threads that emptied their own rings while the drainer waited
// for a core, docs/architecture.md) would otherwise have the reader hold everything
// between them. Past the bound, what is older than the newest event read less the
// recording's merge grace is delivered, as the live drainer's merge delivers it: a record
// read later that is older than that is raised to keep the order and flagged late, as
// the drainer's late events are. (If that frees nothing, everything read goes.)
void Section::bound_pending() {
  std::size_t held = 0;
  std::uint64_t newest = 0;
  for (const Thread& t : threads_) {
    held += t.pending.size() - t.taken;
    if (t.pending.size() > t.taken) newest = std::max(newest, t.pending[t.pending.size() - 1].time_ns);
  }
  if (held <= kMaxPendingEvents) return;
  ++early_deliveries_;
  delivered_early_ = true;
  deliver(newest > grace_ns_ ? newest - grace_ns_ : 0);
  held = 0;
  for (const Thread& t : threads_) held += t.pending.size() - t.taken;
  if (held > kMaxPendingEvents) deliver(newest);
}

// Drops a thread's first `n` pending events (delivered); the rest moves to the front
// once it is no longer than what went, so that a thread's events move about once.
void Section::consume(Thread& t, std::size_t n) {
  t.taken += n;
  if (t.taken == t.pending.size()) {
    t.pending.clear();
    t.taken = 0;
  } else if (t.taken >= t.pending.size() - t.taken) {
    t.pending.erase_front(t.taken);
    t.taken = 0;
  }
}

std::uint64_t Section::footer_drops(const Thread& t) const {
  if (!has_footer_) return 0;
  for (const ThreadStats& s : footer_.threads) {
    if (s.thread == t.file_id) return s.dropped;
  }
  return 0;
}

// The end of the section: everything pending delivered, zones left open closed at the
// stop time (or, in a cut file, the last time read), flagged closed_at_stop, drops not
// yet reported by a marker last; then the section's counts.
void Section::finish() {
  if (!have_session_) {
    meta_.complete = false;
    return;
  }
  deliver(std::numeric_limits<std::uint64_t>::max(), true);
  const std::uint64_t end_ns =
      std::max(has_stop_ ? to_ns(stop_ticks_) : 0, std::max(pipeline_.delivered_ns(), clock_.start_ns));
  clock_.stop_ns = end_ns;
  for (Thread& t : threads_) {
    closed_at_stop_ += close_zones(t.state, end_ns, EventFlags::closed_at_stop, [&]() -> Event& {
      out.reserve_more(1);
      out.resize(out.size() + 1);
      return out.back();
    });
    const std::uint64_t dropped = std::max(t.state.reported_drops, footer_drops(t));
    if (dropped > t.state.reported_drops) {
      Event e{end_ns, 0, t.state.thread, EventKind::dropped, 0, 0, 0, {}};
      e.value.u = dropped - t.state.reported_drops;
      out.push_back(e);
    }
  }
  if (counts_.steps.open) {  // the step open at the stop: closed there
    Event e{std::max(end_ns, counts_.steps.last_ns),
            step_site(),
            steps_thread(),
            EventKind::zone_end,
            EventFlags::closed_at_stop,
            0,
            0,
            {}};
    e.value.u = counts_.steps.number;
    out.push_back(e);
    counts_.steps.open = false;
    ++closed_at_stop_;
  }
  if (!out.empty()) pipeline_.delivered_at(out.back().time_ns);
  SessionStats& stats = stats_;
  if (has_footer_) stats = footer_;
  stats.threads.clear();
  stats.recorded = 0;
  stats.context_switches = stats.context_switches_lost = 0;
  std::uint64_t dropped_total = 0;
  for (const Thread& t : threads_) {
    const ThreadInfo& info = tables_.threads[t.state.thread];
    ThreadStats s{t.state.thread,
                  info.os_tid,
                  info.name,
                  t.state.recorded,
                  std::max(t.state.reported_drops, footer_drops(t)),
                  info.pid,
                  t.switches_delivered};
    stats.recorded += s.recorded;
    stats.context_switches += t.switches_delivered;
    stats.context_switches_lost += t.switches_lost;
    dropped_total += s.dropped;
    stats.threads.push_back(std::move(s));
  }
  if (steps_thread_ != kNoThread &&
      !steps_thread_in_file_) {  // a row as live (its events count on the threads that called step())
    stats.threads.push_back(ThreadStats{steps_thread_, 0, kStepsThreadName, 0, 0, assigned_pid_});
  }
  stats.dropped = dropped_total + (has_footer_ ? footer_.dropped_without_ring : 0);
  // Drops of threads whose rows the session folded (Config::max_thread_rows) are in the
  // footer's total, not in any row this file names.
  if (has_footer_) stats.dropped = std::max(stats.dropped, footer_.dropped);
  stats.threads_without_switches = threads_without_switches_;
  stats.context_switches_unavailable = switches_unavailable_;
  stats.late_events = pipeline_.late();
  // The footer's count has the RINGTRACE_ZONE_ENDs the recording counted with no
  // RINGTRACE_ZONE_BEGIN open (they are in no record).
  stats.unbalanced_ends = std::max(counts_.unbalanced_ends, has_footer_ ? footer_.unbalanced_ends : 0);
  stats.runtime_names = runtime_names_.distinct();
  stats.runtime_names_overflowed = runtime_names_.overflowed();
  stats.closed_at_stop = closed_at_stop_;
  stats.functions = functions_;
  if (pipeline_.accounts_memory()) memory_stats(stats.memory);
  if (const auto it = count_texts_.find("rings_unavailable"); it != count_texts_.end())
    stats.rings_unavailable = it->second;
  if (const auto it = counts_read_.find("drainer.out_of_memory"); it != counts_read_.end())
    stats.drainer_out_of_memory = it->second;
  if (const auto it = counts_read_.find("drainer.events_lost"); it != counts_read_.end())
    stats.drainer_events_lost = it->second;
  stats.clock = clock_;
  meta_.complete = complete_ && meta_.problem.empty();
  if (!complete_ && meta_.problem.empty()) {
    meta_.problem = "file cut short at byte " + std::to_string(frames_ ? frames_->offset() : begin_) +
                    " (the recording did not stop)";
  }
  if (meta_.skipped_frames != 0 && meta_.problem.empty()) {
    meta_.problem = std::to_string(meta_.skipped_frames) + " frame(s) of a later format version skipped";
  }
  meta_.recovered = recovered_;
  if (!rings_note_.empty()) meta_.problem += (meta_.problem.empty() ? "" : "; ") + rings_note_;
}

// The merged events, in order, made ready for the exporters by the pipeline: late events
// raised; the heap's accounting, when the session recorded allocations (its session frame
// says), reading each memory event's payload out of the tables' texts.
void Section::prepare(Event* first, Event* last) {
  pipeline_.prepare(first, last, [this](const Event& e) -> std::string_view {
    const auto it = tables_.texts.find(e.value.u);
    if (it == tables_.texts.end()) return {};
    memory_payload_ = std::move(it->second);  // valid until the next payload is read
    tables_.texts.erase(it);
    return memory_payload_;
  });
}

void Section::memory_stats(MemoryStats& m) const {
  const HeapTracker& heap = pipeline_.heap();
  heap.fill_totals(m);
  m.stack_method = stack_method_;
  const auto count = [this](const char* key) {
    const auto it = counts_read_.find(key);
    return it == counts_read_.end() ? std::uint64_t{0} : it->second;
  };
  const std::pair<const char*, MemoryStats::LeftOut*> causes[] = {
      {"memory.nested", &m.nested}, {"memory.after_exit", &m.after_exit}, {"memory.dropped", &m.dropped}};
  for (const auto& [key, left_out] : causes) {
    const std::string k = key;
    *left_out = {count((k + ".allocations").c_str()), count((k + ".frees").c_str()), count((k + ".bytes").c_str())};
  }
  m.unrecorded_nested = m.nested.events() + m.after_exit.events();
  heap.fill_rows(m, [this](SiteId id) -> const SiteInfo& { return tables_.sites[id].info; });
  if (!m.sites.empty()) {
    symbols::Symbolizer symbolizer(modules_, symbol_paths_);
    symbols::name_memory(m, symbolizer);
  }
}

}  // namespace ringtrace::detail
