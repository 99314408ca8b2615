// Chrome trace exporter: streams the Trace Event Format (JSON array form).
//
// Layout of the file (every event after the first is written as ",\n{...}", so the text
// handed to the OS at every on_flush ends with a complete event: a prefix of the array
// that readers complete with "]"):
//   [
//   {"ph":"M","name":"process_name",...}                on_start
//   {"ph":"M","name":"thread_name"/"thread_sort_index"}  at a thread's first event
//   {"ph":"X",...}, {"ph":"i",...}, {"ph":"C",...}       on_events: zones at their end
//   {"ph":"M","name":"thread_name",...}                  on_flush/on_finish: a name changed
//   {"ph":"M","name":"process_name",...,"args":{"name":..., on_finish: the process's name again,
//     "ringtrace_session":{...}}}                         with the session's counts in its args
//   ]
//
// Zones are written as complete ("X") events when they end, so memory is the deepest
// nesting per thread (ZoneTracker) plus one cached fragment per site and per thread,
// never the number of events. Text is formatted into one fixed buffer that goes to the
// sink in large writes; in steady state no event allocates. Names are escaped once per
// site (output.hpp's append_json_string); the per-event writers copy those fragments and
// format numbers straight into the buffer, by the same rules as output.hpp's append_uint
// and append_us (integer arithmetic, three decimals; the golden tests pin the text).
#include "ringtrace/exporters/chrome_trace.hpp"

#include <unistd.h>  // getpid

#include <algorithm>  // std::find
#include <charconv>   // std::to_chars into the output buffer
#include <cmath>      // std::isfinite, std::nextafter
#include <cstdint>
#include <cstring>  // std::memcpy
#include <limits>   // infinity, for nextafter
#include <list>     // zones waiting for the zone around them
#include <string>
#include <string_view>
#include <utility>
#include <variant>  // TraceMetadata values
#include <vector>

#include "heap_counter.hpp"  // the live heap's counter track (Config::memory)
#include "output.hpp"        // escaping, number formatting, OutputSink
#include "step_zones.hpp"    // Session::step()'s zones
#include "zone_tracker.hpp"  // begin time and duration of each zone at its end

namespace ringtrace {
namespace {

using detail::append_double;
using detail::append_int;
using detail::append_json_string;
using detail::append_uint;
using detail::OutputSink;

class ChromeTraceExporter final : public Exporter {
 public:
  ChromeTraceExporter(std::string path, ChromeTraceOptions options)
      : path_(std::move(path)), options_(options), sink_(OutputSink::open_file(path_)) {}

  ChromeTraceExporter(std::ostream& stream, ChromeTraceOptions options)
      : stream_(&stream), options_(options), sink_(OutputSink::to_stream(stream, "Chrome trace stream")) {}

  ~ChromeTraceExporter() override {
    // A run that never finished (the session disabled this exporter, or the program
    // ended without stop) keeps what it formatted: a file's goes to <path>.partial and
    // the previous <path> stays; a stream's is flushed.
    try {
      if (sink_ && capacity_ != 0 && !finished_) {
        flush();
        sink_->flush();
      }
    } catch (...) {}
  }

  // After each drainer pass: the text so far reaches the OS, so a killed process loses
  // at most the last pass.
  void on_flush(const TraceContext& context) override {
    write_renamed_threads(context);
    flush();
    sink_->flush();
  }

  std::vector<std::filesystem::path> output_paths() const override {
    if (stream_ != nullptr) return {};
    return {path_};
  }

  // The JSON text of this run so far (before any compression).
  std::uint64_t output_bytes() const override { return handed_ + used_; }

  void on_start(const TraceContext& context) override {
    finished_ = false;
    handed_ = 0;
    // Every run is a complete capture: a later run rewrites the file from the start.
    if (runs_ > 0 && stream_ == nullptr) {
      sink_.reset();
      sink_ = OutputSink::open_file(path_);
    }
    ++runs_;
    run_ = Run{};
    run_.heap = detail::HeapCounter(options_.heap_interval_ns);
    run_.tracker.on_off_cpu([this](const detail::OffCpuInterval& off) { write_off_cpu(off, *context_); });
    run_.pid = options_.pid != 0 ? options_.pid : context.process_id();
    if (run_.pid == 0) run_.pid = static_cast<std::uint32_t>(::getpid());
    const std::size_t capacity = options_.buffer_bytes < 4096 ? 4096 : options_.buffer_bytes;
    if (capacity != capacity_) {
      out_ = std::make_unique<char[]>(capacity);
      capacity_ = capacity;
    }
    used_ = 0;

    std::string& text = scratch_;
    text.clear();
    text.append("[\n{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":");
    append_uint(text, run_.pid);
    text.append(",\"tid\":0,\"args\":{\"name\":");
    append_json_string(text, context.process_name());
    text.append("}}");
    put(text);
  }

  void on_events(std::span<const Event> events, const TraceContext& context) override {
    context_ = &context;  // for the off-CPU intervals the tracker hands over
    for (const Event& e : events) {
      switch (e.kind) {
        case EventKind::zone_begin:
          // Thread metadata in the order threads first appear in the stream (their sort
          // order), even though their zones are written at their ends.
          see_thread(e.thread, context);
          // The tag: where this zone's args start in its thread's pending args.
          run_.tracker.feed(
              e, [](const detail::ClosedZone&, std::span<const detail::OpenZone>) {},
              static_cast<std::uint32_t>(attached(e.thread).args.size()));
          continue;  // written at its end
        case EventKind::zone_end:
          run_.tracker.feed(e, [&](const detail::ClosedZone& zone, std::span<const detail::OpenZone> outer) {
            close_zone(zone, outer, context);
          });
          break;
        case EventKind::instant:
          write_instant(e, context);
          break;
        case EventKind::counter:
          write_counter(e, context);
          break;
        case EventKind::dropped:
          write_dropped(e, context);
          break;
        case EventKind::arg:
          add_arg(e, context);
          break;
        case EventKind::flow_out:
        case EventKind::flow_in:
          add_flow(e);
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
          run_.heap.feed(e, thread_pid(context.thread(e.thread), context),
                         [&](const detail::HeapCounter::Sample& s) { write_heap(s, context); });
          break;
      }
    }
  }

  void on_finish(const TraceContext& context, const SessionStats& stats) override {
    context_ = &context;
    close_open_zones(context);
    run_.tracker.end_off_cpu(context.clock().stop_ns);  // threads off the CPU at the end
    run_.heap.finish([&](const detail::HeapCounter::Sample& s) { write_heap(s, context); });
    // Every thread named (also one that delivered no event), each with its last name;
    // not a folded one that delivered none (Config::max_thread_rows): nothing to name.
    for (ThreadId t = 0; t < context.thread_count(); ++t) {
      if (context.thread(t).id == t) see_thread(t, context);
    }
    write_renamed_threads(context);
    std::string& text = scratch_;
    text.clear();
    // The session's counts: the array form has no room for "otherData", and a metadata
    // event of a name of its own makes Catapult keep an "Unrecognized metadata name"
    // warning for every file. So they ride in the args of a last process_name event that
    // states the process's name again: every reader takes its "name" (the same) and
    // ignores the other args. Last, so that a file cut before it is still a valid prefix.
    text.append(",\n{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":");
    append_uint(text, run_.pid);
    text.append(",\"tid\":0,\"args\":{\"name\":");
    append_json_string(text, context.process_name());
    text.append(",\"ringtrace_session\":{\"producer\":\"ringtrace\",\"clock\":");
    text.append(stats.clock.tsc ? "\"tsc\"" : "\"monotonic\"");
    text.append(",\"clock_start_ns\":");
    append_uint(text, context.clock().start_ns);
    text.append(",\"clock_stop_ns\":");
    append_uint(text, context.clock().stop_ns);
    text.append(",\"recorded_events\":");
    append_uint(text, stats.recorded);
    text.append(",\"dropped_events\":");
    append_uint(text, stats.dropped);
    text.append(",\"late_events\":");
    append_uint(text, stats.late_events);
    text.append(",\"unbalanced_ends\":");
    append_uint(text, stats.unbalanced_ends);
    text.append(",\"closed_at_stop\":");
    append_uint(text, stats.closed_at_stop);
    if (stats.context_switches != 0 || !stats.context_switches_unavailable.empty()) {
      text.append(",\"context_switches\":");
      append_uint(text, stats.context_switches);
      text.append(",\"context_switches_lost\":");
      append_uint(text, stats.context_switches_lost);
      if (!stats.context_switches_unavailable.empty()) {
        text.append(",\"context_switches_unavailable\":");
        append_json_string(text, stats.context_switches_unavailable);
      }
    }
    text.append(",\"non_finite_counters_skipped\":");
    append_uint(text, run_.skipped_counters);
    text.append(",\"args_without_zone\":");
    append_uint(text, run_.args_without_zone);
    text.append(",\"args_over_limit\":");
    append_uint(text, run_.args_over_limit);
    text.append(",\"threads\":[");
    bool first = true;
    for (const ThreadStats& t : stats.threads) {
      text.append(first ? "\n{\"tid\":" : ",\n{\"tid\":");
      first = false;
      append_uint(text, t.os_tid);
      if (t.pid != 0) {  // a stream of several processes (a merged file)
        text.append(",\"pid\":");
        append_uint(text, t.pid);
      }
      text.append(",\"name\":");
      append_json_string(text, t.name);
      text.append(",\"recorded\":");
      append_uint(text, t.recorded);
      text.append(",\"dropped\":");
      append_uint(text, t.dropped);
      text.push_back('}');
    }
    text.append("]}");
    // What whoever fed the stream says about it (ringtrace::benchmark: the bound).
    const std::span<const TraceMetadata> metadata = context.metadata();
    if (!metadata.empty()) {
      text.append(",\"ringtrace_metadata\":{");
      for (std::size_t i = 0; i < metadata.size(); ++i) {
        if (i > 0) text.push_back(',');
        append_json_string(text, metadata[i].key);
        text.push_back(':');
        if (const auto* number = std::get_if<std::int64_t>(&metadata[i].value)) {
          append_int(text, *number);
        } else {
          append_json_string(text, std::get<std::string>(metadata[i].value));
        }
      }
      text.push_back('}');
    }
    text.append("}}\n]\n");
    put(text);
    flush();
    sink_->close();
    finished_ = true;  // the destructor leaves the stream alone (it may be gone by then)
  }

 private:
  void flush() {
    sink_->write(std::string_view(out_.get(), used_));
    handed_ += used_;
    used_ = 0;
  }

  // Room for `n` more bytes in the buffer: where to write them. Commit with done().
  char* room(std::size_t n) {
    if (used_ + n > capacity_) [[unlikely]] {
      flush();
      if (n > capacity_) grow(n);
    }
    return out_.get() + used_;
  }
  void done(const char* end) { used_ = static_cast<std::size_t>(end - out_.get()); }

  RINGTRACE_NOINLINE void grow(std::size_t n) {  // a name longer than the buffer
    out_ = std::make_unique<char[]>(n);
    capacity_ = n;
  }

  void put(std::string_view text) { done(copy(room(text.size()), text)); }

  static char* copy(char* p, std::string_view s) {
    if (!s.empty()) std::memcpy(p, s.data(), s.size());  // an empty view may hold a null pointer
    return p + s.size();
  }
  template <std::size_t N>
  static char* copy(char* p, const char (&literal)[N]) {
    std::memcpy(p, literal, N - 1);
    return p + N - 1;
  }
  static char* put_uint(char* p, std::uint64_t value) { return std::to_chars(p, p + 20, value).ptr; }
  static char* put_int(char* p, std::int64_t value) { return std::to_chars(p, p + 20, value).ptr; }
  // Nanoseconds as microseconds with exactly three decimals (as detail::append_us).
  // From a second on (every timestamp), the whole seconds by to_chars and the nine digits
  // below them (six of microseconds, three decimals) two at a time: the same text as
  // to_chars of the microseconds, in half the instructions (callgrind).
  static char* put_us(char* p, std::uint64_t ns) {
    if (ns < 1'000'000'000) {
      p = put_uint(p, ns / 1000);
      const auto frac = static_cast<unsigned>(ns % 1000);
      p[0] = '.';
      p[1] = static_cast<char>('0' + frac / 100);
      put_pair(p + 2, frac % 100);
      return p + 4;
    }
    const std::uint64_t seconds = ns / 1'000'000'000;
    const auto below = static_cast<std::uint32_t>(ns - seconds * 1'000'000'000);
    p = put_uint(p, seconds);
    const std::uint32_t us = below / 1000, frac = below % 1000;
    put_pair(p, us / 10000);
    put_pair(p + 2, us / 100 % 100);
    put_pair(p + 4, us % 100);
    p[6] = '.';
    p[7] = static_cast<char>('0' + frac / 100);
    put_pair(p + 8, frac % 100);
    return p + 10;
  }
  // The two decimal digits of n < 100.
  static void put_pair(char* p, std::uint32_t n) {
    static constexpr struct Pairs {
      char digits[200];
      constexpr Pairs() : digits{} {
        for (int i = 0; i < 100; ++i) {
          digits[2 * i] = static_cast<char>('0' + i / 10);
          digits[2 * i + 1] = static_cast<char>('0' + i % 10);
        }
      }
    } kPairs;
    std::memcpy(p, kPairs.digits + 2 * n, 2);
  }
  // A duration as put_us writes it, except when a reader that multiplies the text's
  // double by 1000 and truncates (Perfetto's trace_processor before 2022 does so for
  // "dur", not for "ts") would get one nanosecond less: then the shortest decimal of the
  // next double up (1.009 -> 1.0090000000000001), which such a reader, and every reader
  // that rounds, takes as the same nanosecond. About one duration in a hundred.
  static char* put_dur(char* p, std::uint64_t ns) {
    // (From 2^53 ns, 104 days, doubles no longer hold every nanosecond: nothing to fix.)
    if (ns >= (std::uint64_t{1} << 53)) [[unlikely]]
      return put_us(p, ns);
    const double us = static_cast<double>(ns) / 1000.0;  // the double nearest the text
    if (static_cast<std::uint64_t>(us * 1000.0) == ns) [[likely]]
      return put_us(p, ns);
    const double up = std::nextafter(us, std::numeric_limits<double>::infinity());
    return std::to_chars(p, p + 32, up, std::chars_format::fixed).ptr;
  }
  // Bound on the bytes of an event besides its cached fragments: literals, two times
  // (24 bytes each at most), a region id or count (20).
  static constexpr std::size_t kEventBytes = 256;

  // `"name"` of a site, escaped once per site and run.
  std::string_view site_name(SiteId site, const TraceContext& context) {
    if (site >= run_.site_names.size()) [[unlikely]]
      cache_sites(context);
    return run_.site_names[site];
  }

  // `"category"` of a zone in a category (RINGTRACE_ZONE_IN), escaped; "" for none.
  std::string_view site_category(SiteId site) const { return run_.site_categories[site]; }

  // `,"file":"...","line":N` or "" (no location, or not asked for).
  std::string_view site_location(SiteId site) const { return run_.site_locations[site]; }

  // `,"pid":P,"tid":T` of a thread; its metadata is written the first time.
  std::string_view thread_ids(ThreadId thread, const TraceContext& context) {
    see_thread(thread, context);
    return run_.threads[thread].ids;
  }
  void see_thread(ThreadId thread, const TraceContext& context) {
    if (thread >= run_.threads.size() || run_.threads[thread].ids.empty()) [[unlikely]]
      first_sight(thread, context);
  }

  RINGTRACE_NOINLINE void cache_sites(const TraceContext& context) {
    const std::uint32_t count = context.site_count();
    for (SiteId id = static_cast<SiteId>(run_.site_names.size()); id < count; ++id) {
      const SiteInfo& info = context.site(id);
      std::string name;
      append_json_string(name, info.name);
      run_.site_names.push_back(std::move(name));
      std::string location;
      if (options_.source_locations && info.file[0] != '\0') {
        location.append(",\"file\":");
        append_json_string(location, info.file);
        location.append(",\"line\":");
        append_uint(location, info.line);
      }
      run_.site_locations.push_back(std::move(location));
      std::string category;
      if (info.category != nullptr && info.category[0] != '\0') append_json_string(category, info.category);
      run_.site_categories.push_back(std::move(category));
      run_.site_per_thread.push_back((info.options & SiteOptions::per_thread_track) != 0 ? 1 : 0);
    }
  }

  // A thread's first event: its name and sort index go out now, so that a file cut
  // later (a killed process) still names and orders it. The drainer has assigned the
  // sort index before delivering the thread's first event, and never changes it.
  RINGTRACE_NOINLINE void first_sight(ThreadId thread, const TraceContext& context) {
    if (thread >= run_.threads.size()) run_.threads.resize(thread + 1);
    const ThreadInfo& info = context.thread(thread);
    ThreadOut& out = run_.threads[thread];
    out.ids = ",\"pid\":";
    append_uint(out.ids, thread_pid(info, context));
    out.ids.append(",\"tid\":");
    append_uint(out.ids, info.os_tid);
    std::string& text = scratch_;
    text.clear();
    append_thread_name(text, thread, info);
    text.append(",\n{\"ph\":\"M\",\"name\":\"thread_sort_index\"");
    text.append(out.ids);
    text.append(",\"args\":{\"sort_index\":");
    append_uint(text, info.sort_index);
    text.append("}}");
    put(text);
  }

  // The pid a thread's events carry: the session's (or ChromeTraceOptions::pid), or in a
  // stream of several processes (a merged file) the thread's own, named the first time.
  std::uint32_t thread_pid(const ThreadInfo& info, const TraceContext& context) {
    if (info.pid == 0 || info.pid == context.process_id()) return run_.pid;
    if (std::find(run_.named_pids.begin(), run_.named_pids.end(), info.pid) == run_.named_pids.end()) {
      run_.named_pids.push_back(info.pid);
      std::string text = ",\n{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":";
      append_uint(text, info.pid);
      text.append(",\"tid\":0,\"args\":{\"name\":");
      append_json_string(text, context.process_name_of(info.pid));
      text.append("}}");
      put(text);
    }
    return info.pid;
  }

  // A thread_name event for every thread seen whose name changed since its last one
  // (readers keep the last): names set during the session reach a cut file too.
  void write_renamed_threads(const TraceContext& context) {
    for (ThreadId t = 0; t < run_.threads.size(); ++t) {
      if (run_.threads[t].ids.empty()) continue;
      const ThreadInfo& info = context.thread(t);
      if (info.id != t) continue;  // folded: its name was written at its first event
      if (label(info) == run_.threads[t].written_name) continue;
      std::string& text = scratch_;
      text.clear();
      append_thread_name(text, t, info);
      put(text);
    }
  }

  static std::string label(const ThreadInfo& info) {
    return info.name.empty() ? std::string("thread ") + std::to_string(info.os_tid) : info.name;
  }

  void append_thread_name(std::string& text, ThreadId thread, const ThreadInfo& info) {
    ThreadOut& out = run_.threads[thread];
    out.written_name = label(info);
    text.append(",\n{\"ph\":\"M\",\"name\":\"thread_name\"");
    text.append(out.ids);
    text.append(",\"args\":{\"name\":");
    append_json_string(text, out.written_name);
    text.append("}}");
  }

  // A zone that began in the same nanosecond as the zone enclosing it (a coarse clock:
  // two reads a few cycles apart) is written after that zone: viewers order the events of
  // one time as the file does, and would otherwise nest the outer zone inside the inner.
  // Such a zone waits, with the zones that waited for it, until its enclosing one is out.
  void close_zone(const detail::ClosedZone& zone, std::span<const detail::OpenZone> outer,
                  const TraceContext& context) {
    const bool tie = !outer.empty() && outer.back().begin_ns == zone.begin_ns;
    if (!tie && (zone.thread >= run_.deferred.size() || run_.deferred[zone.thread].empty())) [[likely]] {
      write_zone(zone, context);
      return;
    }
    close_zone_slow(zone, tie, context);
  }
  RINGTRACE_NOINLINE void close_zone_slow(const detail::ClosedZone& zone, bool tie, const TraceContext& context) {
    if (zone.thread >= run_.deferred.size()) run_.deferred.resize(zone.thread + 1);
    // The zones inside this one that waited for it, in file order: whole groups moved,
    // never copied, so a chain of ties (zones nested deep, all begun in one nanosecond)
    // costs a constant per zone rather than a copy of everything inside each.
    std::list<std::string> inside;
    std::vector<Deferred>& waiting = run_.deferred[zone.thread];
    while (!waiting.empty() && waiting.back().depth > zone.depth) {
      inside.splice(inside.begin(), waiting.back().texts);
      waiting.pop_back();
    }
    if (!tie) {
      write_zone(zone, context);
      for (const std::string& text : inside) put(text);
      return;
    }
    flush();
    std::string bytes;
    std::unique_ptr<OutputSink> file = std::exchange(sink_, std::make_unique<StringSink>(bytes));
    const std::uint64_t handed = handed_;  // counted when it reaches the file
    write_zone(zone, context);
    flush();
    handed_ = handed;
    sink_ = std::move(file);
    inside.push_front(std::move(bytes));
    run_.deferred[zone.thread].push_back(Deferred{zone.depth, std::move(inside)});
  }
  struct Deferred {
    std::uint32_t depth;
    std::list<std::string> texts;  // this zone's, then those that waited for it
  };
  class StringSink final : public OutputSink {
   public:
    explicit StringSink(std::string& to) : OutputSink("deferred zone"), to_(to) {}
    void write(std::string_view text) override { to_.append(text); }
    void flush() override {}
    void close() override {}

   private:
    std::string& to_;
  };

  void write_zone(const detail::ClosedZone& zone, const TraceContext& context) {
    const bool region = (zone.flags & EventFlags::region) != 0;
    const bool closed_at_stop = (zone.flags & EventFlags::closed_at_stop) != 0;
    const bool closed_at_window_end = (zone.flags & EventFlags::closed_at_window_end) != 0;
    const bool opened_at_window_start = (zone.flags & EventFlags::opened_at_window_start) != 0;
    std::string_view name = site_name(zone.site, context);
    std::string step;
    if (run_.steps.is_step(zone.site, context)) [[unlikely]] {  // Session::step()'s: "step #N"
      append_json_string(step, detail::step_zone_label(zone.value));
      name = step;
    }
    const std::string_view ids = thread_ids(zone.thread, context);
    const std::string_view location = site_location(zone.site);
    const std::string_view category = site_category(zone.site);
    // What attached to this zone: its args from the tag on, its flows on top of the
    // thread's flow stack (the innermost zone closes first, so both are stacks).
    Attached* const attached = zone.thread < run_.attached.size() ? &run_.attached[zone.thread] : nullptr;
    std::string_view args;
    if (attached != nullptr && zone.tag < attached->args.size()) {
      args = std::string_view(attached->args).substr(zone.tag);
    }
    // kEventBytes, and the memory args' 80 at most.
    char* p = room(kEventBytes + 80 + name.size() + ids.size() + location.size() + category.size() + args.size());
    if (region) {
      p = copy(p, ",\n{\"ph\":\"X\",\"cat\":\"region\",\"name\":");
    } else if (!category.empty()) {
      p = copy(p, ",\n{\"ph\":\"X\",\"cat\":");
      p = copy(p, category);
      p = copy(p, ",\"name\":");
    } else {
      p = copy(p, ",\n{\"ph\":\"X\",\"cat\":\"zone\",\"name\":");
    }
    p = copy(p, name);
    p = copy(p, ids);
    p = copy(p, ",\"ts\":");
    p = put_us(p, zone.begin_ns);
    p = copy(p, ",\"dur\":");
    p = put_dur(p, zone.total_ns);
    const bool allocated = zone.memory.allocations != 0;  // Config::memory
    if (region || closed_at_stop || closed_at_window_end || opened_at_window_start || zone.on_cpu_known || allocated ||
        !location.empty() || !args.empty()) {
      p = copy(p, ",\"args\":{");
      const char* first = p;
      if (region) {
        p = copy(p, ",\"region_id\":");
        p = put_int(p, zone.value);
      }
      if (zone.on_cpu_known) {  // its thread's switches are recorded (Config::context_switches)
        p = copy(p, ",\"on_cpu_ns\":");
        p = put_uint(p, zone.on_cpu_ns());
      }
      if (allocated) {  // bytes and allocations in the zone and its children
        p = copy(p, ",\"alloc_bytes\":");
        p = put_uint(p, zone.memory.allocated_bytes);
        p = copy(p, ",\"allocs\":");
        p = put_uint(p, zone.memory.allocations);
      }
      if (closed_at_stop) p = copy(p, ",\"closed_at_stop\":true");
      if (closed_at_window_end) p = copy(p, ",\"closed_at_window_end\":true");
      if (opened_at_window_start) p = copy(p, ",\"opened_at_window_start\":true");
      p = copy(p, location);
      p = copy(p, args);
      // Drop the first field's leading comma.
      std::memmove(const_cast<char*>(first), first + 1, static_cast<std::size_t>(p - first - 1));
      p[-1] = '}';
    }
    *p++ = '}';
    done(p);
    if (attached == nullptr) return;
    if (zone.tag < attached->args.size()) attached->args.resize(zone.tag);
    // After the zone in the file: trace_processor binds a flow event to the slice open
    // when it reads it, and among events of one time it reads them in file order.
    if (!attached->flows.empty() && attached->flows.back().depth == zone.depth + 1) [[unlikely]] {
      write_flows(*attached, zone, ids);
    }
  }

  // An interval the thread spent off the CPU, as a complete slice on its track, named by
  // why ("off-CPU (preempted)": runnable, waiting for a CPU; "off-CPU (blocked)": sleep,
  // lock, I/O): it lies between two zone boundaries of the thread (ZoneTracker), so it
  // nests in the zone that waited. One that begins in the nanosecond its enclosing zone
  // begins starts a nanosecond later (viewers order slices of one time as the file does,
  // and the zone's slice comes later in the file).
  void write_off_cpu(const detail::OffCpuInterval& off, const TraceContext& context) {
    std::uint64_t begin = off.begin_ns;
    const std::span<const detail::OpenZone> open = run_.tracker.open(off.thread);
    if (!open.empty() && open.back().begin_ns == begin) ++begin;
    if (off.end_ns <= begin) return;
    const std::string_view ids = thread_ids(off.thread, context);
    char* p = room(kEventBytes + ids.size());
    p = off.preempted ? copy(p, ",\n{\"ph\":\"X\",\"cat\":\"ringtrace.sched\",\"name\":\"off-CPU (preempted)\"")
                      : copy(p, ",\n{\"ph\":\"X\",\"cat\":\"ringtrace.sched\",\"name\":\"off-CPU (blocked)\"");
    p = copy(p, ids);
    p = copy(p, ",\"ts\":");
    p = put_us(p, begin);
    p = copy(p, ",\"dur\":");
    p = put_dur(p, off.end_ns - begin);
    *p++ = '}';
    done(p);
  }

  struct Flow {
    std::uint64_t id;
    std::uint32_t depth;  // the arg event's depth: its zone's depth + 1
    bool out;             // flow_out (starts the flow) or flow_in (ends it)
  };
  // Per thread: what attached to its open zones, written with each zone at its end.
  struct Attached {
    std::string args;         // `,"key":value` fragments, innermost zone's last
    std::vector<Flow> flows;  // innermost zone's last
  };
  static constexpr std::size_t kMaxPendingArgs = std::size_t{1} << 20;  // bytes per thread

  Attached& attached(ThreadId thread) {
    if (thread >= run_.attached.size()) [[unlikely]]
      run_.attached.resize(thread + 1);
    return run_.attached[thread];
  }

  // A value or text on the innermost open zone of its thread: formatted now, written
  // with the zone. A key given twice appears twice (readers keep the last).
  void add_arg(const Event& e, const TraceContext& context) {
    if (run_.tracker.open(e.thread).empty()) {
      ++run_.args_without_zone;
      return;
    }
    Attached& a = attached(e.thread);
    if (a.args.size() > kMaxPendingArgs) {
      ++run_.args_over_limit;
      return;
    }
    std::string& out = a.args;
    out.push_back(',');
    out.append(site_name(e.site, context));
    out.push_back(':');
    if ((e.flags & EventFlags::text) != 0) {
      append_json_string(out, context.text(e));
      if ((e.flags & EventFlags::truncated) != 0) {
        out.append(",");
        std::string key = context.site(e.site).name;
        key.append(".truncated");
        append_json_string(out, key);
        out.append(":true");
      }
    } else if ((e.flags & EventFlags::value_double) != 0) {
      append_double(out, e.value.d);  // null for NaN and infinities
    } else {
      detail::append_int(out, e.value.i);
    }
  }

  void add_flow(const Event& e) {
    if (run_.tracker.open(e.thread).empty()) {
      ++run_.args_without_zone;
      return;
    }
    attached(e.thread).flows.push_back(Flow{e.value.u, e.depth, e.kind == EventKind::flow_out});
  }

  // The flows of a zone that ends now, as flow events at the zone's begin: Catapult and
  // Perfetto bind an "s" event, and an "f" event with "bp":"e", to the slice that
  // encloses its time on its thread. The begin is inside this zone and no child's
  // (a child that began in the same nanosecond aside); the time the flow was recorded
  // may be the end of a child.
  RINGTRACE_NOINLINE void write_flows(Attached& a, const detail::ClosedZone& zone, std::string_view ids) {
    while (!a.flows.empty() && a.flows.back().depth == zone.depth + 1) {
      const Flow flow = a.flows.back();
      a.flows.pop_back();
      char* p = room(kEventBytes + ids.size());
      p = flow.out ? copy(p, ",\n{\"ph\":\"s\",\"cat\":\"flow\",\"name\":\"flow\",\"id\":\"0x")
                   : copy(p, ",\n{\"ph\":\"f\",\"bp\":\"e\",\"cat\":\"flow\",\"name\":\"flow\",\"id\":\"0x");
      p = std::to_chars(p, p + 16, flow.id, 16).ptr;
      *p++ = '"';
      p = copy(p, ids);
      p = copy(p, ",\"ts\":");
      p = put_us(p, zone.begin_ns);
      *p++ = '}';
      done(p);
    }
  }

  // A nestable async event ("b" / "e"): Catapult pairs them by category, name and id.
  void write_async(const Event& e, const TraceContext& context) {
    const std::string_view name = site_name(e.site, context);
    const std::string_view ids = thread_ids(e.thread, context);
    char* p = room(kEventBytes + name.size() + ids.size());
    p = e.kind == EventKind::async_begin ? copy(p, ",\n{\"ph\":\"b\",\"cat\":\"async\",\"name\":")
                                         : copy(p, ",\n{\"ph\":\"e\",\"cat\":\"async\",\"name\":");
    p = copy(p, name);
    p = copy(p, ",\"id\":\"0x");
    p = std::to_chars(p, p + 16, e.value.u, 16).ptr;
    *p++ = '"';
    p = copy(p, ids);
    p = copy(p, ",\"ts\":");
    p = put_us(p, e.time_ns);
    // A span cut at a window's edge (a time range, a split output's piece) says so.
    if ((e.flags & EventFlags::opened_at_window_start) != 0) p = copy(p, ",\"args\":{\"opened_at_window_start\":true}");
    if ((e.flags & EventFlags::closed_at_window_end) != 0) p = copy(p, ",\"args\":{\"closed_at_window_end\":true}");
    *p++ = '}';
    done(p);
  }

  void write_instant(const Event& e, const TraceContext& context) {
    const std::string_view name = site_name(e.site, context);
    const std::string_view ids = thread_ids(e.thread, context);
    const std::string_view location = site_location(e.site);
    char* p = room(kEventBytes + name.size() + ids.size() + location.size());
    p = copy(p, ",\n{\"ph\":\"i\",\"s\":\"t\",\"cat\":\"instant\",\"name\":");
    p = copy(p, name);
    p = copy(p, ids);
    p = copy(p, ",\"ts\":");
    p = put_us(p, e.time_ns);
    if (!location.empty()) {
      p = copy(p, ",\"args\":{");
      p = copy(p, location.substr(1));
      *p++ = '}';
    }
    *p++ = '}';
    done(p);
  }

  // A message (RINGTRACE_MESSAGE): a thread-scoped instant named by its text, category
  // "message", the text again in args (a name may be shortened by a viewer, an arg is
  // shown whole) with the macro's location; marked when it was cut at recording.
  void write_message(const Event& e, const TraceContext& context) {
    std::string& text = message_;
    text.clear();
    append_json_string(text, context.text(e));
    site_name(e.site, context);  // the site described, for its location
    const std::string_view ids = thread_ids(e.thread, context);
    const std::string_view location = site_location(e.site);
    char* p = room(kEventBytes + 2 * text.size() + ids.size() + location.size());
    p = copy(p, ",\n{\"ph\":\"i\",\"s\":\"t\",\"cat\":\"message\",\"name\":");
    p = copy(p, text);
    p = copy(p, ids);
    p = copy(p, ",\"ts\":");
    p = put_us(p, e.time_ns);
    p = copy(p, ",\"args\":{\"message\":");
    p = copy(p, text);
    if ((e.flags & EventFlags::truncated) != 0) p = copy(p, ",\"truncated\":true");
    p = copy(p, location);
    *p++ = '}';
    *p++ = '}';
    done(p);
  }

  // A counter sample: `"args":{"value":v}`. Perfetto names a counter track "<name>
  // <arg key>" and Catapult shows the key as the series name, so the key is the same
  // word for every counter rather than the counter's name again. Tracks belong to the
  // process in the format: samples of one name from several threads form one series,
  // unless per_thread_counters, or the site's SiteOptions::per_thread_track
  // (RINGTRACE_COUNTER_PER_THREAD, Config::per_thread_counters), gives each thread its
  // own name (counter_name()).
  void write_counter(const Event& e, const TraceContext& context) {
    const bool is_double = (e.flags & EventFlags::counter_double) != 0;
    if (is_double && !std::isfinite(e.value.d)) [[unlikely]] {
      ++run_.skipped_counters;  // JSON has no NaN or infinity; see docs/formats/chrome_trace.md
      return;
    }
    const std::string_view ids = thread_ids(e.thread, context);
    if (e.site >= run_.site_names.size()) [[unlikely]]
      cache_sites(context);
    const std::string_view name = options_.per_thread_counters || run_.site_per_thread[e.site]
                                      ? counter_name(e.site, e.thread, context)
                                      : site_name(e.site, context);
    char* p = room(kEventBytes + name.size() + ids.size());
    p = copy(p, ",\n{\"ph\":\"C\",\"cat\":\"counter\",\"name\":");
    p = copy(p, name);
    p = copy(p, ids);
    p = copy(p, ",\"ts\":");
    p = put_us(p, e.time_ns);
    p = copy(p, ",\"args\":{\"value\":");
    if (is_double) {
      done(p);  // the shortest round-trip text of a double: output.hpp
      scratch_.clear();
      append_double(scratch_, e.value.d);
      scratch_.append("}}");
      put(scratch_);
      return;
    }
    p = put_int(p, e.value.i);
    p = copy(p, "}}");
    done(p);
  }

  // A sample of the process's live heap (Config::memory; heap_counter.hpp says which are
  // written): a counter of its own name, on the process as every counter.
  void write_heap(const detail::HeapCounter::Sample& s, const TraceContext& context) {
    const std::string_view ids = thread_ids(s.thread, context);
    char* p = room(kEventBytes + ids.size());
    p = copy(p, ",\n{\"ph\":\"C\",\"cat\":\"ringtrace.memory\",\"name\":\"ringtrace: heap (bytes)\"");
    p = copy(p, ids);
    p = copy(p, ",\"ts\":");
    p = put_us(p, s.time_ns);
    p = copy(p, ",\"args\":{\"value\":");
    p = put_uint(p, s.bytes);
    p = copy(p, "}}");
    done(p);
  }

  // `"<counter> (tid <os tid>)"`, escaped once per counter and thread. The os tid, not
  // the thread's name: it stays the same when the thread is renamed (one track), and
  // two threads of one name keep two tracks; viewers show each thread's tid by its name.
  std::string_view counter_name(SiteId site, ThreadId thread, const TraceContext& context) {
    if (thread >= run_.counter_names.size()) [[unlikely]]
      run_.counter_names.resize(thread + 1);
    std::vector<std::string>& names = run_.counter_names[thread];
    if (site >= names.size() || names[site].empty()) [[unlikely]] {
      if (site >= names.size()) names.resize(site + 1);
      std::string text = context.site(site).name;
      text.append(" (tid ").append(std::to_string(context.thread(thread).os_tid)).push_back(')');
      append_json_string(names[site], text);
    }
    return names[site];
  }

  void write_dropped(const Event& e, const TraceContext& context) {
    const std::string_view name = site_name(0, context);
    const std::string_view ids = thread_ids(e.thread, context);
    char* p = room(kEventBytes + name.size() + ids.size());
    p = copy(p, ",\n{\"ph\":\"i\",\"s\":\"t\",\"cat\":\"ringtrace\",\"name\":");
    p = copy(p, name);
    p = copy(p, ids);
    p = copy(p, ",\"ts\":");
    p = put_us(p, e.time_ns);
    p = copy(p, ",\"args\":{\"count\":");
    p = put_uint(p, e.value.u);
    p = copy(p, "}}");
    done(p);
  }

  // A live session closes zones still open at stop() itself; a recorded stream that
  // ended without their ends gets them here, marked the same way, never dropped.
  void close_open_zones(const TraceContext& context) {
    run_.tracker.close_open(context.clock().stop_ns,
                            [&](const detail::ClosedZone& zone, std::span<const detail::OpenZone> outer) {
                              close_zone(zone, outer, context);
                            });
  }

  std::string path_;
  std::ostream* stream_ = nullptr;
  ChromeTraceOptions options_;
  std::unique_ptr<OutputSink> sink_;
  std::uint64_t runs_ = 0;

  struct ThreadOut {
    std::string ids;           // `,"pid":P,"tid":T`; empty until the thread's first event
    std::string written_name;  // the name in the thread's last thread_name event
  };
  // Everything a run adds to, made afresh by one assignment at on_start: nothing of a run
  // reaches the next (site and thread ids are a run's own).
  struct Run {
    detail::ZoneTracker tracker;
    std::uint32_t pid = 0;
    std::vector<std::string> site_names;
    std::vector<std::string> site_locations;
    std::vector<std::string> site_categories;
    std::vector<char> site_per_thread;    // by site: SiteOptions::per_thread_track
    detail::StepSites steps;              // Session::step()'s zones (named "step #N")
    std::vector<Attached> attached;       // by thread
    std::uint64_t args_without_zone = 0;  // args and flows with no zone open on their thread
    std::uint64_t args_over_limit = 0;    // args beyond kMaxPendingArgs bytes on one thread
    std::vector<ThreadOut> threads;
    std::vector<std::vector<std::string>> counter_names;  // [thread][site], per_thread_counters
    std::vector<std::uint32_t> named_pids;                // other processes named so far (merged files)
    std::vector<std::vector<Deferred>> deferred;          // per thread: zones waiting for their outer one
    std::uint64_t skipped_counters = 0;
    detail::HeapCounter heap;  // the processes' live heaps (Config::memory)
  };
  Run run_;
  const TraceContext* context_ = nullptr;  // the context of the call being served
  std::unique_ptr<char[]> out_;            // formatted text not yet given to the sink
  std::size_t used_ = 0;
  std::size_t capacity_ = 0;
  std::uint64_t handed_ = 0;  // bytes of this run given to the sink
  bool finished_ = false;
  std::string scratch_;  // cold paths: header, metadata, doubles
  std::string message_;  // a message's text, escaped
};

}  // namespace

std::shared_ptr<Exporter> chrome_trace_exporter(const std::filesystem::path& path, ChromeTraceOptions options) {
  return std::make_shared<ChromeTraceExporter>(path.string(), options);
}

std::shared_ptr<Exporter> chrome_trace_exporter(std::ostream& stream, ChromeTraceOptions options) {
  return std::make_shared<ChromeTraceExporter>(stream, options);
}

}  // namespace ringtrace
